package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestDecideDependencies(t *testing.T) {
	up := task(mvp.WorkloadPPO, 1, 1, mvp.StateRunning)
	ok := task(mvp.WorkloadPPO, 1, 1, mvp.StateSucceeded)
	bad := task(mvp.WorkloadPPO, 1, 1, mvp.StateFailed)
	gone := task(mvp.WorkloadPPO, 1, 1, mvp.StateCanceled)
	with := func(afterOK, afterAny []string) *mvp.Task {
		tk := task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)
		tk.AfterOK, tk.AfterAny = afterOK, afterAny
		return tk
	}
	waitsOK := with([]string{up.ID}, nil)            // its after_ok dependency runs: waits
	ready := with([]string{ok.ID}, []string{bad.ID}) // succeeded + ended: may start
	failed := with([]string{ok.ID, bad.ID}, nil)     // an after_ok dependency failed: canceled
	canceled := with([]string{gone.ID}, nil)         // canceled counts as failed for after_ok
	anyOK := with(nil, []string{gone.ID, bad.ID})    // after_any: any end will do
	unknown := with(nil, []string{"mvp2-ppo-20251223-143201-ffff"})
	again := with([]string{up.ID}, nil) // already waiting with the same reason: no rewrite
	again.State = mvp.StatePendingResources
	again.PendingReason = DependencyReasonPrefix + "waiting for " + up.ID + " (after_ok, RUNNING) to end"
	plain := task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued) // no dependencies, behind the held ones
	late := with([]string{up.ID}, nil)                    // past its max_queued_s: it expires, held or not
	late.MaxQueuedS, late.CreatedAt = 60, t0.Add(-time.Hour)
	snap := Snapshot{Cluster: cluster(worker("n1", 4, 48), worker("n2", 4, 48), worker("n3", 4, 48)),
		Queue: []*mvp.Task{waitsOK, ready, failed, canceled, anyOK, unknown, again, plain, late},
		Deps: map[string]mvp.State{up.ID: mvp.StateRunning, ok.ID: mvp.StateSucceeded, bad.ID: mvp.StateFailed,
			gone.ID: mvp.StateCanceled}}
	var got []string
	for _, a := range Decide(t0, snap, policy()) {
		switch a := a.(type) {
		case Expire:
			got = append(got, "expire:"+a.Task.ID)
		case Submit:
			got = append(got, "submit:"+a.Task.ID)
		case *Wait:
			got = append(got, "wait:"+a.Task.ID)
			if !strings.HasPrefix(a.Reason, DependencyReasonPrefix) {
				t.Errorf("wait reason %q", a.Reason)
			}
		case DependencyFailed:
			got = append(got, fmt.Sprintf("cancel:%s:%s", a.Task.ID, a.Dependency))
			if !strings.Contains(a.Reason, "ended "+string(snap.Deps[a.Dependency])) {
				t.Errorf("reason %q", a.Reason)
			}
		}
	}
	want := []string{"expire:" + late.ID, "wait:" + waitsOK.ID, "cancel:" + failed.ID + ":" + bad.ID, "cancel:" + canceled.ID + ":" + gone.ID,
		"wait:" + unknown.ID, "submit:" + ready.ID, "submit:" + anyOK.ID, "submit:" + plain.ID}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Without a cluster reading, the same tasks expire, wait for their dependencies or are canceled.
	got = nil
	for _, a := range Decide(t0, Snapshot{Queue: snap.Queue, Deps: snap.Deps}, policy()) {
		switch a := a.(type) {
		case Expire:
			got = append(got, "expire:"+a.Task.ID)
		case *Wait:
			got = append(got, "wait:"+a.Task.ID)
		case DependencyFailed:
			got = append(got, fmt.Sprintf("cancel:%s:%s", a.Task.ID, a.Dependency))
		default:
			t.Errorf("without a cluster: %T", a)
		}
	}
	if want := want[:5]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("without a cluster:\ngot  %v\nwant %v", got, want)
	}
	if _, waiting := judgeDeps(unknown, snap.Deps, nil); len(waiting) != 1 || !strings.Contains(waiting[0], "unknown") {
		t.Errorf("unknown dependency: %v", waiting)
	}
	// A queue without dependencies is passed through untouched.
	q := []*mvp.Task{plain}
	if out, acts := dependencies(t0, Snapshot{Queue: q}, nil); &out[0] != &q[0] || len(acts) != 0 {
		t.Errorf("the queue was copied or acted on")
	}
}

// TestAfterAnyWaitsForACanceledRunToStop: a CANCELED task has ended in mvp's record the moment it is canceled, and
// its Ray job runs on through Ray's stop wait (SIGTERM, then SIGKILL after runtime_grace_s). A task after_any it
// started meanwhile: the next segment of a training, resuming from the folder that run still wrote, ran beside it.
// It waits until the job has stopped (the run's attempt is no longer live), saying so, and then starts.
func TestAfterAnyWaitsForACanceledRunToStop(t *testing.T) {
	stopping := task(mvp.WorkloadPPO, 1, 1, mvp.StateCanceled)
	next := task(mvp.WorkloadPPO, 1, 1, mvp.StateQueued)
	next.AfterAny = []string{stopping.ID}
	okAfter := task(mvp.WorkloadPPO, 1, 1, mvp.StateQueued)
	okAfter.AfterOK = []string{stopping.ID} // canceled is failed for after_ok, stopping or not
	snap := Snapshot{Cluster: cluster(worker("n1", 4, 48), worker("n2", 4, 48)), Queue: []*mvp.Task{next, okAfter},
		Deps:   map[string]mvp.State{stopping.ID: mvp.StateCanceled},
		Active: []ActiveAttempt{{Task: stopping, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning}}}}
	for _, p := range PolicyNames {
		var got []string
		for _, a := range Decide(t0, snap, Policy{Name: p}) {
			switch a := a.(type) {
			case Submit:
				got = append(got, "submit:"+a.Task.ID)
			case *Wait:
				got = append(got, "wait:"+a.Task.ID)
				if !strings.Contains(a.Reason, stopping.ID) || !strings.Contains(a.Reason, "stopping") {
					t.Errorf("%s: wait reason %q, want one naming %s and its stop", p, a.Reason, stopping.ID)
				}
			case DependencyFailed:
				got = append(got, "cancel:"+a.Task.ID)
			}
		}
		slices.Sort(got)
		if want := "cancel:" + okAfter.ID + " wait:" + next.ID; strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", p, got, want)
		}
		// Stopped: it starts.
		stopped := snap
		stopped.Queue, stopped.Active = []*mvp.Task{next}, nil
		acts := Decide(t0, stopped, Policy{Name: p})
		if len(acts) != 1 {
			t.Fatalf("%s: after the stop: %v", p, acts)
		}
		if s, ok := acts[0].(Submit); !ok || s.Task != next {
			t.Errorf("%s: after the stop: %#v, want the submit of %s", p, acts[0], next.ID)
		}
	}
}
