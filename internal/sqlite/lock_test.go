package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestADatabaseReachedThroughASymlinkSharesItsLock: a second mvp serve whose v2.sqlite.db_path is a symlink to the
// first one's database file took a lock of its own (<symlink>.lock) and ran a second scheduler loop on the same
// database. The lock is taken on the file the path leads to, so both paths meet at one lock.
func TestADatabaseReachedThroughASymlinkSharesItsLock(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "db", "mvp.sqlite3")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias.sqlite3")
	if err := os.Symlink(real, alias); err != nil {
		t.Fatal(err)
	}
	c, err := Lock(real)
	if err != nil {
		t.Fatalf("lock %s: %v", real, err)
	}
	defer c.Close()
	if c2, err := lockWaiting(alias, 300*time.Millisecond); !errors.Is(err, ErrInUse) {
		if c2 != nil {
			c2.Close()
		}
		t.Fatalf("lock through the symlink %s while %s is held: %v, want ErrInUse", alias, real, err)
	}
	c.Close()
	// And the other way round: held through the symlink, the file's own path is refused.
	c3, err := Lock(alias)
	if err != nil {
		t.Fatalf("lock %s: %v", alias, err)
	}
	defer c3.Close()
	if c4, err := lockWaiting(real, 300*time.Millisecond); !errors.Is(err, ErrInUse) {
		if c4 != nil {
			c4.Close()
		}
		t.Fatalf("lock %s while held through the symlink: %v, want ErrInUse", real, err)
	}
}

// TestADatabaseInUseIsSaidOnce: a second mvp serve on the same database said "the database is in use by another mvp
// serve: another mvp serve (pid 12036) is using the database /…/mvp_v2.sqlite3: stop it first, …" (the walk-through):
// one sentence now names the database, the holder and what to do, and is still ErrInUse.
func TestADatabaseInUseIsSaidOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mvp.sqlite3")
	defer holdLock(t, path)()
	_, err := lockWaiting(path, 100*time.Millisecond)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("%v, want ErrInUse", err)
	}
	if n := strings.Count(err.Error(), "mvp serve"); n != 1 || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "stop it first") {
		t.Errorf("the error names the other mvp serve %d times, or not the database and what to do: %v", n, err)
	}
}
