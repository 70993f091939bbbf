package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// Config is the simulated cluster and the policy Decide is run with.
type Config struct {
	Nodes       int
	GPUsPerNode int
	// CPUsPerNode is each node's CPUs; 0 means CPUs are not modelled (then set Policy.CPUsPerGPU and
	// Policy.Driver and Policy.Drivers to nothing, so that a gang asks for GPUs only).
	CPUsPerNode float64
	// Policy is passed to Decide as is; its CPUsPerGPU is looked up for the workload Workload.
	Policy scheduler.Policy
}

// Workload is the workload every simulated task has (its CPUs per GPU come from Policy.CPUsPerGPU).
const Workload = mvp.WorkloadPPO

// Result is what `mvp sim -o json` prints.
type Result struct {
	Policy         string  `json:"policy"`
	Jobs           int     `json:"jobs"`
	MeanWaitS      float64 `json:"mean_wait_s"`
	P50WaitS       float64 `json:"p50_wait_s"`
	P95WaitS       float64 `json:"p95_wait_s"`
	MaxWaitS       float64 `json:"max_wait_s"`
	GPUUtilisation float64 `json:"gpu_utilisation"`
	MakespanS      float64 `json:"makespan_s"`
	DecideCalls    int     `json:"decide_calls"`
	DecideMaxMs    float64 `json:"decide_max_ms"`
	// Waits counts the Wait actions Decide returned: the rows the scheduler loop would have written.
	Waits int `json:"-"`
	// FairShare says whether fair share was on.
	FairShare bool `json:"fair_share"`
	// Users is each user's part, by name, when the trace names users.
	Users []UserResult `json:"users,omitempty"`
	// StartS is each job's start in seconds from the trace's start, in the order of the jobs given to Run.
	StartS []float64 `json:"-"`
	// LastJob is the job that ends last: it decides the makespan, and so the utilisation.
	LastJob *LastJob `json:"last_job,omitempty"`
}

// LastJob is the job whose end is the makespan's, as the trace gives it and as the replay ran it.
type LastJob struct {
	Line        int     `json:"line"`
	ArrivalS    float64 `json:"arrival_s"`
	NNodes      int     `json:"nnodes"`
	GPUsPerNode int     `json:"n_gpus_per_node"`
	// RunS is how long it ran (its duration, or its declared max_runtime_s if shorter); WaitS how long it waited.
	RunS  float64 `json:"run_s"`
	WaitS float64 `json:"wait_s"`
}

// UserResult is one user's part of a replay.
type UserResult struct {
	User      string  `json:"user"`
	Jobs      int     `json:"jobs"`
	MeanWaitS float64 `json:"mean_wait_s"`
	P95WaitS  float64 `json:"p95_wait_s"`
	// GPUShare is the user's GPU-seconds ÷ everyone's.
	GPUShare float64 `json:"gpu_share"`
}

// epoch is the simulated clock's time zero.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Bounds of what mvp sim and mvp sim gen take: far beyond any real cluster or trace, and small enough that a
// cluster's nodes, its GPU count and a trace fit in memory and in an int.
const (
	MaxNodes       = 100_000
	MaxGPUsPerNode = 1_024
	MaxJobs        = 10_000_000
)

// checkCluster refuses a cluster shape outside the bounds.
func checkCluster(nodes, gpusPerNode int) error {
	switch {
	case nodes < 1 || gpusPerNode < 1:
		return fmt.Errorf("the cluster needs at least 1 node and 1 GPU per node (got %d × %d)", nodes, gpusPerNode)
	case nodes > MaxNodes || gpusPerNode > MaxGPUsPerNode:
		return fmt.Errorf("the cluster may have at most %d nodes of at most %d GPUs (got %d × %d)", MaxNodes,
			MaxGPUsPerNode, nodes, gpusPerNode)
	}
	return nil
}

// Check refuses a cluster the simulator cannot hold and a job whose gang can never fit it (more nodes, or more GPUs
// per node, than the cluster has), naming the job's line: before a replay, not after it.
func (c Config) Check(jobs []Job) error {
	if err := checkCluster(c.Nodes, c.GPUsPerNode); err != nil {
		return err
	}
	for _, j := range jobs {
		if j.NNodes > c.Nodes || j.GPUsPerNode > c.GPUsPerNode {
			return fmt.Errorf("trace line %d: a gang of %d node(s) × %d GPU(s) can never start on %d node(s) of %d GPU(s)",
				j.Line, j.NNodes, j.GPUsPerNode, c.Nodes, c.GPUsPerNode)
		}
	}
	return nil
}

// Run replays jobs (in arrival order, as ReadCSV returns them) on the cluster of cfg. Decide is called once at
// every moment at which a job arrives or ends (all arrivals and ends of that moment first), never on a tick; each
// Submit starts its job at once on the nodes Decide chose, and the job ends after its duration, or at its declared
// max_runtime_s if that is shorter (as mvp stops a run that overstays). A job that can never start is an error.
func Run(ctx context.Context, jobs []Job, cfg Config) (*Result, error) {
	if err := cfg.Check(jobs); err != nil {
		return nil, err
	}
	if math.IsNaN(cfg.CPUsPerNode) || math.IsInf(cfg.CPUsPerNode, 0) || cfg.CPUsPerNode > 1e6 {
		return nil, fmt.Errorf("--cpus-per-node must be a finite number up to 1e6 (got %g)", cfg.CPUsPerNode)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("no jobs to simulate")
	}
	s := newState(jobs, cfg)
	for s.next < len(jobs) || len(s.queue) > 0 || len(s.running) > 0 {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx) // Ctrl-C: a long replay stops here (a moment can be a deep queue's Decide)
		}
		now := int64(math.MaxInt64)
		if s.next < len(jobs) {
			now = s.arrival[s.next]
		}
		if len(s.running) > 0 && s.running[0].end < now {
			now = s.running[0].end
		}
		if now == math.MaxInt64 {
			return nil, s.stalled()
		}
		s.decayTo(now)
		for len(s.running) > 0 && s.running[0].end == now {
			s.finish(heap.Pop(&s.running).(*run))
		}
		for s.next < len(jobs) && s.arrival[s.next] == now {
			s.queue = append(s.queue, s.tasks[s.next])
			s.next++
		}
		if err := s.decide(now); err != nil {
			return nil, err
		}
	}
	return s.result(), nil
}

type state struct {
	jobs    []Job
	cfg     Config
	arrival []int64 // ns
	tasks   []*mvp.Task
	index   map[*mvp.Task]int
	view    *mvp.ClusterView
	node    map[string]*mvp.Node
	queue   []*mvp.Task
	running runHeap
	next    int
	start   []int64
	end     []int64
	busy    float64 // GPU-seconds
	calls   int
	waits   int // Wait actions applied (rows the loop would write)
	maxDec  time.Duration
	lastEnd int64
	// done is each user's decayed GPU-seconds of the jobs that ended, as of doneAt (fair share).
	done   map[string]float64
	doneAt int64
	gpuSec map[string]float64 // each user's GPU-seconds, undecayed (Result.Users)
}

// run is a started job.
type run struct {
	job    int
	end    int64
	task   *mvp.Task
	att    *mvp.Attempt
	nodes  []string
	driver string
}

func newState(jobs []Job, cfg Config) *state {
	s := &state{jobs: jobs, cfg: cfg, arrival: make([]int64, len(jobs)), tasks: make([]*mvp.Task, len(jobs)),
		index: make(map[*mvp.Task]int, len(jobs)), start: make([]int64, len(jobs)), end: make([]int64, len(jobs)),
		view: &mvp.ClusterView{Source: "sim"}, node: map[string]*mvp.Node{}, done: map[string]float64{},
		gpuSec: map[string]float64{}}
	for i, j := range jobs {
		s.arrival[i] = nanos(j.ArrivalS)
		t := &mvp.Task{ID: fmt.Sprintf("sim-%07d", i), Workload: Workload, State: mvp.StateQueued, NNodes: j.NNodes,
			GPUsPerNode: j.GPUsPerNode, CreatedAt: epoch.Add(time.Duration(s.arrival[i])), MaxRuntimeS: j.MaxRuntimeS,
			Owner: j.Owner(), Priority: j.Priority}
		s.tasks[i] = t
		s.index[t] = i
	}
	for k := 0; k < cfg.Nodes; k++ {
		total := map[string]float64{scheduler.ResGPU: float64(cfg.GPUsPerNode)}
		if cfg.CPUsPerNode > 0 {
			total[scheduler.ResCPU] = cfg.CPUsPerNode
		}
		for r := range cfg.Policy.WorkloadDriver(Workload) {
			if _, ok := total[r]; !ok {
				total[r] = 1e9 // a custom resource the driver asks for (worker_node): every node has plenty
			}
		}
		avail := make(map[string]float64, len(total))
		for r, v := range total {
			avail[r] = v
		}
		s.view.Nodes = append(s.view.Nodes, mvp.Node{ID: fmt.Sprintf("n%04d", k), Alive: true, Total: total, Available: avail})
	}
	for k := range s.view.Nodes {
		s.node[s.view.Nodes[k].ID] = &s.view.Nodes[k]
	}
	return s
}

func nanos(sec float64) int64 { return int64(math.Round(sec * 1e9)) }

// decide runs Decide at now and applies its actions; again at once while a task waited only for the gangs that call
// started to be placed (Ray places them seconds later, and mvp's next pass, a tick later, starts the task; here
// starting is placing).
func (s *state) decide(now int64) error {
	for {
		again, err := s.decideOnce(now)
		if err != nil || !again {
			return err
		}
	}
}

// decideOnce runs Decide at now and applies its actions, and reports whether a task waits for a gang it started.
func (s *state) decideOnce(now int64) (bool, error) {
	at := epoch.Add(time.Duration(now))
	s.view.At = at
	s.view.Groups = s.view.Groups[:0]
	active := make([]scheduler.ActiveAttempt, 0, len(s.running))
	for _, r := range s.running {
		for range r.nodes {
			s.view.Groups = append(s.view.Groups, mvp.PlacementGroup{CreatorJobID: r.att.RayJobID, State: "CREATED"})
		}
		active = append(active, scheduler.ActiveAttempt{Task: r.task, Attempt: r.att, Nodes: r.nodes})
	}
	snap := scheduler.Snapshot{Cluster: s.view, Queue: s.queue, Active: active}
	if s.cfg.Policy.FairShare {
		snap.Usage = s.usage(at)
	}
	t0 := time.Now()
	acts := scheduler.Decide(at, snap, s.cfg.Policy)
	s.maxDec = max(s.maxDec, time.Since(t0))
	s.calls++
	started := false
	for _, a := range acts {
		switch a := a.(type) {
		case scheduler.Submit:
			s.begin(now, at, a)
			started = true
		case *scheduler.Wait:
			a.Task.State, a.Task.PendingReason = mvp.StatePendingResources, a.Reason
			s.waits++
		}
	}
	if !started {
		return false, nil
	}
	s.queue = slices.DeleteFunc(s.queue, func(t *mvp.Task) bool { return t.State == mvp.StateRunning })
	// A task held for the gangs being placed keeps that reason without a new Wait when it was held so before, so
	// the queue is read, not the Waits. Here every gang is placed when it starts, so each such gang is one this
	// call started; and the loop ends, since every call that asks for another started a task.
	return slices.ContainsFunc(s.queue, func(t *mvp.Task) bool {
		return t.PendingReason == scheduler.ReasonGangBeingPlaced
	}), nil
}

// begin starts a job where Decide put it.
func (s *state) begin(now int64, at time.Time, a scheduler.Submit) {
	i := s.index[a.Task]
	j := s.jobs[i]
	cpg := s.cfg.Policy.CPUsPerGPU[Workload]
	for _, id := range a.Nodes {
		n := s.node[id]
		n.Available[scheduler.ResGPU] -= float64(j.GPUsPerNode)
		if s.cfg.CPUsPerNode > 0 {
			n.Available[scheduler.ResCPU] -= float64(j.GPUsPerNode) * cpg
		}
	}
	if a.DriverNode != "" {
		n := s.node[a.DriverNode]
		for r, v := range s.cfg.Policy.WorkloadDriver(Workload) {
			n.Available[r] -= v
		}
	}
	dur := nanos(j.DurationS)
	if rt := declared(j, s.cfg.Policy); rt > 0 && int64(rt) < dur {
		dur = int64(rt) // mvp stops a run at its declared max_runtime_s
	}
	a.Task.State = mvp.StateRunning
	start := at
	att := &mvp.Attempt{No: 1, RayJobID: fmt.Sprintf("%08x", i), RayStatus: mvp.RayRunning, CreatedAt: at,
		StartTime: &start, DriverNodeID: a.DriverNode}
	a.Task.LatestAttemptNo = 1
	s.start[i] = now
	heap.Push(&s.running, &run{job: i, end: now + dur, task: a.Task, att: att, nodes: a.Nodes, driver: a.DriverNode})
}

// declared is a job's declared run time under p.
func declared(j Job, p scheduler.Policy) time.Duration {
	if j.MaxRuntimeS > 0 {
		return time.Duration(j.MaxRuntimeS) * time.Second
	}
	return p.DefaultMaxRuntime
}

// finish ends a job and gives its resources back.
func (s *state) finish(r *run) {
	j := s.jobs[r.job]
	cpg := s.cfg.Policy.CPUsPerGPU[Workload]
	for _, id := range r.nodes {
		n := s.node[id]
		n.Available[scheduler.ResGPU] += float64(j.GPUsPerNode)
		if s.cfg.CPUsPerNode > 0 {
			n.Available[scheduler.ResCPU] += float64(j.GPUsPerNode) * cpg
		}
	}
	if r.driver != "" {
		n := s.node[r.driver]
		for res, v := range s.cfg.Policy.WorkloadDriver(Workload) {
			n.Available[res] += v
		}
	}
	r.task.State = mvp.StateSucceeded
	s.end[r.job] = r.end
	gs := float64(j.NNodes*j.GPUsPerNode) * float64(r.end-s.start[r.job]) / 1e9
	s.busy += gs
	s.gpuSec[r.task.Owner] += gs
	if s.cfg.Policy.FairShare { // ends happen at doneAt: the span's decayed usage as of now joins done
		end := epoch.Add(time.Duration(r.end))
		for u, v := range scheduler.DecayedUsage(end, s.cfg.Policy.HalfLife, []mvp.UsageSpan{r.span()}) {
			s.done[u] += v
		}
	}
	s.lastEnd = max(s.lastEnd, r.end)
}

// Owner is the user the job's task belongs to: its user column, or the operator when it names none (as the
// results name it).
func (j Job) Owner() string { return mvp.OwnerName(j.User) }

// span is what a started job counts for in fair share.
func (r *run) span() mvp.UsageSpan {
	return mvp.UsageSpan{Owner: r.task.Owner, GPUs: r.task.GPUs(), Start: *r.att.StartTime}
}

// decayTo ages the usage of ended jobs to now (usage with a half-life h decays by 2^(-Δt/h)).
func (s *state) decayTo(now int64) {
	if !s.cfg.Policy.FairShare || now <= s.doneAt {
		return
	}
	if h := s.cfg.Policy.HalfLife.Seconds(); h > 0 {
		f := math.Exp2(-float64(now-s.doneAt) / 1e9 / h)
		for u := range s.done {
			s.done[u] *= f
		}
	}
	s.doneAt = now
}

// usage is each user's decayed GPU-seconds at now: the ended jobs' (done) plus the running jobs' so far, as the
// service's loop computes it from attempts (scheduler.DecayedUsage).
func (s *state) usage(now time.Time) map[string]float64 {
	spans := make([]mvp.UsageSpan, 0, len(s.running))
	for _, r := range s.running {
		spans = append(spans, r.span())
	}
	u := scheduler.DecayedUsage(now, s.cfg.Policy.HalfLife, spans)
	for k, v := range s.done {
		u[k] += v
	}
	return u
}

// stalled explains why jobs are left that can never start.
func (s *state) stalled() error {
	t := s.queue[0]
	j := s.jobs[s.index[t]]
	return fmt.Errorf("trace line %d (%d × %d GPUs) can never start on %d node(s) × %d GPUs: %s",
		j.Line, j.NNodes, j.GPUsPerNode, s.cfg.Nodes, s.cfg.GPUsPerNode, t.PendingReason)
}

func (s *state) result() *Result {
	n := len(s.jobs)
	waits := make([]float64, n)
	res := &Result{Policy: s.cfg.Policy.Name, Jobs: n, DecideCalls: s.calls, Waits: s.waits,
		DecideMaxMs: float64(s.maxDec.Microseconds()) / 1000, StartS: make([]float64, n)}
	if res.Policy == "" {
		res.Policy = scheduler.DefaultPolicy
	}
	var sum float64
	last := 0
	for i := range s.jobs {
		waits[i] = float64(s.start[i]-s.arrival[i]) / 1e9
		res.StartS[i] = float64(s.start[i]) / 1e9
		sum += waits[i]
		if s.end[i] > s.end[last] {
			last = i
		}
	}
	j := s.jobs[last]
	res.LastJob = &LastJob{Line: j.Line, ArrivalS: j.ArrivalS, NNodes: j.NNodes, GPUsPerNode: j.GPUsPerNode,
		RunS: float64(s.end[last]-s.start[last]) / 1e9, WaitS: waits[last]}
	res.MeanWaitS = sum / float64(n)
	slices.Sort(waits)
	res.P50WaitS = percentile(waits, 0.50)
	res.P95WaitS = percentile(waits, 0.95)
	res.MaxWaitS = waits[n-1]
	span := float64(s.lastEnd-s.arrival[0]) / 1e9
	res.MakespanS = span
	if span > 0 {
		res.GPUUtilisation = s.busy / (span * float64(s.cfg.Nodes*s.cfg.GPUsPerNode))
	}
	res.FairShare = s.cfg.Policy.FairShare
	res.Users = s.userResults()
	return res
}

// userResults is each user's jobs, waits and GPU share, by name; nil when only the operator submitted.
func (s *state) userResults() []UserResult {
	byUser := map[string][]float64{}
	for i, t := range s.tasks {
		byUser[t.Owner] = append(byUser[t.Owner], float64(s.start[i]-s.arrival[i])/1e9)
	}
	if _, only := byUser[mvp.Operator]; only && len(byUser) == 1 {
		return nil
	}
	var out []UserResult
	for u, waits := range byUser {
		var sum float64
		for _, w := range waits {
			sum += w
		}
		slices.Sort(waits)
		r := UserResult{User: u, Jobs: len(waits), MeanWaitS: sum / float64(len(waits)), P95WaitS: percentile(waits, 0.95)}
		if s.busy > 0 {
			r.GPUShare = s.gpuSec[u] / s.busy
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b UserResult) int { return strings.Compare(a.User, b.User) })
	return out
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// runHeap orders running jobs by end, then by job index.
type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].job < h[j].job
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Bounds are lower bounds that hold for every policy, to tell a goal a policy missed from one no policy can meet.
type Bounds struct {
	// WholeClusterJobs counts the jobs that take every GPU of the cluster.
	WholeClusterJobs int `json:"whole_cluster_jobs"`
	// MeanWaitS bounds the mean wait from below for every schedule in which each whole-cluster job starts within
	// MaxWaitS of its arrival. While such a job runs nothing else can, so every job that arrives during its run
	// (the block) waits at least until its end; and from then on those jobs share the cluster's GPUs, so the k-th
	// of them to end cannot end before the k smallest of their areas (GPUs × run) have been done on all GPUs at
	// once, nor before the k-th shortest of their runs. Two blocks cannot overlap, so each job is counted in one
	// block at most, and the best start of each whole-cluster job, taken alone, adds up to a bound.
	MeanWaitS float64 `json:"mean_wait_lower_bound_s"`
	// RunOnlyMeanWaitS is the same bound counting only the wait until the block ends (no backlog after it).
	RunOnlyMeanWaitS float64 `json:"run_only_mean_wait_lower_bound_s"`
	MaxWaitS         float64 `json:"max_wait_s"`
	// MakespanS bounds the makespan from below: no job ends before its arrival plus its run, and the cluster
	// cannot do the jobs' GPU-seconds faster than all its GPUs at once.
	MakespanS float64 `json:"makespan_lower_bound_s"`
	// GPUUtilisation is the utilisation that makespan would give (an upper bound).
	GPUUtilisation float64 `json:"gpu_utilisation_upper_bound"`
}

// LowerBounds works out Bounds for jobs (in arrival order) on cfg's cluster, given the longest wait allowed to
// whole-cluster jobs (for example plain EASY backfill's max wait on the same trace).
func LowerBounds(jobs []Job, cfg Config, maxWaitS float64) Bounds {
	capacity := cfg.Nodes * cfg.GPUsPerNode
	b := Bounds{MaxWaitS: maxWaitS}
	arr := make([]float64, len(jobs))
	runs := make([]float64, len(jobs))
	areas := make([]float64, len(jobs))
	for i, j := range jobs {
		arr[i] = j.ArrivalS
		runs[i] = runSeconds(j, cfg.Policy)
		areas[i] = runs[i] * float64(j.NNodes*j.GPUsPerNode)
	}
	var busy, lastEnd float64
	var sortedA, sortedR []float64 // scratch
	for self, j := range jobs {
		run := runs[self]
		busy += areas[self]
		lastEnd = max(lastEnd, j.ArrivalS+run)
		if j.NNodes*j.GPUsPerNode < capacity {
			continue
		}
		b.WholeClusterJobs++
		// The jobs that arrive in the block [s, s+run) of a start at s; after: arrivals at exactly s are left out
		// (the limit of starting just after them). The job itself never waits for itself.
		block := func(s float64, after bool) (lo, hi int) {
			lo, _ = slices.BinarySearch(arr, s)
			if after {
				for lo < len(arr) && arr[lo] == s {
					lo++
				}
			}
			hi, _ = slices.BinarySearch(arr, s+run)
			return lo, hi
		}
		// Both costs only grow with s while the block's jobs stay the same (each waits until s+run), so their
		// infimum is at a moment an arrival enters or leaves the block (or just after one leaves), or at an end
		// of [a, a+W].
		cost := func(s float64, after bool) (runOnly, backlog float64) {
			lo, hi := block(s, after)
			sortedA, sortedR = sortedA[:0], sortedR[:0]
			for i := lo; i < hi; i++ {
				if i == self {
					continue
				}
				runOnly += s + run - arr[i]
				sortedA, sortedR = append(sortedA, areas[i]), append(sortedR, runs[i])
			}
			slices.Sort(sortedA)
			slices.Sort(sortedR)
			cum := 0.0
			for k := range sortedA {
				cum += sortedA[k]
				backlog += max(cum/float64(capacity), sortedR[k]) - sortedR[k]
			}
			return runOnly, backlog
		}
		a, w := j.ArrivalS, maxWaitS
		bestRun, bestAll := math.Inf(1), math.Inf(1)
		try := func(s float64, after bool) {
			r, k := cost(s, after)
			bestRun, bestAll = min(bestRun, r), min(bestAll, r+k)
		}
		try(a, false)
		try(a+w, false)
		lo, _ := slices.BinarySearch(arr, a)
		for _, x := range arr[lo:] {
			if x > a+w+run {
				break
			}
			if x <= a+w {
				try(x, false)
				if x < a+w {
					try(x, true)
				}
			}
			if s := x - run; s >= a && s <= a+w {
				try(s, false)
			}
		}
		b.RunOnlyMeanWaitS += bestRun
		b.MeanWaitS += bestAll
	}
	b.RunOnlyMeanWaitS /= float64(len(jobs))
	b.MeanWaitS /= float64(len(jobs))
	b.MakespanS = max(lastEnd-jobs[0].ArrivalS, busy/float64(capacity))
	if b.MakespanS > 0 {
		b.GPUUtilisation = busy / (b.MakespanS * float64(capacity))
	}
	return b
}

// runSeconds is how long a job runs in the simulation: its duration, or its declared max_runtime_s if shorter.
func runSeconds(j Job, p scheduler.Policy) float64 {
	d := j.DurationS
	if rt := declared(j, p); rt > 0 {
		d = min(d, rt.Seconds())
	}
	return d
}
