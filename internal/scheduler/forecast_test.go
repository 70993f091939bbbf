package scheduler

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// backfillBench: n1 is full until +1h (A), n2 holds B until +5h and C until +30min. G (2 × 4, the oldest) needs
// both nodes: reserved at +5h. S (1 × 4, declared 2 h) fits n1 once A ends at +1h and ends by +3h, before G's
// reservation: a backfilling policy starts it then.
func backfillBench() (*bench, *mvp.Task, *mvp.Task) {
	h := time.Hour
	b := newBench("n1", "n2")
	b.run(4, 2*h, h, true, "n1")            // A: ends at +1h
	b.run(2, 6*h, h, true, "n2")            // B: ends at +5h
	b.run(2, 90*time.Minute, h, true, "n2") // C: ends at +30min
	g := timed(2, 4, 2*h, 20*time.Minute)   // G: the oldest waiting task
	s := timed(1, 4, 2*h, 10*time.Minute)   // S
	return b, g, s
}

// TestEstimateFollowsBackfill: the estimated start is the policy's, run forward on declared run times. Under a
// backfilling policy the small task S starts at +1h, before the gang it waits behind (+5h); under fifo it waits
// for the gang's run (+7h). The in-order estimate put S after the gang under every policy.
func TestEstimateFollowsBackfill(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		policy string
		s      time.Duration
	}{{PolicyXFChain, h}, {PolicyEASY, h}, {PolicyXFBF, h}, {PolicyFIFO, 7 * h}} {
		t.Run(tc.policy, func(t *testing.T) {
			b, g, s := backfillBench()
			before := []mvp.Task{*g, *s}
			v := Explain(t0, b.snap(g, s), named(tc.policy))
			est := map[string]*time.Time{}
			for _, e := range v.Queue {
				est[e.TaskID] = e.EstStart
			}
			if e := est[g.ID]; e == nil || !e.Equal(t0.Add(5*h)) {
				t.Errorf("G estimated at %v, want +5h (when B ends)", e)
			}
			if e := est[s.ID]; e == nil || !e.Equal(t0.Add(tc.s)) {
				t.Errorf("S estimated at %v, want +%v", e, tc.s)
			}
			if after := []mvp.Task{*g, *s}; !reflect.DeepEqual(before, after) {
				t.Errorf("Explain wrote the queue's tasks:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// TestEstimatePastTheForecastBudget: a forecast that spends its budget gives the tasks it did not reach the
// in-order estimate, no earlier than where it stopped.
func TestEstimatePastTheForecastBudget(t *testing.T) {
	defer func(b int) { ForecastBudget = b }(ForecastBudget)
	ForecastBudget = 1 // spent by the first Decide: nothing is forecast beyond now
	b, g, s := backfillBench()
	v := Explain(t0, b.snap(g, s), named(PolicyXFChain))
	for _, e := range v.Queue {
		want := map[string]time.Duration{g.ID: 5 * time.Hour, s.ID: 7 * time.Hour}[e.TaskID]
		if e.EstStart == nil || !e.EstStart.Equal(t0.Add(want)) {
			t.Errorf("%s estimated at %v, want the in-order +%v", e.TaskID, e.EstStart, want)
		}
	}
}

// TestEstimateOfABackingOffTask: a task backing off is forecast to start when it is tried again, if it fits then.
func TestEstimateOfABackingOffTask(t *testing.T) {
	b := newBench("n1")
	x := timed(1, 2, time.Hour, 10*time.Minute)
	next := t0.Add(10 * time.Minute)
	v := explainBackingOff(t, b, x, next)
	if e := v.Queue[0].EstStart; e == nil || !e.Equal(next) {
		t.Errorf("estimated at %v, want its next_run_at %v", e, next)
	}
	// Its sentence gives the time it is looked at again (walk-through 14: it said "at next_run_at").
	if r := v.Queue[0].Reason; !strings.Contains(r, next.Format(time.RFC3339)) {
		t.Errorf("reason %q does not say when it is looked at again (%s)", r, next.Format(time.RFC3339))
	}
}

// TestEstimateOfATaskHeldByDependencies: a task held by its dependencies is estimated to start once they have
// ended as declared: D waits for the running R (declared end +1h); E waits for Q, which itself waits for n1 until
// +1h and runs 2 h. The estimates were null.
func TestEstimateOfATaskHeldByDependencies(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	r := b.run(4, 2*h, h, true, "n1") // R: n1 is full until +1h
	q := timed(1, 4, 2*h, 40*time.Minute)
	d := timed(1, 1, h, 30*time.Minute)
	d.AfterOK = []string{r.ID}
	e := timed(1, 1, h, 20*time.Minute)
	e.AfterAny = []string{q.ID}
	lost := timed(1, 1, h, 10*time.Minute)
	lost.AfterOK = []string{"mvp2-ppo-20251223-000000-dead"} // never known: no estimate
	snap := b.snap(q, d, e, lost)
	snap.Deps = map[string]mvp.State{r.ID: mvp.StateRunning, q.ID: mvp.StatePendingResources}
	v := Explain(t0, snap, named(PolicyXFChain))
	want := map[string]*time.Duration{q.ID: ptr(h), d.ID: ptr(3 * h), e.ID: ptr(3 * h), lost.ID: nil}
	for _, x := range v.Queue {
		w, listed := want[x.TaskID]
		if !listed {
			t.Errorf("unexpected entry %+v", x)
			continue
		}
		switch {
		case w == nil && x.EstStart != nil:
			t.Errorf("%s (%s) estimated at %v, want none", x.TaskID, x.Code, x.EstStart)
		case w != nil && (x.EstStart == nil || !x.EstStart.Equal(t0.Add(*w))):
			t.Errorf("%s (%s) estimated at %v, want +%v", x.TaskID, x.Code, x.EstStart, *w)
		}
		delete(want, x.TaskID)
	}
	if len(want) > 0 {
		t.Errorf("missing from the queue: %v", want)
	}
}

func ptr[T any](v T) *T { return &v }

// explainBackingOff makes x a task backing off after a first attempt until next, explains the queue of x alone on
// b under the default policy, and checks that x is its one entry, backing off.
func explainBackingOff(t *testing.T, b *bench, x *mvp.Task, next time.Time) QueueView {
	t.Helper()
	x.State, x.LatestAttemptNo, x.NextRunAt = mvp.StatePendingResources, 1, &next
	v := Explain(t0, b.snap(x), named(PolicyXFChain))
	if len(v.Queue) != 1 || v.Queue[0].Code != CodeBackingOff {
		t.Fatalf("queue: %+v", v.Queue)
	}
	return v
}

// TestAHeldTaskThatExpiresFirstSaysSo: on the real cluster, D waited for GPUs (estimated start +1h) and K, after_ok
// D with a max_queued_s that ends before D can end, was listed with code dependency, est_start null, no
// expires_before_start and nothing in its sentence; the same task without max_queued_s was estimated. A task held by
// its dependencies that the forecast ends MAX_QUEUED_EXCEEDED is told so, as a task in the queue is: estimated no
// earlier than its dependencies' declared ends (and after its bound), flagged.
func TestAHeldTaskThatExpiresFirstSaysSo(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	b.run(4, 2*h, h, true, "n1") // n1 is full until +1h
	d := timed(1, 4, 2*h, 40*time.Minute)
	k := timed(1, 1, h, 10*time.Minute)
	k.AfterOK = []string{d.ID}
	k.MaxQueuedS = 1800 // ends at +20 min; D is estimated to end at +3h
	free := timed(1, 1, h, 10*time.Minute)
	free.AfterOK = []string{d.ID}
	snap := b.snap(d, k, free)
	snap.Deps = map[string]mvp.State{d.ID: mvp.StatePendingResources}
	v := Explain(t0, snap, named(PolicyXFChain))
	var got *QueueEntry
	for i := range v.Queue {
		if v.Queue[i].TaskID == k.ID {
			got = &v.Queue[i]
		}
		if v.Queue[i].TaskID == free.ID && (v.Queue[i].EstStart == nil || !v.Queue[i].EstStart.Equal(t0.Add(3*h))) {
			t.Errorf("the same task without max_queued_s: estimated at %v, want +3h", v.Queue[i].EstStart)
		}
	}
	if got == nil {
		t.Fatalf("K is not listed: %+v", v.Queue)
	}
	if got.Code != CodeDependency || !got.ExpiresBeforeStart || got.EstStart == nil || got.EstStart.Before(t0.Add(3*h)) ||
		!strings.Contains(got.Reason, "MAX_QUEUED_EXCEEDED") {
		t.Errorf("K: code %s, est %v, expires_before_start %v, reason %q; want dependency, no earlier than +3h, "+
			"flagged, and the sentence saying it would end MAX_QUEUED_EXCEEDED first", got.Code, got.EstStart,
			got.ExpiresBeforeStart, got.Reason)
	}
}
