package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// The scheduling policies, by the name v2.scheduler.policy gives them. How each orders and admits the queue is in
// specs/design.md ("Policies"); DefaultPolicy was chosen from `make sim` measurements (BENCHMARKS.md).
const (
	// PolicyFIFO admits in arrival order; the first task that does not fit holds every task behind it.
	PolicyFIFO = "fifo"
	// PolicyEASY is EASY backfill: the oldest task that does not fit gets a reservation at the earliest time its
	// gang fits (per node, from declared ends); later tasks, in arrival order, start now only if they do not
	// delay it.
	PolicyEASY = "easy"
	// PolicySJBF is EASY backfill whose backfill candidates are taken shortest declared runtime first (ties in
	// arrival order): the reservation still bounds the wait of the oldest.
	PolicySJBF = "sjbf"
	// PolicySJF admits shortest declared runtime first, with no reservation: every task that fits starts. It
	// starves big gangs and is kept as the bound the default's mean wait is measured against, not as a choice.
	PolicySJF = "sjf"
	// PolicyXFBF is EASY backfill whose backfill candidates are taken highest expansion factor first
	// ((wait + declared runtime) ÷ declared runtime), ties in arrival order.
	PolicyXFBF = "xfbf"
	// PolicyXFPI is xfbf with priority inheritance: a backfill candidate older than a waiting whole-cluster gang
	// takes that gang's expansion factor when it is larger (the gang cannot start before every older task has).
	PolicyXFPI = "xfpi"
	// PolicyXFChain is xfbf with drain chaining: when the cluster is empty and a whole-cluster gang waits behind
	// tasks that would take it, the gang starts first if that passes both exchange tests of chainDrain (it costs
	// the tasks it goes ahead of less waiting in all than the drain it saves itself, and none of them ends up
	// waiting longer than it would).
	PolicyXFChain = "xfchain"
)

// PolicyNames lists every policy, the default first.
var PolicyNames = []string{PolicyXFChain, PolicyXFBF, PolicyXFPI, PolicyEASY, PolicySJBF, PolicyFIFO, PolicySJF}

// DefaultPolicy is the policy used when none is named.
const DefaultPolicy = PolicyXFChain

// ValidPolicy reports whether name is a policy ("" counts: it means DefaultPolicy).
func ValidPolicy(name string) bool { return name == "" || slices.Contains(PolicyNames, name) }

// WaitCode is the machine-readable reason a task waits.
type WaitCode string

// The wait codes.
const (
	// CodeGPUsBusy: not enough GPUs are free now for the gang.
	CodeGPUsBusy WaitCode = "gpus_busy"
	// CodeFragmented: enough GPUs are free in all, but not on enough distinct nodes (Wait.LargestFreeGPUs says
	// how many the largest free node has).
	CodeFragmented WaitCode = "fragmented"
	// CodeCPUsBusy: enough nodes have the gang's GPUs free, but not the CPUs that go with them (its bundles', and
	// its driver's with the workload's runner_cpus, on one of them); or a Ray-door job's driver alone, which asks
	// for no GPU, waits for room.
	CodeCPUsBusy WaitCode = "cpus_busy"
	// CodeBehindReservation: the task would fit now but starting it would delay the task named in YieldsTo,
	// which holds a reservation (under fifo: the first task in line that does not fit).
	CodeBehindReservation WaitCode = "behind_reservation"
	// CodeMaxRunning: max_running_tasks tasks are live already.
	CodeMaxRunning WaitCode = "max_running_tasks"
	// CodeNeverFits: the gang cannot fit on this cluster even when it is empty.
	CodeNeverFits WaitCode = "never_fits"
	// CodeNodesDown: the gang cannot fit on the alive nodes even when they are empty, but would with GPU nodes
	// that mvp saw alive and that are down now (ClusterView.Down); like never_fits, it holds no reservation.
	CodeNodesDown WaitCode = "nodes_down"
	// CodeBackingOff: the task is waiting out next_run_at after an attempt that failed for lack of resources
	// (only in Explain: Decide leaves such a task alone).
	CodeBackingOff WaitCode = "backing_off"
	// CodeDependency: the task waits for its after_ok / after_any dependencies to end (it does not compete for
	// GPUs until they have).
	CodeDependency WaitCode = "dependency"
)

// waitCode is a WaitCode as a plan keeps it for each task: one byte, so that a plan's entries hold no pointer
// (a 100,000-deep queue's entries are then smaller and not scanned by the garbage collector).
type waitCode uint8

// The wait codes a plan gives (Explain's own, backing_off and cluster_unknown, are not among them).
const (
	noCode waitCode = iota
	cGPUsBusy
	cFragmented
	cBehindReservation
	cMaxRunning
	cNeverFits
	cQuota
	cFairShare
	cDependency
	cCPUsBusy
	cNodesDown
)

// waitCodes names each waitCode.
var waitCodes = [...]WaitCode{noCode: "", cGPUsBusy: CodeGPUsBusy, cFragmented: CodeFragmented,
	cBehindReservation: CodeBehindReservation, cMaxRunning: CodeMaxRunning, cNeverFits: CodeNeverFits,
	cQuota: CodeQuota, cFairShare: CodeFairShare, cDependency: CodeDependency, cCPUsBusy: CodeCPUsBusy,
	cNodesDown: CodeNodesDown}

// name is the WaitCode c stands for.
func (c waitCode) name() WaitCode { return waitCodes[c] }

// policyName is p.Name, or the default when it is empty.
func (p Policy) policyName() string {
	if p.Name == "" {
		return DefaultPolicy
	}
	return p.Name
}

// runtimeOf is the declared run time of t under p; 0 means unbounded.
func runtimeOf(t *mvp.Task, p Policy) time.Duration {
	if t.MaxRuntimeS > 0 {
		return time.Duration(t.MaxRuntimeS) * time.Second
	}
	return p.DefaultMaxRuntime
}

// never is the time of an end nobody declared.
const never = math.MaxInt64

// release is what a live or admitted task gives back on one node at its declared end (unix ns; never if unknown).
type release struct {
	at     int64
	node   int
	gpu    float64
	cpu    float64
	driver bool
	drv    map[string]float64 // what the driver gives back, when driver
	seq    int                // ties in time: the order added (Explain's estimates)
}

// shape is one gang shape of the queue, with what Decide works out once per shape and pass.
type shape struct {
	d Demand
	// driver is what the driver of a task of this shape takes (driverOf): a ray_job's own, or the default;
	// drvKey names it ("" for the default).
	driver map[string]float64
	drvKey string
	never  waitCode // cNeverFits or cNodesDown when the shape cannot fit the alive nodes; noCode otherwise
	reason string   // the never-fits (or nodes-down) reason
	// noFitNow: the shape did not fit the free view of this pass; the view only shrinks, so it never will.
	noFitNow bool
	// delays: a task of this shape that outlives the reservation would delay it; fitsNow: it fits the free view
	// now (both reset at every admission).
	delays, fitsNow bool
	// raceKnown: mayRace's answer for the shape (raced, raceYields) holds until the next admission.
	raceKnown, raced bool
	raceYields       int32
	// Reasons already formatted, by code (fragmented also by the largest free node it names).
	busy, frag, cpus string
	fragAt           float32
}

// Entry kinds of a plan.
const (
	entSkip uint8 = iota // backing off: Decide leaves it alone
	entSubmit
	entWait
	entExpired // past its max_queued_s: Decide ends it (Expire), it is not part of the queue any more
	entHeld    // held by its dependencies (deps.go): it does not compete for GPUs
)

// entry is what a plan decided for one queue task (by queue index).
type entry struct {
	code  waitCode
	shape int32
	// yields, for behind_reservation: the queue index of the task yielded to; -1 for plan.blocker; -2-k for the live
	// attempt Snapshot.Active[k] whose groups are being placed (see mayRace).
	yields int32
	pos    int32 // 1-based position among waiting tasks, in policy order
	// user is the owner's index in plan.users; rank the 1-based place rank gave the task (priority, fair
	// share), orig its place by starvation and priority alone (0 when the queue kept arrival order).
	user, rank, orig int32
	sub              int32 // entSubmit: index into plan.submits
	rtS              int32 // declared run time in seconds; maxRuntimeS when unbounded
	// waitS is the seconds since the task was created; largest the GPUs of the largest free node (fragmented).
	waitS, largest float32
	kind           uint8
	prio           uint8 // the task's priority, clamped to 0..MaxPriority (read once: rank sorts by it)
	// pending: the task is PENDING_RESOURCES (read once, so that Decide's Waits need not read the task again
	// unless its stored reason may already say the same).
	pending bool
	// backoff: the task backs off until its next_run_at after an attempt that lost a race for resources (kind
	// entSkip: Decide writes nothing for it). It keeps its place in the order: the reservation policies give it
	// the reservation when it comes first, starting no earlier than next_run_at.
	backoff bool
}

// maxRuntimeS stands for an unbounded (or absurdly long) declared run time in entry.rtS.
const maxRuntimeS = 1<<31 - 1

// reservation is the start the policy holds for the first waiting task that does not fit.
type reservation struct {
	holder int32 // queue index
	at     int64 // unix ns; never when no declared end lets it fit
	nodes  []string
	// atT is the free view at the reserved start: what the cluster will have free then, less what backfilled
	// tasks that outlive it will still hold.
	atT []*node
}

// plan is one pass of a policy over a snapshot: Decide turns it into actions, Explain into a QueueView.
type plan struct {
	now   time.Time
	s     Snapshot
	p     Policy
	nodes []*node // free now; admissions subtract from it
	// liveFree is each node's free GPUs once the live attempts' holds are placed, before any admission (Explain's).
	liveFree []float64
	// blocker is the live attempt whose unplaced groups do not fit: the queue waits behind it.
	blocker string
	running int
	shapes  []shape
	ents    []entry
	order   []int32 // candidates (due, could fit some day) in policy order
	submits []Submit
	resv    *reservation
	// releases holds declared ends of live attempts and of this pass's admissions; built when first needed.
	releases []release
	live     []liveUse
	admitted []liveUse
	// ray is the free view as Ray sees it: the nodes' availability less the placed groups (freeNodes of the
	// snapshot), without what mvp reserves for groups not placed yet; placing is those groups (live attempts' and
	// this pass's admissions'), which Ray does not know of until their drivers ask (mayRace). ray and rayLeft are
	// made with the first of them: a pass with none needs neither.
	ray     []*node
	placing []placing
	// mayRace's scratch
	raySaved   []float64
	rayClasses [][2]float64
	// rayLeft is ray with the gangs being placed taken where Ray would put them, in order (while rayLeftOK: each
	// fitted); a task whose groups keep room there cannot be in their way.
	rayLeft   []*node
	rayLeftOK bool
	built     bool
	// The free view's GPUs in all and on its largest node, and each node's, most first, while freeKnown (an
	// admission clears it).
	freeGPU, largest float64
	freeGPUs         []float64
	freeKnown        bool
	// Sentences shared by many waits.
	maxRunning string
	// users are the owners met in this pass (fairshare.go), userIdx indexes them by name, lastUser is the last
	// looked up (-1 for none).
	users     []userState
	userIdx   map[string]int32
	lastUser  int32
	lastOwner string // the Task.Owner last looked up (lastUser's, before "" became the operator)
	// mixed: the queue has more than one owner or priority, or a task past the starvation bound (rank sorts);
	// prioMixed: more than one priority.
	mixed, prioMixed bool
	// starved is the queue index of the oldest task past the starvation bound, -1 for none.
	starved int32
	// expired are the queue indexes of the tasks past their max_queued_s; held the actions of the tasks held by
	// their dependencies (a DependencyFailed, or a Wait when the reason changed), both in queue order.
	expired []int32
	held    []Action
}

// placing is a gang mvp expects Ray to be asked to place: the groups a live attempt has not placed yet, or a gang
// this pass admits.
type placing struct {
	d      Demand
	yields int32 // as entry.yields: a queue index, or -2-k for Snapshot.Active[k]
}

// liveUse is where a live or just-admitted task holds resources, and until when.
type liveUse struct {
	end      int64
	nodes    []int // node index per placed group; -1 where unknown
	gpu, cpu float64
	driver   int                // node index of the driver; -1 if unknown or none
	drv      map[string]float64 // what the driver takes
}

// newPlan reserves what live attempts still take, then runs the policy over the queue.
func newPlan(now time.Time, s Snapshot, p Policy) *plan {
	pl := livePlan(now, s, p)
	pl.liveFree = make([]float64, len(pl.nodes)) // the free GPUs Explain shows: after the live attempts' holds
	for i, n := range pl.nodes {
		pl.liveFree[i] = n.free[ResGPU]
	}
	pl.classify()
	pl.rank()
	var ranked []int32
	if pl.p.FairShare && len(pl.users) > 1 {
		ranked = slices.Clone(pl.order) // the policies reorder backfill candidates in place
	}
	if pl.blocker != "" {
		for _, i := range pl.order {
			if pl.overQuota(i) {
				pl.wait(i, cQuota, 0) // what holds it whatever the unplaced gang does
			} else {
				pl.wait(i, cBehindReservation, -1)
			}
		}
	} else {
		switch p.policyName() {
		case PolicyFIFO:
			pl.fifo()
		case PolicySJF:
			pl.sortByRuntime(pl.order)
			pl.greedy(pl.order)
		case PolicyEASY:
			pl.easy(nil)
		case PolicySJBF:
			pl.easy(pl.backfillOrder(pl.sortByRuntime))
		case PolicyXFPI:
			pl.easy(pl.backfillOrder(pl.sortByInheritedExpansion))
		case PolicyXFBF:
			pl.easy(pl.backfillOrder(pl.sortByExpansion))
		default: // PolicyXFChain
			if !pl.rankShaped() {
				pl.chainDrain()
			}
			pl.easy(pl.backfillOrder(pl.sortByExpansion))
		}
	}
	if ranked != nil {
		pl.markFairShare(ranked)
	}
	pl.positions()
	return pl
}

// livePlan is a plan with what the live attempts hold and will still take placed (reserveLive), before any
// policy runs over the queue.
func livePlan(now time.Time, s Snapshot, p Policy) *plan {
	pl := &plan{now: now, s: s, p: p, nodes: freeNodes(s.Cluster), lastUser: -1, starved: -1}
	pl.reserveLive()
	return pl
}

// GPUsHeld returns the GPUs each owner's live tasks hold now, by owner name (mvp.Operator for the operator's), as
// admission counts them against max_gpus: an attempt whose gang's placement groups Ray has all removed (its run
// ended; mvp has not followed its job to its end yet) holds none, and its GPUs are handed on. With the cluster
// unread (s.Cluster nil), every live task's gang.
func GPUsHeld(now time.Time, s Snapshot, p Policy) map[string]float64 {
	held := map[string]float64{}
	if s.Cluster == nil {
		for _, a := range s.Active {
			held[mvp.OwnerName(a.Task.Owner)] += float64(a.Task.GPUs())
		}
		return held
	}
	for _, u := range livePlan(now, s, p).users {
		held[u.name] += u.used
	}
	return held
}

// reserveLive places, on the free view, what submitted attempts will still take (see reserves): groups not yet
// placed, and the driver if it has not started. Without this two tasks could be admitted onto the same free GPUs
// in the seconds between a submit and its placement. If one cannot be placed, the queue waits behind it.
func (pl *plan) reserveLive() {
	idx := pl.nodeIndex()
	claimed := make(map[string]bool, len(pl.s.Active)) // the Ray job ids of the live attempts
	for _, a := range pl.s.Active {
		if a.Attempt != nil && a.Attempt.RayJobID != "" {
			claimed[a.Attempt.RayJobID] = true
		}
	}
	created := map[string]int{} // placed groups per creator job: one walk of the groups, not one per attempt
	var others map[string][]int // removed or not yet placed groups of the live attempts' jobs (indexes into Groups)
	var pool []int              // placed groups of a job no live attempt claims (indexes into Groups)
	for k := range pl.s.Cluster.Groups {
		g := &pl.s.Cluster.Groups[k]
		switch {
		case g.Placed():
			created[g.CreatorJobID]++
			if !claimed[g.CreatorJobID] {
				pool = append(pool, k)
			}
		case claimed[g.CreatorJobID]:
			if others == nil {
				others = map[string][]int{}
			}
			others[g.CreatorJobID] = append(others[g.CreatorJobID], k)
		}
	}
	for ai, a := range pl.s.Active {
		if a.Task.State.Active() {
			pl.running++
		}
		d := DemandOf(a.Task, pl.p)
		u := &pl.users[pl.userOf(a.Task.Owner)]
		placed, gone := 0, 0
		switch {
		case a.Attempt != nil && a.Attempt.RayJobID != "":
			placed = created[a.Attempt.RayJobID]
			// Groups of its gang's shape that its job had and removed (its run ended, or its driver freed them)
			// hold nothing and are not placed again: Ray drops them before the nodes report their GPUs free and
			// before the job's end is known, and counted as unplaced they were reserved again, held the queue while
			// the reports lagged and then took the freed GPUs back until mvp followed the job to its end. A job
			// that asks for such a group again (one not placed yet besides those it removed) is a gang to place
			// again. Left: between a removal and the job's next ask nothing is reserved (specs/design.md).
			gone = removedOfShape(pl.s.Cluster.Groups, others[a.Attempt.RayJobID], d)
		case a.Attempt != nil && len(pool) > 0:
			// Its Ray job id is not known yet (mvp learns it when it next follows the attempt), but its driver may
			// have placed its gang already: groups of its shape that no live attempt claims are taken as its own.
			// Counted as unplaced, its gang was reserved again on GPUs it held, "did not fit" and held the queue
			// (walk-through 14: the API's view reads the cluster after the loop last followed its attempts).
			placed, pool = claimGroups(pl.s.Cluster.Groups, pool, d)
		}
		unplaced := max(d.Groups-placed-gone, 0)
		if placed > 0 || gone < d.Groups || d.Groups == 0 {
			u.used += d.gangGPUs()
			u.charge += d.gangGPUs() * RankHorizon.Seconds() / u.share // what it holds now counts for fair share at once
		}
		// else its gang's groups were all removed (its run ended; mvp has not followed the job to its end yet): it
		// holds nothing, and charged to its owner as held it handed the GPUs it freed to the other users' tasks in
		// the very pass the ClusterWatch wakes for (TestAnEndedGangDoesNotChargeItsOwner).
		driver := placed == 0 && gone == 0 && // a driver that placed groups runs
			(a.Attempt == nil || a.Attempt.RayStatus == mvp.RayUnknown || a.Attempt.RayStatus == mvp.RayPending)
		drvRes := driverOf(a.Task, pl.p)
		use := liveUse{end: pl.endOf(a), gpu: d.GPUs, cpu: d.CPUs, driver: -1, drv: drvRes}
		known := len(a.Nodes) >= d.Groups && d.Groups > 0
		for g := 0; g < min(placed, d.Groups); g++ { // the groups it holds (not those it removed)
			n := -1
			if known {
				n = lookup(idx, a.Nodes[g])
			}
			use.nodes = append(use.nodes, n)
		}
		if a.Attempt != nil && !driver {
			use.driver = lookup(idx, a.Attempt.DriverNodeID)
		}
		// A driver no alive node could ever take (its label selector matches none: its node died after the submit,
		// or it was admitted on a reading without labels) is not reserved: it would hold the queue until Ray gives
		// up on it, 15 minutes later. Ray ends it then, and mvp does not submit it again while nothing matches.
		if driver && !driverEverFits(pl.s.Cluster, drvRes) {
			driver = false
		}
		if (unplaced > 0 || driver) && reserves(pl.now, a, pl.p) {
			rd := Demand{Groups: unplaced, GPUs: d.GPUs, CPUs: d.CPUs}
			chosen, drv, ok := fitDriver(pl.nodes, rd, drvRes, driver)
			if !ok && pl.blocker == "" {
				pl.blocker = a.Task.ID
			}
			if ok && unplaced > 0 {
				pl.addPlacing(placing{d: rd, yields: -2 - int32(ai)})
			}
			use.nodes = append(use.nodes, chosen...)
			if driver && ok && len(drvRes) > 0 {
				use.driver = drv
			}
			if !driver && placed == 0 && gone == 0 {
				// The driver runs, but the actor it starts before asking for its gang (verl's TaskRunner, started
				// once verl is imported and Ray initialised: seconds to tens of seconds) may not yet: its CPU is
				// kept until a group of the gang is placed. Once the actor runs, Ray counts that CPU too: one CPU
				// counted twice for a while, rather than a run whose actor finds no CPU.
				if r := runnerCPUs(a.Task, pl.p); r > 0 {
					runner := map[string]float64{ResCPU: r}
					fitDriver(pl.nodes, Demand{}, runner, true)
				}
			}
		}
		pl.live = append(pl.live, use)
	}
}

// removedOfShape counts the REMOVED groups among ks (indexes into groups) that hold d's GPUs (ofShape), or 0 when
// one of ks of that shape is still to be placed.
func removedOfShape(groups []mvp.PlacementGroup, ks []int, d Demand) int {
	n := 0
	for _, k := range ks {
		g := &groups[k]
		if !ofShape(g, d) {
			continue
		}
		if g.State != "REMOVED" {
			return 0
		}
		n++
	}
	return n
}

// ofShape reports whether g's bundles hold one of d's groups' GPUs (true when they are not known).
func ofShape(g *mvp.PlacementGroup, d Demand) bool {
	gpu, _ := bundleSum(g)
	return len(g.Bundles) == 0 || gpu == d.GPUs
}

// bundleSum is the GPUs and CPUs of g's bundles.
func bundleSum(g *mvp.PlacementGroup) (gpu, cpu float64) {
	for _, b := range g.Bundles {
		gpu, cpu = gpu+b[ResGPU], cpu+b[ResCPU]
	}
	return gpu, cpu
}

// claimGroups takes from pool (indexes into groups) up to d.Groups groups of d's shape (their bundles sum to d's
// GPUs and CPUs; a group whose bundles are not known matches any shape) and returns how many it took and the rest.
func claimGroups(groups []mvp.PlacementGroup, pool []int, d Demand) (int, []int) {
	took := 0
	rest := pool[:0:0]
	for _, k := range pool {
		gpu, cpu := bundleSum(&groups[k])
		if took < d.Groups && (len(groups[k].Bundles) == 0 || gpu == d.GPUs && cpu == d.CPUs) {
			took++
			continue
		}
		rest = append(rest, k)
	}
	return took, rest
}

// endOf is the declared end of a live attempt: when it began to run plus the declared run time; once that has
// passed, mvp is stopping it and Ray may hold its GPUs for the stop's grace after it (Policy.StopGrace). An
// attempt not running yet has not begun its max_runtime_s (it counts from running_at): it ends no earlier than now
// plus the declared time (walk-through 14: its creation plus that made every estimate behind it early by the time
// it spent pending, and move later once it ran). A run whose task has ended (canceled: recorded at once, its job
// stopped right after) ends no later than its task's last write plus the grace, with a declared time or without.
func (pl *plan) endOf(a ActiveAttempt) int64 {
	if a.Attempt == nil {
		return never
	}
	end, known := time.Time{}, false
	if rt := runtimeOf(a.Task, pl.p); rt > 0 {
		start := pl.now
		if since := a.runStart(); since != nil && !since.IsZero() {
			start = *since
		}
		end, known = start.Add(rt), true
		if !pl.now.Before(end) {
			end = end.Add(pl.p.StopGrace)
		}
	}
	if a.Task.State.Terminal() && !a.Task.UpdatedAt.IsZero() {
		// Ended in mvp's record (canceled) while its job stops: Ray ends it within the grace of the stop asked then,
		// whether or not it declared a run time (an untimed one was planned never to end).
		if stop := a.Task.UpdatedAt.Add(pl.p.StopGrace); !known || stop.Before(end) {
			end, known = stop, true
		}
	}
	if !known {
		return never
	}
	return max(end.UnixNano(), pl.now.UnixNano())
}

// classify gives every queue task its shape, notes the ones past their max_queued_s and those held by their
// dependencies, leaves backing-off tasks alone, marks the ones that can never fit and lists the rest in queue
// order. It is the only walk of the queue's tasks in Decide: later steps read the entries.
func (pl *plan) classify() {
	q := pl.s.Queue
	pl.ents = make([]entry, len(q))
	pl.order = make([]int32, 0, len(q))
	// A shape is a gang and what its driver takes: tasks with a driver of their own (ray_job) are keyed by it.
	type shapeKey struct {
		d   Demand
		drv string
	}
	byDemand := map[shapeKey]int32{}
	var lastWorkload mvp.Workload // "" to start with, looked up like any other name
	lastCPG := pl.p.CPUsPerGPU[lastWorkload]
	lastDrvKey := workloadDriverKey(pl.p, lastWorkload)
	nowNs := pl.now.UnixNano()
	stopping := stoppingRuns(pl.s)
	for i, t := range q {
		e := &pl.ents[i]
		created := t.CreatedAt.UnixNano()
		if expiredNs(nowNs, created, t) {
			e.kind = entExpired
			pl.expired = append(pl.expired, int32(i))
			continue
		}
		if len(t.AfterOK)+len(t.AfterAny) > 0 {
			if a, held := holdFor(t, pl.s.Deps, stopping); held {
				e.kind, e.code = entHeld, cDependency
				if a != nil {
					pl.held = append(pl.held, a)
				}
				continue
			}
		}
		e.pending = t.State == mvp.StatePendingResources
		backoff := e.pending && t.NextRunAt != nil && pl.now.Before(*t.NextRunAt)
		e.user = pl.userOf(t.Owner)
		e.prio = uint8(min(max(t.Priority, 0), mvp.MaxPriority))
		// Consecutive tasks mostly share a workload: look its CPUs per GPU up only when it changes.
		if t.Workload != lastWorkload {
			lastWorkload, lastCPG = t.Workload, pl.p.CPUsPerGPU[t.Workload]
			lastDrvKey = workloadDriverKey(pl.p, t.Workload)
		}
		d := demand(t, lastCPG)
		key := shapeKey{d: d, drv: lastDrvKey}
		if t.Driver != nil {
			key.drv = ownDriverKey(t.Driver)
		}
		// A queue has few shapes: a scan of them is cheaper than hashing the demand.
		si, ok := int32(-1), false
		if len(pl.shapes) <= 16 {
			for k := range pl.shapes {
				if pl.shapes[k].d == d && pl.shapes[k].drvKey == key.drv {
					si, ok = int32(k), true
					break
				}
			}
		} else {
			si, ok = byDemand[key]
		}
		if !ok {
			si = int32(len(pl.shapes))
			byDemand[key] = si
			drv := driverOf(t, pl.p)
			reason, nv := neverFits(pl.s.Cluster, d, drv)
			pl.shapes = append(pl.shapes, shape{d: d, driver: drv, drvKey: key.drv, never: nv, reason: reason})
		}
		e.shape = si
		e.waitS = float32(max(time.Duration(nowNs-created).Seconds(), 0))
		e.rtS = maxRuntimeS
		if rt := runtimeOf(t, pl.p) / time.Second; rt > 0 && rt < maxRuntimeS {
			e.rtS = int32(rt)
		}
		if backoff && heldForOwnFolder(t) {
			// Held for its own folder in the way: nothing says when it is cleared, so it neither keeps a place
			// that holds the tasks behind it back nor reserves GPUs; it is looked at again at next_run_at.
			e.kind = entSkip
			continue
		}
		if nv := pl.shapes[si].never; nv != noCode {
			if backoff {
				e.kind = entSkip // looked at again at next_run_at
				continue
			}
			e.kind, e.code = entWait, nv
			continue
		}
		if backoff {
			// Backing off after an attempt that lost a race for resources: not admitted before next_run_at, and
			// written nothing (its reason is the requeue's), but it keeps its place in the order.
			e.kind, e.backoff = entSkip, true
		}
		// Only candidates count: a task that never fits is not ranked, and must not turn the arrival-order rules
		// (chaining, the policy's backfill order) off for the others.
		if len(pl.order) > 0 {
			f := pl.order[0]
			pl.prioMixed = pl.prioMixed || e.prio != pl.ents[f].prio
			pl.mixed = pl.mixed || pl.prioMixed || e.user != pl.ents[f].user
		}
		if b := pl.p.StarvationBound; b > 0 && pl.starved < 0 && float64(e.waitS) >= b.Seconds() {
			pl.starved, pl.mixed = int32(i), true // the queue is in arrival order: the oldest past the bound
		}
		pl.order = append(pl.order, int32(i))
	}
}

// fifo: admit in queue order; the first task that does not fit holds every task behind it.
func (pl *plan) fifo() {
	head := int32(-2)
	for _, i := range pl.order {
		switch {
		case pl.ents[i].backoff:
			if head < 0 && !pl.full() && !pl.overQuota(i) {
				head = i // it holds the line until it is tried again (over its quota it would not)
			}
		case head >= 0:
			pl.wait(i, cBehindReservation, head)
		case pl.full():
			pl.wait(i, cMaxRunning, 0)
		case pl.overQuota(i):
			pl.wait(i, cQuota, 0) // over its owner's quota: waits without holding the line
		case !pl.tryAdmit(i):
			head = i
		}
	}
}

// greedy admits, in the given order, every task that fits now.
func (pl *plan) greedy(order []int32) {
	for _, i := range order {
		if pl.ents[i].backoff {
			continue // no reservations: it is tried again at next_run_at
		}
		if pl.full() {
			pl.wait(i, cMaxRunning, 0)
		} else if pl.overQuota(i) {
			pl.wait(i, cQuota, 0)
		} else {
			pl.tryAdmit(i)
		}
	}
}

// easy is EASY backfill: admit in queue order up to the first task that does not fit, reserve the earliest start
// at which its gang fits (per node, from declared ends), then let later tasks start now only where they do not
// delay that start: they end before it, or use only capacity it does not need. order, if not nil, reorders the
// later tasks (in queue order otherwise).
func (pl *plan) easy(order func([]int32)) {
	for k, i := range pl.order {
		if pl.full() {
			for _, j := range pl.order[k:] {
				pl.wait(j, cMaxRunning, 0)
			}
			return
		}
		if pl.overQuota(i) {
			pl.wait(i, cQuota, 0) // over its owner's quota: neither admitted nor given the reservation
			continue
		}
		if pl.ents[i].backoff {
			pl.reserve(i) // not before its next_run_at
		} else if pl.tryAdmit(i) {
			continue
		} else {
			pl.reserve(i)
		}
		rest := pl.order[k+1:]
		if order != nil {
			order(rest)
		}
		for _, j := range rest {
			pl.backfill(j)
		}
		return
	}
}

// backfillOrder is the policy's own order of backfill candidates (sort), or, when the rank put priority or fair
// share into the order, an order that keeps it: with several priorities the candidates are taken as ranked (nil);
// with fair share across users at one priority, fair share keeps deciding *whose* task comes next (each user keeps
// the places in line the rank gave it) and the policy's sort decides *which* of that user's tasks (withinUsers).
// Sorting the whole list instead would put, say, a heavy user's long-waiting sweep ahead of a light user's task.
func (pl *plan) backfillOrder(sort func([]int32)) func([]int32) {
	switch {
	case pl.prioMixed:
		return nil
	case pl.rankShaped():
		if sort == nil {
			return nil
		}
		return func(idx []int32) { pl.withinUsers(idx, sort) }
	}
	return sort
}

// rankShaped reports whether priority or fair share put the queue out of arrival order.
func (pl *plan) rankShaped() bool {
	return pl.prioMixed || (pl.p.FairShare && len(pl.users) > 1 && pl.mixed)
}

// withinUsers orders idx with sort within each user's tasks, keeping the places each user holds in idx.
func (pl *plan) withinUsers(idx []int32, sort func([]int32)) {
	byUser := make([][]int32, len(pl.users))
	for _, i := range idx {
		u := pl.ents[i].user
		byUser[u] = append(byUser[u], i)
	}
	for _, l := range byUser {
		sort(l)
	}
	next := make([]int, len(pl.users))
	for k, i := range idx {
		u := pl.ents[i].user
		idx[k] = byUser[u][next[u]]
		next[u]++
	}
}

// backfill decides a task behind the reservation.
func (pl *plan) backfill(i int32) {
	if pl.ents[i].backoff {
		return // behind the reservation and not startable before next_run_at anyway
	}
	if pl.full() {
		pl.wait(i, cMaxRunning, 0)
		return
	}
	if pl.overQuota(i) {
		pl.wait(i, cQuota, 0)
		return
	}
	sh := &pl.shapes[pl.ents[i].shape]
	if sh.noFitNow {
		pl.notFit(i)
		return
	}
	r := pl.resv
	rtS := pl.ents[i].rtS
	endsBefore := r.at != never && rtS < maxRuntimeS && pl.now.UnixNano()+int64(rtS)*int64(time.Second) <= r.at
	if !endsBefore && sh.delays {
		// It outlives the reservation on capacity the reservation needs; it yields if it would fit now at all.
		if !sh.fitsNow {
			if _, _, ok := fitCheck(pl.nodes, sh.d, sh.driver); !ok {
				sh.noFitNow = true
				pl.notFit(i)
				return
			}
			sh.fitsNow = true
		}
		pl.wait(i, cBehindReservation, r.holder)
		return
	}
	chosen, drv, ok := fitCheck(pl.nodes, sh.d, sh.driver)
	if !ok {
		sh.noFitNow = true
		pl.notFit(i)
		return
	}
	if !endsBefore {
		// It outlives the reserved start. Ray, not mvp, chooses its nodes, so the reserved gang must still fit at its
		// start wherever Ray may put it (rayMayPlace).
		hs := &pl.shapes[pl.ents[r.holder].shape]
		atT, ok := rayMayPlace(pl.nodes, r.atT, sh.d, drv, sh.driver, func(atT []*node) bool {
			return fits(atT, hs.d, hs.driver)
		})
		if !ok {
			sh.delays = true
			pl.wait(i, cBehindReservation, r.holder)
			return
		}
		r.atT = atT
	}
	if y, race := pl.mayRace(sh); race {
		pl.wait(i, cBehindReservation, y)
		return
	}
	take(pl.nodes, chosen, drv, sh.d, sh.driver)
	pl.admit(i, chosen, drv)
}

// rayScoreSlack is how near the best score a node's must be for rayMayPlace to count it as a node Ray may choose:
// Ray breaks exact ties in hash-map order, and mvp's view of what is free lags Ray's own by a report.
const rayScoreSlack = 0.05

// rayMayPlace takes a task of shape d (its driver on drv, as mvp planned it) from atT, the free view at the reserved
// start, on every node Ray may place one of its groups on now, and reports whether ok(atT) holds for each of them.
// On success it returns the view with the task taken wherever it may land (an over-estimate for later backfills
// in the same pass, never an under-estimate).
//
// verl makes one STRICT_PACK placement group per node and names no node; Ray puts each on the node whose
// LeastResourceScorer score, the sum over the requested resources of (available - requested) / available, is
// highest: the node with the most room (ray: src/ray/raylet/scheduling/policy/scorer.cc and
// bundle_scheduling_policy.cc). fit plans the same, but where scores tie (or nearly, as mvp's view may lag Ray's)
// Ray's choice is not known. For a single group the nodes Ray may choose are those within rayScoreSlack of the
// best score now, each tried alone; for several groups, which Ray places one by one and may pack onto one node,
// every node with room for a group takes as many as it has room for, all at once. A driver that asks for GPUs (a
// Ray-door job's entrypoint_num_gpus) is placed by Ray's job supervisor, not by mvp's plan: each node with room for
// it is tried, and a task of no groups (such a driver alone) is checked too.
func rayMayPlace(now, atT []*node, d Demand, drv int, driver map[string]float64, ok func([]*node) bool) ([]*node, bool) {
	room, scores, best := rayScores(now, d)
	var may []int
	for k := range now {
		if room[k] > 0 && (d.Groups > 1 || scores[k] >= best-rayScoreSlack) {
			may = append(may, k)
		}
	}
	// The driver goes where mvp planned it (drv), unless it asks for GPUs (a Ray-door job's entrypoint_num_gpus):
	// Ray's job supervisor, not mvp, picks its node, so every node with room for it now is tried.
	var planned [1]int
	planned[0] = drv
	drvAt := planned[:]
	if driver[ResGPU] > 0 {
		var at []int
		for k, n := range now {
			if driverRoom(n, driver) {
				at = append(at, k)
			}
		}
		if len(at) > 0 {
			drvAt = at
		}
	}
	// check reports whether ok holds with the driver taken from v on each node of drvAt in turn (v is put back).
	check := func(v []*node) bool {
		for _, j := range drvAt {
			if j < 0 {
				if !ok(v) {
					return false
				}
				continue
			}
			if !v[j].withDriver(driver, func() bool { return ok(v) }) {
				return false
			}
		}
		return true
	}
	if d.Groups == 1 {
		for _, k := range may {
			v := cloneNodes(atT)
			take(v, []int{k}, -1, d, nil)
			if !check(v) {
				return nil, false
			}
		}
	}
	v := cloneNodes(atT)
	for _, k := range may {
		for range min(room[k], d.Groups) {
			v[k].free[ResGPU] -= d.GPUs
			v[k].free[ResCPU] -= d.CPUs
		}
	}
	// A task of several groups, or of none (a Ray-door job's driver alone), is checked with all of it taken.
	if d.Groups != 1 && !check(v) {
		return nil, false
	}
	for _, j := range drvAt {
		if j >= 0 {
			v[j].addDriver(driver, -1)
		}
	}
	return v, true
}

// withDriver reports f() with driver taken from n, and puts n back exactly as it was (whatever the rounding).
func (n *node) withDriver(driver map[string]float64, f func() bool) bool {
	type was struct {
		r   string
		v   float64
		had bool
	}
	var buf [8]was
	old := buf[:0]
	for r := range driver {
		x, had := n.free[r]
		old = append(old, was{r, x, had})
	}
	n.addDriver(driver, -1)
	got := f()
	for _, o := range old {
		if o.had {
			n.free[o.r] = o.v
		} else {
			delete(n.free, o.r)
		}
	}
	return got
}

// driverRoom reports whether n has room for driver now.
func driverRoom(n *node, driver map[string]float64) bool {
	for r, v := range driver {
		if !offers(n.labels, r, v, n.free[r]) {
			return false
		}
	}
	return true
}

// rayScores returns, for each node, how many groups of d it has room for now (groupsRoom) and Ray's score for one
// group there (-1 where there is no room), and the best score (-1 when no node has room).
func rayScores(nodes []*node, d Demand) (room []int, scores []float64, best float64) {
	room, scores, best = make([]int, len(nodes)), make([]float64, len(nodes)), -1
	for k, n := range nodes {
		room[k] = groupsRoom(n, d)
		if room[k] == 0 {
			scores[k] = -1
			continue
		}
		scores[k] = rayScore(d, n.free[ResGPU], n.free[ResCPU])
		best = max(best, scores[k])
	}
	return room, scores, best
}

// groupsRoom is how many groups of d fit on n now (at most d.Groups).
func groupsRoom(n *node, d Demand) int {
	g, c := n.free[ResGPU], n.free[ResCPU]
	k := 0
	for k < d.Groups && g >= d.GPUs && c >= d.CPUs {
		g, c, k = g-d.GPUs, c-d.CPUs, k+1
	}
	return k
}

// rayScore is Ray's LeastResourceScorer score of a node with gpu and cpu free for one group of d (which it must
// have room for): the higher, the likelier Ray puts the group there.
func rayScore(d Demand, gpu, cpu float64) float64 {
	return leastResource(d.GPUs, gpu) + leastResource(d.CPUs, cpu)
}

// leastResource is Ray's LeastResourceScorer term for one requested resource: (available - requested) / available,
// 0 when nothing is asked for or nothing is available.
func leastResource(requested, available float64) float64 {
	if requested <= 0 || available <= 0 {
		return 0
	}
	return (available - requested) / available
}

// addPlacing adds g to the gangs being placed, and takes it from rayLeft where Ray would put it.
func (pl *plan) addPlacing(g placing) {
	if pl.ray == nil {
		pl.ray = freeNodes(pl.s.Cluster)
		pl.rayLeft, pl.rayLeftOK = cloneNodes(pl.ray), true
	}
	pl.placing = append(pl.placing, g)
	if !pl.rayLeftOK {
		return
	}
	if chosen, _, ok := fitCheck(pl.rayLeft, g.d, nil); ok {
		take(pl.rayLeft, chosen, -1, g.d, nil)
	} else {
		pl.rayLeftOK = false
	}
}

// mayRace reports whether Ray may put a task of shape sh where a gang being placed needs room, and names that gang
// (as entry.yields). A gang's groups are placed when its driver asks for them, seconds after its submit; a task
// admitted meanwhile (in the same pass, or before those groups are placed) may ask first, and Ray puts it where its
// own view, which knows nothing of the gang, has the most room: the node mvp planned the gang on, as likely as not
// (a 1-GPU task submitted with a 1 × 4 gang took the only empty node, and the gang waited for its whole run). So
// the task starts now only if, wherever Ray may put its first group in that view (a node within rayScoreSlack of the
// best score) and its other groups after it (as fit plans), every gang being placed still fits after it, in order;
// otherwise it waits until they are placed. Orders of three or more asks are not checked.
func (pl *plan) mayRace(sh *shape) (int32, bool) {
	d := sh.d
	if d.Groups <= 0 {
		return pl.driverMayRace(sh)
	}
	if len(pl.placing) == 0 {
		return 0, false
	}
	if sh.raceKnown {
		return sh.raceYields, sh.raced
	}
	sh.raceKnown = true
	var yields int32
	rest := func(v []*node) bool {
		y, ok := pl.placingFit(v)
		yields = y
		return ok
	}
	room, scores, best := rayScores(pl.ray, d)
	one, others := Demand{Groups: 1, GPUs: d.GPUs, CPUs: d.CPUs}, Demand{Groups: d.Groups - 1, GPUs: d.GPUs, CPUs: d.CPUs}
	// Tried on pl.ray itself and put back after each try: only GPUs and CPUs change (no driver is taken), and a
	// copy of the view per node tried cost a 100,000-deep queue's pass a fifth more time.
	saved := pl.raySaved[:0]
	for _, n := range pl.ray {
		saved = append(saved, n.free[ResGPU], n.free[ResCPU])
	}
	pl.raySaved = saved
	restore := func() {
		for j, n := range pl.ray {
			n.free[ResGPU], n.free[ResCPU] = saved[2*j], saved[2*j+1]
		}
	}
	// Nodes with the same GPUs and CPUs free in Ray's view give the same answer (the views with the task on one or
	// the other are the same but for the nodes' names): each such class is answered once. An emptied cluster has one
	// class where it had 16 nodes to try, for each shape after each admission of a pass that may admit dozens.
	passed := pl.rayClasses[:0]
	defer func() { pl.rayClasses = passed }()
	for k := range pl.ray {
		if room[k] == 0 || scores[k] < best-rayScoreSlack {
			continue
		}
		class := [2]float64{pl.ray[k].free[ResGPU], pl.ray[k].free[ResCPU]}
		if slices.Contains(passed, class) {
			continue
		}
		v := pl.ray
		take(v, []int{k}, -1, one, nil) // its first group where Ray may put it; the others where Ray then would
		// Where each of its groups lands keeps room for it with every gang being placed taken (rayLeft), its asking
		// first leaves them where they would be: the sequential check is then not needed.
		onK := 1
		safe := pl.rayLeftOK
		if others.Groups > 0 {
			if chosen, _, ok := fitCheck(v, others, nil); ok {
				take(v, chosen, -1, others, nil)
				for _, n := range chosen {
					if n == k {
						onK++
					} else {
						safe = safe && groupsRoom(pl.rayLeft[n], one) > 0
					}
				}
			}
		}
		safe = safe && groupsRoom(pl.rayLeft[k], Demand{Groups: onK, GPUs: d.GPUs, CPUs: d.CPUs}) == onK
		ok := safe || rest(v)
		restore()
		if !ok {
			sh.raced, sh.raceYields = true, yields
			return yields, true
		}
		passed = append(passed, class)
	}
	return 0, false
}

// driverMayRace is mayRace for a task with no gang whose driver asks for GPUs (a Ray-door job's
// entrypoint_num_gpus): Ray's job supervisor, not mvp, picks the driver's node, any node with room for it now. It
// starts now only if every gang being placed still fits, in order, wherever the driver lands; otherwise it waits
// until they are placed.
func (pl *plan) driverMayRace(sh *shape) (int32, bool) {
	gpus := sh.driver[ResGPU]
	if len(pl.placing) == 0 || gpus <= 0 {
		return 0, false
	}
	if sh.raceKnown {
		return sh.raceYields, sh.raced
	}
	sh.raceKnown = true
	for k, n := range pl.ray {
		if !driverRoom(n, sh.driver) {
			continue
		}
		v := cloneNodes(pl.ray)
		v[k].free[ResGPU] -= gpus
		v[k].free[ResCPU] -= sh.driver[ResCPU]
		if y, ok := pl.placingFit(v); !ok {
			sh.raced, sh.raceYields = true, y
			return y, true
		}
	}
	return 0, false
}

// placingFit takes every gang being placed from v, in order, where fit plans it, and reports whether each fits;
// when one does not, it names that gang (as entry.yields).
func (pl *plan) placingFit(v []*node) (int32, bool) {
	for _, g := range pl.placing {
		chosen, _, ok := fitCheck(v, g.d, nil)
		if !ok {
			return g.yields, false
		}
		take(v, chosen, -1, g.d, nil)
	}
	return 0, true
}

// full reports whether max_running_tasks is reached.
func (pl *plan) full() bool { return pl.p.MaxRunning > 0 && pl.running >= pl.p.MaxRunning }

// tryAdmit admits task i if its gang fits now and Ray cannot place it where a gang being placed needs (mayRace);
// otherwise it records why i waits and returns false.
func (pl *plan) tryAdmit(i int32) bool {
	sh := &pl.shapes[pl.ents[i].shape]
	if sh.noFitNow {
		pl.notFit(i)
		return false
	}
	chosen, drv, ok := fitCheck(pl.nodes, sh.d, sh.driver)
	if !ok {
		sh.noFitNow = true
		pl.notFit(i)
		return false
	}
	if y, race := pl.mayRace(sh); race {
		pl.wait(i, cBehindReservation, y)
		return false
	}
	take(pl.nodes, chosen, drv, sh.d, sh.driver)
	pl.admit(i, chosen, drv)
	return true
}

// admit records a Submit of task i on the chosen nodes (already taken from pl.nodes).
func (pl *plan) admit(i int32, chosen []int, drv int) {
	t := pl.s.Queue[i]
	ids := make([]string, len(chosen))
	for k, n := range chosen {
		ids[k] = pl.nodes[n].id
	}
	sub := Submit{Task: t, AttemptNo: t.LatestAttemptNo + 1, Nodes: ids}
	if drv >= 0 {
		sub.DriverNode = pl.nodes[drv].id
	}
	pl.ents[i].kind, pl.ents[i].sub = entSubmit, int32(len(pl.submits))
	pl.submits = append(pl.submits, sub)
	if d := pl.shapes[pl.ents[i].shape].d; d.Groups > 0 {
		pl.addPlacing(placing{d: d, yields: i})
	}
	pl.running++
	pl.freeKnown = false
	for k := range pl.shapes {
		pl.shapes[k].delays, pl.shapes[k].fitsNow = false, false // the free views changed: ask again
		pl.shapes[k].raceKnown = false
	}
	end := int64(never)
	if rt := runtimeOf(t, pl.p); rt > 0 {
		end = pl.now.Add(rt).UnixNano()
	}
	sh := &pl.shapes[pl.ents[i].shape]
	pl.users[pl.ents[i].user].used += sh.d.gangGPUs()
	pl.admitted = append(pl.admitted, liveUse{end: end, nodes: chosen, gpu: sh.d.GPUs, cpu: sh.d.CPUs, driver: drv, drv: sh.driver})
	if pl.built {
		pl.addReleases(pl.admitted[len(pl.admitted)-1])
	}
}

// wait records that task i waits with code (yields: the task it yields to, for behind_reservation). A task backing
// off is left as it is: Decide writes it nothing (its reason is the requeue's).
func (pl *plan) wait(i int32, code waitCode, yields int32) {
	e := &pl.ents[i]
	if e.backoff {
		return
	}
	e.kind, e.code, e.yields = entWait, code, yields
}

// notFit records why task i does not fit now: too few GPUs free; enough but on too few nodes; or enough nodes
// with its GPUs free, but not with the CPUs (or the driver's resources) too.
func (pl *plan) notFit(i int32) {
	sh := &pl.shapes[pl.ents[i].shape]
	d := sh.d
	if !pl.freeKnown {
		pl.freeGPU, pl.largest = 0, 0
		pl.freeGPUs = pl.freeGPUs[:0]
		for _, n := range pl.nodes {
			g := n.free[ResGPU]
			pl.freeGPU += g
			pl.largest = max(pl.largest, g)
			pl.freeGPUs = append(pl.freeGPUs, g)
		}
		slices.SortFunc(pl.freeGPUs, func(a, b float64) int { return cmp.Compare(b, a) })
		pl.freeKnown = true
	}
	e := &pl.ents[i]
	e.kind = entWait
	switch {
	case d.Groups <= 0 && sh.driver[ResGPU] <= 0: // a driver alone (a ray_job) that asks for no GPU
		e.code = cCPUsBusy
	case d.Groups <= 0 || d.GPUs <= 0 || pl.freeGPU < float64(d.Groups)*d.GPUs:
		e.code = cGPUsBusy
	case d.Groups > len(pl.freeGPUs) || pl.freeGPUs[d.Groups-1] < d.GPUs:
		e.code, e.largest = cFragmented, float32(pl.largest)
	default:
		e.code = cCPUsBusy // d.Groups nodes have d.GPUs free each
	}
}

// sortByRuntime orders task indices by declared runtime, shortest first, ties in queue order; unbounded last.
func (pl *plan) sortByRuntime(idx []int32) {
	keys := make([]uint64, len(idx))
	for k, i := range idx {
		keys[k] = uint64(pl.ents[i].rtS)<<32 | uint64(uint32(i))
	}
	radixSort(keys)
	for k, key := range keys {
		idx[k] = int32(uint32(key))
	}
}

// sortByExpansion orders task indices by expansion factor (wait + declared runtime) ÷ declared runtime, highest
// first, ties in queue order; a task without a declared runtime counts as 1 (it has not waited long for its run).
func (pl *plan) sortByExpansion(idx []int32) {
	pl.sortByScore(idx, pl.expansion)
}

// expansion is task i's expansion factor (wait + declared runtime) ÷ declared runtime; 1 without a declared runtime.
func (pl *plan) expansion(i int32) float64 {
	if pl.ents[i].rtS == maxRuntimeS {
		return 1
	}
	rt := float64(pl.ents[i].rtS)
	return (float64(pl.ents[i].waitS) + rt) / rt
}

// sortByInheritedExpansion orders task indices (in queue order when called) as sortByExpansion, except that a
// task takes the largest expansion factor of the whole-cluster gangs behind it in the queue when that is larger
// than its own: such a gang starts only once every older task has started (and the cluster has drained), so a task
// that holds it up inherits its priority. Ties in queue order.
func (pl *plan) sortByInheritedExpansion(idx []int32) {
	var total float64
	for _, n := range pl.nodes {
		total += n.total[ResGPU]
	}
	whole := make([]int8, len(pl.shapes)) // per shape: 0 not yet known, 1 whole cluster, -1 not
	keys := make([]uint64, len(idx))
	inherited := 0.0
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		x := pl.expansion(i)
		b := math.Float32bits(float32(max(x, inherited)))
		keys[k] = uint64(^b)<<32 | uint64(uint32(i))
		si := pl.ents[i].shape
		if whole[si] == 0 {
			whole[si] = -1
			if d := pl.shapes[si].d; float64(d.Groups)*d.GPUs >= total {
				whole[si] = 1
			}
		}
		if whole[si] == 1 {
			inherited = max(inherited, x)
		}
	}
	radixSort(keys)
	for k, key := range keys {
		idx[k] = int32(uint32(key))
	}
}

// sortByScore orders task indices by score, highest first, ties in queue order.
func (pl *plan) sortByScore(idx []int32, score func(int32) float64) {
	keys := make([]uint64, len(idx))
	for k, i := range idx {
		b := math.Float32bits(float32(max(score(i), 0)))
		keys[k] = uint64(^b)<<32 | uint64(uint32(i))
	}
	radixSort(keys)
	for k, key := range keys {
		idx[k] = int32(uint32(key))
	}
}

// radixSort sorts keys ascending (LSD, 16-bit digits; a digit equal in every key is skipped). Below 4,096 keys
// it compares instead: the 65,536 counters (512 KB on the heap, cleared for every digit) cost a fixed 0.3 ms
// that a comparison sort of a few thousand keys does not reach (BenchmarkRadixSort). The keys are values, so
// which sort ran does not show in the result.
func radixSort(keys []uint64) {
	if len(keys) < 1<<12 {
		slices.Sort(keys)
		return
	}
	var or, and uint64 = 0, ^uint64(0)
	// Keys whose low 32 bits already ascend (the callers' (score, queue index) keys of a list in queue order) need
	// only their high digits sorted: LSD radix sort is stable, so the low half's order stays within each score.
	ascending := true
	var last uint32
	for _, k := range keys {
		or |= k
		and &= k
		ascending = ascending && uint32(k) >= last
		last = uint32(k)
	}
	from := uint(0)
	if ascending {
		from = 32
	}
	src, dst := keys, make([]uint64, len(keys))
	var count [1 << 16]int
	for shift := from; shift < 64; shift += 16 {
		if (or>>shift)&0xffff == (and>>shift)&0xffff {
			continue
		}
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&0xffff]++
		}
		sum := 0
		for d := range count {
			sum, count[d] = sum+count[d], sum
		}
		for _, k := range src {
			d := (k >> shift) & 0xffff
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// positions numbers the waiting tasks (those backing off among them) in policy order, then those backing off that
// cannot fit the cluster as it is, then those that never fit (both in queue order).
func (pl *plan) positions() {
	pos := int32(0)
	for _, i := range pl.order {
		if e := &pl.ents[i]; e.kind == entWait || e.backoff {
			pos++
			e.pos = pos
		}
	}
	for _, code := range []waitCode{noCode, cNodesDown, cNeverFits} { // backing off and never fitting, then waiting for nodes down, then never fits
		for i := range pl.ents {
			if e := &pl.ents[i]; (code == noCode && e.kind == entSkip && !e.backoff) || (code != noCode && e.code == code) {
				pos++
				e.pos = pos
			}
		}
	}
}

// reserve finds the earliest time at which task i's gang fits, from the declared ends of what runs and what this
// pass admitted, and holds it.
func (pl *plan) reserve(i int32) {
	pl.buildReleases()
	d, driver := pl.shapes[pl.ents[i].shape].d, pl.shapes[pl.ents[i].shape].driver
	view := cloneNodes(pl.nodes)
	r := &reservation{holder: i, at: never}
	if pl.ents[i].backoff { // it may fit now (a task that does not fit now is reserved from the first release)
		if chosen, _, ok := fitCheck(view, d, driver); ok {
			r.at, r.nodes = pl.now.UnixNano(), pl.ids(view, chosen)
		}
	}
	k := 0
	for k < len(pl.releases) && r.nodes == nil {
		at := pl.releases[k].at
		for k < len(pl.releases) && pl.releases[k].at == at {
			pl.apply(view, pl.releases[k])
			k++
		}
		if chosen, _, ok := fitCheck(view, d, driver); ok {
			r.at = at
			r.nodes = pl.ids(view, chosen)
			break
		}
	}
	if t := pl.s.Queue[i]; pl.ents[i].backoff && r.at != never && t.NextRunAt.UnixNano() > r.at {
		r.at = t.NextRunAt.UnixNano() // it is not tried again before (view, the free view at the fit, is no larger)
	}
	if r.nodes == nil {
		// No declared end lets it fit (what holds the GPUs was not scheduled by mvp, or has no declared end):
		// plan against the whole cluster, as if everything ends some day.
		view = totalNodes(pl.nodes)
		if chosen, _, ok := fitCheck(view, d, driver); ok {
			r.nodes = pl.ids(view, chosen)
		}
	}
	r.atT = view
	pl.resv = r
}

func (pl *plan) ids(view []*node, chosen []int) []string {
	ids := make([]string, len(chosen))
	for k, n := range chosen {
		ids[k] = view[n].id
	}
	return ids
}

// buildReleases lists the declared ends of live attempts and of this pass's admissions, per node, in time order.
// A live attempt whose groups' nodes are not known is attributed to nodes that show that many GPUs in use.
func (pl *plan) buildReleases() {
	if pl.built {
		return
	}
	pl.built = true
	used := make([]float64, len(pl.nodes))
	for k, n := range pl.nodes {
		used[k] = n.total[ResGPU] - availableGPU(pl.s.Cluster, n.id)
	}
	for _, u := range pl.live {
		for _, n := range u.nodes {
			if n >= 0 {
				used[n] -= u.gpu
			}
		}
	}
	for li := range pl.live {
		u := &pl.live[li]
		for g, n := range u.nodes {
			if n >= 0 {
				continue
			}
			// The node with the least GPUs in use that still has this group's worth unattributed.
			best := -1
			for k := range used {
				if used[k] >= u.gpu && !slices.Contains(u.nodes, k) && (best < 0 || used[k] < used[best]) {
					best = k
				}
			}
			if best >= 0 {
				used[best] -= u.gpu
				u.nodes[g] = best
			}
		}
		pl.addReleases(*u)
	}
	for _, u := range pl.admitted {
		pl.addReleases(u)
	}
	for _, r := range lagReleases(pl.s.Cluster, pl.nodes, pl.now) {
		pl.insertRelease(r)
	}
}

// addReleases adds u's releases, keeping the list in time order.
func (pl *plan) addReleases(u liveUse) {
	for _, n := range u.nodes {
		if n >= 0 {
			pl.insertRelease(release{at: u.end, node: n, gpu: u.gpu, cpu: u.cpu})
		}
	}
	if u.driver >= 0 && len(u.drv) > 0 {
		pl.insertRelease(release{at: u.end, node: u.driver, driver: true, drv: u.drv})
	}
}

func (pl *plan) insertRelease(r release) {
	k, _ := slices.BinarySearchFunc(pl.releases, r.at, func(e release, at int64) int {
		if e.at <= at {
			return -1 // after every release at the same time: keeps insertion order
		}
		return 1
	})
	pl.releases = slices.Insert(pl.releases, k, r)
}

// apply gives a release back to the view.
func (pl *plan) apply(view []*node, r release) {
	n := view[r.node]
	if r.driver {
		n.addDriver(r.drv, +1)
		return
	}
	n.free[ResGPU] += r.gpu
	n.free[ResCPU] += r.cpu
}

func (pl *plan) nodeIndex() map[string]int {
	idx := make(map[string]int, len(pl.nodes))
	for k, n := range pl.nodes {
		idx[n.id] = k
	}
	return idx
}

func lookup(idx map[string]int, id string) int {
	if k, ok := idx[id]; ok && id != "" {
		return k
	}
	return -1
}

// availableGPU is the GPUs the cluster reading shows free on node id.
func availableGPU(c *mvp.ClusterView, id string) float64 { return availableOf(c, id, ResGPU) }

// availableOf is how much of res the cluster reading shows free on node id.
func availableOf(c *mvp.ClusterView, id, res string) float64 {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n.Available[res]
		}
	}
	return 0
}

func cloneNodes(ns []*node) []*node {
	out := make([]*node, len(ns))
	for k, n := range ns {
		free := make(map[string]float64, len(n.free))
		for r, v := range n.free {
			free[r] = v
		}
		out[k] = &node{id: n.id, free: free, total: n.total, labels: n.labels}
	}
	return out
}

// totalNodes is the view of an empty cluster: every node with all it has.
func totalNodes(ns []*node) []*node {
	out := make([]*node, len(ns))
	for k, n := range ns {
		free := make(map[string]float64, len(n.total))
		for r, v := range n.total {
			free[r] = v
		}
		out[k] = &node{id: n.id, free: free, total: n.total, labels: n.labels}
	}
	return out
}

// ReasonGangBeingPlaced is the sentence of a task that would fit now but waits (behind_reservation) until the gangs
// of tasks just submitted are placed, because Ray may put it on the GPUs they need (mayRace). It names no task, so a
// task held so twice in a row keeps its stored reason and gets no second Wait: whoever needs to know (mvp sim) reads
// it from the task.
const ReasonGangBeingPlaced = "waiting until the gang of a task just submitted is placed: Ray may put this task " +
	"on the GPUs that gang needs"

// reasonOf is the human sentence for a wait (formatted once per shape and code, so a deep queue shares them).
func (pl *plan) reasonOf(e *entry) string {
	sh := &pl.shapes[e.shape]
	d := sh.d
	switch e.code {
	case cNeverFits, cNodesDown:
		return sh.reason
	case cGPUsBusy, cCPUsBusy:
		if d.Groups == 0 { // no gang (a ray_job): only its driver's own resources are asked for
			if sh.busy == "" {
				res, labelled := describeDriver(sh.driver)
				sh.busy = fmt.Sprintf("waiting for room for its driver: needs a node%s with %s free", labelled, res)
			}
			return sh.busy
		}
		if e.code == cGPUsBusy {
			if sh.busy == "" {
				sh.busy = fmt.Sprintf("waiting for GPUs: needs %d node(s) with %g GPU and %g CPU free each, and fewer GPUs are free now",
					d.Groups, d.GPUs, d.CPUs)
			}
			return sh.busy
		}
		if sh.cpus == "" {
			runner := ""
			if strings.HasPrefix(sh.drvKey, "workload ") {
				runner = " (entrypoint_num_cpus with the workload's runner_cpus, for the actor its driver starts first)"
			}
			res, labelled := describeDriver(sh.driver)
			sh.cpus = fmt.Sprintf("waiting for CPUs: enough nodes have %g GPU free, but not also %g CPU each for the "+
				"gang and %s on a node%s for its driver%s", d.GPUs, d.CPUs, res, labelled, runner)
		}
		return sh.cpus
	case cFragmented:
		if sh.frag == "" || sh.fragAt != e.largest {
			sh.frag = fmt.Sprintf("fragmented: needs %d node(s) with %g GPU and %g CPU free each; enough GPUs are free "+
				"in all, but the largest free node has %g", d.Groups, d.GPUs, d.CPUs, e.largest)
			sh.fragAt = e.largest
		}
		return sh.frag
	case cMaxRunning:
		if pl.maxRunning == "" {
			pl.maxRunning = fmt.Sprintf("max_running_tasks (%d) reached", pl.p.MaxRunning)
		}
		return pl.maxRunning
	case cQuota:
		return pl.quotaReason(e)
	case cFairShare:
		return pl.fairReason(e.user)
	case cBehindReservation:
		// The task yielded to is named in Wait.YieldsTo (and Explain's yields_to), never in the sentence: the
		// sentence is stored as the task's pending_reason and shown to its owner, who may not own that task (the
		// API hides yields_to from them); and a new holder does not rewrite every task behind it.
		switch {
		case e.yields < -1 || e.yields >= 0 && pl.ents[e.yields].kind == entSubmit:
			return ReasonGangBeingPlaced
		case e.yields < 0:
			return "waiting behind a submitted task whose gang is not placed yet and does not fit"
		case pl.p.policyName() == PolicyFIFO:
			return "waiting behind the first task in line that does not fit (first in, first out)"
		default:
			return "waiting behind the task that holds a reservation for the GPUs this task would take"
		}
	}
	return string(e.code.name())
}

// yieldsTo names the task a behind_reservation wait yields to.
func (pl *plan) yieldsTo(e *entry) string {
	if e.code != cBehindReservation {
		return ""
	}
	switch {
	case e.yields < -1:
		return pl.s.Active[-2-e.yields].Task.ID
	case e.yields < 0:
		return pl.blocker
	}
	return pl.s.Queue[e.yields].ID
}
