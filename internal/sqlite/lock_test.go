package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// holdLock takes path's service lock through an open file of the test's own, as another process would, and
// returns its release.
func holdLock(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestALockReleasedAMomentLaterIsTaken: a restart right after a crash found the lock still held for a moment and
// refused to start (CI: "the database is in use by another mvp serve" naming the crashed process). Lock waits for
// a lock released within LockWait; one held longer is refused, naming the setting.
func TestALockReleasedAMomentLaterIsTaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mvp.sqlite3")
	release := holdLock(t, path)
	go func() { time.Sleep(300 * time.Millisecond); release() }()
	c, err := Lock(path)
	if err != nil {
		t.Fatalf("a lock released after 300 ms: %v", err)
	}
	defer c.Close()

	other := filepath.Join(t.TempDir(), "mvp.sqlite3")
	defer holdLock(t, other)()
	if _, err := lockWaiting(other, 300*time.Millisecond); !errors.Is(err, ErrInUse) {
		t.Fatalf("a lock held throughout: %v, want ErrInUse", err)
	}
}
