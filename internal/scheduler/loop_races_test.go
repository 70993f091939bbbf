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

// onStop is Ray that runs then once, as it is first asked to stop a job: something that happens while a pass's
// earlier stop waits on Ray (up to the request timeout) before the pass writes its next action.
type onStop struct {
	*fakeRay
	then func(id string)
}

func (r *onStop) StopJob(ctx context.Context, id string) error {
	if r.then != nil {
		then := r.then
		r.then = nil
		then(id)
	}
	return r.fakeRay.StopJob(ctx, id)
}

// A cancel that lands between the pass's read of a run past its max_runtime_s and mvp's judgement of it wins: a
// canceled task is never judged (stops), so its attempt closes as canceled, not MAX_RUNTIME_EXCEEDED with the
// user's "canceled by user" beside it. Two runs overstay; the cancel of one lands while the pass's stop of the
// other waits on Ray. Found by reading the apply path: the judgement's write was a compare-and-set on the
// attempt's Ray status only, not on its task's state.
func TestACancelThatLandsBeforeATimeLimitJudgementWins(t *testing.T) {
	h := newHarness(t)
	a := h.running(t, "mvp2-ppo-20251223-143201-dd03", func(t *mvp.Task) { t.MaxRuntimeS = 60 })
	b := h.running(t, "mvp2-ppo-20251223-143201-dd04", func(t *mvp.Task) { t.MaxRuntimeS = 60 })
	h.clock.t = h.clock.t.Add(2 * time.Minute)
	var canceled *mvp.Task
	h.loop.Ray = &onStop{fakeRay: h.ray, then: func(id string) {
		canceled = b
		if id == b.ID+"--a01" {
			canceled = a
		}
		if err := h.db.Apply(context.Background(), mvp.Change{TaskID: canceled.ID, From: mvp.StateRunning,
			To: mvp.StateCanceled, At: h.clock.t, EventType: mvp.EventCancelRequested}); err != nil {
			t.Error(err)
		}
	}}
	h.tick() // both read RUNNING past their limit; one canceled while the other's stop waits on Ray
	if canceled == nil || h.get(canceled.ID).State != mvp.StateCanceled {
		t.Fatalf("the race was not set up")
	}
	sid := canceled.ID + "--a01"
	if at := h.get(canceled.ID).Attempts[0]; at.FailureKind != mvp.FailureNone {
		t.Errorf("a canceled task's attempt was judged %s (%q) after the cancel", at.FailureKind, at.Message)
	}
	h.ray.set(sid, mvp.RayStopped, "Job was intentionally stopped.", 0)
	h.tick()
	got := h.get(canceled.ID)
	if at := got.Attempts[0]; got.State != mvp.StateCanceled || at.RayStatus != mvp.RayStopped ||
		at.FailureKind != mvp.FailureNone || at.Message != "canceled by user" {
		t.Errorf("%s, attempt %s %s %q; want CANCELED, attempt STOPPED without a failure kind, canceled by user",
			got.State, at.RayStatus, at.FailureKind, at.Message)
	}
	for _, e := range h.eventsOf(canceled.ID, mvp.EventStopRequested) {
		t.Errorf("a STOP_REQUESTED event for the time limit of a task canceled before it: %s", e.Payload)
	}
	// The other was judged and stopped as before.
	other := a
	if canceled == a {
		other = b
	}
	if at := h.get(other.ID).Attempts[0]; at.FailureKind != mvp.FailureMaxRuntimeExceeded {
		t.Errorf("the other overstayed run: attempt %s %q, want MAX_RUNTIME_EXCEEDED", at.FailureKind, at.Message)
	}
}
