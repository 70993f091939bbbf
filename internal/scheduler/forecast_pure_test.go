package scheduler

import (
	"reflect"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// deepCopy copies v through pointers, maps and slices (a struct with unexported fields, such as time.Time, is a
// value).
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				c.Set(v) // time.Time and the like
				return c
			}
			c.Field(i).Set(deepCopy(v.Field(i)))
		}
		return c
	case reflect.Interface:
		return v // ClusterErr
	}
	return v
}

// TestExplainWritesNothing: Explain (the forecast) leaves the caller's snapshot as it was: tasks, attempts,
// the cluster's nodes and groups, Deps and Usage, with live attempts of every kind (running, not yet placed,
// canceled, judged, nodes unknown) and waiting tasks backing off, bound by max_queued_s and held by dependencies.
func TestExplainWritesNothing(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2", "n3")
	r := b.run(2, 2*h, h, true, "n1")
	unknown := b.run(2, 3*h, h, false, "n2")
	canceled := b.run(1, 3*h, h, true, "n3")
	canceled.State = mvp.StateCanceled
	judged := b.run(1, 30*time.Minute, h, true, "n3") // past its end: being stopped
	b.active[len(b.active)-1].Attempt.FailureKind = mvp.FailureMaxRuntimeExceeded
	pend := timed(1, 1, h, 2*time.Minute)
	pend.State = mvp.StateSubmitted
	b.active = append(b.active, ActiveAttempt{Task: pend, Attempt: &mvp.Attempt{No: 1, RayJobID: "p1",
		RayStatus: mvp.RayPending, CreatedAt: t0.Add(-time.Minute)}})
	g := timed(2, 4, 2*h, 50*time.Minute)
	g.Owner = "alice"
	s := timed(1, 2, h, 40*time.Minute)
	s.Owner, s.MaxQueuedS = "bob", 7200
	back := timed(1, 4, h, 30*time.Minute)
	back.State, back.LatestAttemptNo = mvp.StatePendingResources, 1
	next := t0.Add(10 * time.Minute)
	back.NextRunAt = &next
	d := timed(1, 1, h, 20*time.Minute)
	d.AfterOK = []string{r.ID}
	e := timed(1, 1, h, 10*time.Minute)
	e.AfterAny = []string{g.ID}
	snap := b.snap(g, s, back, d, e)
	snap.Deps = map[string]mvp.State{r.ID: mvp.StateRunning, g.ID: mvp.StateQueued}
	snap.Usage = map[string]float64{"alice": 1000, "bob": 10}
	_, _ = unknown, judged
	for _, name := range PolicyNames {
		p := named(name)
		p.FairShare, p.StarvationBound, p.StopGrace = true, 45*time.Minute, time.Minute
		p.Users = map[string]UserLimits{"alice": {MaxGPUs: 8}}
		before := deepCopy(reflect.ValueOf(snap)).Interface().(Snapshot)
		Explain(t0, snap, p)
		if !reflect.DeepEqual(before, snap) {
			t.Fatalf("%s: Explain wrote the snapshot:\nbefore %+v\nafter  %+v", name, before, snap)
		}
	}
}
