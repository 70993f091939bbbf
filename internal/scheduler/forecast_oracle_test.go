package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// oracle runs the real Decide forward on a cluster kept as Ray would report it: every task runs exactly its
// declared time; a Submit takes its gang's GPUs and CPUs on its nodes and its driver's resources on its driver
// node; at its end they come back and its state becomes SUCCEEDED; an Expire or DependencyFailed ends the task
// (FAILED, CANCELED). Decide runs at now and at every end, next_run_at and max_queued_s end. It returns when
// each queued task started (missing: never).
type oracleRun struct {
	task   *mvp.Task
	att    *mvp.Attempt
	nodes  []string
	driver string
	end    int64
}

func oracle(now time.Time, c *mvp.ClusterView, live []oracleRun, queue []*mvp.Task, deps map[string]mvp.State,
	usage map[string]float64, p Policy) map[string]time.Time {
	view := &mvp.ClusterView{At: now, Source: "probe"}
	for _, n := range c.Nodes {
		m := map[string]float64{}
		for k, v := range n.Available {
			m[k] = v
		}
		n.Available = m
		view.Nodes = append(view.Nodes, n)
	}
	node := func(id string) *mvp.Node {
		for k := range view.Nodes {
			if view.Nodes[k].ID == id {
				return &view.Nodes[k]
			}
		}
		panic(id)
	}
	d := map[string]mvp.State{}
	for k, v := range deps {
		d[k] = v
	}
	running := append([]oracleRun(nil), live...)
	q := append([]*mvp.Task(nil), queue...)
	starts := map[string]time.Time{}
	at := now.UnixNano()
	for iter := 0; iter < 10000; iter++ {
		kept := running[:0]
		for _, r := range running {
			if r.end > at {
				kept = append(kept, r)
				continue
			}
			dm := DemandOf(r.task, p)
			for _, id := range r.nodes {
				node(id).Available[ResGPU] += dm.GPUs
				node(id).Available[ResCPU] += dm.CPUs
			}
			if r.driver != "" {
				for k, v := range driverOf(r.task, p) {
					node(r.driver).Available[k] += v
				}
			}
			if st, ok := d[r.task.ID]; ok && !st.Terminal() {
				d[r.task.ID] = mvp.StateSucceeded
			}
		}
		running = kept
		when := time.Unix(0, at).UTC()
		view.At = when
		view.Groups = nil
		var active []ActiveAttempt
		for _, r := range running {
			for _, id := range r.nodes {
				view.Groups = append(view.Groups, mvp.PlacementGroup{CreatorJobID: r.att.RayJobID, State: "CREATED", Node: id})
			}
			active = append(active, ActiveAttempt{Task: r.task, Attempt: r.att, Nodes: r.nodes})
		}
		snap := Snapshot{Cluster: view, Queue: q, Active: active, Deps: d, Usage: usage}
		gone, again := map[*mvp.Task]bool{}, false
		for _, a := range Decide(when, snap, p) {
			switch a := a.(type) {
			case Submit:
				t := *a.Task
				t.State, t.LatestAttemptNo = mvp.StateRunning, a.AttemptNo
				dm := DemandOf(&t, p)
				for _, id := range a.Nodes {
					node(id).Available[ResGPU] -= dm.GPUs
					node(id).Available[ResCPU] -= dm.CPUs
				}
				if a.DriverNode != "" {
					for k, v := range driverOf(&t, p) {
						node(a.DriverNode).Available[k] -= v
					}
				}
				end := int64(never)
				if rt := runtimeOf(&t, p); rt > 0 {
					end = at + int64(rt)
				}
				w := when
				running = append(running, oracleRun{task: &t, att: &mvp.Attempt{TaskID: t.ID, No: a.AttemptNo,
					RayJobID: fmt.Sprintf("oracle-%d-%s", iter, t.ID), RayStatus: mvp.RayRunning, CreatedAt: w,
					StartTime: &w, RunningAt: &w, DriverNodeID: a.DriverNode}, nodes: a.Nodes, driver: a.DriverNode, end: end})
				starts[t.ID] = when
				if _, ok := d[t.ID]; ok {
					d[t.ID] = mvp.StateRunning
				}
				gone[a.Task] = true
			case Expire:
				gone[a.Task] = true
				if _, ok := d[a.Task.ID]; ok {
					d[a.Task.ID], again = mvp.StateFailed, true
				}
			case DependencyFailed:
				gone[a.Task] = true
				if _, ok := d[a.Task.ID]; ok {
					d[a.Task.ID], again = mvp.StateCanceled, true
				}
			}
		}
		left := q[:0:0]
		for _, t := range q {
			if !gone[t] {
				left = append(left, t)
			}
		}
		q = left
		if len(q) == 0 {
			break
		}
		if again {
			continue // the dependents of what ended are judged at the next pass
		}
		next := int64(never)
		for _, r := range running {
			next = min(next, r.end)
		}
		for _, t := range q {
			if t.NextRunAt != nil && t.NextRunAt.UnixNano() > at {
				next = min(next, t.NextRunAt.UnixNano())
			}
			if u, ok := t.QueuedUntil(); ok && u.UnixNano() > at {
				next = min(next, u.UnixNano())
			}
		}
		if next == never {
			break
		}
		at = next
	}
	return starts
}

// scenario makes a random small cluster, live tasks and queue.
func scenario(rng *rand.Rand) (*mvp.ClusterView, []oracleRun, []*mvp.Task, map[string]mvp.State, map[string]float64, Policy) {
	p := named(PolicyNames[rng.IntN(len(PolicyNames))])
	p.MaxRunning = []int{0, 0, 2, 3}[rng.IntN(4)]
	p.FairShare = rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		p.StarvationBound = time.Hour
	}
	if rng.IntN(2) == 0 {
		p.Users = map[string]UserLimits{"alice": {MaxGPUs: []int{4, 6, 8}[rng.IntN(3)]}}
	}
	nn := 2 + rng.IntN(3)
	var ns []mvp.Node
	for i := 0; i < nn; i++ {
		ns = append(ns, worker(fmt.Sprintf("n%d", i+1), 4, 48))
	}
	c := cluster(ns...)
	owners := []string{"alice", "bob", ""}
	var live []oracleRun
	deps := map[string]mvp.State{}
	for i := 0; i < rng.IntN(4); i++ {
		g := []int{1, 2, 4}[rng.IntN(3)]
		k := 1 + rng.IntN(4)
		var at *mvp.Node
		for _, j := range rng.Perm(nn) {
			if n := &c.Nodes[1+j]; n.Available[ResGPU] >= float64(g) {
				at = n
				break
			}
		}
		if at == nil {
			continue
		}
		t := task(mvp.WorkloadPPO, 1, g, mvp.StateRunning)
		t.Owner = owners[rng.IntN(3)]
		t.MaxRuntimeS = k * 1800
		start := t0.Add(-time.Duration(rng.IntN(k*1800-60)+30) * time.Second)
		at.Available[ResGPU] -= float64(g)
		at.Available[ResCPU] -= float64(3*g) + 1
		at.Available["worker_node"]--
		jobID := fmt.Sprintf("live%d-%s", i, t.ID)
		c.Groups = append(c.Groups, mvp.PlacementGroup{CreatorJobID: jobID, State: "CREATED", Node: at.ID})
		att := &mvp.Attempt{No: 1, RayJobID: jobID, RayStatus: mvp.RayRunning, StartTime: &start, DriverNodeID: at.ID}
		live = append(live, oracleRun{task: t, att: att, nodes: []string{at.ID}, driver: at.ID,
			end: start.Add(time.Duration(t.MaxRuntimeS) * time.Second).UnixNano()})
		if rng.IntN(3) == 0 {
			deps[t.ID] = mvp.StateRunning
		}
	}
	var q []*mvp.Task
	for i := 0; i < 3+rng.IntN(6); i++ {
		t := timed(1+rng.IntN(2), []int{1, 2, 4}[rng.IntN(3)], time.Duration(1+rng.IntN(10))*30*time.Minute,
			time.Duration(rng.IntN(120))*time.Minute+time.Duration(100-i)*time.Second)
		t.Owner, t.Priority = owners[rng.IntN(3)], []int{40, 50, 60}[rng.IntN(3)]
		if rng.IntN(5) == 0 {
			t.MaxQueuedS = 1800 * (1 + rng.IntN(6)) // some end MAX_QUEUED_EXCEEDED before they would start
		}
		if rng.IntN(6) == 0 {
			t.State, t.LatestAttemptNo = mvp.StatePendingResources, 1
			next := t0.Add(time.Duration(1+rng.IntN(90)) * time.Minute)
			t.NextRunAt = &next
		}
		if rng.IntN(4) == 0 {
			var ids []string
			for id := range deps {
				ids = append(ids, id)
			}
			for _, o := range q {
				ids = append(ids, o.ID)
			}
			if len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				if rng.IntN(2) == 0 {
					t.AfterOK = []string{id}
				} else {
					t.AfterAny = []string{id}
				}
				if _, ok := deps[id]; !ok {
					deps[id] = mvp.StateQueued
				}
			}
		}
		q = append(q, t)
	}
	// the queue in FIFO order (creation)
	for i := range q {
		for j := i + 1; j < len(q); j++ {
			if q[j].CreatedAt.Before(q[i].CreatedAt) {
				q[i], q[j] = q[j], q[i]
			}
		}
	}
	usage := map[string]float64{"alice": float64(rng.IntN(100000)), "bob": float64(rng.IntN(100000))}
	return c, live, q, deps, usage, p
}

// TestForecastMatchesDecideRunForward: on random small scenarios (every policy, fair share, priorities, quotas,
// max_running_tasks, backoff, dependencies, max_queued_s), Explain's estimates are the starts the real Decide
// gives when run forward on the cluster as Ray would report it.
func TestForecastMatchesDecideRunForward(t *testing.T) {
	bad := 0
	for seed := uint64(1); seed <= 1000 && bad < 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c, live, q, deps, usage, p := scenario(rng)
		var active []ActiveAttempt
		for _, r := range live {
			active = append(active, ActiveAttempt{Task: r.task, Attempt: r.att, Nodes: r.nodes})
		}
		snap := Snapshot{Cluster: c, Queue: q, Active: active, Deps: deps, Usage: usage}
		v := Explain(t0, snap, p)
		// A view for alice alone (ExplainFor stops the forecast once her tasks are placed) estimates her tasks as
		// the whole view does.
		whole := map[string]*time.Time{}
		for _, e := range v.Queue {
			whole[e.TaskID] = e.EstStart
		}
		for _, e := range ExplainFor(t0, snap, p, func(t *mvp.Task) bool { return t.Owner == "alice" }).Queue {
			if e.Owner != "alice" {
				continue
			}
			if w := whole[e.TaskID]; (w == nil) != (e.EstStart == nil) || w != nil && !w.Equal(*e.EstStart) {
				bad++
				t.Errorf("seed %d: alice's %s estimated %v in her own view, %v in the whole one", seed, e.TaskID, e.EstStart, w)
			}
		}
		want := oracle(t0, c, live, q, deps, usage, p)
		for _, e := range v.Queue {
			w, started := want[e.TaskID]
			switch {
			case !started && (e.EstStart == nil || e.ExpiresBeforeStart): // it ends MAX_QUEUED_EXCEEDED first
			case started && e.EstStart != nil && e.EstStart.Equal(w):
			default:
				bad++
				t.Errorf("seed %d (%s, max_running %d, fair %v, users %v): %s (%s) estimated %v, Decide run forward starts it %v (started %v)",
					seed, p.Name, p.MaxRunning, p.FairShare, p.Users, e.TaskID, e.Code, e.EstStart, w, started)
			}
		}
	}
}
