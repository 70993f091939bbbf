package scheduler_test

import (
	"github.com/mvp2/mvp/internal/scheduler"
	"os"
	"path/filepath"
	"slices"
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

// TestATaskHeldForItsOwnFolderDoesNotHoldUpTheQueue: a task held because its own folder is in the way was picked
// by every pass as the next to start, so a task behind it that needs the same GPUs waited (with a reason that
// said the GPUs were busy), and GET /api/v2/queue listed the held task as starting. It now waits out of the
// passes until it is looked at again, listed with its own reason, and the task behind it starts; renewing the
// hold does not add an event each time.
func TestATaskHeldForItsOwnFolderDoesNotHoldUpTheQueue(t *testing.T) {
	h := newHarness(t)
	held := h.taskOf(8)
	h.tick()
	attempts := filepath.Join(h.root, "jobs", held.ID, "attempts")
	if err := os.MkdirAll(attempts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(attempts, "a02"), []byte("left by the run"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ray.set(held.ID+"--a01", mvp.RayFailed, "Traceback\nValueError: Total available GPUs 0.0 is less than total desired GPUs 8", 1)
	h.tick()
	h.clock.t = h.clock.t.Add(time.Minute)
	behind := h.taskOf(8)
	h.tick() // the held task is tried, and held
	h.tick()
	if got := h.get(held.ID); got.State != mvp.StatePendingResources || !strings.Contains(got.PendingReason, "its own task folder") {
		t.Fatalf("the task with its folder in the way: %s %q", got.State, got.PendingReason)
	}
	if got := h.get(behind.ID); got.State != mvp.StateSubmitted && got.State != mvp.StateSubmitting {
		t.Fatalf("the task behind the held one: %s %q; want it started on the GPUs the held one cannot use", got.State, got.PendingReason)
	}
	snap, err := h.loop.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	v := scheduler.Explain(h.clock.t, snap, h.loop.Policy)
	if slices.Contains(v.Starting, held.ID) {
		t.Errorf("the queue's view lists the held task as starting: %v", v.Starting)
	}
	found := false
	for _, e := range v.Queue {
		if e.TaskID == held.ID {
			found = true
			if !strings.Contains(e.Reason, "its own task folder") {
				t.Errorf("the queue's view of the held task: %s %q; want its own reason", e.Code, e.Reason)
			}
		}
	}
	if !found {
		t.Errorf("the held task is not in the queue's view: %+v", v.Queue)
	}
	count := func() int {
		evs, _, err := h.db.Events(t.Context(), held.ID, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	h.ray.set(behind.ID+"--a01", mvp.RaySucceeded, "", 0) // its GPUs free: the held task is tried at each next_run_at
	h.tick()
	h.tick()
	before := count()
	for range 5 { // looked at again, and held again, each time
		h.clock.t = h.clock.t.Add(2 * time.Minute)
		h.tick()
	}
	if got := h.get(held.ID); !strings.Contains(got.PendingReason, "its own task folder") || got.LatestAttemptNo != 1 {
		t.Errorf("held again: %s %q attempt %d", got.State, got.PendingReason, got.LatestAttemptNo)
	} else if got.NextRunAt == nil || !got.NextRunAt.After(h.clock.t) {
		t.Errorf("the hold was not renewed when looked at again: next_run_at %v at %v", got.NextRunAt, h.clock.t)
	}
	if after := count(); after != before {
		t.Errorf("each renewal of the same hold wrote an event: %d then %d", before, after)
	}
}
