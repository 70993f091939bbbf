package scheduler_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestOneUnwritableAttemptFolderDoesNotStarveEveryOtherLog: a job can write in its own attempt folder, and may
// leave it so that mvp cannot write its driver log there (here a non-empty folder named driver.log). Such a
// failure was taken for shared_root being down, which is not a try: ten such jobs, the oldest unkept logs, took
// every pass's ten places for ever, and a later success's log was never kept (nor its job pruned from Ray). A
// folder's own failure while shared_root can be written is now a try like any other.
func TestOneUnwritableAttemptFolderDoesNotStarveEveryOtherLog(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 10; i++ {
		task := h.taskOf(1)
		h.tick()
		dir := filepath.Join(h.root, "jobs", task.ID, "attempts", "a01", "driver.log", "x")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.tick()
	}
	good := h.taskOf(1)
	h.tick()
	h.ray.set(good.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.tick()
	newest := h.taskOf(1) // so that good is beyond KeepFinishedJobs (1) and would be pruned once kept
	h.tick()
	h.ray.set(newest.ID+"--a01", mvp.RaySucceeded, "", 0)
	for i := 0; i < 120; i++ { // two minutes; keepLogs runs every 5 s
		h.clock.t = h.clock.t.Add(time.Second)
		h.tick()
	}
	a := h.get(good.ID).Attempts[0]
	if _, err := os.Stat(filepath.Join(h.root, "jobs", good.ID, "attempts", "a01", "driver.log")); err != nil || !a.LogKept {
		t.Errorf("a healthy success's driver log was never kept in 2 min (log_kept=%v, file: %v)",
			a.LogKept, err)
	}
}
