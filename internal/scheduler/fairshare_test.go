package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// owned is a queued 1×gpus task of owner with priority prio that declares an hour and arrived ago before t0.
func owned(owner string, prio, gpus int, ago time.Duration) *mvp.Task {
	t := timed(1, gpus, time.Hour, ago)
	t.Owner, t.Priority = owner, prio
	return t
}

// submitted lists the tasks Decide submits, in order.
func submitted(acts []Action) []*mvp.Task {
	var out []*mvp.Task
	for _, a := range acts {
		if s, ok := a.(Submit); ok {
			out = append(out, s.Task)
		}
	}
	return out
}

func TestDecayedUsage(t *testing.T) {
	h := time.Hour
	end := t0.Add(-h)
	spans := []mvp.UsageSpan{
		{Owner: "a", GPUs: 2, Start: t0.Add(-2 * h), End: &end}, // one hour, ending one half-life ago
		{Owner: "b", GPUs: 1, Start: t0.Add(-h)},                // still running: counts up to now
		{Owner: "c", GPUs: 4, Start: t0.Add(-h), End: &end},     // empty span
	}
	got := DecayedUsage(t0, h, spans)
	// a: 2 GPUs × ∫_{1h}^{2h} 2^(-x/1h) dx = 2 × 3600/ln2 × (1/2 − 1/4)
	wantA := 2 * 3600 / math.Ln2 * 0.25
	wantB := 3600 / math.Ln2 * 0.5
	if math.Abs(got["a"]-wantA) > 1e-6 || math.Abs(got["b"]-wantB) > 1e-6 || got["c"] != 0 {
		t.Fatalf("usage = %v, want a=%g b=%g c=0", got, wantA, wantB)
	}
	if u := DecayedUsage(t0, 0, spans); math.Abs(u["a"]-2*3600) > 1e-6 {
		t.Fatalf("undecayed usage of a = %g, want 7200", u["a"])
	}
}

func TestPriorityOrdersTheQueue(t *testing.T) {
	for _, name := range []string{PolicyFIFO, PolicyEASY, PolicyXFBF} {
		t.Run(name, func(t *testing.T) {
			b := newBench("w1")
			low := owned("alice", 10, 4, 2*time.Minute)
			high := owned("alice", 90, 4, time.Minute)
			acts := Decide(t0, b.snap(low, high), named(name))
			if s := submitted(acts); len(s) != 1 || s[0] != high {
				t.Fatalf("submitted %v, want only the priority-90 task", s)
			}
			if w := waitOf(acts, low); w == nil || w.Position != 1 {
				t.Fatalf("the low-priority task's wait = %+v, want it first in line", w)
			}
		})
	}
}

// A task past the starvation bound holds the reservation: a higher-priority task that arrives later only
// backfills where it does not delay it.
func TestStarvedTaskKeepsItsReservation(t *testing.T) {
	b := newBench("w1", "w2")
	b.run(4, time.Hour, 30*time.Minute, true, "w1") // w1 frees in 30 min
	b.run(2, 2*time.Hour, 0, true, "w2")            // w2 has 2 free for 2 h
	old := owned("bob", 0, 4, 48*time.Hour)         // waited past the bound, lowest priority: needs a whole node
	urgent := owned("alice", 100, 4, time.Minute)   // needs a whole node too: would take w1 at 30 min
	p := named(PolicyXFBF)
	p.StarvationBound = 24 * time.Hour
	acts := Decide(t0, b.snap(old, urgent), p)
	w := waitOf(acts, old)
	if w == nil || w.EstStart() == nil || !w.EstStart().Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("starved task's wait = %+v, want the reservation at +30 min", w)
	}
	if w := waitOf(acts, urgent); w == nil || w.Code() != CodeGPUsBusy && w.Code() != CodeBehindReservation || w.Position != 2 {
		t.Fatalf("urgent task's wait = %+v, want it second, behind the starved task", w)
	}
	// Without the bound, priority alone decides: the urgent task holds the reservation.
	p.StarvationBound = 0
	acts = Decide(t0, b.snap(old, urgent), p)
	if w := waitOf(acts, urgent); w == nil || w.Position != 1 || w.EstStart() == nil {
		t.Fatalf("without a starvation bound the urgent task's wait = %+v, want it first with the reservation", w)
	}
}

func TestFairShareInterleavesFloods(t *testing.T) {
	b := newBench("w1", "w2", "w3", "w4")
	var q []*mvp.Task
	for k := 0; k < 6; k++ { // alice floods first, then bob
		q = append(q, owned("alice", 50, 4, time.Duration(20-k)*time.Minute))
	}
	for k := 0; k < 6; k++ {
		q = append(q, owned("bob", 50, 4, time.Duration(10-k)*time.Minute))
	}
	p := named(PolicyXFBF)
	p.FairShare = true
	got := map[string]int{}
	for _, s := range submitted(Decide(t0, b.snap(q...), p)) {
		got[s.Owner]++
	}
	if got["alice"] != 2 || got["bob"] != 2 {
		t.Fatalf("admitted per user %v, want 2 each on 4 nodes", got)
	}
	p.FairShare = false
	got = map[string]int{}
	for _, s := range submitted(Decide(t0, b.snap(q...), p)) {
		got[s.Owner]++
	}
	if got["alice"] != 4 {
		t.Fatalf("without fair share admitted %v, want alice's 4 oldest", got)
	}
}

func TestFairShareLightUserJumpsTheBacklog(t *testing.T) {
	b := newBench("w1")
	heavy := []*mvp.Task{owned("heavy", 50, 4, 3*time.Hour), owned("heavy", 50, 4, 2*time.Hour)}
	light := owned("light", 50, 4, time.Minute)
	s := b.snap(append(heavy, light)...)
	s.Usage = map[string]float64{"heavy": 1e6}
	p := named(PolicyXFBF)
	p.FairShare = true
	acts := Decide(t0, s, p)
	if sub := submitted(acts); len(sub) != 1 || sub[0] != light {
		t.Fatalf("submitted %v, want the light user's task", sub)
	}
	for _, h := range heavy {
		if w := waitOf(acts, h); w == nil || w.Code() != CodeFairShare {
			t.Fatalf("heavy task's wait = %+v, want code fair_share", w)
		}
	}
	v := Explain(t0, s, p)
	if len(v.Queue) != 2 || v.Queue[0].Owner != "heavy" || v.Queue[0].Rank != 2 || v.Queue[0].Code != CodeFairShare {
		t.Fatalf("explained queue %+v, want heavy's tasks ranked 2 and 3 with code fair_share", v.Queue)
	}
	// Usage counts relative to share: heavy's 1e6 GPU-seconds over a share of 1e6 is less than light's 10 over 1.
	p.Users = map[string]UserLimits{"heavy": {Share: 1e6}}
	s.Usage["light"] = 10
	if sub := submitted(Decide(t0, s, p)); len(sub) != 1 || sub[0] != heavy[0] {
		t.Fatalf("with a large share submitted %v, want heavy's oldest", sub)
	}
}

func TestQuotaHoldsOnlyItsOwner(t *testing.T) {
	b := newBench("w1", "w2", "w3")
	r := b.run(4, time.Hour, 0, true, "w1")
	r.Owner = "alice"
	over := owned("alice", 50, 4, 10*time.Minute)
	other := owned("bob", 50, 4, 5*time.Minute)
	for _, name := range []string{PolicyFIFO, PolicyXFBF} {
		p := named(name)
		p.Users = map[string]UserLimits{"alice": {MaxGPUs: 4}}
		acts := Decide(t0, b.snap(over, other), p)
		if sub := submitted(acts); len(sub) != 1 || sub[0] != other {
			t.Fatalf("%s: submitted %v, want bob's task only", name, sub)
		}
		w := waitOf(acts, over)
		if w == nil || w.Code() != CodeQuota || w.Reason == "" {
			t.Fatalf("%s: alice's task waits %+v, want code quota", name, w)
		}
	}
}

// A task whose gang alone is larger than its owner's max_gpus (the cap lowered after it was queued) waited with
// the usual quota sentence, "this task's gang would pass it", for up to max_queued_s (7 days): it can never start
// under that cap, and its reason says so, as a new submit of it is told. Found in a walk-through.
func TestAGangOverTheCapSaysItCanNeverStart(t *testing.T) {
	b := newBench("w1", "w2")
	over := owned("alice", 50, 4, 10*time.Minute)
	p := named(PolicyXFChain)
	p.Users = map[string]UserLimits{"alice": {MaxGPUs: 2}}
	w := waitOf(Decide(t0, b.snap(over), p), over)
	if w == nil || w.Code() != CodeQuota || !strings.Contains(w.Reason, "can never start") ||
		!strings.Contains(w.Reason, "max_gpus 2") {
		t.Fatalf("alice's 4-GPU task under a cap of 2 waits %+v; want code quota saying it can never start", w)
	}
}

// A user removed from v2.auth.users kept her queued tasks in line with no max_gpus any more (none is configured
// for a name that is not there), and she could no longer see or cancel them. With OnlyKnownOwners (as mvp serve
// runs), the waiting tasks of an owner who is neither the operator nor a configured user are held, saying why; the
// others' go on. Found in a walk-through.
func TestARemovedUsersTasksAreHeld(t *testing.T) {
	b := newBench("w1", "w2")
	gone := owned("alice", 50, 4, 10*time.Minute)
	bob := owned("bob", 50, 4, 5*time.Minute)
	op := owned("", 50, 4, time.Minute)
	p := named(PolicyXFChain)
	p.Users = map[string]UserLimits{"bob": {}}
	p.OnlyKnownOwners = true
	acts := Decide(t0, b.snap(gone, bob, op), p)
	if sub := submitted(acts); len(sub) != 2 || !slices.Contains(sub, bob) || !slices.Contains(sub, op) {
		t.Errorf("submitted %v; want bob's and the operator's", sub)
	}
	w := waitOf(acts, gone)
	if w == nil || w.Code() != CodeQuota || !strings.Contains(w.Reason, "not in v2.auth.users") {
		t.Fatalf("the removed user's task waits %+v; want code quota saying she is not a user any more", w)
	}
}

// Drain chaining reorders only a queue in arrival order: where fair share or priority shaped the rank, the gang waits
// its turn as ranked (a chained gang could otherwise go ahead of a lighter user's task).
func TestChainingOnlyInAnUnrankedQueue(t *testing.T) {
	for _, c := range []struct {
		name      string
		gangOwner string
		chained   bool
	}{{"one owner: chained", "alice", true}, {"two owners, fair share on: as ranked", "bob", false}} {
		t.Run(c.name, func(t *testing.T) {
			b := newBench("n1", "n2")
			long := timed(1, 1, 2*time.Hour, time.Hour)
			long.Owner, long.Priority = "alice", mvp.DefaultPriority
			gang := timed(2, 4, 10*time.Minute, 30*time.Minute)
			gang.Owner, gang.Priority = c.gangOwner, mvp.DefaultPriority
			p := named(PolicyXFChain)
			p.FairShare = true
			s := submitted(Decide(t0, b.snap(long, gang), p))
			if c.chained && (len(s) != 1 || s[0] != gang) {
				t.Fatalf("submitted %v, want only the gang", s)
			}
			if !c.chained && (len(s) != 1 || s[0] != long) {
				t.Fatalf("submitted %v, want only the long task", s)
			}
		})
	}
}

// With fair share across users, fair share decides whose task takes a free slot and the policy's own order which of
// that user's tasks: here alice (the lighter user) gets the slot, and her task with the larger expansion factor
// takes it, though bob's has the largest of all.
func TestFairShareKeepsThePolicyOrderWithinAUser(t *testing.T) {
	b := newBench("n1", "n2")
	b.run(4, 6*time.Hour, time.Hour, true, "n1") // n1 free at +5h: the gang's reservation
	gang := owned("alice", mvp.DefaultPriority, 4, 3*time.Hour)
	gang.NNodes = 2
	older := owned("alice", mvp.DefaultPriority, 4, time.Hour) // (1h + 4h) / 4h = 1.25
	older.MaxRuntimeS = 4 * 3600
	newer := owned("alice", mvp.DefaultPriority, 4, 10*time.Minute) // (10m + 10m) / 10m = 2
	newer.MaxRuntimeS = 600
	bobs := owned("bob", mvp.DefaultPriority, 4, 2*time.Hour) // (2h + 10m) / 10m = 13
	bobs.MaxRuntimeS = 600
	p := named(PolicyXFChain)
	p.FairShare = true
	snap := b.snap(gang, older, bobs, newer)
	snap.Usage = map[string]float64{"bob": 1e6}
	if s := submitted(Decide(t0, snap, p)); len(s) != 1 || s[0] != newer {
		t.Fatalf("submitted %v, want only alice's newer task (%s)", s, newer.ID)
	}
}

// The users' merge gives the same order however many users there are (a scan of a few, a heap of many): the
// order of the keys (each task's user's charge before it, then its queue index).
func TestMergeUsersOrdersByCharge(t *testing.T) {
	for _, nusers := range []int{3, 40} {
		b := newBench("n1")
		var q []*mvp.Task
		for k := 0; k < 400; k++ {
			tk := owned(fmt.Sprintf("u%02d", (k*7)%nusers), mvp.DefaultPriority, 1+k%4, time.Duration(400-k)*time.Minute)
			tk.MaxRuntimeS = 600 * (1 + k%5)
			q = append(q, tk)
		}
		usage := map[string]float64{}
		for u := 0; u < nusers; u++ {
			usage[fmt.Sprintf("u%02d", u)] = float64((u * 37) % 11 * 1000)
		}
		snap := b.snap(q...)
		snap.Usage = usage
		p := named(PolicyEASY)
		p.FairShare = true
		pl := newPlan(t0, snap, p)
		// The reference: walk each user's tasks in queue order, key = (charge before it, index).
		charge := map[string]float64{}
		for u, v := range usage {
			charge[u] = v
		}
		type kv struct {
			c float32
			i int32
		}
		var ref []kv
		for i, tk := range q {
			ref = append(ref, kv{float32(charge[tk.Owner]), int32(i)})
			charge[tk.Owner] += pl.expectedCost(int32(i))
		}
		slices.SortFunc(ref, func(a, b kv) int {
			if a.c != b.c {
				return cmp.Compare(a.c, b.c)
			}
			return cmp.Compare(a.i, b.i)
		})
		var got []int32
		for _, i := range pl.order {
			got = append(got, i)
		}
		// pl.order lists the candidates in rank order; every task here is one.
		for k := range ref {
			if got[k] != ref[k].i {
				t.Fatalf("%d users: rank %d is task %d, want %d", nusers, k+1, got[k], ref[k].i)
			}
		}
	}
}

// TestTheFairShareSentenceSaysWhatTheChargeIs: two users with no usage at all, the second task of each behind the
// other's first: the sentence said the user "has used more GPU time lately", which they had not (walk-through 9).
// The charge also counts GPUs held now and the user's own tasks already ahead in line; the sentence says so.
func TestTheFairShareSentenceSaysWhatTheChargeIs(t *testing.T) {
	b := newBench("w1")
	q := []*mvp.Task{owned("carol", 50, 4, 4*time.Minute), owned("carol", 50, 4, 3*time.Minute),
		owned("dave", 50, 4, 2*time.Minute), owned("dave", 50, 4, time.Minute)}
	p := named(PolicyXFBF)
	p.FairShare = true
	acts := Decide(t0, b.snap(q...), p)
	w := waitOf(acts, q[1])
	if w == nil || w.Code() != CodeFairShare {
		t.Fatalf("carol's second task: %+v, want a fair_share wait", w)
	}
	if strings.Contains(w.Reason, "used more GPU time lately") || !strings.Contains(w.Reason, "ahead in line") {
		t.Errorf("sentence %q: want the charge as it is counted, not past usage carol does not have", w.Reason)
	}
}

// TestQuotaIsTheReasonBehindAnUnplacedGang: behind a live attempt whose unplaced gang does not fit, a task whose
// owner is at max_gpus waits for its quota, which holds it whatever the gang does; it said it waited behind the
// gang (walk-through 12: carol's dry runs flipped between the two). No sentence sends the reader to a yields_to
// that the task, a dry run and mvp get do not carry.
func TestQuotaIsTheReasonBehindAnUnplacedGang(t *testing.T) {
	h := time.Hour
	b := newBench("n1", "n2")
	mine := b.run(2, 2*h, h, true, "n1") // n1: 2 of 4 GPUs free; carol holds 2
	mine.Owner = "carol"
	b.run(4, 2*h, h, true, "n2") // n2: full
	pend := timed(1, 4, h, 2*time.Minute)
	pend.State = "SUBMITTED"
	b.active = append(b.active, ActiveAttempt{Task: pend, Attempt: &mvp.Attempt{No: 1, RayJobID: "pending1",
		RayStatus: mvp.RayPending, CreatedAt: t0.Add(-time.Minute)}})
	over := owned("carol", 50, 1, 10*time.Minute)
	other := owned("bob", 50, 1, 5*time.Minute)
	p := named(PolicyXFChain)
	p.Users = map[string]UserLimits{"carol": {MaxGPUs: 2}, "bob": {}}
	acts := Decide(t0, b.snap(over, other), p)
	if w := waitOf(acts, over); w == nil || w.Code() != CodeQuota {
		t.Errorf("carol's task over her quota behind an unplaced gang waits %+v; want code quota", w)
	}
	w := waitOf(acts, other)
	if w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != pend.ID {
		t.Fatalf("bob's task waits %+v; want behind_reservation yielding to %s", w, pend.ID)
	}
	if strings.Contains(w.Reason, "yields_to") {
		t.Errorf("the sentence %q sends the reader to yields_to", w.Reason)
	}
}

// TestNoFairShareReasonBehindATaskThatCannotGoFirst: a task ranked ahead by fair share that its quota (or its
// owner's removal) holds does not go first, so the task behind it waits for GPUs, not for fair share (walk-through
// 12: alice's task held the reservation and said "fair share: tasks of other users go first" while the only task
// ranked ahead of hers was carol's, held by her quota).
func TestNoFairShareReasonBehindATaskThatCannotGoFirst(t *testing.T) {
	b := newBench("n1", "n2")
	b.run(4, time.Hour, 0, true, "n1").Owner = "carol"
	b.run(4, time.Hour, 0, true, "n2")
	alice := owned("alice", 50, 4, 10*time.Minute)
	carol := owned("carol", 50, 4, 5*time.Minute)
	for _, removed := range []bool{false, true} {
		s := b.snap(alice, carol)
		s.Usage = map[string]float64{"alice": 1e6}
		p := named(PolicyXFChain)
		p.FairShare = true
		p.Users = map[string]UserLimits{"alice": {}, "carol": {MaxGPUs: 4}}
		if removed {
			p.Users, p.OnlyKnownOwners = map[string]UserLimits{"alice": {}}, true
		}
		acts := Decide(t0, s, p)
		if w := waitOf(acts, carol); w == nil || w.Code() != CodeQuota {
			t.Fatalf("removed %v: carol's task waits %+v, want quota", removed, w)
		}
		if w := waitOf(acts, alice); w == nil || w.Code() != CodeGPUsBusy {
			t.Errorf("removed %v: alice's task waits %+v, want gpus_busy: nothing ranked ahead of it can go first", removed, w)
		}
	}
}

// TestTheFairShareSentenceIsTrueAtEqualCharges: on the real cluster two new users (no usage, nothing running)
// submitted together; alice's task of priority 70, submitted last, waited with code fair_share and the sentence
// "tasks of other users go first, whose charge is lower than alice's", while bob's charge was alice's (both 0):
// equal charges go in arrival order. The sentence must not claim a lower charge it cannot know.
func TestTheFairShareSentenceIsTrueAtEqualCharges(t *testing.T) {
	b := newBench("w1")
	bob := owned("bob", 50, 4, 2*time.Minute)
	alice := owned("alice", 70, 4, time.Minute)
	p := named(PolicyXFChain)
	p.FairShare = true
	acts := Decide(t0, b.snap(bob, alice), p)
	if sub := submitted(acts); len(sub) != 1 || sub[0] != bob {
		t.Fatalf("submitted %v, want bob's older task (equal charges go in arrival order)", sub)
	}
	w := waitOf(acts, alice)
	if w == nil || w.Code() != CodeFairShare {
		t.Fatalf("alice's task: %+v, want a fair_share wait", w)
	}
	if strings.Contains(w.Reason, "whose charge is lower than alice's;") {
		t.Errorf("sentence %q claims bob's charge is lower; both are 0", w.Reason)
	}
	if !strings.Contains(w.Reason, "arrival") && !strings.Contains(w.Reason, "submitted") {
		t.Errorf("sentence %q does not say how equal charges are ordered", w.Reason)
	}
}

// TestAnEndedGangDoesNotChargeItsOwner: a gang's placement groups are removed when its run ends, before mvp
// learns that the Ray job ended; the ClusterWatch wakes the loop at exactly that moment, when the freed GPUs are
// handed out. The gang's attempt is still live in mvp's view, and fair share charged its owner its 8 GPUs × 1 h
// as if he held them: in a walk-through bob's 2 × 4 gang ended and, in that one pass, alice's whole waiting
// sweep (six 1-GPU tasks) took the freed GPUs, spread over both nodes, ahead of bob's 1 × 4 task that the queue
// had just forecast to start then (and which fair share, with bob the lighter user, ranks first). Groups it
// removed hold nothing, and charge nothing either.
func TestAnEndedGangDoesNotChargeItsOwner(t *testing.T) {
	bundles, node, active, p := gangScene()
	active[0].Task.Owner = "bob"
	removed := []mvp.PlacementGroup{
		{ID: "g1", CreatorJobID: "01000000", State: "REMOVED", Strategy: "STRICT_PACK", Bundles: bundles, Node: "w1"},
		{ID: "g2", CreatorJobID: "01000000", State: "REMOVED", Strategy: "STRICT_PACK", Bundles: bundles, Node: "w2"}}
	var queue []*mvp.Task
	for i := range 6 {
		q := &mvp.Task{ID: fmt.Sprintf("alice-%d", i), Owner: "alice", Priority: 50, Workload: mvp.WorkloadPPO,
			State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 1, MaxRuntimeS: 120, CreatedAt: t0.Add(-3 * time.Minute)}
		queue = append(queue, q)
	}
	bob4 := &mvp.Task{ID: "bob-4", Owner: "bob", Priority: 50, Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 4, MaxRuntimeS: 60, CreatedAt: t0.Add(-time.Minute)}
	queue = append(queue, bob4)
	p.FairShare = true
	snap := Snapshot{Cluster: &mvp.ClusterView{Nodes: []mvp.Node{node("w1", 4), node("w2", 4)}, Groups: removed},
		Active: active, Queue: queue, Usage: map[string]float64{"alice": 612, "bob": 108}}
	acts := Decide(t0, snap, p)
	if !slices.Contains(submitted(acts), bob4) {
		w := waitOf(acts, bob4)
		t.Fatalf("bob's 1 × 4 task (bob the lighter user, his gang ended) was not admitted: %s %q; submitted %d of alice's",
			w.Code(), w.Reason, len(submitted(acts)))
	}
}

// TestFairShareDoesNotHideAReservationItDidNotCause: bob's task waits behind alice's gang's reservation, which was
// ahead of it by arrival anyway; carol's later task was ranked ahead of bob's by fair share. The wait was
// relabelled fair_share (and lost its yields_to), though without fair share bob's task would wait behind the same
// reservation: the reservation is its reason (the walk-through's left item). Behind a reservation held by a task
// that fair share put ahead of it, fair_share stays the reason.
func TestFairShareDoesNotHideAReservationItDidNotCause(t *testing.T) {
	for _, name := range []string{PolicyXFChain, PolicyXFBF, PolicyEASY} {
		b := newBench("n1", "n2")
		b.run(4, time.Hour, 0, true, "n1").Owner = "dave"
		gang := timed(2, 4, time.Hour, 30*time.Minute)
		gang.Owner, gang.Priority = "alice", 50
		bob := owned("bob", 50, 4, 20*time.Minute) // fits n2 now, but its 2 h would delay the gang's start
		carol := owned("carol", 50, 4, 10*time.Minute)
		bob.MaxRuntimeS, carol.MaxRuntimeS = 7200, 7200
		s := b.snap(gang, bob, carol)
		s.Usage = map[string]float64{"bob": 1e6}
		p := named(name)
		p.FairShare = true
		acts := Decide(t0, s, p)
		if len(submitted(acts)) != 0 {
			t.Fatalf("%s: submitted %v, want none (the gang's reservation holds n2)", name, submitted(acts))
		}
		w := waitOf(acts, bob)
		if w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != gang.ID {
			t.Errorf("%s: bob's task waits %+v, want behind_reservation yielding to the gang (ahead of it by arrival)", name, w)
		}
		v := Explain(t0, s, p)
		for _, e := range v.Queue {
			if e.TaskID == bob.ID && (e.Code != CodeBehindReservation || e.YieldsTo != gang.ID) {
				t.Errorf("%s: explained %+v, want behind_reservation yielding to %s", name, e, gang.ID)
			}
		}

		// The gang submitted after bob's task: fair share put it ahead, and is the reason.
		gang.CreatedAt = t0.Add(-15 * time.Minute)
		s = b.snap(bob, gang, carol)
		s.Usage = map[string]float64{"bob": 1e6}
		acts = Decide(t0, s, p)
		if w := waitOf(acts, bob); w == nil || w.Code() != CodeFairShare {
			t.Errorf("%s: bob's task behind a gang fair share put ahead of it waits %+v, want fair_share", name, w)
		}
	}
}

// TestGPUsHeldIsWhatAdmissionCounts: mvp users showed an owner holding 9 GPUs on an 8-GPU cluster (found by a
// user's-eye drill): it summed every live task's gang, while admission counts an attempt whose gang's groups Ray
// has all removed (its run ended; mvp has not followed its job to its end yet) as holding none, and hands those
// GPUs on. GPUsHeld is admission's count; with the cluster unread, every live task's gang.
func TestGPUsHeldIsWhatAdmissionCounts(t *testing.T) {
	bundles, node, active, p := gangScene()
	active[0].Task.Owner = "bob"
	nodes := []mvp.Node{node("w1", 0), node("w2", 0)}
	for _, c := range []struct {
		state string
		want  float64
	}{{"CREATED", 8}, {"REMOVED", 0}} {
		groups := []mvp.PlacementGroup{
			{ID: "g1", CreatorJobID: "01000000", State: c.state, Strategy: "STRICT_PACK", Bundles: bundles, Node: "w1"},
			{ID: "g2", CreatorJobID: "01000000", State: c.state, Strategy: "STRICT_PACK", Bundles: bundles, Node: "w2"}}
		held := GPUsHeld(t0, Snapshot{Cluster: &mvp.ClusterView{Nodes: nodes, Groups: groups}, Active: active}, p)
		if held["bob"] != c.want || len(held) > 1 {
			t.Errorf("bob's 2 × 4 gang with its groups %s: held %v, want bob %g", c.state, held, c.want)
		}
	}
	if held := GPUsHeld(t0, Snapshot{Active: active}, p); held["bob"] != 8 {
		t.Errorf("with the cluster unread: %v, want bob 8", held)
	}
}
