package scheduler

import "slices"

// Drain chaining (policy xfchain; specs/design.md, "Drain chaining").
//
// A whole-cluster gang can start only on an empty cluster. When the cluster empties (a gang before it ended, say)
// while such a gang waits behind other tasks, EASY-style admission gives that moment to the tasks ahead of it, and
// the gang then waits for them all to end: a drain as long as the longest of their declared runs, in which the
// cluster is never full again. chainDrain lets the gang take the moment instead when two exchange tests pass. They
// are the classic rules for swapping two jobs on one machine, the gang being one job and the tasks ahead of it in
// line that would start now (its drain) the other; tasks behind it in line are not its to pass:
//
//   - total wait (Smith's rule, weighted shortest processing time): the n tasks it goes ahead of each wait its
//     declared run r more, while it waits the drain D less: n·r < D;
//   - longest wait (Jackson's rule, earliest due date): the longest-waiting of those tasks would then have waited
//     w_max + r, the gang, if it yields instead, w + D: w_max + r ≤ w + D.
//
// Everything is declared run times (max_runtime_s), as the reservation uses. There is no constant to tune: r, D, n
// and the waits are the queue's own. Measured with `mvp sim` (BENCHMARKS.md), the chaining is what lets an
// expansion-factor backfill keep EASY's longest wait on a small cluster where whole-cluster gangs are common, and
// it saves the drains that decide a large cluster's longest waits and its last job's end.

// chainDrain starts the first whole-cluster gang in the queue before the tasks ahead of it when the cluster can
// hold it now and both exchange tests pass (see above). It runs before the policy admits anything, and only when
// the queue is in arrival order (rankShaped is false).
func (pl *plan) chainDrain() {
	var total float64
	for _, n := range pl.nodes {
		total += n.total[ResGPU]
	}
	if total <= 0 {
		return
	}
	whole := func(si int32) bool {
		d := pl.shapes[si].d
		return d.Groups > 0 && d.gangGPUs() >= total
	}
	k := slices.IndexFunc(pl.order, func(i int32) bool { return whole(pl.ents[i].shape) && !pl.ents[i].backoff })
	if k <= 0 {
		return // none waits, or it is the first in line anyway
	}
	if slices.ContainsFunc(pl.order[:k], func(i int32) bool { return pl.ents[i].backoff }) {
		return // a task backing off ahead of it keeps its place (its reservation), which a chained gang would take
	}
	g := pl.order[k]
	sh := &pl.shapes[pl.ents[g].shape]
	r := pl.ents[g].rtS
	if r == maxRuntimeS || pl.full() || pl.overQuota(g) || !fits(pl.nodes, sh.d, sh.driver) {
		return
	}
	n, drain, wmax := pl.displaced(g, whole, pl.order[:k])
	if !chainable(n, float64(r), float64(pl.ents[g].waitS), drain, wmax) {
		return
	}
	if pl.tryAdmit(g) {
		pl.order = slices.Delete(pl.order, k, k+1)
	}
}

// displaced fits the tasks ahead of gang g (other whole-cluster gangs aside), in order, on a copy of the free view,
// as admission would if g did not go first (within max_running_tasks and each owner's max_gpus, counting the tasks
// it lets start), and returns how many would start, the longest of their declared runs in seconds (the drain g
// would then wait) and the longest wait among them in seconds.
func (pl *plan) displaced(g int32, whole func(int32) bool, ahead []int32) (n int, drain, wmax float64) {
	view := cloneNodes(pl.nodes)
	used := make([]float64, len(pl.users)) // each owner's GPUs, as admission would count them
	for u := range pl.users {
		used[u] = pl.users[u].used
	}
	noFit := make([]bool, len(pl.shapes))
	left := 0 // shapes that may still fit
	for si := range pl.shapes {
		if !whole(int32(si)) {
			left++
		}
	}
	for _, j := range ahead {
		si := pl.ents[j].shape
		if left == 0 || (pl.p.MaxRunning > 0 && pl.running+n >= pl.p.MaxRunning) {
			break
		}
		u := pl.ents[j].user
		if j == g || whole(si) || noFit[si] || pl.overQuotaWith(j, used[u]) {
			continue
		}
		s := &pl.shapes[si]
		if _, _, ok := fit(view, s.d, s.driver); !ok {
			noFit[si] = true
			left--
			continue
		}
		n++
		used[u] += pl.shapes[si].d.gangGPUs()
		drain = max(drain, float64(pl.ents[j].rtS))
		wmax = max(wmax, float64(pl.ents[j].waitS))
	}
	return n, drain, wmax
}

// chainable is chainDrain's pair of exchange tests, in seconds: whether a gang that declares run and has waited wait
// goes ahead of n tasks whose longest declared run is drain and whose longest wait is wmax.
func chainable(n int, run, wait, drain, wmax float64) bool {
	return n > 0 && float64(n)*run < drain && wmax+run <= wait+drain
}
