package scheduler

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mvp2/mvp/internal/taskfs"
)

// A fault of the whole disk is said by its cause, the same for every task held by it: the held tasks' reasons and
// /healthz quoted the folder of whichever task hit it first. Any other fault, shared_root writable, is the task's
// own folder's (its reason then keeps the path: holdForFolder).
func TestAWholeDiskFaultIsSaidWithoutATasksFolder(t *testing.T) {
	l := &Loop{Files: taskfs.FS{Root: t.TempDir()}}
	folder := func(id string, e syscall.Errno) error {
		return fmt.Errorf("create the task folder: %w", &fs.PathError{Op: "mkdir", Path: "/shared/jobs/" + id, Err: e})
	}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		a, b := l.sharedRootDown(folder("task-a", e)), l.sharedRootDown(folder("task-b", e))
		if a == nil || b == nil || a.Error() != b.Error() || strings.Contains(a.Error(), "task-a") {
			t.Errorf("%v: said %v and %v; want the cause alone, the same for both tasks", e, a, b)
		}
	}
	if other := l.sharedRootDown(folder("task-a", syscall.ENOTDIR)); other != nil {
		t.Errorf("one folder's fault, shared_root writable, judged shared_root's: %v", other)
	}
}

// TestSharedRootFoundUnwritableByItsCheckIsSaidByTheCheck: a task folder that cannot be written for a cause that is
// not a whole disk's (here EACCES: shared_root's jobs folder no longer mvp's to write) makes mvp check shared_root
// itself; when that check fails too, the fault is shared_root's, and the held tasks' reasons and /healthz said the
// folder of whichever task the pass tried. They now say what the check found, the same for every task, and without
// the check's own random file name (which would rewrite every held reason at each pass).
func TestSharedRootFoundUnwritableByItsCheckIsSaidByTheCheck(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "jobs"), nil, 0o644); err != nil { // the check fails: jobs is a file
		t.Fatal(err)
	}
	l := &Loop{Files: taskfs.FS{Root: root}}
	folder := func(id string) error {
		return fmt.Errorf("create the task folder: %w", &fs.PathError{Op: "mkdir", Path: root + "/jobs/" + id, Err: syscall.EACCES})
	}
	a, b := l.sharedRootDown(folder("task-a")), l.sharedRootDown(folder("task-b"))
	if a == nil || b == nil {
		t.Fatalf("shared_root whose check fails judged up: %v, %v", a, b)
	}
	if a.Error() != b.Error() || strings.Contains(a.Error(), "task-a") {
		t.Errorf("said %q and %q; want what the check of shared_root found, the same for both tasks", a, b)
	}
	if !strings.Contains(a.Error(), filepath.Join(root, "jobs")) {
		t.Errorf("said %q; want the folder the check could not write", a)
	}
	// shared_root writable: the task's own folder is at fault.
	ok := &Loop{Files: taskfs.FS{Root: t.TempDir()}}
	if err := ok.sharedRootDown(folder("task-a")); err != nil {
		t.Errorf("a writable shared_root judged down: %v", err)
	}
}
