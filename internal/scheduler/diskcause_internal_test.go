package scheduler

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// A fault of the whole disk is said by its cause, the same for every task held by it: the held tasks' reasons and
// /healthz quoted the folder of whichever task hit it first. Any other fault keeps the file it names.
func TestAWholeDiskFaultIsSaidWithoutATasksFolder(t *testing.T) {
	folder := func(id string, e syscall.Errno) error {
		return fmt.Errorf("create the task folder: %w", &fs.PathError{Op: "mkdir", Path: "/shared/jobs/" + id, Err: e})
	}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		a, b := sharedRootErr(folder("task-a", e)), sharedRootErr(folder("task-b", e))
		if a.Error() != b.Error() || strings.Contains(a.Error(), "task-a") {
			t.Errorf("%v: said %q and %q; want the cause alone, the same for both tasks", e, a, b)
		}
	}
	other := sharedRootErr(folder("task-a", syscall.ENOTDIR))
	if !strings.Contains(other.Error(), "/shared/jobs/task-a") {
		t.Errorf("a fault of one path lost the path: %q", other)
	}
}
