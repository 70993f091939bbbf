package scheduler

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// QueueView is the whole picture of the queue as the policy sees it now (GET /api/v2/queue).
type QueueView struct {
	At     time.Time `json:"at"`
	Policy string    `json:"policy"`
	// ClusterKnown is false when Ray could not be read; then nothing is admitted and Nodes is empty.
	ClusterKnown bool `json:"cluster_known"`
	// Nodes are the alive nodes that have GPUs.
	Nodes []NodeFree `json:"nodes"`
	// DownNodes are GPU nodes mvp saw alive that are down now (mvp.ClusterView.Down; no GPU free on them): a gang
	// waiting with nodes_down needs some of them back.
	DownNodes []NodeDown `json:"down_nodes,omitempty"`
	// Reservations are the starts the policy holds (at most one: the first task in line that does not fit).
	Reservations []Reservation `json:"reservations"`
	// Starting are the tasks the policy would submit now (the next scheduler tick does).
	Starting []string `json:"starting"`
	// Queue is every waiting task, in the policy's order.
	Queue []QueueEntry `json:"queue"`
}

// NodeFree is one alive node's GPUs: free now, and in all.
type NodeFree struct {
	NodeID string `json:"node_id"`
	// FreeGPUs are the GPUs no live attempt holds or will hold (an admitted attempt whose placement groups Ray
	// has not made yet counts as holding its GPUs), before this pass's admissions: what the scheduler can give.
	FreeGPUs float64 `json:"free_gpus"`
	// RayFreeGPUs is Ray's figure (its available resources, less what placed groups hold where its report lags
	// their placement by milliseconds), which lags a submission by seconds.
	RayFreeGPUs float64 `json:"ray_free_gpus"`
	TotalGPUs   float64 `json:"total_gpus"`
}

// NodeDown is a GPU node mvp saw alive that is down now, with the GPUs it had.
type NodeDown struct {
	NodeID    string  `json:"node_id"`
	TotalGPUs float64 `json:"total_gpus"`
}

// Reservation is a start held for a task: the nodes its gang is planned on and when (nil: no declared end of
// what holds the GPUs lets it fit, so no time can be promised).
type Reservation struct {
	TaskID string     `json:"task_id"`
	Nodes  []string   `json:"nodes"`
	Start  *time.Time `json:"start"`
}

// QueueEntry is one waiting task.
type QueueEntry struct {
	TaskID string `json:"task_id"`
	// Owner and Priority are the task's; Rank is its place after ranking by starvation bound, priority and
	// fair share (the order the policy admits and reserves in, before backfill); 0 where it is not ranked (it
	// backs off, never fits or waits for dependencies).
	Owner    string   `json:"owner"`
	Priority int      `json:"priority"`
	Rank     int      `json:"rank"`
	Position int      `json:"position"`
	Code     WaitCode `json:"code"`
	Reason   string   `json:"reason"`
	YieldsTo string   `json:"yields_to,omitempty"`
	// LargestFreeGPUs is set for code fragmented: the GPUs free on the largest free node.
	LargestFreeGPUs *float64 `json:"largest_free_gpus,omitempty"`
	// EstStart is when the task would start if every task ran for exactly its declared max_runtime_s: the policy
	// run forward on a simulated clock (backfill included), or, past ForecastBudget in a deep queue, in the order
	// shown; nil when unknown (it never fits, or it waits behind something without a declared end). A task held by
	// its dependencies is estimated to start once they have ended as declared.
	EstStart *time.Time `json:"est_start"`
	// QueuedUntil is when the task's max_queued_s ends it (MAX_QUEUED_EXCEEDED) if it has not started by then; nil
	// for a task not bound by it (none set, or it has run: mvp.Task.Ran). ExpiresBeforeStart says that EstStart
	// is later: at this estimate the task ends before it starts, and its sentence says so.
	QueuedUntil        *time.Time `json:"queued_until,omitempty"`
	ExpiresBeforeStart bool       `json:"expires_before_start,omitempty"`
}

// CodeClusterUnknown: Ray could not be read, its job server does not answer while the cluster reads
// (ErrJobServerDown), or it answers again after an outage with fewer GPU nodes than before it (ErrRejoining), so
// nothing is admitted (only in Explain).
const CodeClusterUnknown WaitCode = "cluster_unknown"

// CodeSharedRoot: the policy would start the task now, but its task folder cannot be written on shared_root
// (unmounted, full or read-only): the loop holds it until it can (HoldForSharedRoot).
const CodeSharedRoot WaitCode = "shared_root"

// WaitCodes lists every code a waiting task can be given, by Decide or by Explain (the API documents them all).
var WaitCodes = append(slices.Clone(waitCodes[1:]), CodeBackingOff, CodeClusterUnknown, CodeSharedRoot)

// SharedRootHold is the sentence of a task the policy would start now that is held because shared_root cannot be
// written (why).
func SharedRootHold(why error) string { return "held until shared_root can be written: " + why.Error() }

// HoldForSharedRoot moves the tasks v would start now into its queue, first, with code shared_root and why: while
// shared_root cannot be written the loop writes no task folder and so sends nothing to Ray. Listed as starting, a
// held task read "starting now" in `mvp queue` and had no place in `mvp list`, while it could not start.
func HoldForSharedRoot(v QueueView, snap Snapshot, why error) QueueView {
	if len(v.Starting) == 0 {
		return v
	}
	tasks := map[string]*mvp.Task{}
	for _, t := range snap.Queue {
		tasks[t.ID] = t
	}
	held := make([]QueueEntry, 0, len(v.Starting)+len(v.Queue))
	for i, id := range v.Starting {
		e := QueueEntry{TaskID: id, Position: i + 1, Code: CodeSharedRoot, Reason: SharedRootHold(why)}
		if t := tasks[id]; t != nil {
			e.Owner, e.Priority = ownerName(t), t.Priority
		}
		held = append(held, e)
	}
	for _, e := range v.Queue {
		e.Position += len(v.Starting)
		held = append(held, e)
	}
	v.Queue, v.Starting = held, []string{}
	return v
}

// Explain runs the policy over s as Decide does and describes the outcome: per-node free GPUs, the reservation,
// and every waiting task with its position, reason code and sentence, and estimated start. It is pure, like
// Decide; it costs more (the estimates), so it is for the API, not for the loop.
func Explain(now time.Time, s Snapshot, p Policy) QueueView { return ExplainFor(now, s, p, nil) }

// ExplainFor is Explain for someone who will read the estimates of some tasks only (those wanted reports true for;
// nil: every task): the forecast stops once each of them has started or ended, so the others' estimates may be
// missing. The API serves a user's view of the queue and a dry run with it.
func ExplainFor(now time.Time, s Snapshot, p Policy, wanted func(*mvp.Task) bool) QueueView {
	v := QueueView{At: now, Policy: p.policyName(), ClusterKnown: s.Cluster != nil, Nodes: []NodeFree{},
		Reservations: []Reservation{}, Starting: []string{}, Queue: []QueueEntry{}}
	if s.Cluster == nil {
		reason := "Ray's cluster could not be read: nothing is admitted until it can"
		var rj *ErrRejoining
		var jd *ErrJobServerDown
		if errors.As(s.ClusterErr, &rj) {
			reason = rj.Error()
		} else if errors.As(s.ClusterErr, &jd) {
			reason = jd.Error()
		}
		for i, t := range s.Queue {
			v.Queue = append(v.Queue, QueueEntry{TaskID: t.ID, Owner: ownerName(t), Priority: t.Priority, Position: i + 1, Code: CodeClusterUnknown,
				Reason: reason})
		}
		return v
	}
	// Tasks held by their dependencies do not compete for GPUs (as in Decide); they are listed last.
	all := s.Queue
	var held []Action
	s.Queue, held = dependencies(now, s, nil)
	pl := newPlan(now, s, p)
	for i, n := range freeNodes(s.Cluster) { // in pl.nodes' order
		if n.total[ResGPU] <= 0 {
			continue // the head, CPU-only nodes
		}
		v.Nodes = append(v.Nodes, NodeFree{NodeID: n.id, FreeGPUs: pl.liveFree[i], RayFreeGPUs: n.free[ResGPU],
			TotalGPUs: n.total[ResGPU]})
	}
	for _, n := range s.Cluster.Down {
		v.DownNodes = append(v.DownNodes, NodeDown{NodeID: n.ID, TotalGPUs: n.Total[ResGPU]})
	}
	for _, sub := range pl.submits {
		v.Starting = append(v.Starting, sub.Task.ID)
	}
	if pl.resv == nil && pl.p.policyName() == PolicyFIFO {
		// fifo holds no reservation while deciding; its head's start is worked out here, for people.
		for _, i := range pl.order {
			if e := pl.ents[i]; (e.kind == entWait && (e.code == cGPUsBusy || e.code == cFragmented || e.code == cCPUsBusy)) || (e.backoff && !pl.overQuota(i)) {
				pl.reserve(i)
				break
			}
		}
	}
	if r := pl.resv; r != nil {
		res := Reservation{TaskID: s.Queue[r.holder].ID, Nodes: r.nodes}
		if r.at != never {
			res.Start = timePtr(time.Unix(0, r.at).UTC())
		}
		if res.Nodes == nil {
			res.Nodes = []string{}
		}
		v.Reservations = append(v.Reservations, res)
	}
	if wanted != nil {
		// A wanted task held by its dependencies that expires first is estimated from their ends (depsEnd): the
		// forecast goes on until they have started or ended too, so that the reader's view says what the whole does.
		deps := map[string]bool{}
		for _, t := range all {
			if wanted(t) {
				for _, id := range t.AfterOK {
					deps[id] = true
				}
				for _, id := range t.AfterAny {
					deps[id] = true
				}
			}
		}
		if len(deps) > 0 {
			own := wanted
			wanted = func(t *mvp.Task) bool { return own(t) || deps[t.ID] }
		}
	}
	est := pl.forecastEstimates(all, wanted)
	entries := make([]QueueEntry, 0, len(s.Queue))
	// bound notes a task's max_queued_s end on its entry, and whether its estimated start comes after it.
	bound := func(q *QueueEntry, t *mvp.Task) {
		until, ok := t.QueuedUntil()
		if !ok {
			return
		}
		q.QueuedUntil = &until
		if q.EstStart != nil && q.EstStart.After(until) {
			q.ExpiresBeforeStart = true
			q.Reason += ExpiryNote(*q.EstStart, until)
		}
	}
	add := func(i int32, code WaitCode, reason string) {
		e := &pl.ents[i]
		t := s.Queue[i]
		q := QueueEntry{TaskID: t.ID, Owner: ownerName(t), Priority: t.Priority, Rank: int(e.rank), Position: int(e.pos), Code: code, Reason: reason, YieldsTo: pl.yieldsTo(e),
			EstStart: est[t]}
		if code == CodeFragmented {
			l := float64(e.largest)
			q.LargestFreeGPUs = &l
		}
		bound(&q, t)
		entries = append(entries, q)
	}
	// A task backing off is placed by the estimates, in its place in the order, no earlier than its next_run_at;
	// one that cannot fit the cluster as it is has no estimate (nothing known lets it fit: its next_run_at is
	// only when it is looked at again).
	backingOff := func(i int32) {
		again := "at next_run_at"
		if next := s.Queue[i].NextRunAt; next != nil {
			again = "at " + next.UTC().Format(time.RFC3339)
		}
		why := "backing off after an attempt that failed for lack of resources"
		if t := s.Queue[i]; heldForOwnFolder(t) {
			why = t.PendingReason // held out of the passes for its own folder (Loop.holdForFolder)
		}
		add(i, CodeBackingOff, why+"; looked at again "+again)
	}
	for _, i := range pl.order {
		switch {
		case pl.ents[i].kind == entWait:
			add(i, pl.ents[i].code.name(), pl.reasonOf(&pl.ents[i]))
		case pl.ents[i].backoff: // in its place in the order
			backingOff(i)
		}
	}
	for i := range s.Queue {
		if pl.ents[i].kind == entSkip && !pl.ents[i].backoff { // backing off, and cannot fit the cluster as it is
			backingOff(int32(i))
		}
	}
	for _, c := range []waitCode{cNodesDown, cNeverFits} { // in the order positions numbers them
		for i := range s.Queue {
			if pl.ents[i].code == c {
				add(int32(i), c.name(), pl.reasonOf(&pl.ents[i]))
			}
		}
	}
	pos := 0
	for _, e := range entries {
		pos = max(pos, e.Position)
	}
	reasons, failed := map[*mvp.Task]string{}, map[*mvp.Task]bool{}
	for _, a := range held {
		switch a := a.(type) {
		case *Wait:
			reasons[a.Task] = a.Reason
		case DependencyFailed:
			failed[a.Task] = true // ended in this pass: no longer waiting
		}
	}
	inQueue := make(map[*mvp.Task]bool, len(s.Queue))
	for _, t := range s.Queue {
		inQueue[t] = true
	}
	for _, t := range all {
		if inQueue[t] || failed[t] || expired(now, t) {
			continue
		}
		reason, ok := reasons[t]
		if !ok {
			reason = t.PendingReason // held, and that reason is already written
		}
		pos++
		q := QueueEntry{TaskID: t.ID, Owner: ownerName(t), Priority: t.Priority, Position: pos, Code: CodeDependency,
			Reason: reason, EstStart: est[t]}
		bound(&q, t)
		entries = append(entries, q)
	}
	v.Queue = entries
	return v
}

// ownerName is t's owner, mvp.Operator when it names none.
func ownerName(t *mvp.Task) string { return mvp.OwnerName(t.Owner) }

func timePtr(t time.Time) *time.Time { return &t }

// forecastEstimates is the estimated start of each waiting task of all (the queue with the tasks held by their
// dependencies; nil where none is known): when the policy, run forward with every task taking its declared time,
// starts it (forecast). Where the forecast cannot model the live attempts it is the in-order estimate (estimates;
// none for a task held by dependencies); where it stopped at its budget, a task it did not reach gets the in-order
// estimate, no earlier than where it stopped.
func (pl *plan) forecastEstimates(all []*mvp.Task, wanted func(*mvp.Task) bool) map[*mvp.Task]*time.Time {
	out := make(map[*mvp.Task]*time.Time, len(all))
	starts, gone, horizon, cut, ok := forecast(pl.now, pl.s, all, pl.p, wanted)
	var inOrder []*time.Time
	if !ok || cut || slices.Contains(gone, true) {
		inOrder = pl.estimates()
	}
	if !ok {
		for i, t := range pl.s.Queue {
			out[t] = inOrder[i]
		}
		return out
	}
	at := make([]time.Time, len(all)) // one backing array
	for i, ns := range starts {
		if ns == never {
			continue
		}
		at[i] = time.Unix(0, ns).UTC()
		out[all[i]] = &at[i]
	}
	if inOrder != nil {
		expires := make(map[*mvp.Task]bool)
		for i, g := range gone {
			if g {
				expires[all[i]] = true
			}
		}
		for i, t := range pl.s.Queue {
			if expires[t] && inOrder[i] != nil {
				// it ends MAX_QUEUED_EXCEEDED in the forecast before it starts: its own start, in order, is after
				// its bound (the entry says it would expire first)
				until, _ := t.QueuedUntil()
				late := time.Unix(0, max(inOrder[i].UnixNano(), until.UnixNano()+1)).UTC()
				out[t] = &late
				continue
			}
			if cut && out[t] == nil && inOrder[i] != nil {
				late := time.Unix(0, max(inOrder[i].UnixNano(), horizon)).UTC()
				out[t] = &late
			}
		}
		// A task held by its dependencies has no in-order estimate (it is not in the queue): one the forecast ends
		// MAX_QUEUED_EXCEEDED was shown with no estimate and nothing said it would expire. It is estimated no
		// earlier than its dependencies' declared ends, after its bound, so that its entry says it expires first.
		queued := make(map[*mvp.Task]bool, len(pl.s.Queue))
		for _, t := range pl.s.Queue {
			queued[t] = true
		}
		goneTask := make(map[*mvp.Task]bool)
		for i, g := range gone {
			if g {
				goneTask[all[i]] = true
			}
		}
		var ix *depIndex // made at the first task that needs it: most forecasts have none
		for i, g := range gone {
			t := all[i]
			if !g || queued[t] || out[t] != nil {
				continue
			}
			// Only a task that expires waiting for dependencies that end after its bound (not one canceled in the
			// forecast because a dependency of its own expired).
			until, bounded := t.QueuedUntil()
			if !bounded {
				continue
			}
			if ix == nil {
				ix = pl.newDepIndex(all)
			}
			if end, ok := pl.depsEnd(t, ix, out, goneTask); ok && end > until.UnixNano() {
				late := time.Unix(0, end).UTC()
				out[t] = &late
			}
		}
	}
	return out
}

// depIndex finds a dependency by id among the live attempts and the tasks of a forecast.
type depIndex struct {
	active map[string]ActiveAttempt
	tasks  map[string]*mvp.Task
}

func (pl *plan) newDepIndex(all []*mvp.Task) *depIndex {
	ix := &depIndex{active: make(map[string]ActiveAttempt, len(pl.s.Active)), tasks: make(map[string]*mvp.Task, len(all))}
	for _, a := range pl.s.Active {
		ix.active[a.Task.ID] = a
	}
	for _, t := range all {
		ix.tasks[t.ID] = t
	}
	return ix
}

// depsEnd is when t's dependencies end as declared (unix ns): a live one at its declared end, a waiting one at its
// estimate (est) plus its declared run, an ended one already; false when one of them has no known end or is gone in
// the forecast (expired, or canceled: then t does not wait for it).
func (pl *plan) depsEnd(t *mvp.Task, ix *depIndex, est map[*mvp.Task]*time.Time, gone map[*mvp.Task]bool) (int64, bool) {
	end := pl.now.UnixNano()
	for _, ids := range [][]string{t.AfterOK, t.AfterAny} {
		for _, id := range ids {
			if a, ok := ix.active[id]; ok {
				e := pl.endOf(a)
				if e == never {
					return 0, false
				}
				end = max(end, e)
				continue
			}
			if d, ok := ix.tasks[id]; ok {
				rt := runtimeOf(d, pl.p)
				if est[d] == nil || rt <= 0 || gone[d] {
					return 0, false
				}
				end = max(end, est[d].Add(rt).UnixNano())
				continue
			}
			if st, ok := pl.s.Deps[id]; !ok || !st.Terminal() {
				return 0, false
			}
		}
	}
	return end, true
}

// estimates places the waiting tasks, in policy order, each at the earliest time at or after the previous one's
// at which its gang fits and max_running_tasks lets it start, every task (running or placed) ending at its
// declared end. It returns a start per queue index (nil where none is known): none behind a live attempt whose
// gang is not placed yet (when that happens is not declared), and none for a task over its owner's max_gpus
// (it starts only once that owner's own tasks end; it takes no capacity from the tasks after it).
func (pl *plan) estimates() []*time.Time {
	out := make([]*time.Time, len(pl.ents))
	if pl.blocker != "" {
		return out
	}
	starts := make([]time.Time, 0, len(pl.order)) // one backing array for every estimate
	// ends: when each live, admitted or placed task ends, for max_running_tasks.
	running, limit := pl.running, pl.p.MaxRunning
	var ends endHeap
	if limit > 0 {
		for _, u := range pl.live {
			ends = append(ends, u.end)
		}
		for _, u := range pl.admitted {
			ends = append(ends, u.end)
		}
		heap.Init(&ends)
	}
	pl.buildReleases()
	view := cloneNodes(pl.nodes)
	h := make(releaseHeap, len(pl.releases))
	copy(h, pl.releases)
	for k := range h {
		h[k].seq = k // pl.releases is in time order, ties in the order they were added
	}
	heap.Init(&h)
	seq := len(h)
	cursor := pl.now.UnixNano()
	for _, i := range pl.order {
		e := &pl.ents[i]
		if (e.kind != entWait && !e.backoff) || e.code == cQuota {
			continue
		}
		if t := pl.s.Queue[i]; e.backoff && t.NextRunAt.UnixNano() > cursor {
			cursor = t.NextRunAt.UnixNano() // it is not tried again before, and the tasks after it start no earlier
		}
		d, driver := pl.shapes[e.shape].d, pl.shapes[e.shape].driver
		for {
			// Everything that has ended by the cursor is free again.
			for len(h) > 0 && h[0].at <= cursor {
				pl.apply(view, heap.Pop(&h).(release))
			}
			for len(ends) > 0 && ends[0] <= cursor {
				heap.Pop(&ends)
				running--
			}
			chosen, drv, ok := fitCheck(view, d, driver)
			if ok && (limit <= 0 || running < limit) {
				take(view, chosen, drv, d, driver)
				starts = append(starts, time.Unix(0, cursor).UTC())
				out[i] = &starts[len(starts)-1]
				end := int64(never)
				if e.rtS != maxRuntimeS {
					end = cursor + int64(e.rtS)*int64(time.Second)
				}
				if limit > 0 {
					heap.Push(&ends, end)
					running++
				}
				for _, n := range chosen {
					heap.Push(&h, release{at: end, node: n, gpu: d.GPUs, cpu: d.CPUs, seq: seq})
					seq++
				}
				if drv >= 0 {
					heap.Push(&h, release{at: end, node: drv, driver: true, drv: driver, seq: seq})
					seq++
				}
				break
			}
			next := int64(never)
			if len(h) > 0 {
				next = h[0].at
			}
			if limit > 0 && running >= limit && len(ends) > 0 {
				next = min(next, ends[0])
			}
			if next == never {
				return out // it waits on something with no declared end: nothing after it can be estimated
			}
			cursor = max(cursor, next)
		}
	}
	return out
}

// endHeap is a min-heap of task end times (unix ns).
type endHeap []int64

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// releaseHeap orders releases by time, then by the order they were added.
type releaseHeap []release

func (h releaseHeap) Len() int { return len(h) }
func (h releaseHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h releaseHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *releaseHeap) Push(x any)   { *h = append(*h, x.(release)) }
func (h *releaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ExpiryNote is what a waiting task's sentence adds when its estimated start est comes after until, the end of
// its max_queued_s.
func ExpiryNote(est, until time.Time) string {
	return fmt.Sprintf("; at the estimated start (%s) it would already have ended MAX_QUEUED_EXCEEDED: its "+
		"max_queued_s ends at %s", est.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
}
