package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

func (h *harness) taskAfter(afterOK, afterAny []string) *mvp.Task {
	h.t.Helper()
	n++
	t := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t,
		AfterOK: afterOK, AfterAny: afterAny}
	if err := h.db.CreateTask(context.Background(), t); err != nil {
		h.t.Fatal(err)
	}
	return t
}

// TestLoopFollowsDependencies: a task waits (reason "dependency: …") while its dependency runs and starts once it
// succeeded; an after_ok task of a failed dependency ends CANCELED with the reason, and so does its own after_ok
// dependent on the next pass; an after_any task starts after the failure.
func TestLoopFollowsDependencies(t *testing.T) {
	h := newHarness(t)
	a := h.task()
	b := h.taskAfter([]string{a.ID}, nil)
	h.tick()
	if got := h.get(b.ID); got.State != mvp.StatePendingResources || !strings.HasPrefix(got.PendingReason, "dependency: waiting for "+a.ID) {
		t.Fatalf("b: %s %q", got.State, got.PendingReason)
	}
	h.ray.set(a.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	if got := h.get(b.ID); got.LatestAttemptNo != 0 || !strings.Contains(got.PendingReason, "RUNNING") {
		t.Fatalf("b started before a ended: %s %q", got.State, got.PendingReason)
	}
	h.ray.set(a.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.tick()
	if got := h.get(b.ID); got.LatestAttemptNo != 1 || got.State != mvp.StateSubmitted {
		t.Fatalf("b after a succeeded: %s %q", got.State, got.PendingReason)
	}

	c := h.task()
	d := h.taskAfter([]string{c.ID}, nil)
	e := h.taskAfter([]string{d.ID}, nil)
	f := h.taskAfter(nil, []string{c.ID})
	h.tick()
	h.ray.set(c.ID+"--a01", mvp.RayFailed, "Traceback\nRuntimeError: boom", 1)
	h.tick() // c FAILED, d CANCELED
	h.tick() // e CANCELED
	for _, x := range []struct{ id, dep string }{{d.ID, c.ID}, {e.ID, d.ID}} {
		got := h.get(x.id)
		if got.State != mvp.StateCanceled || !strings.Contains(got.ErrorSummary, x.dep) || got.LatestAttemptNo != 0 {
			t.Errorf("%s: %s %q", x.id, got.State, got.ErrorSummary)
		}
		if len(h.eventsOf(x.id, mvp.EventDependencyFailed)) != 1 {
			t.Errorf("%s: no DEPENDENCY_FAILED event", x.id)
		}
	}
	if got := h.get(f.ID); got.LatestAttemptNo != 1 {
		t.Errorf("after_any task did not start after its dependency failed: %s %q", got.State, got.PendingReason)
	}
}
