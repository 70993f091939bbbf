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

// cancelBetweenReads is the store of a loop whose user cancels a task while a pass reads its snapshot: between
// its read of the live attempts and its read of the dependencies' states, whichever comes first (the API's cancel
// commits when it will).
type cancelBetweenReads struct {
	mvp.Store
	h      *harness
	cancel string // the task to cancel
	armed  bool   // the pass has read its queue: the next of the two reads is followed by the cancel
}

func (s *cancelBetweenReads) Runnable(ctx context.Context) ([]*mvp.Task, error) {
	s.armed = s.cancel != ""
	return s.Store.Runnable(ctx)
}

func (s *cancelBetweenReads) Active(ctx context.Context) ([]*mvp.Task, error) {
	out, err := s.Store.Active(ctx)
	return out, s.after(ctx, err)
}

func (s *cancelBetweenReads) TaskStates(ctx context.Context, ids []string) (map[string]mvp.State, error) {
	out, err := s.Store.TaskStates(ctx, ids)
	return out, s.after(ctx, err)
}

func (s *cancelBetweenReads) after(ctx context.Context, err error) error {
	if err != nil || !s.armed {
		return err
	}
	s.armed = false
	err = s.Store.Apply(ctx, mvp.Change{TaskID: s.cancel, From: mvp.StateRunning, To: mvp.StateCanceled, At: s.h.clock.t})
	s.cancel = ""
	return err
}

// TestAfterAnyWaitsForARunCanceledDuringThePass: a run canceled while a pass read its snapshot, after the live
// attempts and before the dependencies' states, was CANCELED among the dependencies and RUNNING among the live
// attempts (so not a run still stopping), its Ray job not even asked to stop yet. The task after_any it, the next
// segment of a training resuming from the folder that run writes, started beside it.
func TestAfterAnyWaitsForARunCanceledDuringThePass(t *testing.T) {
	h := newHarness(t)
	a := h.task()
	next := h.taskAfter(nil, []string{a.ID})
	h.tick()
	h.ray.set(a.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	if got := h.get(a.ID); got.State != mvp.StateRunning {
		t.Fatalf("a: %s", got.State)
	}
	store := &cancelBetweenReads{Store: h.db, h: h, cancel: a.ID}
	h.loop.Store = store
	h.tick()
	if store.cancel != "" {
		t.Fatal("the pass did not read its snapshot")
	}
	if got := h.get(a.ID); got.State != mvp.StateCanceled {
		t.Fatalf("a: %s", got.State)
	}
	if got := h.get(next.ID); got.LatestAttemptNo != 0 {
		t.Fatalf("the next segment started while %s's Ray job still ran (%s): %s %q", a.ID,
			h.ray.jobs[a.ID+"--a01"].Status, got.State, got.PendingReason)
	}
	h.tick() // the cancel's stop is asked; Ray's stop wait runs
	if got := h.get(next.ID); got.LatestAttemptNo != 0 || !strings.Contains(got.PendingReason, "stopping") {
		t.Fatalf("while %s's job stops: %s %q", a.ID, got.State, got.PendingReason)
	}
	h.ray.set(a.ID+"--a01", mvp.RayStopped, "", 0)
	h.tick()
	if got := h.get(next.ID); got.LatestAttemptNo != 1 {
		t.Errorf("the next segment did not start once %s's job stopped: %s %q", a.ID, got.State, got.PendingReason)
	}
}
