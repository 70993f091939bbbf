package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// afterGet is Ray that runs then once, right after its first answer about job id: something that happens between
// the sync's look at the job and what the loop writes of it.
type afterGet struct {
	*fakeRay
	id   string
	then func()
}

func (r *afterGet) GetJob(ctx context.Context, id string) (*mvp.JobInfo, error) {
	info, err := r.fakeRay.GetJob(ctx, id)
	if id == r.id && r.then != nil {
		then := r.then
		r.then = nil
		then()
	}
	return info, err
}

// A cancel that lands between the sync's look at an ended job (a node died under it: INFRA, requeued) and the
// requeue's write wins: the requeue's compare-and-set is lost, the next pass only closes the attempt, and no second
// attempt is made. (Review of the apply path; it held.)
func TestARequeueThatLosesToACancelMakesNoAttempt(t *testing.T) {
	h := newHarness(t)
	task := h.running(t, "mvp2-ppo-20251223-143201-dd01", func(*mvp.Task) {})
	sid := task.ID + "--a01"
	h.ray.set(sid, mvp.RayFailed, "The actor died because its node has died.", 1)
	h.loop.Ray = &afterGet{fakeRay: h.ray, id: sid, then: func() {
		if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateRunning,
			To: mvp.StateCanceled, At: h.clock.t}); err != nil {
			t.Error(err)
		}
	}}
	for i := 0; i < 3; i++ {
		h.tick()
	}
	got := h.get(task.ID)
	if a := got.Attempts[0]; got.State != mvp.StateCanceled || len(got.Attempts) != 1 || !a.RayStatus.Terminal() ||
		a.Message != "canceled by user" || h.ray.submits != 1 {
		t.Errorf("%s, %d attempts (%d submits), attempt 1 %s %q; want CANCELED, one attempt closed as canceled",
			got.State, len(got.Attempts), h.ray.submits, a.RayStatus, a.Message)
	}
}

// A run that succeeds between the sync's look (RUNNING, past its max_runtime_s) and mvp's stop keeps its success:
// the judgement written on the attempt stands only for a job Ray reports STOPPED. (Review of the apply path; it
// held.)
func TestATimeLimitStopThatRacesTheRunsOwnEndKeepsTheSuccess(t *testing.T) {
	h := newHarness(t)
	task := h.running(t, "mvp2-ppo-20251223-143201-dd02", func(t *mvp.Task) { t.MaxRuntimeS = 60 })
	sid := task.ID + "--a01"
	h.clock.t = h.clock.t.Add(2 * time.Minute)
	h.loop.Ray = &afterGet{fakeRay: h.ray, id: sid, then: func() { h.ray.set(sid, mvp.RaySucceeded, "", 0) }}
	h.tick() // judged MAX_RUNTIME_EXCEEDED on the RUNNING it read; the stop finds the job ended
	if a := h.get(task.ID).Attempts[0]; a.FailureKind != mvp.FailureMaxRuntimeExceeded || len(h.ray.stopped) != 1 {
		t.Fatalf("the race was not set up: attempt %+v, stops %v", a, h.ray.stopped)
	}
	h.tick()
	got := h.get(task.ID)
	if a := got.Attempts[0]; got.State != mvp.StateSucceeded || a.FailureKind != mvp.FailureNone || len(got.Attempts) != 1 {
		t.Errorf("%s, attempt %s %s; want SUCCEEDED without a failure kind", got.State, a.RayStatus, a.FailureKind)
	}
}
