package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// ForecastBudget bounds the work of one forecast (Explain's estimated starts): the sum, over the Decide calls it
// makes, of the tasks still waiting at each plus four times the tasks running then (each costs Decide more). A
// queue of about a thousand tasks is forecast whole; in a deeper one the tasks the forecast does not reach get the
// in-order estimate, no earlier than where the forecast stopped. A unit costs about 0.2 µs on the 2-core machine
// of BENCHMARKS.md (Decide over a deep queue), so the bound is about 0.2 s, what the in-order estimates of a
// 100,000-deep queue cost besides.
var ForecastBudget = 1_000_000

// forecast runs the policy forward from now, on a simulated clock, as if every task ran for exactly its declared
// time (max_runtime_s, or the policy's default): Decide at now, then again at every moment a running task's
// declared end frees its resources or a task backing off may be tried again, each start taken where Decide put
// it, or a task bound by max_queued_s reaches its bound. It returns when each waiting task (by queue index of q)
// would start; gone marks the tasks Decide ends instead (past their max_queued_s, or an after_ok dependency that
// failed); horizon is the simulated time where it stopped; cut says it stopped because the budget was spent (the
// tasks it did not reach start no earlier than horizon); ok is false when it could not run (a live attempt it
// cannot model: the caller keeps its in-order estimates).
//
// It is pure, like Decide: the tasks and maps of q and s are not written (TestExplainWritesNothing). A task held by
// its dependencies (after_ok, after_any) is forecast to start once they have: each forecast task's declared end
// counts as its success, and a task Decide ends counts as FAILED or CANCELED, its dependents judged again at once.
// What it does not model: a run that fails, a starvation bound crossed between two releases (the next release
// re-ranks), usage that grows while tasks run (fair share ranks on the usage of now).
func forecast(now time.Time, s Snapshot, q []*mvp.Task, p Policy, wanted func(*mvp.Task) bool) (starts []int64,
	gone []bool, horizon int64, cut, ok bool) {
	for _, a := range s.Active {
		if a.Attempt == nil {
			return nil, nil, 0, false, false
		}
	}
	// The resources free once the live attempts hold what they will (as Decide's plan sees them), and where each
	// live attempt gives its own back.
	pl := &plan{now: now, s: s, p: p, nodes: freeNodes(s.Cluster), lastUser: -1, starved: -1}
	pl.reserveLive()
	if pl.blocker != "" {
		return nil, nil, 0, false, false
	}
	pl.buildReleases()
	f := &world{p: p, nodes: cloneNodes(pl.nodes), byID: map[string]int{}, head: map[string]bool{},
		deps: make(map[string]mvp.State, len(s.Deps))}
	for id, st := range s.Deps {
		f.deps[id] = st
	}
	for k, n := range f.nodes {
		f.byID[n.id] = k
	}
	for _, n := range s.Cluster.Nodes {
		f.head[n.ID] = n.IsHead
	}
	for k, a := range s.Active {
		u := pl.live[k]
		if slices.Contains(u.nodes, -1) {
			// a group not attributed gives nothing back; the others do (as the in-order estimate)
			u.nodes = slices.DeleteFunc(slices.Clone(u.nodes), func(k int) bool { return k < 0 })
		}
		att := *a.Attempt
		start := now // not running yet: its declared run begins no earlier than now (endOf)
		if since := a.runStart(); since != nil && !since.IsZero() {
			start = *since
		}
		f.add(a.Task, &att, start, u)
	}

	starts = make([]int64, len(q))
	gone = make([]bool, len(q))
	orig := make(map[*mvp.Task]int, len(q))
	queue := make([]*mvp.Task, 0, len(q))
	left := 0 // the wanted tasks not started or ended yet: the forecast stops when none is left
	for i, t := range q {
		starts[i] = never
		orig[t] = i // one already past its max_queued_s too: Decide ends it now, and its dependents are judged
		queue = append(queue, t)
		if wanted == nil || wanted(t) {
			left++
		}
	}
	if left == 0 {
		return starts, gone, now.UnixNano(), false, true
	}
	at, spent := now.UnixNano(), 0
	for {
		f.releaseTo(at)
		spent += len(queue) + 4*len(f.running) // a running task costs Decide more than a waiting one (BenchmarkExplainWide)
		when := time.Unix(0, at).UTC()
		started, again := false, false
		for _, a := range Decide(when, f.snapshot(when, queue, s), p) {
			var ended *mvp.Task
			end := mvp.StateFailed
			switch a := a.(type) {
			case Expire:
				ended = a.Task
			case DependencyFailed:
				ended, end = a.Task, mvp.StateCanceled
			case Submit:
				i, known := orig[a.Task]
				if !known {
					continue
				}
				starts[i], started = at, true
				f.start(a, at)
				if wanted == nil || wanted(a.Task) {
					left--
				}
				continue
			}
			if i, known := orig[ended]; known {
				gone[i], started = true, true
				if wanted == nil || wanted(ended) {
					left--
				}
				if st, named := f.deps[ended.ID]; named && !st.Terminal() {
					f.deps[ended.ID] = end
					again = true // its dependents are judged again at once (the loop's next pass)
				}
			}
		}
		if started {
			queue = slices.DeleteFunc(queue, func(t *mvp.Task) bool { return starts[orig[t]] != never || gone[orig[t]] })
		}
		if len(queue) == 0 || left <= 0 {
			return starts, gone, at, false, true
		}
		if spent >= ForecastBudget {
			return starts, gone, at, true, true
		}
		if again {
			continue // Decide again at the same instant
		}
		next := f.nextEnd()
		for _, t := range queue {
			if t.NextRunAt != nil && t.NextRunAt.UnixNano() > at {
				next = min(next, t.NextRunAt.UnixNano())
			}
			if until, bound := t.QueuedUntil(); bound && until.UnixNano() > at {
				next = min(next, until.UnixNano())
			}
		}
		if next == never {
			return starts, gone, at, false, true // what is left waits on something with no declared end
		}
		at = next
	}
}

// world is the forecast's cluster: free resources per node, and the tasks running in it with their declared ends.
type world struct {
	p     Policy
	nodes []*node
	byID  map[string]int
	head  map[string]bool
	// deps is the state of the tasks waiting tasks depend on, as the forecast goes: running once started,
	// succeeded at its declared end.
	deps    map[string]mvp.State
	running []running
	seq     int
}

// running is a task running in the forecast: what it holds, on which nodes, until when (use.end; never: no
// declared end).
type running struct {
	task *mvp.Task
	att  *mvp.Attempt
	use  liveUse
}

// add puts a task running since start in the world, holding u (its resources are already off the free view).
func (f *world) add(t *mvp.Task, att *mvp.Attempt, start time.Time, u liveUse) {
	f.seq++
	att.RayJobID = fmt.Sprintf("forecast-%d", f.seq) // its groups are the world's, matched by this id
	att.RayStatus = mvp.RayRunning                   // placed, driver started: nothing more to hold
	att.RunningAt = &start
	att.DriverNodeID = ""
	if u.driver >= 0 {
		att.DriverNodeID = f.nodes[u.driver].id
	}
	f.running = append(f.running, running{task: t, att: att, use: u})
}

// start takes what a Submit placed at at off the free view and runs the task until its declared end.
func (f *world) start(sub Submit, at int64) {
	d, drv := DemandOf(sub.Task, f.p), driverOf(sub.Task, f.p)
	u := liveUse{end: never, gpu: d.GPUs, cpu: d.CPUs, driver: -1, drv: drv}
	if rt := runtimeOf(sub.Task, f.p); rt > 0 {
		u.end = at + int64(rt)
		if u.end < at { // overflow: a declared run past the clock's end
			u.end = never
		}
	}
	for _, id := range sub.Nodes {
		u.nodes = append(u.nodes, f.byID[id])
	}
	if k, placed := f.byID[sub.DriverNode]; placed && sub.DriverNode != "" && len(drv) > 0 {
		u.driver = k
	}
	take(f.nodes, u.nodes, u.driver, d, drv)
	t := *sub.Task
	t.State = mvp.StateRunning // counts as running (max_running_tasks) and is no longer queued
	if st, named := f.deps[t.ID]; named && !st.Terminal() {
		f.deps[t.ID] = mvp.StateRunning
	}
	t.LatestAttemptNo++
	when := time.Unix(0, at).UTC()
	f.add(&t, &mvp.Attempt{TaskID: t.ID, No: t.LatestAttemptNo, CreatedAt: when, StartTime: &when}, when, u)
}

// releaseTo ends every running task whose declared end is at or before at, giving back what it held.
func (f *world) releaseTo(at int64) {
	f.running = slices.DeleteFunc(f.running, func(r running) bool {
		if r.use.end > at {
			return false
		}
		if st, named := f.deps[r.task.ID]; named && !st.Terminal() {
			f.deps[r.task.ID] = mvp.StateSucceeded
		}
		for _, k := range r.use.nodes {
			f.nodes[k].free[ResGPU] += r.use.gpu
			f.nodes[k].free[ResCPU] += r.use.cpu
		}
		if r.use.driver >= 0 {
			f.nodes[r.use.driver].addDriver(r.use.drv, +1)
		}
		return true
	})
}

// nextEnd is the earliest declared end of a running task (never if none has one).
func (f *world) nextEnd() int64 {
	next := int64(never)
	for _, r := range f.running {
		next = min(next, r.use.end)
	}
	return next
}

// snapshot is what Decide sees of the world at when: its nodes with their free resources as Ray's availability,
// every running task as a live attempt whose groups are placed on the nodes it holds, and the waiting tasks.
func (f *world) snapshot(when time.Time, queue []*mvp.Task, s Snapshot) Snapshot {
	view := &mvp.ClusterView{At: when, Source: "forecast"}
	for _, n := range f.nodes {
		avail := make(map[string]float64, len(n.free))
		for r, v := range n.free {
			avail[r] = math.Max(v, 0)
		}
		view.Nodes = append(view.Nodes, mvp.Node{ID: n.id, Alive: true, IsHead: f.head[n.id], Total: n.total,
			Available: avail, Labels: n.labels})
	}
	active := make([]ActiveAttempt, 0, len(f.running))
	for _, r := range f.running {
		for range DemandOf(r.task, f.p).Groups {
			view.Groups = append(view.Groups, mvp.PlacementGroup{CreatorJobID: r.att.RayJobID, State: "CREATED"})
		}
		a := ActiveAttempt{Task: r.task, Attempt: r.att}
		if len(r.use.nodes) > 0 {
			a.Nodes = make([]string, len(r.use.nodes))
			for g, k := range r.use.nodes {
				a.Nodes[g] = f.nodes[k].id
			}
		}
		active = append(active, a)
	}
	return Snapshot{Cluster: view, Queue: queue, Active: active, Deps: f.deps, Usage: s.Usage}
}
