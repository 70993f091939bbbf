package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInUse is Lock's error when another process holds the database's service lock.
var ErrInUse = errors.New("the database is in use by another mvp serve")

// inUseError is ErrInUse with the database and its holder, said in one sentence.
type inUseError struct{ who, path string }

func (e inUseError) Error() string {
	return fmt.Sprintf("the database %s is in use by another mvp serve (%s): stop it first, or give this one its own "+
		"database (v2.sqlite.db_path, or serve's --db-path)", e.path, e.who)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e inUseError) Is(target error) bool { return target == ErrInUse }

// ErrNewerSchema is a database whose migrations a newer mvp applied: this binary does not open it.
var ErrNewerSchema = errors.New("written by a newer mvp")

// LockWait is how long Lock waits for the lock to be released before it says the database is in use: a restart
// right after a crash (a supervisor's, or the crash tests') found it still held for a moment (seen once in CI: the
// new process started within a millisecond of the old one being reaped).
const LockWait = 5 * time.Second

// Lock takes the database's service lock: an exclusive flock on <path>.lock (path with its symlinks resolved, so
// two paths to one database file meet at one lock), which holds the pid of its holder.
// One mvp serve per database: two would each run a scheduler loop judging and writing the same attempts from their
// own reads. The lock goes with the process (a crash or a kill releases it), so no stale lock outlives a holder.
// A lock held by another is waited for up to LockWait. Close releases it.
func Lock(path string) (io.Closer, error) { return lockWaiting(path, LockWait) }

// lockWaiting is Lock, waiting up to wait for a lock another holds.
func lockWaiting(path string, wait time.Duration) (io.Closer, error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := tryLock(path)
		if !errors.Is(err, ErrInUse) || !time.Now().Before(deadline) {
			return c, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tryLock takes the lock if no other holds it now.
func tryLock(path string) (io.Closer, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", path, err)
	}
	// The lock belongs to the file the path leads to: a db_path that is a symlink to another serve's database
	// must meet that serve's lock, not take one of its own beside the symlink. A path not there yet (a new
	// database) is locked as written.
	if real, rerr := filepath.EvalSymlinks(abs); rerr == nil {
		abs = real
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	f, err := os.OpenFile(abs+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(holder))); perr == nil && pid > 0 {
				who = "pid " + strconv.Itoa(pid)
			}
			return nil, inUseError{who: who, path: abs}
		}
		return nil, fmt.Errorf("lock database %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil // closing the file releases the lock
}
