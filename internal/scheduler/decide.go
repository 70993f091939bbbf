// Package scheduler decides which queued tasks go to Ray (Decide, a pure function) and applies those decisions
// (Loop). Decide does no I/O and reads no clock: everything it knows is in its arguments.
package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Resource names as Ray spells them.
const (
	ResGPU = "GPU"
	ResCPU = "CPU"
)

// Policy is what Decide needs to know of the configuration.
type Policy struct {
	// Name is the scheduling policy, one of PolicyNames; "" means DefaultPolicy.
	Name string
	// MaxRunning bounds the tasks mvp has live in Ray (SUBMITTING, SUBMITTED, RUNNING); 0 means no bound.
	MaxRunning int
	// CPUsPerGPU is the CPU of one verl bundle per workload ({"CPU": c, "GPU": 1}).
	CPUsPerGPU map[mvp.Workload]float64
	// Driver is what the Ray job's driver itself takes: entrypoint_resources plus {"CPU": entrypoint_num_cpus}.
	Driver map[string]float64
	// Drivers is what the driver of a workload's task takes where that is more than Driver: Driver plus the CPU of
	// the actor the driver starts before it asks for its gang (verl's TaskRunner, v2.workloads.<name>.runner_cpus).
	// That actor may land on any node with a CPU free; it is counted on the driver's node, which is where the
	// driver's own CPU was free a moment before. A workload not in it has Driver (WorkloadDriver).
	Drivers map[mvp.Workload]map[string]float64
	// GangWait is how long an attempt's placement groups may stay unplaceable before it is stopped.
	GangWait time.Duration
	// StopGrace is how long Ray gives a job mvp stops between SIGTERM and SIGKILL (v2.scheduler.runtime_grace_s):
	// a run past its declared end holds its GPUs until at most its end plus this.
	StopGrace time.Duration
	// DefaultMaxRuntime is the declared run time of a task whose MaxRuntimeS is 0; 0 means such a task has no
	// declared end (a reservation cannot count on it ending).
	DefaultMaxRuntime time.Duration
	// Users are the named users' limits and shares (v2.auth.users), by name; a user not named (the operator
	// among them) has no limits and share 1.
	Users map[string]UserLimits
	// OnlyKnownOwners holds the waiting tasks of an owner who is neither the operator nor in Users (a user
	// removed from v2.auth.users), with code quota: mvp serve sets it. The simulator's trace users need not be
	// named.
	OnlyKnownOwners bool
	// FairShare ranks competing users' tasks of one priority by decayed usage ÷ share (Snapshot.Usage);
	// off, they keep arrival order.
	FairShare bool
	// HalfLife is the half-life of the decayed usage (the loop computes Snapshot.Usage with it).
	HalfLife time.Duration
	// StarvationBound: the oldest task that has waited this long is ranked first, so no priority and no fair
	// share can overtake it or its reservation; 0 means no bound.
	StarvationBound time.Duration
}

// Snapshot is everything Decide looks at.
type Snapshot struct {
	// Cluster is the live reading; nil when Ray could not be read (then nothing is admitted).
	Cluster *mvp.ClusterView
	// Queue holds QUEUED and PENDING_RESOURCES tasks in FIFO order.
	Queue []*mvp.Task
	// Active holds the attempts that have, or may soon have, a Ray job.
	Active []ActiveAttempt
	// ClusterErr says why Cluster is nil (Decide does not look at it; the API shows it).
	ClusterErr error
	// Deps holds the state of every task that a queued task depends on (after_ok, after_any); see holdFor (deps.go).
	Deps map[string]mvp.State
	// Usage is each user's decayed GPU-seconds (DecayedUsage), by owner; fair share ranks by it.
	Usage map[string]float64
	// JobsUnread says Ray's job server could not be read in this pass: the live attempts' states are the last
	// known, not the present, so no attempt is judged now (time limit, heartbeat, stuck gang); one judged before
	// is still stopped. Judged on a stale row, a job Ray lost meanwhile would keep that verdict.
	JobsUnread bool
}

// ActiveAttempt is a task with a live attempt.
type ActiveAttempt struct {
	Task    *mvp.Task
	Attempt *mvp.Attempt
	// StuckSince is when the attempt's placement groups were first seen PENDING (not placeable yet) or
	// RESCHEDULING (a node they were on died); zero if they are not.
	StuckSince time.Time
	// PlacedAt is when Ray placed the last of its gang's placement groups (the live probe's reading); zero when
	// unknown. Its max_runtime_s counts from then when that is after it began to run: the time its driver waited for
	// its gang was not run time.
	PlacedAt time.Time
	// Infeasible is true when Ray says one of its placement groups can never be placed on this cluster.
	Infeasible bool
	// Rescheduling is true when one of its placement groups lost its node and waits to be placed again.
	Rescheduling bool
	// ProgressAt is when the loop last saw the attempt's progress file change, on mvp's clock; zero when it has
	// none (see heartbeats and fillProgressAt).
	ProgressAt time.Time
	// Unseen is true when the attempt's folder (written before it was sent) is not under shared_root now: its
	// progress cannot be read, so its heartbeat is not judged.
	Unseen bool
	// Nodes are the nodes its placed groups are on, one per group, when known (the simulator knows them; Ray's
	// placement groups say so too). When not, Decide attributes the attempt's GPUs to nodes that show that many in
	// use, to plan reservations from declared ends.
	Nodes []string
}

// Judged reports whether mvp has already decided to stop this attempt (it carries a failure kind while its Ray
// job still runs): it is being stopped, and its stop is retried until Ray reports the job ended.
func (a ActiveAttempt) Judged() bool {
	return a.Attempt != nil && a.Attempt.FailureKind != mvp.FailureNone && !a.Attempt.RayStatus.Terminal()
}

// stuck reports whether the attempt's gang has been unplaceable for the whole gang wait, or Ray says it never
// fits.
func (a ActiveAttempt) stuck(now time.Time, p Policy) bool {
	if a.Infeasible {
		return true
	}
	return !a.StuckSince.IsZero() && p.GangWait > 0 && now.Sub(a.StuckSince) >= p.GangWait
}

// Action is one thing the loop must do.
type Action interface{ action() }

// Submit makes the next attempt of a waiting task.
type Submit struct {
	Task      *mvp.Task
	AttemptNo int
	// Nodes are the nodes the gang was fitted on, DriverNode the one the driver was (informational: Ray places
	// them).
	Nodes      []string
	DriverNode string
}

// Wait keeps a task waiting and records why. Emitted only when the state or the reason (the sentence) changes, so
// a position or an estimate that moves does not rewrite the task; Explain serves those. Decide emits it as *Wait:
// the Waits of one pass share one backing array, so a 100,000-deep queue costs one allocation, not 100,000. It is
// kept small (64 bytes, three pointers): a first pass over a deep queue writes one for every task, and writing
// them cost as much as classifying the tasks; what is read of it rarely comes through its methods.
type Wait struct {
	Task *mvp.Task
	// Reason is the human sentence (stored as the task's pending_reason); Code is the machine-readable reason.
	Reason string
	// YieldsTo names the task whose reservation this one waits behind (Code behind_reservation).
	YieldsTo string
	// estNs is the reserved start of the task holding the reservation (unix ns), 0 for the others.
	estNs int64
	// Position is the task's place among the waiting tasks, 1-based, in the policy's order.
	Position int32
	largest  float32
	code     waitCode
}

// Code is the wait's machine-readable reason.
func (w *Wait) Code() WaitCode { return w.code.name() }

// Never is true when the task cannot fit on this cluster even if it were empty (Code never_fits; not nodes_down,
// which waits for nodes that are down to come back).
func (w *Wait) Never() bool { return w.code == cNeverFits }

// LargestFreeGPUs is the GPUs free on the largest free node (Code fragmented).
func (w *Wait) LargestFreeGPUs() float64 { return float64(w.largest) }

// EstStart is the reserved start of the task holding the reservation; nil for the others (Explain estimates
// every task's).
func (w *Wait) EstStart() *time.Time {
	if w.estNs == 0 {
		return nil
	}
	at := time.Unix(0, w.estNs).UTC()
	return &at
}

// Stop stops a live attempt that mvp has judged: a gang unplaceable for longer than Policy.GangWait
// (Kind INSUFFICIENT_RESOURCES, Event GANG_STUCK). The loop records the judgement on the attempt first (Retry
// false), then asks Ray to stop the job; an attempt already judged gets Stop again on every pass (Retry true)
// until Ray reports its job ended, so a failed stop call, or a crash between the note and the call, is retried
// (the loop sends such a repeated ask at most every StopResend).
type Stop struct {
	Task    *mvp.Task
	Attempt *mvp.Attempt
	Kind    mvp.FailureKind
	Event   string
	Reason  string
	// Retry is true when the judgement is already recorded and only the stop call is repeated.
	Retry bool
}

// Expire ends a waiting task that was never started within its max_queued_s (MAX_QUEUED_EXCEEDED).
type Expire struct {
	Task   *mvp.Task
	Reason string
}

func (Submit) action() {}
func (*Wait) action()  {}
func (Stop) action()   {}
func (Expire) action() {}

// expired reports whether a waiting task has waited past its max_queued_s without ever starting. The bound is on
// the time to the first start: a task requeued after a run is no longer subject to it, one whose attempts only
// lost the race for their GPUs (or never ran) still is (mvp.Task.QueuedUntil).
func expired(now time.Time, t *mvp.Task) bool {
	return expiredNs(now.UnixNano(), t.CreatedAt.UnixNano(), t)
}

// expiredNs is expired with now and t's creation in unix nanoseconds (classify's form: time.Time's arithmetic
// costs more than the rest of a task's classification).
func expiredNs(nowNs, createdNs int64, t *mvp.Task) bool {
	d, bound := t.QueuedBound()
	return bound && nowNs-createdNs >= int64(d)
}

// overstayed reports whether a started attempt has run past its task's max_runtime_s, counted from when it began
// to run (RunningSince: not Ray's start_time, which is the submission's).
func overstayed(now time.Time, a ActiveAttempt) bool {
	since := a.runStart()
	return a.Task.MaxRuntimeS > 0 && since != nil && now.Sub(*since) >= time.Duration(a.Task.MaxRuntimeS)*time.Second
}

// runStart is when the attempt's max_runtime_s began: when mvp first saw it RUNNING, or when Ray placed its gang
// if that was later (a driver that waited 27 s of its 30 s for its gang was stopped 2 s into its run, "ran longer
// than its max_runtime_s"), by the placement recorded on the attempt (mvp.Attempt.RunStart) or the live reading,
// whichever is later; nil if it has not run.
func (a ActiveAttempt) runStart() *time.Time {
	since := a.Attempt.RunStart()
	if since == nil || since.IsZero() {
		return since
	}
	if a.PlacedAt.After(*since) {
		p := a.PlacedAt
		return &p
	}
	return since
}

// stops returns the Stop actions of one pass: retries for attempts already judged, and new judgements. A canceled
// task is never judged (the cancel path stops its job).
func stops(now time.Time, s Snapshot, p Policy, out []Action) []Action {
	for _, a := range s.Active {
		if a.Task.State == mvp.StateCanceled || a.Attempt == nil || a.Attempt.RayStatus.Terminal() {
			continue
		}
		if a.Judged() {
			out = append(out, Stop{Task: a.Task, Attempt: a.Attempt, Kind: a.Attempt.FailureKind,
				Reason: a.Attempt.Message, Retry: true})
			continue
		}
		if s.JobsUnread {
			continue
		}
		// A gang still waiting to be placed has not begun to train: the gang wait judges it (stuck, below), not
		// max_runtime_s, which would fail for good a run that only lacked its GPUs (heartbeats wait likewise).
		// With no gang wait (gang_wait_s 0) nothing else bounds it.
		waiting := !a.StuckSince.IsZero() && p.GangWait > 0
		if a.Attempt.RayStatus == mvp.RayRunning && !waiting && overstayed(now, a) {
			out = append(out, Stop{Task: a.Task, Attempt: a.Attempt, Kind: mvp.FailureMaxRuntimeExceeded,
				Event: mvp.EventStopRequested, Reason: fmt.Sprintf("ran longer than its max_runtime_s (%d s): stopped by mvp",
					a.Task.MaxRuntimeS)})
			continue
		}
		if a.stuck(now, p) {
			d := DemandOf(a.Task, p)
			why := fmt.Sprintf("could not be placed for %s: no node had room for its placement groups",
				now.Sub(a.StuckSince).Round(time.Second))
			if a.Rescheduling {
				why = fmt.Sprintf("lost a node and could not be placed again for %s: no node had room for its "+
					"placement groups", now.Sub(a.StuckSince).Round(time.Second))
			}
			if a.Infeasible {
				why = "can never be placed: Ray reports its placement group infeasible on this cluster"
			}
			out = append(out, Stop{Task: a.Task, Attempt: a.Attempt, Kind: mvp.FailureInsufficientResources,
				Event: mvp.EventGangStuck, Reason: fmt.Sprintf("the gang of %d×%g GPUs %s", d.Groups, d.GPUs, why)})
		}
	}
	return out
}

// expiries returns an Expire for every waiting task past its max_queued_s, whether or not the cluster was read.
// (With the cluster read, Decide takes them from its plan, which finds them in the same walk of the queue.)
func expiries(now time.Time, s Snapshot, out []Action) []Action {
	for _, t := range s.Queue {
		if expired(now, t) {
			out = append(out, expireOf(now, t))
		}
	}
	return out
}

// expireOf is the Expire of a task past its max_queued_s.
func expireOf(now time.Time, t *mvp.Task) Expire {
	why := ""
	switch n := t.LatestAttemptNo; {
	case n == 1:
		why = " (its attempt lost the race for its GPUs or never ran)"
	case n > 1:
		why = fmt.Sprintf(" (its %d attempts lost the race for their GPUs or never ran)", n)
	}
	return Expire{Task: t, Reason: mvp.ExpirySummary(now.Sub(t.CreatedAt), t.MaxQueuedS, why)}
}

// reserves reports whether a live attempt's not-yet-placed groups and not-yet-started driver are held back from
// the free view. A group seen PENDING keeps its reservation while Ray may still be placing it (for the whole
// gang wait); it is released only once the gang is judged stuck (or infeasible), when its task was canceled, or
// when the attempt was already judged and is being stopped: such an attempt must never hold the queue.
func reserves(now time.Time, a ActiveAttempt, p Policy) bool {
	if a.Task.State == mvp.StateCanceled || a.Judged() {
		return false
	}
	return !a.stuck(now, p)
}

// node is a node's free resources while Decide fits gangs.
type node struct {
	id    string
	free  map[string]float64
	total map[string]float64
	// labels are the node's Ray labels; nil when the reading did not say (every label constraint then matches).
	labels map[string]string
}

// offers reports whether a node with labels (nil: not known, so every constraint matches) and have of r offers a
// driver's demand of v for key r: a resource it has v of, or a label constraint its labels match. Admission (have:
// what is free now) and never-fits (have: the node's total) ask it alike.
func offers(labels map[string]string, r string, v, have float64) bool {
	if k, val, ok := mvp.DriverLabel(r); ok {
		return labels == nil || mvp.LabelMatches(labels, k, val)
	}
	return have >= v
}

// addDriver adds sign × each resource of a driver's demand to n's free resources (sign -1 takes the driver, +1
// gives it back); its label constraints are not amounts and are left out.
func (n *node) addDriver(driver map[string]float64, sign float64) {
	for r, v := range driver {
		if _, _, label := mvp.DriverLabel(r); !label {
			n.free[r] += sign * v
		}
	}
}

// Demand is the shape of a task's gang: nnodes groups, each of GPUs GPUs and CPUs CPUs, on distinct nodes.
type Demand struct {
	Groups int
	GPUs   float64
	CPUs   float64
}

// DemandOf returns the gang shape of t under p.
func DemandOf(t *mvp.Task, p Policy) Demand {
	return demand(t, p.CPUsPerGPU[t.Workload])
}

// demand is DemandOf with the workload's CPUs per GPU already looked up.
func demand(t *mvp.Task, cpusPerGPU float64) Demand {
	g := float64(t.GPUsPerNode)
	return Demand{Groups: t.NNodes, GPUs: g, CPUs: g * cpusPerGPU}
}

// driverOf is what t's Ray driver takes: its own resources when it names them (a ray_job's entrypoint_num_cpus,
// _gpus, _memory and _resources), else the configured default.
func driverOf(t *mvp.Task, p Policy) map[string]float64 {
	if t.Driver != nil {
		return t.Driver
	}
	return p.WorkloadDriver(t.Workload)
}

// runnerCPUs is the CPU of the actor t's driver starts before it asks for its gang (the workload's runner_cpus):
// what the workload's driver takes beyond the configured one; 0 for a task with a driver of its own.
func runnerCPUs(t *mvp.Task, p Policy) float64 {
	if t.Driver != nil {
		return 0
	}
	d, ok := p.Drivers[t.Workload]
	if !ok {
		return 0
	}
	return d[ResCPU] - p.Driver[ResCPU]
}

// WorkloadDriver is what the driver of a task of workload w takes when the task names no resources of its own:
// Drivers[w], else Driver.
func (p Policy) WorkloadDriver(w mvp.Workload) map[string]float64 {
	if d, ok := p.Drivers[w]; ok {
		return d
	}
	return p.Driver
}

// ownDriverKey names a task's own driver resources (d, not nil) for grouping tasks into shapes: sorted, so that
// an own driver that asks for nothing is still its own.
func ownDriverKey(d map[string]float64) string { return "own" + describeMap(d) }

// workloadDriverKey names what the driver of a task of workload w that names no resources of its own takes, for
// grouping tasks into shapes: "" for the configured default, the workload's name where it takes more
// (Policy.Drivers).
func workloadDriverKey(p Policy, w mvp.Workload) string {
	if _, ok := p.Drivers[w]; ok {
		return "workload " + string(w)
	}
	return ""
}

// fits reports whether d (and its driver) fits on nodes, taking nothing.
func fits(nodes []*node, d Demand, driver map[string]float64) bool {
	_, _, ok := fitCheck(nodes, d, driver)
	return ok
}

// Decide returns what to do now. It is deterministic: the same arguments give the same actions. The policy
// (p.Name) decides the order in which waiting tasks are admitted; see PolicyNames.
func Decide(now time.Time, s Snapshot, p Policy) []Action {
	out := make([]Action, 0, len(s.Active)+len(s.Queue))

	// Stops first: they free resources for the queue in a later pass.
	out = stops(now, s, p, out)
	out = heartbeats(now, s, out)
	if s.Cluster == nil {
		out = expiries(now, s, out)
		_, out = dependencies(now, s, out)
		return out
	}
	// The plan walks the queue once (a deep queue's tasks are far apart in memory): it finds the tasks past their
	// max_queued_s and those held by their dependencies (deps.go) as it classifies the rest.
	pl := newPlan(now, s, p)
	for _, i := range pl.expired {
		out = append(out, expireOf(now, s.Queue[i]))
	}
	out = append(out, pl.held...)
	ws := waits{buf: make([]Wait, 0, len(s.Queue))}
	for i := range pl.ents {
		e := &pl.ents[i]
		switch e.kind {
		case entSubmit:
			out = append(out, pl.submits[e.sub])
		case entWait:
			out = ws.appendTo(out, pl, int32(i))
		}
	}
	return out
}

// waits hands out the Wait actions of one Decide from one backing array, sized to the queue by Decide (a pointer
// into it stays valid even if an append ever had to grow it).
type waits struct{ buf []Wait }

func (w *waits) appendTo(out []Action, pl *plan, i int32) []Action {
	t, e := pl.s.Queue[i], &pl.ents[i]
	reason := pl.reasonOf(e)
	if e.pending && t.PendingReason == reason {
		return out
	}
	w.buf = append(w.buf, Wait{Task: t, Reason: reason, YieldsTo: pl.yieldsTo(e), Position: e.pos, largest: e.largest,
		code: e.code})
	wt := &w.buf[len(w.buf)-1]
	if r := pl.resv; r != nil && r.holder == i && r.at != never {
		wt.estNs = r.at
	}
	return append(out, wt)
}

// ReportLag is how long after a placement group is removed its resources count as given back on its node although
// the node's report does not show them free yet: Ray drops the group from its table, and the live probe reads it
// gone (mvp.PlacementGroup.RemovedNs), 60–110 ms before the node reports the GPUs free (Ray 2.60).
const ReportLag = time.Second

// freeNodes returns the alive nodes with their availability, in a stable order. What the placed (CREATED or
// PREPARED) placement groups on a node hold is taken off it whatever its report says: Ray marks a group placed
// before the node's available resources catch up, and for that moment the node shows the group's GPUs free.
func freeNodes(c *mvp.ClusterView) []*node {
	held := groupsOn(c, func(g *mvp.PlacementGroup) bool { return g.Placed() })
	var ns []*node
	for _, n := range c.Nodes {
		if !n.Alive {
			continue
		}
		free := make(map[string]float64, len(n.Available))
		for k, v := range n.Available {
			free[k] = v
		}
		for k, v := range held[n.ID] {
			if tot, ok := n.Total[k]; ok && v > 0 {
				if limit := max(tot-v, 0); free[k] > limit {
					free[k] = limit
				}
			}
		}
		ns = append(ns, &node{id: n.ID, free: free, total: n.Total, labels: n.Labels})
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].id < ns[j].id })
	return ns
}

// groupsOn sums, per node, the bundles of c's groups that keep says to, of those whose node is known.
func groupsOn(c *mvp.ClusterView, keep func(*mvp.PlacementGroup) bool) map[string]map[string]float64 {
	var on map[string]map[string]float64
	for i := range c.Groups {
		g := &c.Groups[i]
		if g.Node == "" || !keep(g) {
			continue
		}
		if on == nil {
			on = map[string]map[string]float64{}
		}
		h := on[g.Node]
		if h == nil {
			h = map[string]float64{}
			on[g.Node] = h
		}
		for _, b := range g.Bundles {
			for k, v := range b {
				h[k] += v
			}
		}
	}
	return on
}

// lagReleases returns, for the nodes of freeNodes(c) (in its order), the GPUs and CPUs of groups removed within
// ReportLag of the reading that the node's report does not show free yet (never more than its placed groups leave),
// as releases at now. The reservation counts them given back now; admission does not, until the report says so.
// Found by CI on real Ray: a pass in that moment saw the ended 3-GPU task hold nothing (its group removed) and its
// node still busy, so the 1 × 4 gang reserved there fitted at no declared end; its reservation moved to the other
// node's end 15 minutes away and a 1-GPU task declaring 10 minutes was backfilled, which Ray put on the freed node.
// Not given to admission: a node that died under a run still reads alive for a moment, its groups removed, and a
// retry admitted on the GPUs they held failed verl's GPU check (TestWorkerNodeDeathIsRetried).
func lagReleases(c *mvp.ClusterView, nodes []*node, now time.Time) []release {
	if c.At.IsZero() {
		return nil
	}
	back := groupsOn(c, func(g *mvp.PlacementGroup) bool {
		return g.State == "REMOVED" && g.RemovedNs > 0 && c.At.UnixNano()-g.RemovedNs <= int64(ReportLag)
	})
	if back == nil {
		return nil
	}
	held := groupsOn(c, func(g *mvp.PlacementGroup) bool { return g.Placed() })
	var out []release
	for k, n := range nodes {
		b := back[n.id]
		if b == nil {
			continue
		}
		lag := func(res string) float64 {
			reported := availableOf(c, n.id, res)
			return max(min(b[res], n.total[res]-held[n.id][res]-reported), 0)
		}
		if g, cpu := lag(ResGPU), lag(ResCPU); g > 0 || cpu > 0 {
			out = append(out, release{at: now.UnixNano(), node: k, gpu: g, cpu: cpu})
		}
	}
	return out
}

// fit places d.Groups groups on distinct nodes where Ray would put them, the node with the most room first
// (rayScore; ties in node order), then the driver anywhere it fits, the node with the fewest free GPUs first.
// mvp does not place verl's groups: Ray does, by its LeastResourceScorer, so a plan made any other way (best fit,
// as before) put tasks where they did not land and admitted, in the same pass, gangs that then lost the race for
// the nodes it had counted on (TestDecidePlansWhereRayPlaces). On success it subtracts what it placed from nodes
// and returns the chosen nodes' indices and the driver's (-1 when there is no driver); on failure nodes are
// unchanged.
func fit(nodes []*node, d Demand, driver map[string]float64) ([]int, int, bool) {
	return fitDriver(nodes, d, driver, true)
}

// fitDriver is fit, placing the driver only if withDriver.
func fitDriver(nodes []*node, d Demand, driver map[string]float64, withDriver bool) ([]int, int, bool) {
	if !withDriver {
		driver = nil
	}
	chosen, drv, ok := fitCheck(nodes, d, driver)
	if ok {
		take(nodes, chosen, drv, d, driver)
	}
	return chosen, drv, ok
}

// fitCheck is fit without taking anything from nodes.
func fitCheck(nodes []*node, d Demand, driver map[string]float64) ([]int, int, bool) {
	// Each node's free GPUs and CPUs, read from its map once (the sort compares them many times).
	var buf [64]int
	var gbuf, cbuf [64]float64
	order, gpu, cpu := buf[:0], gbuf[:0], cbuf[:0]
	for k, n := range nodes {
		order = append(order, k)
		gpu, cpu = append(gpu, n.free[ResGPU]), append(cpu, n.free[ResCPU])
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(gpu[a], gpu[b]) })
	// The groups go where Ray puts them: the most room first (rayScore), ties in node order.
	var sbuf [64]int
	var scbuf [64]float64
	gorder, score := append(sbuf[:0], order...), scbuf[:0]
	for k := range nodes {
		score = append(score, rayScore(d, gpu[k], cpu[k]))
	}
	slices.SortStableFunc(gorder, func(a, b int) int { return cmp.Compare(score[b], score[a]) })
	var chosen []int
	for _, k := range gorder {
		if len(chosen) == d.Groups {
			break
		}
		if gpu[k] >= d.GPUs && cpu[k] >= d.CPUs {
			chosen = append(chosen, k)
		}
	}
	if len(chosen) < d.Groups {
		return nil, -1, false
	}
	if len(driver) == 0 {
		return chosen, -1, true
	}
	for _, k := range order {
		n := nodes[k]
		ok := true
		for r, v := range driver {
			free := n.free[r]
			if slices.Contains(chosen, k) {
				switch r {
				case ResGPU:
					free -= d.GPUs
				case ResCPU:
					free -= d.CPUs
				}
			}
			if !offers(n.labels, r, v, free) {
				ok = false
				break
			}
		}
		if ok {
			return chosen, k, true
		}
	}
	return nil, -1, false
}

// take subtracts a gang placed on chosen (and its driver on drv, if any) from nodes.
func take(nodes []*node, chosen []int, drv int, d Demand, driver map[string]float64) {
	for _, k := range chosen {
		nodes[k].free[ResGPU] -= d.GPUs
		nodes[k].free[ResCPU] -= d.CPUs
	}
	if drv >= 0 {
		nodes[drv].addDriver(driver, -1)
	}
}

// driverEverFits reports whether some alive node of c could take driver when empty.
func driverEverFits(c *mvp.ClusterView, driver map[string]float64) bool {
	for i := range c.Nodes {
		if c.Nodes[i].Alive && offersDriver(&c.Nodes[i], driver) {
			return true
		}
	}
	return false
}

// offersDriver reports whether an empty n could take driver: its resources and its label constraints.
func offersDriver(n *mvp.Node, driver map[string]float64) bool {
	for k, v := range driver {
		if !offers(n.Labels, k, v, n.Total[k]) {
			return false
		}
	}
	return true
}

// neverFits reports whether d cannot fit even on an empty cluster of the alive nodes, and why: cNeverFits, or
// cNodesDown when it would fit with the GPU nodes that are down (c.Down); noCode when it fits.
func neverFits(c *mvp.ClusterView, d Demand, driver map[string]float64) (string, waitCode) {
	fitting, maxGPU, maxCPU, alive := 0, 0.0, 0.0, 0
	driverOK := len(driver) == 0
	for _, n := range c.Nodes {
		if !n.Alive {
			continue
		}
		if d.GPUs == 0 || n.Total[ResGPU] > 0 { // a gang counts the GPU nodes (not the head)
			alive++
			maxCPU = max(maxCPU, n.Total[ResCPU])
		}
		if n.Total[ResGPU] > maxGPU {
			maxGPU = n.Total[ResGPU]
		}
		if n.Total[ResGPU] >= d.GPUs && n.Total[ResCPU] >= d.CPUs {
			fitting++
		}
		if offersDriver(&n, driver) {
			driverOK = true
		}
	}
	gpuWord := "GPU "
	if d.GPUs == 0 {
		gpuWord = ""
	}
	if fitting < d.Groups {
		var down []string
		for _, n := range c.Down {
			if n.Total[ResGPU] >= d.GPUs && n.Total[ResCPU] >= d.CPUs {
				down = append(down, describeDown(&n))
			}
		}
		if fitting+len(down) >= d.Groups {
			return fmt.Sprintf("waiting for GPU nodes that are down: needs %d node(s) with %g GPU and %g CPU each; "+
				"%d of %d alive GPU node(s) are that large, and %d more that mvp saw alive are down now (%s); it "+
				"starts once enough of them are back", d.Groups, d.GPUs, d.CPUs, fitting, alive, len(down),
				strings.Join(down, "; ")), cNodesDown
		}
		if fitting == alive { // every node is large enough: there are too few of them
			return fmt.Sprintf("can never fit on this cluster: needs %d node(s) with %g GPU and %g CPU each; the "+
				"cluster has %d alive %snode(s)", d.Groups, d.GPUs, d.CPUs, alive, gpuWord), cNeverFits
		}
		return fmt.Sprintf("can never fit on this cluster: needs %d node(s) with %g GPU and %g CPU each; "+
			"%d of %d alive %snode(s) are that large (they have at most %g GPU and %g CPU)", d.Groups, d.GPUs, d.CPUs,
			fitting, alive, gpuWord, maxGPU, maxCPU), cNeverFits
	}
	if !driverOK {
		res, labelled := describeDriver(driver)
		hint := ""
		for k := range driver {
			if _, v, label := mvp.DriverLabel(k); label && strings.Contains(v, "in(") && strings.Contains(v, ", ") {
				// Ray's job manager takes in(a, b), and its scheduler keeps " b" as the value: no node labelled b
				// matches.
				hint = " (Ray reads a space after a comma in in(…) as part of the value: write in(a,b))"
			}
		}
		return fmt.Sprintf("can never fit on this cluster: no alive node%s offers the driver's resources %s%s", labelled, res, hint), cNeverFits
	}
	return "", noCode
}

// describeDown names a node that is down for a reason: its id's first 12 characters, its address, and its GPUs.
func describeDown(n *mvp.Node) string {
	id := n.ID
	if len(id) > 12 {
		id = id[:12]
	}
	s := fmt.Sprintf("node %s, %g GPU", id, n.Total[ResGPU])
	if n.IP != "" {
		s = fmt.Sprintf("node %s at %s, %g GPU", id, n.IP, n.Total[ResGPU])
	}
	return s
}

// describeDriver splits a driver's demand for a reason: its resources as describeMap writes them, and, where it
// names label constraints, " labelled {key: value, …}" (else "").
func describeDriver(d map[string]float64) (resources, labelled string) {
	res := make(map[string]float64, len(d))
	var labels []string
	for k, v := range d {
		if _, _, label := mvp.DriverLabel(k); label {
			labels = append(labels, k)
		} else {
			res[k] = v
		}
	}
	if len(labels) == 0 {
		return describeMap(res), ""
	}
	sort.Strings(labels)
	return describeMap(res), " labelled " + mvp.DescribeLabels(labels)
}

func describeMap(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.FormatFloat(m[k], 'f', -1, 64)) // as sent: 999999999999999, not 9.99999999999999e+14
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
