// Package scheduler decides which queued tasks go to Ray (Decide, a pure function) and applies those decisions
// (Loop). Decide does no I/O and reads no clock: everything it knows is in its arguments.
package scheduler

import (
	"fmt"
	"sort"
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
	// MaxRunning bounds the tasks mvp has live in Ray (SUBMITTING, SUBMITTED, RUNNING); 0 means no bound.
	MaxRunning int
	// CPUsPerGPU is the CPU of one verl bundle per workload ({"CPU": c, "GPU": 1}).
	CPUsPerGPU map[mvp.Workload]float64
	// Driver is what the Ray job's driver itself takes: entrypoint_resources plus {"CPU": entrypoint_num_cpus}.
	Driver map[string]float64
	// GangWait is how long an attempt's placement groups may stay unplaceable before it is stopped.
	GangWait time.Duration
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
}

// ActiveAttempt is a task with a live attempt.
type ActiveAttempt struct {
	Task    *mvp.Task
	Attempt *mvp.Attempt
	// StuckSince is when the attempt's placement groups were first seen PENDING (not placeable yet); zero if
	// they are not.
	StuckSince time.Time
	// Infeasible is true when Ray says one of its placement groups can never be placed on this cluster.
	Infeasible bool
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
	// Nodes are the nodes the gang was fitted on (informational: Ray places it).
	Nodes []string
}

// Wait keeps a task waiting and records why. Emitted only when the state or the reason changes. Decide emits it as
// *Wait: the Waits of one pass share one backing array, so a 100,000-deep queue costs one allocation, not 100,000.
type Wait struct {
	Task   *mvp.Task
	Reason string
	// Never is true when the task cannot fit on this cluster even if it were empty.
	Never bool
}

// Stop stops a live attempt that mvp has judged: a gang unplaceable for longer than Policy.GangWait
// (Kind INSUFFICIENT_RESOURCES, Event GANG_STUCK). The loop records the judgement on the attempt first (Retry
// false), then asks Ray to stop the job; an attempt already judged gets Stop again on every pass (Retry true)
// until Ray reports its job ended, so a failed stop call, or a crash between the note and the call, is retried.
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
// the time to the first start: a task requeued after an attempt is no longer subject to it.
func expired(now time.Time, t *mvp.Task) bool {
	return t.MaxQueuedS > 0 && t.LatestAttemptNo == 0 && now.Sub(t.CreatedAt) >= time.Duration(t.MaxQueuedS)*time.Second
}

// overstayed reports whether a started attempt has run past its task's max_runtime_s.
func overstayed(now time.Time, a ActiveAttempt) bool {
	return a.Task.MaxRuntimeS > 0 && a.Attempt.StartTime != nil &&
		now.Sub(*a.Attempt.StartTime) >= time.Duration(a.Task.MaxRuntimeS)*time.Second
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
		if a.Attempt.RayStatus == mvp.RayRunning && overstayed(now, a) {
			out = append(out, Stop{Task: a.Task, Attempt: a.Attempt, Kind: mvp.FailureMaxRuntimeExceeded,
				Event: mvp.EventStopRequested, Reason: fmt.Sprintf("ran longer than its max_runtime_s (%d s): stopped by mvp",
					a.Task.MaxRuntimeS)})
			continue
		}
		if a.stuck(now, p) {
			d := DemandOf(a.Task, p)
			why := fmt.Sprintf("could not be placed for %s: no node had room for its placement groups",
				now.Sub(a.StuckSince).Round(time.Second))
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
func expiries(now time.Time, s Snapshot, out []Action) []Action {
	for _, t := range s.Queue {
		if expired(now, t) {
			out = append(out, Expire{Task: t, Reason: fmt.Sprintf(
				"%s: waited %s in the queue, longer than its max_queued_s (%d s), without starting",
				mvp.FailureMaxQueuedExceeded, now.Sub(t.CreatedAt).Round(time.Second), t.MaxQueuedS)})
		}
	}
	return out
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
	return p.Driver
}

// Decide returns what to do now. It is deterministic: the same arguments give the same actions.
func Decide(now time.Time, s Snapshot, p Policy) []Action {
	out := make([]Action, 0, len(s.Active)+len(s.Queue))
	ws := waits{buf: make([]Wait, 0, len(s.Queue))}

	// Stops first: they free resources for the queue in a later pass.
	out = stops(now, s, p, out)
	out = expiries(now, s, out)

	if s.Cluster == nil {
		return out
	}
	nodes := freeNodes(s.Cluster)

	// Reserve what submitted attempts will still take (see reserves): groups not yet placed, and the driver if it
	// has not started. Without this two tasks could be admitted onto the same free GPUs in the seconds between a submit
	// and its placement.
	reservationBlocked := ""
	running := 0
	for _, a := range s.Active {
		if a.Task.State.Active() {
			running++
		}
		d := DemandOf(a.Task, p)
		unplaced := d.Groups - createdGroups(s.Cluster, a.Attempt)
		if unplaced < 0 {
			unplaced = 0
		}
		driver := a.Attempt == nil || a.Attempt.RayStatus == mvp.RayUnknown || a.Attempt.RayStatus == mvp.RayPending
		if unplaced == 0 && !driver {
			continue
		}
		if !reserves(now, a, p) {
			continue
		}
		rd := Demand{Groups: unplaced, GPUs: d.GPUs, CPUs: d.CPUs}
		if _, ok := fit(nodes, rd, driverOf(a.Task, p), driver); !ok && reservationBlocked == "" {
			reservationBlocked = a.Task.ID
		}
	}

	var blockedBy, behindReason, maxReason string
	if reservationBlocked != "" {
		blockedBy = reservationBlocked
	}
	// Per gang shape, the never-fits verdict is the same for every task: compute it once.
	type verdict struct {
		reason string
		never  bool
	}
	never := map[Demand]verdict{}
	var lastWorkload mvp.Workload // "" to start with, looked up like any other name
	lastCPG := p.CPUsPerGPU[lastWorkload]
	for _, t := range s.Queue {
		if expired(now, t) {
			continue // ended by expiries
		}
		if t.State == mvp.StatePendingResources && t.NextRunAt != nil && now.Before(*t.NextRunAt) {
			continue // backing off after an attempt that failed for lack of resources; does not hold the queue
		}
		// Consecutive tasks mostly share a workload: look its CPUs per GPU up only when it changes.
		if t.Workload != lastWorkload {
			lastWorkload, lastCPG = t.Workload, p.CPUsPerGPU[t.Workload]
		}
		d := demand(t, lastCPG)
		v, ok := never[d]
		if t.Driver != nil {
			// A driver of its own (ray_job): the verdict is this task's alone.
			v.reason, v.never = neverFits(s.Cluster, d, t.Driver)
		} else if !ok {
			v.reason, v.never = neverFits(s.Cluster, d, p.Driver)
			never[d] = v
		}
		if v.never {
			out = ws.appendTo(out, t, v.reason, true)
			continue
		}
		switch {
		case blockedBy != "":
			if behindReason == "" {
				behindReason = fmt.Sprintf("waiting behind %s (first in, first out)", blockedBy)
			}
			out = ws.appendTo(out, t, behindReason, false)
		case p.MaxRunning > 0 && running >= p.MaxRunning:
			if maxReason == "" {
				maxReason = fmt.Sprintf("max_running_tasks (%d) reached", p.MaxRunning)
			}
			out = ws.appendTo(out, t, maxReason, false)
		default:
			chosen, ok := fit(nodes, d, driverOf(t, p), true)
			if !ok {
				need := fmt.Sprintf("needs %d node(s) with %g GPU and %g CPU free each", d.Groups, d.GPUs, d.CPUs)
				if d.Groups == 0 {
					need = "needs a node with its driver's resources " + describeMap(t.Driver) + " free"
				}
				out = ws.appendTo(out, t, fmt.Sprintf("%s; free now: %s", need, describeFree(nodes)), false)
				blockedBy = t.ID
				continue
			}
			running++
			out = append(out, Submit{Task: t, AttemptNo: t.LatestAttemptNo + 1, Nodes: chosen})
		}
	}
	return out
}

// waits hands out the Wait actions of one Decide from one backing array, sized to the queue by Decide (a pointer
// into it stays valid even if an append ever had to grow it).
type waits struct{ buf []Wait }

func (w *waits) appendTo(out []Action, t *mvp.Task, reason string, never bool) []Action {
	if t.State == mvp.StatePendingResources && t.PendingReason == reason {
		return out
	}
	w.buf = append(w.buf, Wait{Task: t, Reason: reason, Never: never})
	return append(out, &w.buf[len(w.buf)-1])
}

// freeNodes returns the alive nodes with their availability, in a stable order.
func freeNodes(c *mvp.ClusterView) []*node {
	var ns []*node
	for _, n := range c.Nodes {
		if !n.Alive {
			continue
		}
		free := make(map[string]float64, len(n.Available))
		for k, v := range n.Available {
			free[k] = v
		}
		ns = append(ns, &node{id: n.ID, free: free, total: n.Total})
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].id < ns[j].id })
	return ns
}

// createdGroups counts the attempt's placement groups that Ray has placed (their resources already show as used).
func createdGroups(c *mvp.ClusterView, a *mvp.Attempt) int {
	if a == nil || a.RayJobID == "" {
		return 0
	}
	n := 0
	for _, g := range c.Groups {
		if g.CreatorJobID == a.RayJobID && g.State == "CREATED" {
			n++
		}
	}
	return n
}

// fit places d.Groups groups on distinct nodes, best fit first (the node with the fewest free GPUs that holds a
// group), then the driver anywhere it fits. On success it subtracts what it placed from nodes and returns the
// chosen node ids; on failure nodes are unchanged.
func fit(nodes []*node, d Demand, driver map[string]float64, withDriver bool) ([]string, bool) {
	order := make([]*node, len(nodes))
	copy(order, nodes)
	sort.SliceStable(order, func(i, j int) bool { return order[i].free[ResGPU] < order[j].free[ResGPU] })
	var chosen []*node
	for _, n := range order {
		if len(chosen) == d.Groups {
			break
		}
		if n.free[ResGPU] >= d.GPUs && n.free[ResCPU] >= d.CPUs {
			chosen = append(chosen, n)
		}
	}
	if len(chosen) < d.Groups {
		return nil, false
	}
	for _, n := range chosen {
		n.free[ResGPU] -= d.GPUs
		n.free[ResCPU] -= d.CPUs
	}
	if withDriver && len(driver) > 0 {
		placed := false
		for _, n := range order {
			if holds(n.free, driver) {
				for k, v := range driver {
					n.free[k] -= v
				}
				placed = true
				break
			}
		}
		if !placed {
			for _, n := range chosen {
				n.free[ResGPU] += d.GPUs
				n.free[ResCPU] += d.CPUs
			}
			return nil, false
		}
	}
	ids := make([]string, len(chosen))
	for i, n := range chosen {
		ids[i] = n.id
	}
	return ids, true
}

func holds(free, want map[string]float64) bool {
	for k, v := range want {
		if free[k] < v {
			return false
		}
	}
	return true
}

// neverFits reports whether d cannot fit even on an empty cluster of the alive nodes, and why.
func neverFits(c *mvp.ClusterView, d Demand, driver map[string]float64) (string, bool) {
	fitting, maxGPU, alive := 0, 0.0, 0
	driverOK := len(driver) == 0
	for _, n := range c.Nodes {
		if !n.Alive {
			continue
		}
		alive++
		if n.Total[ResGPU] > maxGPU {
			maxGPU = n.Total[ResGPU]
		}
		if n.Total[ResGPU] >= d.GPUs && n.Total[ResCPU] >= d.CPUs {
			fitting++
		}
		if holds(n.Total, driver) {
			driverOK = true
		}
	}
	if fitting < d.Groups {
		return fmt.Sprintf("can never fit on this cluster: needs %d node(s) with %g GPU and %g CPU each; "+
			"%d of %d alive node(s) are that large (largest has %g GPU)", d.Groups, d.GPUs, d.CPUs, fitting, alive, maxGPU), true
	}
	if !driverOK {
		return fmt.Sprintf("can never fit on this cluster: no alive node offers the driver's resources %s", describeMap(driver)), true
	}
	return "", false
}

func describeFree(nodes []*node) string {
	if len(nodes) == 0 {
		return "no alive nodes"
	}
	var parts []string
	for _, n := range nodes {
		if n.total[ResGPU] == 0 {
			continue
		}
		id := n.id
		if len(id) > 8 {
			id = id[:8]
		}
		parts = append(parts, fmt.Sprintf("%s %g GPU/%g CPU", id, n.free[ResGPU], n.free[ResCPU]))
	}
	if len(parts) == 0 {
		return "no GPU nodes"
	}
	return strings.Join(parts, ", ")
}

func describeMap(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
