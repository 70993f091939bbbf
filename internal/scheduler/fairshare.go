package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Users, priority and fair share (issue 15; specs/design.md "Users, priority and fair share").
//
// Before a policy runs, the queue is ranked. Each user's tasks are ordered: the oldest task that has waited past
// Policy.StarvationBound first (no priority can overtake it: if it does not fit, it holds the reservation, as the
// oldest task does in plain EASY; once it starts, the next oldest past the bound takes its place), then by
// priority, highest first, then in arrival order. With fair share off, that order holds across users too: the
// queue is one list by starvation, priority and arrival. With fair share on, the users' lists are merged so that
// the next task is always the one of the user whose decayed usage (plus what the tasks ranked before it will use,
// see RankHorizon) divided by its share is lowest, ties in arrival order: between users, fair share decides;
// within a user's tasks, priority does. Two users who flood the queue thus interleave, and a light user's task
// goes ahead of a heavy user's backlog, even of its oldest or highest-priority task (fair share's decay keeps
// that from lasting: a user who gets the GPUs grows heavier). The policy then admits and reserves in that order as
// it does in arrival order.

// The wait codes of users and fair share.
const (
	// CodeQuota: starting the task would take its owner past max_gpus (GPUs of its live tasks plus this gang).
	CodeQuota WaitCode = "quota"
	// CodeFairShare: the task waits while a task of another user, ranked behind it by arrival and priority, was
	// ranked ahead of it because its owner has used less than its share lately.
	CodeFairShare WaitCode = "fair_share"
)

// UserLimits are one user's limits and share as the scheduler uses them (v2.auth.users).
type UserLimits struct {
	// MaxGPUs bounds the GPUs the user's live tasks hold together; 0 means no bound.
	MaxGPUs int
	// Share is the user's weight in fair share; 0 means 1.
	Share float64
}

// DecayedUsage sums, per owner, the GPU-seconds of the spans, each second weighted by 2^(-age/halfLife) where age
// is how long before now it was (Slurm's decayed usage). A span still running counts up to now. It is pure.
func DecayedUsage(now time.Time, halfLife time.Duration, spans []mvp.UsageSpan) map[string]float64 {
	out := map[string]float64{}
	h := halfLife.Seconds()
	for _, sp := range spans {
		end := now
		if sp.End != nil && sp.End.Before(now) {
			end = *sp.End
		}
		if !sp.Start.Before(end) || sp.GPUs <= 0 {
			continue
		}
		a, b := now.Sub(end).Seconds(), now.Sub(sp.Start).Seconds() // ages of the span's end and start
		var secs float64
		if h <= 0 {
			secs = b - a // no decay
		} else {
			// ∫ from age a to b of 2^(-x/h) dx = h/ln2 · (2^(-a/h) − 2^(-b/h))
			secs = h / math.Ln2 * (math.Exp2(-a/h) - math.Exp2(-b/h))
		}
		out[sp.Owner] += secs * float64(sp.GPUs)
	}
	return out
}

// UsageSince is the oldest time a span must reach to count for more than a negligible part of a usage with this
// half-life (20 half-lives: a factor below one in a million); the zero time when usage does not decay.
func UsageSince(now time.Time, halfLife time.Duration) time.Time {
	if halfLife <= 0 {
		return time.Time{}
	}
	return now.Add(-20 * halfLife)
}

// userOf interns an owner name: the index of its per-user state in the plan.
func (pl *plan) userOf(owner string) int32 {
	if pl.lastUser >= 0 && pl.lastOwner == owner { // consecutive tasks mostly share an owner
		return pl.lastUser
	}
	pl.lastOwner = owner
	if owner == "" {
		owner = mvp.Operator
	}
	if len(pl.users) <= 8 { // a scan of a few names is cheaper than hashing one
		for u := range pl.users {
			if pl.users[u].name == owner {
				pl.lastUser = int32(u)
				return int32(u)
			}
		}
	}
	u, ok := pl.userIdx[owner]
	if !ok {
		if pl.userIdx == nil {
			pl.userIdx = map[string]int32{}
		}
		u = int32(len(pl.users))
		pl.userIdx[owner] = u
		lim, known := pl.p.Users[owner]
		share := lim.Share
		if share <= 0 {
			share = 1
		}
		pl.users = append(pl.users, userState{name: owner, maxGPUs: float64(lim.MaxGPUs), share: share,
			charge:  pl.s.Usage[owner] / share,
			removed: pl.p.OnlyKnownOwners && !known && owner != mvp.Operator})
	}
	pl.lastUser = u
	return u
}

// userState is one user's part of a plan.
type userState struct {
	name    string
	maxGPUs float64 // 0: no bound
	// removed: the owner is not a user any more (Policy.OnlyKnownOwners): its tasks are held.
	removed bool
	share   float64
	// used is the GPUs the user's live and just-admitted tasks hold (quota).
	used float64
	// charge is decayed usage ÷ share, plus what the user's live attempts and the tasks ranked so far will use
	// ÷ share (fair share's merge).
	charge float64
	// fair and quota are the fair_share and quota sentences, formatted once (after the pass's admissions);
	// quotaNever is the sentence of a gang larger than max_gpus by itself.
	fair, quota, quotaNever string
}

// gangGPUs is the GPUs a task of this shape holds in all.
func (d Demand) gangGPUs() float64 { return float64(d.Groups) * d.GPUs }

// overQuota reports whether admitting task i would take its owner past max_gpus.
func (pl *plan) overQuota(i int32) bool { return pl.overQuotaWith(i, pl.users[pl.ents[i].user].used) }

// overQuotaWith reports whether task i would take its owner past max_gpus if the owner held used GPUs.
func (pl *plan) overQuotaWith(i int32, used float64) bool {
	u := &pl.users[pl.ents[i].user]
	return u.removed || u.maxGPUs > 0 && used+pl.shapes[pl.ents[i].shape].d.gangGPUs() > u.maxGPUs
}

// rank orders pl.order as described at the top of this file and records each task's rank. A queue with one owner
// and one priority, and no task past the starvation bound, keeps arrival order without sorting (classify tells).
//
// The first sort is by band (the oldest task past the bound, then priority) and arrival. With fair share, a
// second sort merges the users: walking each user's tasks in the first order, a task's key is its user's charge
// before it (decayed usage ÷ share, plus expectedCost ÷ share of that user's tasks before it). Always taking the
// next task of the user with the lowest charge gives exactly the order of these keys (ties in arrival order), as
// in weighted fair queueing's virtual start times.
func (pl *plan) rank() {
	order := pl.order
	if !pl.mixed || len(pl.ents) >= 1<<24 { // the keys below hold a queue index in 24 bits
		for k, i := range order {
			pl.ents[i].rank = int32(k + 1)
		}
		return
	}
	for _, i := range order {
		pl.ents[i].orig = int32(pl.band(i)<<24 | uint32(i))
	}
	if pl.prioMixed {
		keys := make([]uint64, len(order))
		for k, i := range order {
			keys[k] = uint64(pl.band(i))<<56 | uint64(uint32(i))
		}
		radixSort(keys)
		for k, key := range keys {
			order[k] = int32(key & (1<<24 - 1))
		}
	} else if pl.starved >= 0 {
		// One priority: only the task past the starvation bound leaves arrival order, to the front.
		if k := slices.Index(order, pl.starved); k > 0 {
			copy(order[1:k+1], order[:k])
			order[0] = pl.starved
		}
	}
	if pl.p.FairShare && len(pl.users) > 1 {
		pl.mergeUsers(order)
	}
	for k, i := range order {
		pl.ents[i].rank = int32(k + 1)
	}
}

// mergeUsers reorders order (each user's tasks already in their own order) so that the next task is always the
// one of the user whose charge is lowest (ties to the lower queue index): a k-way merge of the users' lists, each
// task's key its user's charge before it (weighted fair queueing's virtual start time).
func (pl *plan) mergeUsers(order []int32) {
	nu := len(pl.users)
	// One pass over the tasks (in order, each read once) for its user and what ranking it adds to the charge.
	users := make([]int32, len(order))
	costs := make([]float64, len(order))
	count := make([]int, nu+1)
	for k, i := range order {
		u := pl.ents[i].user
		users[k], costs[k] = u, pl.expectedCost(i)/pl.users[u].share
		count[u+1]++
	}
	for u := 1; u <= nu; u++ {
		count[u] += count[u-1]
	}
	// Each user's tasks, in order, at lists[count[u]:count[u+1]], with their costs beside them.
	lists := make([]int32, len(order))
	lcost := make([]float64, len(order))
	next := slices.Clone(count[:nu])
	for k, i := range order {
		u := users[k]
		lists[next[u]], lcost[next[u]] = i, costs[k]
		next[u]++
	}
	copy(next, count[:nu]) // now each user's read position
	// Each user's key for its next task (^0 once it has none), kept up to date; the users are few, so the next
	// user is found by a scan.
	keys := make([]uint64, nu)
	setKey := func(u int) {
		if next[u] == count[u+1] {
			keys[u] = ^uint64(0)
			return
		}
		keys[u] = uint64(math.Float32bits(float32(pl.users[u].charge)))<<24 | uint64(uint32(lists[next[u]]))
	}
	for u := range keys {
		setKey(u)
	}
	pick := func() int { // the user with the lowest key: a scan of a few, a heap of many
		u := 0
		for v := 1; v < nu; v++ {
			if keys[v] < keys[u] {
				u = v
			}
		}
		return u
	}
	if nu > 16 {
		h := newUserHeap(keys)
		pick = h.min
		orig := setKey
		setKey = func(u int) { orig(u); h.fix(u) }
	}
	for k := range order {
		u := pick()
		order[k] = lists[next[u]]
		pl.users[u].charge += lcost[next[u]]
		next[u]++
		setKey(u)
	}
}

// userHeap is a binary min-heap of user indices by keys[u], with each user's place kept for fix.
type userHeap struct {
	keys []uint64
	h    []int // users, heap-ordered
	at   []int // at[u] is u's place in h
}

func newUserHeap(keys []uint64) *userHeap {
	uh := &userHeap{keys: keys, h: make([]int, len(keys)), at: make([]int, len(keys))}
	for u := range keys {
		uh.h[u], uh.at[u] = u, u
	}
	for k := len(keys)/2 - 1; k >= 0; k-- {
		uh.down(k)
	}
	return uh
}

func (uh *userHeap) min() int { return uh.h[0] }

// fix restores the heap after keys[u] changed.
func (uh *userHeap) fix(u int) {
	k := uh.at[u]
	for k > 0 {
		p := (k - 1) / 2
		if uh.keys[uh.h[p]] <= uh.keys[uh.h[k]] {
			break
		}
		uh.h[k], uh.h[p] = uh.h[p], uh.h[k]
		uh.at[uh.h[k]], uh.at[uh.h[p]] = k, p
		k = p
	}
	uh.down(k)
}

func (uh *userHeap) down(k int) {
	for {
		c := 2*k + 1
		if c >= len(uh.h) {
			return
		}
		if c+1 < len(uh.h) && uh.keys[uh.h[c+1]] < uh.keys[uh.h[c]] {
			c++
		}
		if uh.keys[uh.h[c]] >= uh.keys[uh.h[k]] {
			return
		}
		uh.h[k], uh.h[c] = uh.h[c], uh.h[k]
		uh.at[uh.h[k]], uh.at[uh.h[c]] = k, c
		k = c
	}
}

// band is task i's rank band: 0 for the oldest task past the starvation bound (pl.starved), else
// 1 + (MaxPriority − priority).
func (pl *plan) band(i int32) uint32 {
	if i == pl.starved {
		return 0
	}
	return 1 + uint32(mvp.MaxPriority-int(pl.ents[i].prio))
}

// RankHorizon is how long fair share's merge counts a ranked task as holding its GPUs: a task adds its gang's
// GPUs × min(declared run time, RankHorizon) to its user's charge, and each live attempt its gang's GPUs ×
// RankHorizon (what a user holds now counts at once, before it shows in the decayed usage). Counting the whole declared run would let one
// long gang (days × 32 GPUs) push its user behind a whole sweep of another's; counting a short horizon keeps the
// merge proportional to GPUs while decayed usage (hours to days of GPU time) decides who goes first.
const RankHorizon = time.Hour

// expectedCost is what task i adds to its user's charge when ranked (see RankHorizon).
func (pl *plan) expectedCost(i int32) float64 {
	rt := min(float64(pl.ents[i].rtS), RankHorizon.Seconds())
	return pl.shapes[pl.ents[i].shape].d.gangGPUs() * rt
}

// markFairShare relabels the waits that fair share caused: a task waiting for GPUs (busy or fragmented) while a
// task of another user that it was ahead of by arrival and priority was ranked before it and can go first (one its
// quota holds cannot); and a task behind a reservation whose holder is such a task. A reservation held by a task
// that was ahead of it anyway (or by a live gang not placed yet) stays its reason: without fair share it would
// wait behind the same one. ranked is pl.order as rank left it.
func (pl *plan) markFairShare(ranked []int32) {
	// The highest orig among the tasks ranked so far, and the highest among users other than that one's.
	best1, best2 := int32(0), int32(0)
	user1 := int32(-1)
	for _, i := range ranked {
		e := &pl.ents[i]
		if e.kind == entWait && (e.code == cGPUsBusy || e.code == cFragmented || e.code == cCPUsBusy) {
			other := best1
			if user1 == e.user {
				other = best2
			}
			if other > e.orig {
				e.code, e.yields = cFairShare, 0
			}
		}
		if e.kind == entWait && e.code == cBehindReservation && e.yields >= 0 {
			if h := &pl.ents[e.yields]; h.user != e.user && h.orig > e.orig {
				e.code, e.yields = cFairShare, 0
			}
		}
		if e.kind == entWait && e.code == cQuota {
			continue // held by its quota (or its owner's removal): it does not go first
		}
		switch {
		case e.orig > best1 && e.user != user1:
			best2, best1, user1 = best1, e.orig, e.user
		case e.orig > best1:
			best1 = e.orig
		case e.user != user1 && e.orig > best2:
			best2 = e.orig
		}
	}
}

// fairReason is the sentence of a fair_share wait for user u.
func (pl *plan) fairReason(u int32) string {
	us := &pl.users[u]
	if us.fair == "" {
		// "lower" would be wrong at equal charges (two new users), which go in arrival order.
		us.fair = fmt.Sprintf("fair share: tasks of other users go first, whose charge is lower than %s's or equal "+
			"to it and submitted earlier; the charge is GPU time used lately, GPUs held now and the user's own tasks "+
			"ahead in line, relative to its share (%g)", us.name, us.share)
	}
	return us.fair
}

// quotaReason is the sentence of entry e's quota wait (formatted once per pass and user).
func (pl *plan) quotaReason(e *entry) string {
	us := &pl.users[e.user]
	if us.removed {
		if us.quotaNever == "" {
			us.quotaNever = fmt.Sprintf("quota: its owner %s is not in v2.auth.users any more, so its tasks are held; "+
				"the operator may cancel them, or add %s back", us.name, us.name)
		}
		return us.quotaNever
	}
	if g := pl.shapes[e.shape].d.gangGPUs(); us.maxGPUs > 0 && g > us.maxGPUs {
		// The cap was lowered after it was queued (a submit of it now is refused): it can never start under it.
		if us.quotaNever == "" {
			us.quotaNever = fmt.Sprintf("quota: this task's gang is larger than %s's max_gpus %g by itself, so it can "+
				"never start under that cap; cancel it, or ask for a higher max_gpus", us.name, us.maxGPUs)
		}
		return us.quotaNever
	}
	if us.quota == "" {
		us.quota = fmt.Sprintf("quota: %s's live tasks hold %g of its max_gpus %g; this task's gang would pass it",
			us.name, us.used, us.maxGPUs)
	}
	return us.quota
}
