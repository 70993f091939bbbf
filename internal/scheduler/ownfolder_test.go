package scheduler_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestATaskWhoseOwnFolderIsInTheWayWaitsSayingSo: a run can write in its task folder, and may leave something
// where mvp writes the next attempt's (here a file named a02). The next attempt then could not be recorded, and
// the task waited as if shared_root were full or read-only, with /healthz degraded for the whole service, though
// every other task's folder could be written. It now waits saying its own folder is in the way, and the health
// names nothing.
func TestATaskWhoseOwnFolderIsInTheWayWaitsSayingSo(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	attempts := filepath.Join(h.root, "jobs", task.ID, "attempts")
	if err := os.MkdirAll(attempts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(attempts, "a02"), []byte("left by the run"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ray.set(task.ID+"--a01", mvp.RayFailed, "Traceback\nValueError: Total available GPUs 0.0 is less than total desired GPUs 2", 1)
	h.tick()
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StatePendingResources || got.LatestAttemptNo != 1 ||
		!strings.Contains(got.PendingReason, "its own task folder") {
		t.Fatalf("attempt 2's folder in the way: %s, attempt %d, %q; want it waiting, saying its own folder is in the way",
			got.State, got.LatestAttemptNo, got.PendingReason)
	}
	if err := h.loop.SharedRootError(); err != nil {
		t.Errorf("one task's folder in the way degrades the whole service's health: %v", err)
	}
	if h.ray.submits != 1 {
		t.Errorf("%d submits; want attempt 1's only", h.ray.submits)
	}
}
