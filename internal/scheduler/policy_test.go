package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// timed is a queued PPO task of nnodes × gpus that declares rt and arrived ago before t0.
func timed(nnodes, gpus int, rt, ago time.Duration) *mvp.Task {
	t := task(mvp.WorkloadPPO, nnodes, gpus, mvp.StateQueued)
	t.MaxRuntimeS = int(rt / time.Second)
	t.CreatedAt = t0.Add(-ago)
	return t
}

// bench is a cluster of 4-GPU workers and the tasks running on it; each running task is placed on the nodes given
// (its GPUs and CPUs taken from their availability, its driver on the first of them).
type bench struct {
	c      *mvp.ClusterView
	active []ActiveAttempt
}

func newBench(ids ...string) *bench {
	var ns []mvp.Node
	for _, id := range ids {
		ns = append(ns, worker(id, 4, 48))
	}
	return &bench{c: cluster(ns...)}
}

// run places a running task of len(nodes) × gpus that started ago and declares rt. known says whether Decide is
// told its nodes (ActiveAttempt.Nodes) or must work them out from the availability.
func (b *bench) run(gpus int, rt, ago time.Duration, known bool, nodes ...string) *mvp.Task {
	t := task(mvp.WorkloadPPO, len(nodes), gpus, mvp.StateRunning)
	t.MaxRuntimeS = int(rt / time.Second)
	jobID := fmt.Sprintf("%08x", seq)
	for _, id := range nodes {
		for k := range b.c.Nodes {
			if n := &b.c.Nodes[k]; n.ID == id {
				n.Available["GPU"] -= float64(gpus)
				n.Available["CPU"] -= float64(3 * gpus)
			}
		}
		b.c.Groups = append(b.c.Groups, mvp.PlacementGroup{CreatorJobID: jobID, State: "CREATED"})
	}
	start := t0.Add(-ago)
	a := ActiveAttempt{Task: t, Attempt: &mvp.Attempt{No: 1, RayJobID: jobID, RayStatus: mvp.RayRunning,
		StartTime: &start, DriverNodeID: nodes[0]}}
	if known {
		a.Nodes = nodes
	}
	b.active = append(b.active, a)
	return t
}

func (b *bench) snap(queue ...*mvp.Task) Snapshot {
	return Snapshot{Cluster: b.c, Queue: queue, Active: b.active}
}

func named(name string) Policy {
	p := policy()
	p.Name = name
	return p
}

// plannedOn returns the nodes of the Submit of t among acts, or nil.
func plannedOn(acts []Action, t *mvp.Task) []string {
	for _, a := range acts {
		if s, ok := a.(Submit); ok && s.Task == t {
			return s.Nodes
		}
	}
	return nil
}

// waitOf returns the Wait for t among acts, or nil.
func waitOf(acts []Action, t *mvp.Task) *Wait {
	for _, a := range acts {
		if w, ok := a.(*Wait); ok && w.Task == t {
			return w
		}
	}
	return nil
}

func TestPolicies(t *testing.T) {
	type tc struct {
		name   string
		policy string
		snap   func() (Snapshot, []string)
	}
	h := time.Hour
	cases := []tc{
		{name: "easy: a short task backfills past a blocked gang when it ends before the reservation", policy: PolicyEASY,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 2*h, h, true, "n1") // n1 free again at +1h
				big, small := timed(2, 4, 2*h, 10*time.Minute), timed(1, 4, 30*time.Minute, 5*time.Minute)
				return b.snap(big, small), []string{"wait:" + big.ID, "submit:" + small.ID}
			}},
		{name: "fifo: the same short task waits behind the gang", policy: PolicyFIFO,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 2*h, h, true, "n1")
				big, small := timed(2, 4, 2*h, 10*time.Minute), timed(1, 4, 30*time.Minute, 5*time.Minute)
				return b.snap(big, small), []string{"wait:" + big.ID, "wait:" + small.ID}
			}},
		{name: "easy: a task that would outlive the reservation on its nodes yields", policy: PolicyEASY,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 2*h, h, true, "n1")
				big, long := timed(2, 4, 2*h, 10*time.Minute), timed(1, 4, 2*h, 5*time.Minute)
				return b.snap(big, long), []string{"wait:" + big.ID, "wait:" + long.ID}
			}},
		{name: "easy: a long task that Ray would put on capacity the reservation needs yields, though n2 could hold it",
			policy: PolicyEASY, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2", "n3")
				b.run(4, 2*h, h, true, "n1")  // n1 free at +1h
				b.run(2, 10*h, h, true, "n2") // n2 keeps 2 GPUs busy until +9h
				big := timed(2, 4, h, 20*time.Minute)
				// Best fit would put it on n2, which the gang does not need at +1h; Ray puts it on n3, the node with
				// the most room, which the gang needs (TestBackfillYieldsWhereRayMayPlaceItOnTheReservation).
				onN2 := timed(1, 2, 10*h, 10*time.Minute)
				onN3 := timed(1, 4, 10*h, 5*time.Minute) // only n3 holds it: the gang would lack a node at +1h
				return b.snap(big, onN2, onN3), []string{"wait:" + big.ID, "wait:" + onN2.ID, "wait:" + onN3.ID}
			}},
		{name: "sjf: the shortest declared task goes first and passes a gang it then delays", policy: PolicySJF,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 2*h, h, true, "n1")
				big, long, short := timed(2, 4, h, 30*time.Minute), timed(1, 4, 5*h, 20*time.Minute), timed(1, 4, 2*h, time.Minute)
				return b.snap(big, long, short), []string{"wait:" + big.ID, "wait:" + long.ID, "submit:" + short.ID}
			}},
		{name: "xfbf: of two backfill candidates for one slot, the larger expansion factor goes first", policy: PolicyXFBF,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1") // reservation at +5h
				big := timed(2, 4, h, 2*h)
				older := timed(1, 4, 4*h, h)                         // (1h + 4h) / 4h = 1.25
				newer := timed(1, 4, 10*time.Minute, 10*time.Minute) // (10m + 10m) / 10m = 2
				return b.snap(big, older, newer), []string{"wait:" + big.ID, "wait:" + older.ID, "submit:" + newer.ID}
			}},
		{name: "easy: the same two candidates backfill in arrival order", policy: PolicyEASY,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1")
				big := timed(2, 4, h, 2*h)
				older, newer := timed(1, 4, 4*h, h), timed(1, 4, 10*time.Minute, 10*time.Minute)
				return b.snap(big, older, newer), []string{"wait:" + big.ID, "submit:" + older.ID, "wait:" + newer.ID}
			}},
		{name: "xfpi: a candidate older than a waiting whole-cluster gang inherits its expansion factor and goes first",
			policy: PolicyXFPI, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1") // reservation for the oldest gang at +5h
				holder := timed(2, 4, h, 2*h)
				older := timed(1, 4, 4*h, h)                         // own (1h + 4h) / 4h = 1.25; inherits 6
				gang := timed(2, 4, 10*time.Minute, 50*time.Minute)  // (50m + 10m) / 10m = 6
				newer := timed(1, 4, 10*time.Minute, 10*time.Minute) // (10m + 10m) / 10m = 2
				return b.snap(holder, older, gang, newer),
					[]string{"wait:" + holder.ID, "submit:" + older.ID, "wait:" + gang.ID, "wait:" + newer.ID}
			}},
		{name: "xfbf: the same queue, without inheritance the newer task goes first", policy: PolicyXFBF,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1")
				holder, older := timed(2, 4, h, 2*h), timed(1, 4, 4*h, h)
				gang, newer := timed(2, 4, 10*time.Minute, 50*time.Minute), timed(1, 4, 10*time.Minute, 10*time.Minute)
				return b.snap(holder, older, gang, newer),
					[]string{"wait:" + holder.ID, "wait:" + older.ID, "wait:" + gang.ID, "submit:" + newer.ID}
			}},
		{name: "xfpi: nothing to inherit from a gang that does not need the whole cluster (as xfbf)", policy: PolicyXFPI,
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2", "n3")
				b.run(4, 6*h, h, true, "n1")
				b.run(4, 6*h, h, true, "n2") // reservation for the oldest gang (n1 + n2, or n3 with one of them) at +5h
				holder, older := timed(2, 4, h, 2*h), timed(1, 4, 4*h, h)
				gang, newer := timed(2, 4, 10*time.Minute, 50*time.Minute), timed(1, 4, 10*time.Minute, 10*time.Minute)
				return b.snap(holder, older, gang, newer),
					[]string{"wait:" + holder.ID, "wait:" + older.ID, "wait:" + gang.ID, "submit:" + newer.ID}
			}},
		{name: "xfpi: a gang behind both candidates lends its factor to both: they tie and go in queue order",
			policy: PolicyXFPI, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1")
				holder, older := timed(2, 4, h, 2*h), timed(1, 4, 4*h, h)
				newer := timed(1, 4, 10*time.Minute, 10*time.Minute)
				gang := timed(2, 4, time.Minute, 5*time.Minute) // (5m + 1m) / 1m = 6: both candidates hold it up
				return b.snap(holder, older, newer, gang),
					[]string{"wait:" + holder.ID, "submit:" + older.ID, "wait:" + newer.ID, "wait:" + gang.ID}
			}},
		{name: "xfchain: on an empty cluster a short whole-cluster gang goes ahead of the long task that would drain it",
			policy: PolicyXFChain, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				// Started first, the 2-h task would hold the gang back 2 h; the 10-min gang holds it back 10 min.
				long := timed(1, 1, 2*h, h)
				gang := timed(2, 4, 10*time.Minute, 30*time.Minute)
				return b.snap(long, gang), []string{"wait:" + long.ID, "submit:" + gang.ID}
			}},
		{name: "xfbf: the same queue without chaining: the long task starts and the gang waits for its drain",
			policy: PolicyXFBF, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				long, gang := timed(1, 1, 2*h, h), timed(2, 4, 10*time.Minute, 30*time.Minute)
				return b.snap(long, gang), []string{"submit:" + long.ID, "wait:" + gang.ID}
			}},
		{name: "xfchain: no chaining past a task that would then wait longer than the gang would (Jackson's test)",
			policy: PolicyXFChain, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				// 3 h waited + 10 min > 30 min waited + a 2-h drain.
				long, gang := timed(1, 1, 2*h, 3*h), timed(2, 4, 10*time.Minute, 30*time.Minute)
				return b.snap(long, gang), []string{"submit:" + long.ID, "wait:" + gang.ID}
			}},
		{name: "xfchain: no chaining when the tasks it displaces would lose more in all than the drain (Smith's test)",
			policy: PolicyXFChain, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				// 8 tasks × 20 min delayed = 160 min ≥ the 30-min drain they would cause.
				var q []*mvp.Task
				for k := 0; k < 8; k++ {
					q = append(q, timed(1, 1, 30*time.Minute, h))
				}
				gang := timed(2, 4, 20*time.Minute, 30*time.Minute)
				var want []string
				for _, t := range q {
					want = append(want, "submit:"+t.ID)
				}
				return b.snap(append(q, gang)...), append(want, "wait:"+gang.ID)
			}},
		{name: "xfchain: only the tasks ahead of the gang count against it, not those behind it",
			policy: PolicyXFChain, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				// Ahead: one 2-h task (1 × 20 min < 2 h). Counting the 7 behind that would also fit would make it
				// 8 × 20 min ≥ 2 h.
				long := timed(1, 1, 2*h, h)
				gang := timed(2, 4, 20*time.Minute, 30*time.Minute)
				q, want := []*mvp.Task{long, gang}, []string{"wait:" + long.ID, "submit:" + gang.ID}
				for k := 0; k < 7; k++ {
					t := timed(1, 1, 30*time.Minute, time.Minute)
					q, want = append(q, t), append(want, "wait:"+t.ID)
				}
				return b.snap(q...), want
			}},
		{name: "xfchain: a gang that does not fit now is not chained (the normal reservation applies)",
			policy: PolicyXFChain, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(1, 2*h, h, true, "n1")
				long, gang := timed(1, 1, 2*h, h), timed(2, 4, 10*time.Minute, 30*time.Minute)
				return b.snap(long, gang), []string{"submit:" + long.ID, "wait:" + gang.ID}
			}},
		{name: "no policy named: the default (xfchain)", policy: "",
			snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2")
				b.run(4, 6*h, h, true, "n1")
				big := timed(2, 4, h, 2*h)
				older, newer := timed(1, 4, 4*h, h), timed(1, 4, 10*time.Minute, 10*time.Minute)
				return b.snap(big, older, newer), []string{"wait:" + big.ID, "wait:" + older.ID, "submit:" + newer.ID}
			}},
		{name: "easy: a task without a declared end that blocks: only what the gang will not need backfills",
			policy: PolicyEASY, snap: func() (Snapshot, []string) {
				b := newBench("n1", "n2", "n3")
				b.run(4, 0, h, true, "n1") // no max_runtime_s and no default: no end is known
				b.run(2, 0, h, true, "n2")
				big := timed(2, 4, h, 20*time.Minute)
				// The gang is planned on an empty cluster (n1 + n2, the first of equal nodes); n3 is not needed.
				small := timed(1, 4, time.Minute, time.Minute)
				return b.snap(big, small), []string{"wait:" + big.ID, "submit:" + small.ID}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, want := c.snap()
			got := summary(Decide(t0, snap, named(c.policy)))
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestWaitCodes(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	b.run(2, 2*h, h, true, "n1")                // n1: 2 free, free again at +1h
	b.run(2, 4*h, h, true, "n2")                // n2: 2 free, free again at +3h
	frag := timed(1, 4, h, time.Hour)           // 4 free in all, on two nodes: fragmented
	busy := timed(2, 4, 10*h, 50*time.Minute)   // 8 GPUs: more than are free in all
	behind := timed(2, 2, 10*h, 40*time.Minute) // fits now, but needs n1 too, and outlives the reservation there
	never := timed(3, 1, h, 30*time.Minute)     // three nodes: never
	backing := timed(1, 1, h, 20*time.Minute)   // backing off: left alone
	backing.State = mvp.StatePendingResources
	later := t0.Add(time.Minute)
	backing.NextRunAt = &later
	acts := Decide(t0, b.snap(frag, busy, behind, never, backing), named(PolicyEASY))

	w := waitOf(acts, frag)
	if w == nil || w.Code() != CodeFragmented || w.LargestFreeGPUs() != 2 || !strings.Contains(w.Reason, "largest free node has 2") {
		t.Fatalf("fragmented: %+v", w)
	}
	// Per node: n1 has 4 free at +1h (n2 only at +3h); counted over the cluster, 4 GPUs are free already.
	if w.EstStart() == nil || !w.EstStart().Equal(t0.Add(h)) || w.Position != 1 {
		t.Errorf("reservation of the fragmented gang: %+v", w)
	}
	if w := waitOf(acts, busy); w == nil || w.Code() != CodeGPUsBusy || w.EstStart() != nil || w.Position != 2 {
		t.Errorf("gpus_busy: %+v", w)
	}
	// The task yielded to is named in YieldsTo only, never in the sentence: the API hides YieldsTo from a user
	// who does not own that task, and the sentence is shown to the waiting task's owner as it is.
	if w := waitOf(acts, behind); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != frag.ID ||
		strings.Contains(w.Reason, frag.ID) || !strings.Contains(w.Reason, "reservation") || w.Position != 3 {
		t.Errorf("behind_reservation: %+v", w)
	}
	if w := waitOf(acts, never); w == nil || w.Code() != CodeNeverFits || !w.Never() || w.Position != 5 {
		t.Errorf("never_fits: %+v", w)
	}
	if w := waitOf(acts, backing); w != nil {
		t.Errorf("a task backing off got a wait: %+v", w)
	}

	p := named(PolicyEASY)
	p.MaxRunning = 2
	if w := waitOf(Decide(t0, b.snap(frag), p), frag); w == nil || w.Code() != CodeMaxRunning {
		t.Errorf("max_running_tasks: %+v", w)
	}
}

// Without the nodes of a running task, Decide attributes its GPUs to a node that shows them in use.
func TestReservationFromUnknownNodes(t *testing.T) {
	b := newBench("n1", "n2")
	b.run(4, 3*time.Hour, time.Hour, false, "n2")
	big := timed(2, 4, time.Hour, time.Minute)
	w := waitOf(Decide(t0, b.snap(big), named(PolicyXFBF)), big)
	if w == nil || w.EstStart() == nil || !w.EstStart().Equal(t0.Add(2*time.Hour)) {
		t.Errorf("got %+v", w)
	}
}

func TestExplain(t *testing.T) {
	h := time.Hour
	b := newBench("n1")
	b.run(4, 2*h, h, true, "n1") // free at +1h
	a := timed(1, 4, 2*h, 30*time.Minute)
	bb := timed(1, 2, h, 20*time.Minute)
	c := timed(1, 2, h, 10*time.Minute)
	never := timed(2, 1, h, 5*time.Minute)
	for _, pol := range []string{PolicyFIFO, PolicyXFBF} {
		v := Explain(t0, b.snap(a, bb, c, never), named(pol))
		if len(v.Nodes) != 1 || v.Nodes[0].FreeGPUs != 0 || v.Nodes[0].TotalGPUs != 4 || !v.ClusterKnown {
			t.Errorf("%s nodes: %+v", pol, v.Nodes)
		}
		if len(v.Reservations) != 1 || v.Reservations[0].TaskID != a.ID || v.Reservations[0].Start == nil ||
			!v.Reservations[0].Start.Equal(t0.Add(h)) || strings.Join(v.Reservations[0].Nodes, ",") != "n1" {
			t.Errorf("%s reservations: %+v", pol, v.Reservations)
		}
		var got []string
		for _, q := range v.Queue {
			est := "-"
			if q.EstStart != nil {
				est = q.EstStart.Sub(t0).String()
			}
			got = append(got, fmt.Sprintf("%d:%s:%s", q.Position, q.Code, est))
		}
		// a at +1h (n1 frees), then b and c share n1 after a's declared 2 h.
		want := "1:gpus_busy:1h0m0s 2:gpus_busy:3h0m0s 3:gpus_busy:3h0m0s 4:never_fits:-"
		if pol == PolicyFIFO {
			want = "1:gpus_busy:1h0m0s 2:behind_reservation:3h0m0s 3:behind_reservation:3h0m0s 4:never_fits:-"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s queue:\n got  %s\n want %s", pol, strings.Join(got, " "), want)
		}
	}
	if v := Explain(t0, Snapshot{Queue: []*mvp.Task{a}}, named(PolicyXFBF)); v.ClusterKnown || len(v.Queue) != 1 ||
		v.Queue[0].Code != CodeClusterUnknown {
		t.Errorf("no cluster: %+v", v)
	}
}

// A wait is written again only when its sentence changes, not when its position moves.
func TestWaitNotRewrittenForPosition(t *testing.T) {
	b := newBench("n1", "n2")
	b.run(4, 2*time.Hour, time.Hour, true, "n1")
	b.run(4, 2*time.Hour, time.Hour, true, "n2")
	x := timed(1, 1, time.Hour, 10*time.Minute)
	w := waitOf(Decide(t0, b.snap(x), named(PolicyXFBF)), x)
	if w == nil || w.Position != 1 {
		t.Fatalf("got %+v", w)
	}
	x.State, x.PendingReason = mvp.StatePendingResources, w.Reason
	first := timed(1, 1, time.Hour, time.Hour)
	if acts := Decide(t0, b.snap(first, x), named(PolicyXFBF)); waitOf(acts, x) != nil {
		t.Errorf("a wait rewritten only because its position moved: %v", summary(acts))
	}
}

// Under fifo the tasks behind the head name it in YieldsTo, not in their sentence: a new head does not rewrite them.
func TestFIFOBehindSentenceStable(t *testing.T) {
	b := newBench("n1")
	b.run(4, 2*time.Hour, time.Hour, true, "n1")
	head, behind := timed(1, 4, time.Hour, time.Hour), timed(1, 1, time.Hour, time.Minute)
	w := waitOf(Decide(t0, b.snap(head, behind), named(PolicyFIFO)), behind)
	if w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != head.ID {
		t.Fatalf("got %+v", w)
	}
	behind.State, behind.PendingReason = mvp.StatePendingResources, w.Reason
	newHead := timed(1, 2, time.Hour, 2*time.Hour)
	if acts := Decide(t0, b.snap(newHead, behind), named(PolicyFIFO)); waitOf(acts, behind) != nil {
		t.Errorf("a new head rewrote the task behind it: %v", summary(acts))
	}
}

// A task held by its dependencies is listed by Explain with code dependency, after the others, and not started.
func TestExplainDependency(t *testing.T) {
	b := newBench("n1")
	dep := timed(1, 1, time.Hour, time.Hour)
	held := timed(1, 1, time.Hour, 30*time.Minute)
	held.AfterOK = []string{"mvp2-ppo-20251223-000000-aaaa"}
	snap := b.snap(held, dep)
	snap.Deps = map[string]mvp.State{"mvp2-ppo-20251223-000000-aaaa": mvp.StateRunning}
	v := Explain(t0, snap, named(PolicyXFBF))
	if len(v.Starting) != 1 || v.Starting[0] != dep.ID || len(v.Queue) != 1 || v.Queue[0].TaskID != held.ID ||
		v.Queue[0].Code != CodeDependency || v.Queue[0].Position != 1 {
		t.Errorf("got starting %v queue %+v", v.Starting, v.Queue)
	}
}

// TestChainable checks chainDrain's two exchange tests at their edges.
func TestChainable(t *testing.T) {
	h := 3600.0
	cases := []struct {
		name                   string
		n                      int
		run, wait, drain, wmax float64
		want                   bool
	}{
		{"nothing displaced: nothing to chain past", 0, 0.1 * h, h, 2 * h, 0, false},
		{"one task, short gang, long drain", 1, 0.1 * h, 0.5 * h, 2 * h, h, true},
		{"Smith: n·run equal to the drain is not less", 4, 0.5 * h, 0, 2 * h, 0, false},
		{"Smith: just below", 4, 0.49 * h, 0, 2 * h, 0, true},
		{"Jackson: equal waits still chain", 1, 0.5 * h, h, 2 * h, 2.5 * h, true},
		{"Jackson: a displaced task would wait longer than the gang would", 1, 0.5 * h, h, 2 * h, 2.6 * h, false},
	}
	for _, c := range cases {
		if got := chainable(c.n, c.run, c.wait, c.drain, c.wmax); got != c.want {
			t.Errorf("%s: chainable = %v, want %v", c.name, got, c.want)
		}
	}
}

// The queue's node table showed Ray's free GPUs: an attempt just submitted, whose placement groups Ray has not
// made yet, holds GPUs the scheduler counts as taken while Ray still shows them free. During a burst every GPU was
// taken by admitted tasks, the table said 4 of 4 free on both nodes, and every waiting task said "fewer GPUs are
// free now". The table shows what the scheduler counts free, and Ray's own figure beside it. Found in a
// walk-through.
func TestExplainCountsAdmittedGPUsAsTaken(t *testing.T) {
	b := newBench("w1", "w2")
	admitted := task(mvp.WorkloadPPO, 2, 4, mvp.StateSubmitted) // its groups not placed yet: Ray shows them free
	b.active = append(b.active, ActiveAttempt{Task: admitted, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}})
	waiting := task(mvp.WorkloadPPO, 1, 1, mvp.StateQueued)
	v := Explain(t0, b.snap(waiting), named(PolicyXFChain))
	if len(v.Nodes) != 2 {
		t.Fatalf("nodes %+v", v.Nodes)
	}
	for _, n := range v.Nodes {
		if n.FreeGPUs != 0 || n.RayFreeGPUs != 4 {
			t.Errorf("node %s: free %g (Ray's %g); want 0 free for the scheduler, Ray's 4", n.NodeID, n.FreeGPUs, n.RayFreeGPUs)
		}
	}
}

// TestABackingOffGangKeepsItsPlace: a gang that lost a race for GPUs (verl's resource check failed: something the
// view did not show held GPUs for a moment) backs off until next_run_at. It used to drop out of the queue
// meanwhile: a long task behind it started at once and the gang then waited for that task's whole run (walk-through
// 9 on real Ray: 11 minutes for a race of seconds). Under the reservation policies it now holds the reservation,
// starting no earlier than next_run_at: only tasks that end before then, or use capacity it does not need, start.
// It gets no Wait (its reason, the requeue's, stays); under fifo it holds the line; sjf has no reservations.
func TestABackingOffGangKeepsItsPlace(t *testing.T) {
	gang := timed(2, 4, time.Hour, 10*time.Minute)
	gang.State, gang.LatestAttemptNo = mvp.StatePendingResources, 1
	retry := t0.Add(time.Minute)
	gang.NextRunAt = &retry
	long := timed(1, 4, 700*time.Second, 5*time.Minute)
	short := timed(1, 4, 30*time.Second, 4*time.Minute)
	for _, c := range []struct {
		policy string
		want   []*mvp.Task
	}{
		{PolicyXFChain, []*mvp.Task{short}}, {PolicyEASY, []*mvp.Task{short}}, {PolicyXFBF, []*mvp.Task{short}},
		{PolicySJBF, []*mvp.Task{short}}, {PolicyXFPI, []*mvp.Task{short}},
		{PolicyFIFO, nil}, {PolicySJF, []*mvp.Task{short, long}},
	} {
		b := newBench("w1", "w2") // free again: what held GPUs behind mvp's back has ended
		acts := Decide(t0, b.snap(gang, long, short), named(c.policy))
		got := ids(submitted(acts))
		sort.Strings(got)
		want := ids(c.want)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: submitted %v, want %v", c.policy, got, want)
		}
		if w := waitOf(acts, gang); w != nil {
			t.Errorf("%s: the backing-off gang got a Wait %+v; its requeue's reason stays", c.policy, w)
		}
		if c.policy == PolicySJF || c.policy == PolicyFIFO {
			continue
		}
		if w := waitOf(acts, long); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != gang.ID {
			t.Errorf("%s: the long task's wait %+v, want behind_reservation yielding to the gang", c.policy, w)
		}
		v := Explain(t0, b.snap(gang, long, short), named(c.policy))
		if len(v.Reservations) != 1 || v.Reservations[0].TaskID != gang.ID || v.Reservations[0].Start == nil ||
			!v.Reservations[0].Start.Equal(retry) {
			t.Errorf("%s: reservations %+v, want the gang's at its next_run_at %v", c.policy, v.Reservations, retry)
		}
	}
}

// TestABackingOffTaskIsNeverStartedEarly (review): drain chaining picked the first whole-cluster gang in the order
// without asking whether it backed off, and submitted it seconds after its lost race. The queue view estimated
// "now" for a task behind a backing-off holder. Under fifo a backing-off task over its owner's quota held the line.
func TestABackingOffTaskIsNeverStartedEarly(t *testing.T) {
	backingOff := func(tk *mvp.Task) *mvp.Task {
		tk.State, tk.LatestAttemptNo = mvp.StatePendingResources, 1
		retry := t0.Add(time.Minute)
		tk.NextRunAt = &retry
		return tk
	}
	t.Run("chaining", func(t *testing.T) {
		b := newBench("n1", "n2")
		long := timed(1, 1, 2*time.Hour, time.Hour)
		gang := backingOff(timed(2, 4, 10*time.Minute, 30*time.Minute))
		for _, s := range submitted(Decide(t0, b.snap(long, gang), named(PolicyXFChain))) {
			if s == gang {
				t.Errorf("the gang backing off until %v was submitted at %v", gang.NextRunAt, t0)
			}
		}
	})
	t.Run("estimates", func(t *testing.T) {
		gang := backingOff(timed(2, 4, 10*time.Minute, 10*time.Minute))
		long := timed(1, 4, 700*time.Second, 5*time.Minute)
		v := Explain(t0, newBench("w1", "w2").snap(gang, long), named(PolicyEASY))
		for _, e := range v.Queue {
			if e.TaskID == long.ID && (e.EstStart == nil || e.EstStart.Before(t0.Add(11*time.Minute))) {
				t.Errorf("the long task behind the backing-off gang: est_start %v, want ≥ %v (the gang's run first)",
					e.EstStart, t0.Add(11*time.Minute))
			}
		}
	})
	t.Run("fifo quota", func(t *testing.T) {
		b := newBench("w1", "w2")
		b.run(4, time.Hour, time.Minute, true, "w1")
		b.active[0].Task.Owner = "alice"
		a := backingOff(timed(1, 4, time.Hour, 10*time.Minute))
		a.Owner = "alice"
		bob := timed(1, 4, time.Hour, 5*time.Minute)
		bob.Owner = "bob"
		p := named(PolicyFIFO)
		p.Users = map[string]UserLimits{"alice": {MaxGPUs: 4}}
		if sub := submitted(Decide(t0, b.snap(a, bob), p)); len(sub) != 1 || sub[0] != bob {
			t.Errorf("submitted %v, want bob's task: alice's, over her quota, holds no line", ids(sub))
		}
	})
}

// TestDecidePlansWhereRayPlaces: Ray, not mvp, places a verl group, on the node with the most room (its
// LeastResourceScorer), so Decide plans there too. Planned by best fit, a 1-GPU task went on the node with one GPU
// free and a 1×4 gang of the same pass on the empty node; Ray put the 1-GPU task on the empty node and the gang's
// group could not be placed (a lost race, an attempt wasted and the gang requeued). Planned as Ray places, the gang
// is seen not to fit and waits.
func TestDecidePlansWhereRayPlaces(t *testing.T) {
	for _, name := range PolicyNames {
		b := newBench("w1", "w2")
		b.run(3, time.Hour, 0, true, "w1") // w1: 1 GPU free; w2: 4
		small := timed(1, 1, time.Hour, 2*time.Minute)
		gang := timed(1, 4, time.Hour, time.Minute)
		acts := Decide(t0, b.snap(small, gang), named(name))
		onto := plannedOn(acts, small)
		if !slices.Equal(onto, []string{"w2"}) {
			t.Errorf("%s: the 1-GPU task was planned on %v, not on w2 where Ray puts it: %v", name, onto, acts)
		}
		if waitOf(acts, gang) == nil {
			t.Errorf("%s: the 1×4 gang was admitted though Ray puts the 1-GPU task on the only node that holds it: %v", name, acts)
		}
	}
}

// TestBackfillYieldsWhereRayMayPlaceItOnTheReservation: Ray, not mvp, chooses the node of a verl placement group
// (STRICT_PACK goes to the node with the most room, ties in no fixed order). A task that outlives the reserved start
// may be backfilled only if every node Ray may choose for it leaves the reserved gang room at its start. Found on
// real Ray: with one GPU free on each of two workers and the reservation on the first, a 1-GPU task mvp planned on
// the second landed on the first in 2 of 3 tries and delayed the reserved gang by its whole declared run.
func TestBackfillYieldsWhereRayMayPlaceItOnTheReservation(t *testing.T) {
	for _, name := range []string{PolicyEASY, PolicyXFBF, PolicyXFChain} {
		for _, tc := range []struct {
			name  string
			small *mvp.Task
		}{
			{"one group, a tie of free GPUs", timed(1, 1, time.Hour, time.Minute)},
			{"two groups, one may land on the reserved node", timed(2, 1, time.Hour, time.Minute)},
		} {
			b := newBench("w1", "w2", "w3")
			b.run(3, time.Minute, 0, true, "w1")      // w1: 1 GPU free now, 4 in a minute
			b.run(3, 10*time.Hour, 0, true, "w2")     // w2: 1 GPU free for hours
			b.run(3, 10*time.Hour, 0, true, "w3")     // w3: 1 GPU free for hours
			gang := timed(1, 4, time.Hour, time.Hour) // reserved on w1 in a minute
			acts := Decide(t0, b.snap(gang, tc.small), named(name))
			w := waitOf(acts, tc.small)
			if w == nil || w.Code() != CodeBehindReservation {
				t.Errorf("%s, %s: the task that may land on w1 and outlive the reserved start was not held behind the reservation: %v", name, tc.name, acts)
			}
		}
	}
}

// TestBackfillUsesANodeTheReservationDoesNotNeed: a walk-through's queue said of a 1-GPU task "waiting behind
// the task that holds a reservation for the GPUs this task would take" while 3 GPUs stood free on a node the
// reserved 1 × 4 gang was not planned on: backfill tried the task on its best-fit node only (the reserved node,
// with 1 GPU free), found that it would delay the reservation there, and held it, though on the other node it
// uses only capacity the reservation does not need (specs/design.md, "Backfill").
func TestBackfillUsesANodeTheReservationDoesNotNeed(t *testing.T) {
	for _, name := range []string{PolicyEASY, PolicyXFBF, PolicyXFChain} {
		b := newBench("w1", "w2")
		b.run(1, 10*time.Minute, 0, true, "w1")
		for range 3 {
			b.run(1, time.Minute, 0, true, "w2")
		}
		gang := timed(1, 4, time.Hour, time.Hour)
		small := timed(1, 1, time.Hour, time.Minute)
		acts := Decide(t0, b.snap(gang, small), named(name))
		onto := plannedOn(acts, small)
		if !slices.Equal(onto, []string{"w1"}) {
			w := waitOf(acts, small)
			t.Errorf("%s: the 1-GPU task was not started on w1 (3 GPUs free, not reserved): %s %q", name, w.Code(), w.Reason)
		}
	}
}

// TestAGangsRemovedGroupsAreFreeBeforeTheReportsSayIt (issue 13, found by CI on real Ray): Ray drops a placement
// group from its table some 60–110 ms before the node's report shows its GPUs free. A pass in that moment saw the
// ended 3-GPU task hold nothing (its group removed) and its node still 1 GPU free: the 1 × 4 gang reserved on that
// node no longer fitted there ever, its reservation moved to the other node's end in 15 minutes, and a 1-GPU task
// declaring 10 minutes was backfilled; Ray put it on the freed node (the most room), and the gang waited for it. The
// GPUs of a group removed within ReportLag of the reading are given back now in the reservation's view, so the gang
// keeps its reservation on that node, starting now, and the task waits behind it; admission waits for the report
// (a node that died under a run reads alive for a moment with its groups removed: TestWorkerNodeDeathIsRetried).
func TestAGangsRemovedGroupsAreFreeBeforeTheReportsSayIt(t *testing.T) {
	bundles := []map[string]float64{{"GPU": 1, "CPU": 3}, {"GPU": 1, "CPU": 3}, {"GPU": 1, "CPU": 3}}
	for _, name := range []string{PolicyEASY, PolicyXFBF, PolicyXFChain} {
		for _, tc := range []struct {
			name  string
			w1    float64 // w1's GPUs free in the report
			ago   time.Duration
			admit bool // the gang starts now
		}{
			{"the report lags", 1, 50 * time.Millisecond, false},
			{"the report caught up", 4, 50 * time.Millisecond, true},
			{"the report caught up long ago", 4, time.Minute, true},
		} {
			b := newBench("w1", "w2")
			b.run(3, 2*time.Minute, 40*time.Second, true, "w1") // ended: its group removed, its job not yet followed
			b.run(3, 15*time.Minute, 20*time.Second, true, "w2")
			g := &b.c.Groups[0]
			g.State, g.Node, g.Bundles, g.RemovedNs = "REMOVED", "w1", bundles, t0.Add(-tc.ago).UnixNano()
			b.c.Nodes[1].Available["GPU"], b.c.Nodes[1].Available["CPU"] = tc.w1, 48-3*(4-tc.w1)
			gang := timed(1, 4, time.Minute, 30*time.Second)
			small := timed(1, 1, 10*time.Minute, 10*time.Second)
			snap := b.snap(gang, small)
			acts := Decide(t0, snap, named(name))
			onto := plannedOn(acts, gang)
			switch {
			case tc.admit && !slices.Equal(onto, []string{"w1"}):
				w := waitOf(acts, gang)
				t.Errorf("%s, %s: the gang was not admitted onto w1: %s %q", name, tc.name, w.Code(), w.Reason)
			case !tc.admit && onto != nil:
				t.Errorf("%s, %s: the gang was admitted onto %v before the report shows w1's GPUs free", name, tc.name, onto)
			case !tc.admit:
				v := Explain(t0, snap, named(name))
				if len(v.Reservations) == 0 || v.Reservations[0].TaskID != gang.ID || v.Reservations[0].Start == nil ||
					!v.Reservations[0].Start.Equal(t0) || !slices.Equal(v.Reservations[0].Nodes, []string{"w1"}) {
					t.Errorf("%s, %s: reservations %+v, want the gang's on w1 starting now", name, tc.name, v.Reservations)
				}
			}
			if w := waitOf(acts, small); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != gang.ID {
				t.Errorf("%s, %s: the 1-GPU task was not held behind the gang: %v", name, tc.name, acts)
			}
		}
	}
}

// TestATaskWaitsWhereRayMayPutItBeforeAGangBeingPlaced (issue 13): Ray places a gang's groups when its driver asks
// for them, seconds after the submit, and a task submitted meanwhile (in the same pass, or before the gang's groups
// are placed) may ask first. Ray puts a group on the node with the most room: a 1-GPU task admitted in the pass that
// admitted a 1 × 4 gang onto the only empty node went there if its driver asked first, and the gang waited for its
// whole run. Such a task waits until the gang's groups are placed, naming the gang; where Ray's choice cannot hurt
// the gang it starts at once.
func TestATaskWaitsWhereRayMayPutItBeforeAGangBeingPlaced(t *testing.T) {
	for _, name := range PolicyNames {
		t.Run(name+": the same pass", func(t *testing.T) {
			b := newBench("w1", "w2")
			b.run(3, 15*time.Minute, time.Minute, true, "w2") // w2: 1 GPU free; w1 empty
			gang := timed(1, 4, time.Minute, 30*time.Second)
			small := timed(1, 1, 10*time.Minute, 10*time.Second)
			acts := Decide(t0, b.snap(gang, small), named(name))
			if onto := plannedOn(acts, gang); !slices.Equal(onto, []string{"w1"}) {
				t.Fatalf("%s: the gang was not admitted onto w1: %v", name, acts)
			}
			if w := waitOf(acts, small); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != gang.ID {
				t.Errorf("%s: the 1-GPU task, which Ray may put on w1 before the gang's group, was not held naming the gang: %v", name, acts)
			}
		})
		t.Run(name+": the gang submitted, its group not placed yet", func(t *testing.T) {
			b := newBench("w1", "w2")
			b.run(3, 15*time.Minute, time.Minute, true, "w2")
			g := b.run(4, time.Minute, 0, false, "w1")
			b.c.Groups = b.c.Groups[:len(b.c.Groups)-1]                          // its driver has not asked for its group yet
			b.c.Nodes[1].Available["GPU"], b.c.Nodes[1].Available["CPU"] = 4, 48 // so w1 is empty in Ray's view
			small := timed(1, 1, 10*time.Minute, 10*time.Second)
			acts := Decide(t0, b.snap(small), named(name))
			if w := waitOf(acts, small); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != g.ID {
				t.Errorf("%s: the 1-GPU task was not held until the gang's group is placed: %v", name, acts)
			}
			// Its group placed on w1: the task starts on w2, the only node with room.
			b.c.Groups = append(b.c.Groups, mvp.PlacementGroup{CreatorJobID: b.active[1].Attempt.RayJobID, State: "CREATED"})
			b.c.Nodes[1].Available["GPU"], b.c.Nodes[1].Available["CPU"] = 0, 36
			b.active[1].Nodes = []string{"w1"}
			acts = Decide(t0, b.snap(small), named(name))
			if onto := plannedOn(acts, small); !slices.Equal(onto, []string{"w2"}) {
				t.Errorf("%s: once the gang's group is placed the 1-GPU task was not started on w2: %v", name, acts)
			}
		})
		t.Run(name+": Ray’s choice cannot hurt the gang", func(t *testing.T) {
			b := newBench("w1", "w2", "w3")
			b.run(3, 15*time.Minute, time.Minute, true, "w3")
			gang := timed(1, 4, time.Minute, 30*time.Second)
			small := timed(1, 1, 10*time.Minute, 10*time.Second)
			acts := Decide(t0, b.snap(gang, small), named(name))
			if plannedOn(acts, gang) == nil || plannedOn(acts, small) == nil {
				t.Errorf("%s: with two empty nodes both start at once: %v", name, acts)
			}
		})
	}
}
