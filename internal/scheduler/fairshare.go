package scheduler

import (
	"fmt"
	"math"
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
		lim := pl.p.Users[owner]
		share := lim.Share
		if share <= 0 {
			share = 1
		}
		pl.users = append(pl.users, userState{name: owner, maxGPUs: float64(lim.MaxGPUs), share: share,
			charge: pl.s.Usage[owner] / share})
	}
	pl.lastUser = u
	return u
}

// userState is one user's part of a plan.
type userState struct {
	name    string
	maxGPUs float64 // 0: no bound
	share   float64
	// used is the GPUs the user's live and just-admitted tasks hold (quota).
	used float64
	// charge is decayed usage ÷ share, plus what the user's live attempts and the tasks ranked so far will use
	// ÷ share (fair share's merge).
	charge float64
	// fair and quota are the fair_share and quota sentences, formatted once (after the pass's admissions).
	fair, quota string
}

// gangGPUs is the GPUs a task of this shape holds in all.
func (d Demand) gangGPUs() float64 { return float64(d.Groups) * d.GPUs }

// overQuota reports whether admitting task i would take its owner past max_gpus.
func (pl *plan) overQuota(i int32) bool {
	u := &pl.users[pl.ents[i].user]
	return u.maxGPUs > 0 && u.used+pl.shapes[pl.ents[i].shape].d.gangGPUs() > u.maxGPUs
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
	if !pl.mixed || len(order) >= 1<<24 {
		for k, i := range order {
			pl.ents[i].rank = int32(k + 1)
		}
		return
	}
	keys := make([]uint64, len(order))
	for k, i := range order {
		band := pl.band(i)
		pl.ents[i].orig = int32(band<<24 | uint32(i))
		keys[k] = uint64(band)<<56 | uint64(uint32(i))
	}
	radixSort(keys)
	for k, key := range keys {
		order[k] = int32(key & (1<<24 - 1))
	}
	if pl.p.FairShare && len(pl.users) > 1 {
		for k, i := range order {
			e := &pl.ents[i]
			u := &pl.users[e.user]
			keys[k] = uint64(math.Float32bits(float32(u.charge)))<<24 | uint64(uint32(i))
			u.charge += pl.expectedCost(i) / u.share
		}
		radixSort(keys)
		for k, key := range keys {
			order[k] = int32(key & (1<<24 - 1))
		}
	}
	for k, i := range order {
		pl.ents[i].rank = int32(k + 1)
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

// markFairShare relabels the waits that fair share caused: a task waiting for GPUs (busy, fragmented or behind
// a reservation) while a task of another user that it was ahead of by arrival and priority was ranked before it.
// ranked is pl.order as rank left it.
func (pl *plan) markFairShare(ranked []int32) {
	// The highest orig among the tasks ranked so far, and the highest among users other than that one's.
	best1, best2 := int32(0), int32(0)
	user1 := int32(-1)
	for _, i := range ranked {
		e := &pl.ents[i]
		if e.kind == entWait && (e.code == CodeGPUsBusy || e.code == CodeFragmented || e.code == CodeBehindReservation) {
			other := best1
			if user1 == e.user {
				other = best2
			}
			if other > e.orig {
				e.code, e.yields = CodeFairShare, 0
			}
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
		us.fair = fmt.Sprintf("fair share: %s has used more GPU time lately, relative to its share (%g), than "+
			"the users whose tasks go first", us.name, us.share)
	}
	return us.fair
}

// quotaReason is the sentence of a quota wait for user u (formatted once per pass and user).
func (pl *plan) quotaReason(u int32) string {
	us := &pl.users[u]
	if us.quota == "" {
		us.quota = fmt.Sprintf("quota: %s's live tasks hold %g of its max_gpus %g; this task's gang would pass it",
			us.name, us.used, us.maxGPUs)
	}
	return us.quota
}
