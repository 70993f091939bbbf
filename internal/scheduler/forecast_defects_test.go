package scheduler

import (
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// estOf returns the estimated start of task id in v (nil when none or not listed).
func estOf(v QueueView, id string) *time.Time {
	for _, e := range v.Queue {
		if e.TaskID == id {
			return e.EstStart
		}
	}
	return nil
}

// TestForecastDropsATaskAtItsMaxQueued: X (the oldest) is bound by max_queued_s and expires at +20min, before n1
// frees at +1h; Decide ends it then, so Y starts at +1h. The forecast strips X's bound for the whole run, lets X
// take n1 at +1h for its 2 h, and estimates Y at +3h.
func TestForecastDropsATaskAtItsMaxQueued(t *testing.T) {
	h := time.Hour
	for _, policy := range []string{PolicyXFChain, PolicyEASY, PolicyFIFO} {
		t.Run(policy, func(t *testing.T) {
			b := newBench("n1")
			b.run(4, 2*h, h, true, "n1") // n1 full until +1h
			x := timed(1, 4, 2*h, 10*time.Minute)
			x.MaxQueuedS = 1800 // ends MAX_QUEUED_EXCEEDED at +20min
			y := timed(1, 4, h, 5*time.Minute)
			p := named(policy)
			// What Decide itself does at +1h (the live task's declared end), with n1 free again: X has expired.
			free := newBench("n1")
			acts := Decide(t0.Add(h), free.snap(x, y), p)
			if s := submitted(acts); len(s) != 1 || s[0] != y {
				t.Fatalf("Decide at +1h submits %v, want Y", s)
			}
			v := Explain(t0, b.snap(x, y), p)
			for _, e := range v.Queue {
				t.Logf("%s code %s est %v expires_before_start %v", e.TaskID, e.Code, e.EstStart, e.ExpiresBeforeStart)
			}
			if e := estOf(v, y.ID); e == nil || !e.Equal(t0.Add(h)) {
				t.Errorf("Y estimated at %v, want +1h (X has expired by then; Decide at +1h submits Y)", e)
			}
		})
	}
}

// TestForecastKeepsACanceledDependencyCanceled: C was canceled and its job is still being stopped (a live
// attempt, declared end +1h); D (after_ok C) is ended CANCELED by this very pass (DEPENDENCY_FAILED) and never
// runs. Y should start when C's GPUs come back (+1h). The forecast marks C SUCCEEDED at its declared end, so D
// (older than Y) starts there and Y is estimated after D's 5 h.
func TestForecastKeepsACanceledDependencyCanceled(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	c := b.run(4, 2*h, h, true, "n1") // C: n1 full until +1h
	c.State = mvp.StateCanceled
	d := timed(1, 4, 5*h, 30*time.Minute)
	d.AfterOK = []string{c.ID}
	y := timed(1, 4, h, 10*time.Minute)
	snap := b.snap(d, y)
	snap.Deps = map[string]mvp.State{c.ID: mvp.StateCanceled}
	ended := false
	for _, a := range Decide(t0, snap, named(PolicyXFChain)) {
		if f, ok := a.(DependencyFailed); ok && f.Task == d {
			ended = true
		}
	}
	if !ended {
		t.Fatal("Decide does not end D (DEPENDENCY_FAILED)")
	}
	v := Explain(t0, snap, named(PolicyXFChain))
	for _, e := range v.Queue {
		t.Logf("%s code %s est %v", e.TaskID, e.Code, e.EstStart)
	}
	if e := estOf(v, y.ID); e == nil || !e.Equal(t0.Add(h)) {
		t.Errorf("Y estimated at %v, want +1h: D's after_ok dependency is CANCELED, D never runs", e)
	}
}

// TestForecastGivesBackWhatItCanAttribute: a live 2 × 4 gang holds n1 and n3 until +1h, and n3 has died (not
// alive: its group cannot be attributed to an alive node). At +1h n1's 4 GPUs come back and X (2 × 4) fits n1
// and n2. The forecast drops every release of an attempt with one group it cannot attribute, so n1 is never
// given back and X has no estimate (the in-order estimate said +1h).
func TestForecastGivesBackWhatItCanAttribute(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2", "n3")
	b.run(4, 2*h, h, true, "n1", "n3")
	for k := range b.c.Nodes {
		if b.c.Nodes[k].ID == "n3" {
			b.c.Nodes[k].Alive = false
		}
	}
	x := timed(2, 4, h, 10*time.Minute)
	v := Explain(t0, b.snap(x), named(PolicyXFChain))
	if e := estOf(v, x.ID); e == nil || !e.Equal(t0.Add(h)) {
		t.Errorf("X estimated at %v, want +1h (n1 comes back at the gang's declared end)", e)
	}
}

// TestForecastFreesTheDependentsOfATaskThatExpires: Q (2 × 4, needs n1, full until +1h, and n2) ends
// MAX_QUEUED_EXCEEDED at +20min; E (after_any Q) may start once Q has ended, and n2 is free: it starts at +20min.
// The forecast runs Q (bound stripped) at +1h for 2 h, counts it SUCCEEDED at +3h, and estimates E at +3h.
func TestForecastFreesTheDependentsOfATaskThatExpires(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	b.run(4, 2*h, h, true, "n1") // n1 full until +1h
	q := timed(2, 4, 2*h, 10*time.Minute)
	q.MaxQueuedS = 1800 // ends at +20min
	e := timed(1, 4, h, 5*time.Minute)
	e.AfterAny = []string{q.ID}
	snap := b.snap(q, e)
	snap.Deps = map[string]mvp.State{q.ID: mvp.StateQueued}
	v := Explain(t0, snap, named(PolicyXFChain))
	for _, x := range v.Queue {
		t.Logf("%s code %s est %v expires_before_start %v", x.TaskID, x.Code, x.EstStart, x.ExpiresBeforeStart)
	}
	if x := estOf(v, e.ID); x == nil || !x.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("E estimated at %v, want +20min (Q has ended MAX_QUEUED_EXCEEDED, n2 is free)", x)
	}
}
