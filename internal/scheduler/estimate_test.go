package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestEstimateHoldsMaxRunning: a task waiting with code max_running_tasks is not estimated to start before a live
// task ends (+1h here); it was estimated at now.
func TestEstimateHoldsMaxRunning(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	b.run(1, 2*h, h, true, "n1") // the one live task: ends at +1h; n1 keeps 3 GPUs free
	x := timed(1, 1, h, 10*time.Minute)
	p := named(PolicyXFBF)
	p.MaxRunning = 1
	w := waitOf(Decide(t0, b.snap(x), p), x)
	if w == nil || w.Code() != CodeMaxRunning {
		t.Fatalf("decide: %+v", w)
	}
	v := Explain(t0, b.snap(x), p)
	if len(v.Queue) != 1 || v.Queue[0].Code != CodeMaxRunning {
		t.Fatalf("explain: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e == nil || e.Before(t0.Add(h)) {
		t.Errorf("max_running_tasks wait estimated at %v (now %v); it cannot start before +1h", e, t0)
	}
}

// TestEstimateHoldsQuota: a task waiting over its owner's quota is not estimated at now: it starts once its
// owner's own task ends and gives the GPUs back. Then it is the oldest task that fits, so the policy starts it
// first, and the reservation's holder (bob's gang, reserved for +1h while alice's task was over quota) starts
// only when it ends: the forecast follows the policy; the in-order estimate put the holder at its reservation.
func TestEstimateHoldsQuota(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	alice := b.run(4, 2*h, h, true, "n1") // alice holds 4 GPUs until +1h; n2 is free
	alice.Owner = "alice"
	q := timed(1, 4, 5*h, 30*time.Minute) // alice again: over max_gpus 4
	q.Owner = "alice"
	big := timed(2, 4, h, 20*time.Minute) // bob: needs n1 and n2, reserved at +1h
	big.Owner = "bob"
	p := named(PolicyEASY)
	p.Users = map[string]UserLimits{"alice": {MaxGPUs: 4}}
	v := Explain(t0, b.snap(q, big), p)
	if len(v.Reservations) != 1 || v.Reservations[0].TaskID != big.ID || v.Reservations[0].Start == nil ||
		!v.Reservations[0].Start.Equal(t0.Add(h)) {
		t.Fatalf("reservations: %+v", v.Reservations)
	}
	for _, e := range v.Queue {
		t.Logf("#%d %s %s est %v", e.Position, e.TaskID, e.Code, e.EstStart)
		switch e.TaskID {
		case q.ID:
			if e.Code != CodeQuota {
				t.Errorf("q: code %s", e.Code)
			}
			if e.EstStart == nil || !e.EstStart.Equal(t0.Add(h)) {
				t.Errorf("quota wait estimated at %v, want +1h: alice's 4 GPUs are live until then", e.EstStart)
			}
		case big.ID:
			if e.EstStart == nil || !e.EstStart.Equal(t0.Add(6*h)) {
				t.Errorf("holder estimated at %v, want +6h (after q's declared 5 h from +1h)", e.EstStart)
			}
		}
	}
}

// TestEstimateHoldsABlocker: behind a live attempt whose unplaced gang does not fit, every task waits
// (behind_reservation); a task that fits the free GPUs is not estimated to start now.
func TestEstimateHoldsABlocker(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	b.run(2, 2*h, h, true, "n1") // n1: 2 of 4 GPUs free
	b.run(4, 2*h, h, true, "n2") // n2: full
	pend := timed(1, 4, h, 2*time.Minute)
	pend.State = "SUBMITTED"
	b.active = append(b.active, ActiveAttempt{Task: pend, Attempt: &mvp.Attempt{No: 1, RayJobID: "pending1",
		RayStatus: mvp.RayPending, CreatedAt: t0.Add(-time.Minute)}})
	x := timed(1, 1, h, 10*time.Minute)
	p := named(PolicyXFBF)
	w := waitOf(Decide(t0, b.snap(x), p), x)
	if w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != pend.ID {
		t.Fatalf("decide: %+v", w)
	}
	v := Explain(t0, b.snap(x), p)
	if len(v.Queue) != 1 {
		t.Fatalf("explain: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e != nil && !e.After(t0) {
		t.Errorf("%s wait estimated at now (%v)", v.Queue[0].Code, e)
	}
}

// TestEstimateAfterMaxQueued: a waiting task still bound by its max_queued_s shows when the bound ends
// (queued_until); one estimated to start after that is flagged (expires_before_start) and its sentence says it
// would end MAX_QUEUED_EXCEEDED first. A task that has run is bound no more and shows neither.
func TestEstimateAfterMaxQueued(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	b.run(4, 2*h, h, true, "n1") // n1 is full until +1h
	soon := timed(1, 1, h, 10*time.Minute)
	soon.MaxQueuedS = 1800 // its bound ends at +20 min, before the GPUs free up
	later := timed(1, 1, h, 9*time.Minute)
	later.MaxQueuedS = 3 * 3600
	ran := timed(1, 1, h, 8*time.Minute)
	ran.MaxQueuedS, ran.LatestAttemptNo, ran.Ran = 1800, 1, true
	v := Explain(t0, b.snap(soon, later, ran), named(PolicyXFChain))
	got := map[string]QueueEntry{}
	for _, e := range v.Queue {
		got[e.TaskID] = e
	}
	s := got[soon.ID]
	if s.EstStart == nil || s.QueuedUntil == nil || !s.QueuedUntil.Equal(t0.Add(20*time.Minute)) || !s.ExpiresBeforeStart ||
		!strings.Contains(s.Reason, "MAX_QUEUED_EXCEEDED") {
		t.Errorf("soon: est %v, queued_until %v, expires_before_start %v, reason %q", s.EstStart, s.QueuedUntil,
			s.ExpiresBeforeStart, s.Reason)
	}
	l := got[later.ID]
	if l.EstStart == nil || l.QueuedUntil == nil || !l.QueuedUntil.Equal(t0.Add(3*h-9*time.Minute)) || l.ExpiresBeforeStart ||
		strings.Contains(l.Reason, "MAX_QUEUED_EXCEEDED") {
		t.Errorf("later: est %v, queued_until %v, expires_before_start %v, reason %q", l.EstStart, l.QueuedUntil,
			l.ExpiresBeforeStart, l.Reason)
	}
	if r := got[ran.ID]; r.QueuedUntil != nil || r.ExpiresBeforeStart {
		t.Errorf("a task that ran is not bound by max_queued_s: %+v", r)
	}
}

// TestEstimateOfABackingOffGangThatCannotFit: a gang backing off after a lost race, on a cluster where GPUs are
// held by something mvp does not follow (no declared end), has no estimated start: nothing known lets it fit. It
// was shown its next_run_at, a start that could not happen (walk-through 11: shown 7 s before it expired).
func TestEstimateOfABackingOffGangThatCannotFit(t *testing.T) {
	b := newBench("n1", "n2")
	b.c.Nodes[1].Available["GPU"] = 2 // n1: 2 GPUs held behind mvp's back
	gang := timed(2, 4, time.Hour, 10*time.Minute)
	v := explainBackingOff(t, b, gang, t0.Add(30*time.Second))
	if e := v.Queue[0].EstStart; e != nil {
		t.Errorf("estimated start %v for a gang that cannot fit the GPUs free now nor any that are freed later", e)
	}
}

// TestEstimateCountsTheStopGrace: a run past its declared end is being stopped by mvp, and Ray gives it
// runtime_grace_s between SIGTERM and SIGKILL: its GPUs are free only then. The task behind it was estimated to
// start now on every look, and its max_queued_s ran out with no warning (walk-through 11).
func TestEstimateCountsTheStopGrace(t *testing.T) {
	b := newBench("n1")
	b.run(4, 10*time.Minute, 10*time.Minute+5*time.Second, true, "n1") // overstayed 5 s ago: stopped then
	x := timed(1, 4, time.Hour, time.Minute)
	p := named(PolicyXFChain)
	p.StopGrace = 30 * time.Second
	v := Explain(t0, b.snap(x), p)
	if len(v.Queue) != 1 {
		t.Fatalf("queue: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e == nil || !e.Equal(t0.Add(25*time.Second)) {
		t.Errorf("estimated start %v, want +25s (the declared end 5 s ago plus the 30 s grace)", e)
	}
	p.StopGrace = 0
	if e := Explain(t0, b.snap(x), p).Queue[0].EstStart; e == nil || !e.Equal(t0) {
		t.Errorf("without a grace: estimated start %v, want now", e)
	}
}

// TestAnAttemptNotRunningYetEndsNoEarlierThanNowPlusItsDeclaredRun (walk-through 14): an attempt admitted 10 min ago whose job Ray still
// has PENDING (its runtime env being set up, say) has not begun to run, and max_runtime_s is counted from when mvp
// first sees it RUNNING: it cannot be stopped for its time limit before now + max_runtime_s. The queue's estimate
// for the task waiting for its GPUs was created_at + max_runtime_s (+50 min), and on real Ray every such estimate
// moved later by the submit→RUNNING lag as soon as the job ran (2–7 s each admission on the local cluster).
func TestAnAttemptNotRunningYetEndsNoEarlierThanNowPlusItsDeclaredRun(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	p := task(mvp.WorkloadPPO, 1, 4, mvp.StateSubmitted)
	p.MaxRuntimeS = int(h / time.Second)
	created := t0.Add(-10 * time.Minute)
	b.c.Nodes[1].Available["GPU"] = 0 // its group is placed (CREATED) on n1; the driver has not started
	b.c.Nodes[1].Available["CPU"] -= 12
	b.c.Groups = append(b.c.Groups, mvp.PlacementGroup{CreatorJobID: "0a000000", State: "CREATED"})
	b.active = append(b.active, ActiveAttempt{Task: p, Nodes: []string{"n1"}, Attempt: &mvp.Attempt{No: 1,
		RayJobID: "0a000000", RayStatus: mvp.RayPending, CreatedAt: created}})
	x := timed(1, 4, h, 5*time.Minute)
	v := Explain(t0, b.snap(x), named(PolicyXFChain))
	if len(v.Queue) != 1 {
		t.Fatalf("queue: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e == nil || e.Before(t0.Add(h)) {
		t.Errorf("X estimated at %v, want no earlier than now + 1h (%v): P has not run yet", e, t0.Add(h))
	}
}

// TestAGangWhoseJobIDIsNotKnownYetIsNoBlocker (walk-through 14): between the sync (the job is PENDING in Ray, so its job id is not known yet)
// and the probe, the driver started and made its placement group: the probe shows the group CREATED and its GPUs
// used, but no live attempt claims it, so the attempt's group is counted as unplaced, reserved again on a free
// view that no longer has its GPUs, "does not fit", and blocks the queue: every estimate is null and the waiting
// task's pending_reason becomes "waiting behind a submitted task whose gang is not placed yet and does not fit"
// (seen on real Ray for one pass after each admission: task e1's event 125 in the report).
func TestAGangWhoseJobIDIsNotKnownYetIsNoBlocker(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	g := task(mvp.WorkloadPPO, 2, 4, mvp.StateSubmitted)
	g.MaxRuntimeS = int(h / time.Second)
	for k := 1; k <= 2; k++ {
		b.c.Nodes[k].Available["GPU"] = 0
		b.c.Nodes[k].Available["CPU"] -= 12
		b.c.Groups = append(b.c.Groups, mvp.PlacementGroup{CreatorJobID: "24000000", State: "CREATED"})
	}
	b.active = append(b.active, ActiveAttempt{Task: g, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayPending,
		CreatedAt: t0.Add(-2 * time.Second)}}) // RayJobID not learned yet
	q := timed(1, 1, h, time.Second)
	v := Explain(t0, b.snap(q), named(PolicyXFChain))
	if len(v.Queue) != 1 {
		t.Fatalf("queue: %+v", v.Queue)
	}
	e := v.Queue[0]
	if e.EstStart == nil || e.Code == CodeBehindReservation {
		t.Errorf("q: code %s est %v reason %q; want gpus_busy with an estimate at G's end (+1h)", e.Code, e.EstStart, e.Reason)
	}
}

// TestAGroupOfAnotherShapeIsNotClaimed: a CREATED group no live attempt claims but of another shape (1 × 2 GPUs
// here, a job mvp does not follow) is not taken as the unknown-job gang's: that gang (2 × 4) still counts as
// unplaced and, not fitting, holds the queue.
func TestAGroupOfAnotherShapeIsNotClaimed(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	g := task(mvp.WorkloadPPO, 2, 4, mvp.StateSubmitted)
	g.MaxRuntimeS = int(h / time.Second)
	b.c.Nodes[1].Available["GPU"] = 2
	b.c.Groups = append(b.c.Groups, mvp.PlacementGroup{CreatorJobID: "33000000", State: "CREATED",
		Bundles: []map[string]float64{{"GPU": 1, "CPU": 1}, {"GPU": 1, "CPU": 1}}})
	b.active = append(b.active, ActiveAttempt{Task: g, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayPending,
		CreatedAt: t0.Add(-2 * time.Second)}})
	q := timed(1, 1, h, time.Second)
	w := waitOf(Decide(t0, b.snap(q), named(PolicyXFChain)), q)
	if w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != g.ID {
		t.Errorf("q: %+v; want it behind the unplaced gang", w)
	}
}

// TestACanceledRunEndsWithinItsStopGrace: a canceled run (CANCELED is recorded at once; Ray stops its job within
// runtime_grace_s of the stop asked right after) was planned to hold its GPUs until its declared end: the task
// waiting for them was reserved and estimated hours late, and backfill let tasks take GPUs as if for hours. It
// ends, as planned, at the cancel plus the grace (no earlier than now), or at its declared end if that is sooner.
func TestACanceledRunEndsWithinItsStopGrace(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	r := b.run(4, 3*24*h, h, true, "n1") // declared for 3 days, running for an hour: then canceled, 5 s ago
	r.State, r.UpdatedAt = mvp.StateCanceled, t0.Add(-5*time.Second)
	x := timed(1, 4, h, time.Minute)
	p := named(PolicyXFChain)
	p.StopGrace = 30 * time.Second
	v := Explain(t0, b.snap(x), p)
	if len(v.Queue) != 1 {
		t.Fatalf("queue: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e == nil || !e.Equal(t0.Add(25*time.Second)) {
		t.Errorf("estimated start %v, want +25s (canceled 5 s ago, 30 s grace)", e)
	}
	r.UpdatedAt = t0.Add(-time.Minute) // past its grace: its stop is late, it may end at any moment
	if e := Explain(t0, b.snap(x), p).Queue[0].EstStart; e == nil || !e.Equal(t0) {
		t.Errorf("past its grace: estimated start %v, want now", e)
	}
}

// TestACanceledUntimedRunEndsWithinItsStopGrace: a canceled run with no declared time (no max_runtime_s and
// v2.scheduler.default_max_runtime_s 0) was planned never to end, though Ray stops its job as it stops any other:
// the task waiting for its GPUs had no estimate. It ends at the cancel plus the grace (no earlier than now).
func TestACanceledUntimedRunEndsWithinItsStopGrace(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	r := b.run(4, 0, h, true, "n1") // no declared time, running for an hour: then canceled, 5 s ago
	r.State, r.UpdatedAt = mvp.StateCanceled, t0.Add(-5*time.Second)
	x := timed(1, 4, h, time.Minute)
	p := named(PolicyXFChain)
	p.StopGrace, p.DefaultMaxRuntime = 30*time.Second, 0
	v := Explain(t0, b.snap(x), p)
	if len(v.Queue) != 1 {
		t.Fatalf("queue: %+v", v.Queue)
	}
	if e := v.Queue[0].EstStart; e == nil || !e.Equal(t0.Add(25*time.Second)) {
		t.Errorf("estimated start %v, want +25s (canceled 5 s ago, 30 s grace)", e)
	}
	r.State = mvp.StateRunning // not canceled: no declared end, no estimate
	if e := Explain(t0, b.snap(x), p).Queue[0].EstStart; e != nil {
		t.Errorf("behind a running untimed run: estimated start %v, want none", e)
	}
}
