package scheduler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestDecideRayJobDriver: a ray_job task without a gang is admitted on its own driver's resources, not on the
// configured default: one whose driver fits goes, one whose driver needs more GPUs than are free waits with a
// reason naming them (and, first in, first out, holds the queue), and one whose driver no node could ever hold never fits.
func TestDecideRayJobDriver(t *testing.T) {
	p := policy()
	p.Driver = map[string]float64{"worker_node": 1, "CPU": 1}
	c := cluster(worker("w1", 1, 10))
	small := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	small.Driver = map[string]float64{"CPU": 2, "GPU": 1}
	big := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	big.Driver = map[string]float64{"GPU": 2}
	never := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	never.Driver = map[string]float64{"GPU": 8}
	none := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	none.Driver = map[string]float64{}

	as := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{small, big, never, none}}, p)
	got := strings.Join(summary(as), " ")
	want := strings.Join([]string{"submit:" + small.ID, "wait:" + big.ID, "never:" + never.ID, "wait:" + none.ID}, " ")
	if got != want {
		t.Fatalf("actions:\n got %s\nwant %s", got, want)
	}
	if w := as[1].(*Wait); !strings.Contains(w.Reason, "needs a node with {GPU=2} free") {
		t.Errorf("reason of the waiting driver: %q", w.Reason)
	}
	if w := as[3].(*Wait); w.YieldsTo != big.ID {
		t.Errorf("the task behind yields to %q (%s), want %s", w.YieldsTo, w.Reason, big.ID)
	}
	// Alone, a driver that asks for nothing is admitted even on a cluster without free GPUs.
	as = Decide(t0, Snapshot{Cluster: cluster(worker("w1", 0, 0)), Queue: []*mvp.Task{none}}, p)
	if got := strings.Join(summary(as), " "); got != "submit:"+none.ID {
		t.Errorf("a driver without resources: %s", got)
	}
}

// TestDecideRayJobDriverEveryPolicy: under every policy a driver of its own is what is fitted, and a submitted
// ray_job whose driver has not started yet holds its own driver's resources (not the default's) against the queue.
func TestDecideRayJobDriverEveryPolicy(t *testing.T) {
	for _, name := range PolicyNames {
		p := policy()
		p.Name = name
		c := cluster(worker("w1", 1, 10))
		small := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
		small.Driver = map[string]float64{"GPU": 1}
		never := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
		never.Driver = map[string]float64{"GPU": 8}
		as := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{small, never}}, p)
		if got, want := strings.Join(summary(as), " "), "submit:"+small.ID+" never:"+never.ID; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}

		live := task(mvp.WorkloadRayJob, 0, 0, mvp.StateSubmitted)
		live.Driver = map[string]float64{"GPU": 1}
		live.LatestAttemptNo = 1
		att := &mvp.Attempt{TaskID: live.ID, No: 1, RaySubmissionID: live.ID + "--a01", RayStatus: mvp.RayPending, CreatedAt: t0}
		next := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
		next.Driver = map[string]float64{"GPU": 1}
		as = Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{next},
			Active: []ActiveAttempt{{Task: live, Attempt: att}}}, p)
		if got := strings.Join(summary(as), " "); got != "wait:"+next.ID {
			t.Errorf("%s: behind a driver not started yet: %s", name, got)
		}
	}
}

// TestDecideRayJobDriverLabels: a ray_job's entrypoint_label_selector is part of its driver's fit, as Ray's
// scheduler will read it: the driver goes to the labelled node with room, waits while that node is busy (the reason
// names the labels), never fits when no alive node has them, and is admitted on resources alone when the reading
// holds no labels (the dashboard's fallback), under every policy.
func TestDecideRayJobDriverLabels(t *testing.T) {
	labelled := func(n mvp.Node, labels map[string]string) mvp.Node { n.Labels = labels; return n }
	for _, name := range PolicyNames {
		p := policy()
		p.Name = name
		c := cluster(labelled(worker("w1", 4, 48), map[string]string{"pool": "a"}),
			labelled(worker("w2", 4, 48), map[string]string{"pool": "b"}))
		want := func(sel map[string]string) *mvp.Task {
			tk := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
			tk.Driver = (&mvp.RayJobRequest{EntrypointNumCPUs: 1, EntrypointLabelSelector: sel}).Driver()
			return tk
		}
		toB, notA, toC := want(map[string]string{"pool": "b"}), want(map[string]string{"pool": "!a"}), want(map[string]string{"pool": "in(c,d)"})
		as := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{toB, notA, toC}}, p)
		if got, w := strings.Join(summary(as), " "), "submit:"+toB.ID+" submit:"+notA.ID+" never:"+toC.ID; got != w {
			t.Fatalf("%s: %s, want %s", name, got, w)
		}
		for _, a := range as[:2] {
			if s := a.(Submit); s.DriverNode != "w2" {
				t.Errorf("%s: %s's driver fitted on %q, want w2 (pool=b)", name, s.Task.ID, s.DriverNode)
			}
		}
		if w := as[2].(*Wait); !strings.Contains(w.Reason, "no alive node labelled {pool: in(c,d)} offers the driver's resources {CPU=1}") {
			t.Errorf("%s: never-fits reason %q", name, w.Reason)
		}

		// Ray takes in(a, b) but keeps " b" as the value, so nothing labelled b matches: the reason says how to
		// write it.
		spaced := want(map[string]string{"pool": "in(c, b)"})
		as = Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{spaced}}, p)
		if w, ok := as[0].(*Wait); !ok || !strings.Contains(w.Reason, "no alive node labelled {pool: in(c, b)}") ||
			!strings.Contains(w.Reason, "write in(a,b)") {
			t.Errorf("%s: in(c, b): %s", name, summary(as))
		}
		two := want(map[string]string{"pool": "in(c,d)", "zone": "x"}) // two constraints, no space in a list
		as = Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{two}}, p)
		if w, ok := as[0].(*Wait); !ok || strings.Contains(w.Reason, "write in(a,b)") {
			t.Errorf("%s: a hint for a list without a space: %s", name, summary(as))
		}

		// The labelled node busy: the driver waits, and the reason says for which node.
		busy := cluster(labelled(worker("w1", 4, 48), map[string]string{"pool": "a"}),
			labelled(worker("w2", 0, 0), map[string]string{"pool": "b"}))
		as = Decide(t0, Snapshot{Cluster: busy, Queue: []*mvp.Task{want(map[string]string{"pool": "b"})}}, p)
		if len(as) != 1 {
			t.Fatalf("%s: %s", name, summary(as))
		}
		if w, ok := as[0].(*Wait); !ok || !strings.Contains(w.Reason, "needs a node labelled {pool: b} with {CPU=1} free") {
			t.Errorf("%s: on a busy labelled node: %s", name, summary(as))
		}

		// Without labels in the reading, mvp cannot tell: Ray will.
		unknown := cluster(worker("w1", 4, 48))
		as = Decide(t0, Snapshot{Cluster: unknown, Queue: []*mvp.Task{want(map[string]string{"pool": "z"})}}, p)
		if got := strings.Join(summary(as), " "); !strings.HasPrefix(got, "submit:") {
			t.Errorf("%s: labels unknown: %s", name, got)
		}
	}
}

// TestALiveDriverNoNodeCanTakeDoesNotHoldTheQueue: a submitted ray_job whose driver has not started and whose
// label selector no alive node matches any more (its node died after the submit, or it was admitted on a reading
// without labels) is not reserved: before, it held the whole queue "behind a submitted task whose gang is not
// placed yet" until Ray gave up on it 15 minutes later (found in review). The same attempt without a selector
// reserves its driver's CPU and the queue goes on as well.
func TestALiveDriverNoNodeCanTakeDoesNotHoldTheQueue(t *testing.T) {
	for _, name := range PolicyNames {
		for _, sel := range []map[string]string{nil, {"pool": "b"}} {
			p := policy()
			p.Name = name
			a := worker("w1", 4, 48)
			a.Labels = map[string]string{"pool": "a"} // the pool=b node is gone
			live := task(mvp.WorkloadRayJob, 0, 0, mvp.StateSubmitted)
			live.Driver = (&mvp.RayJobRequest{EntrypointNumCPUs: 1, EntrypointLabelSelector: sel}).Driver()
			live.LatestAttemptNo = 1
			att := &mvp.Attempt{TaskID: live.ID, No: 1, RaySubmissionID: live.ID + "--a01", RayStatus: mvp.RayPending,
				RayJobID: "02000000", CreatedAt: t0}
			next := task(mvp.WorkloadPPO, 1, 1, mvp.StateQueued) // fits on w1 with room to spare
			as := Decide(t0, Snapshot{Cluster: cluster(a), Queue: []*mvp.Task{next},
				Active: []ActiveAttempt{{Task: live, Attempt: att}}}, p)
			if got := strings.Join(summary(as), " "); got != "submit:"+next.ID {
				t.Errorf("%s, selector %v: %s, want submit:%s", name, sel, got, next.ID)
			}
		}
	}
}

// TestADriversMemoryIsShownInBytes: a door job asking for more memory than any node has was told "no alive node
// offers the driver's resources {memory=9.99999999999999e+14}", a number the user never wrote (they sent a count of
// bytes; found by a user's-eye drill). Quantities are written out in full.
func TestADriversMemoryIsShownInBytes(t *testing.T) {
	tk := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	tk.Driver = (&mvp.RayJobRequest{EntrypointNumCPUs: 1, EntrypointMemory: 999999999999999}).Driver()
	as := Decide(t0, Snapshot{Cluster: cluster(worker("w1", 4, 48)), Queue: []*mvp.Task{tk}}, named(DefaultPolicy))
	if w, ok := as[0].(*Wait); !ok || !strings.Contains(w.Reason, "{CPU=1, memory=999999999999999}") {
		t.Errorf("never-fits reason %+v", as[0])
	}
}

// TestADoorDriverWithGPUsDoesNotJumpAReservation: a Ray-door job that asks GPUs for its driver alone (no gang:
// `entrypoint_num_gpus`) and outlives a waiting gang's reserved start was admitted past the reservation: the check
// that the reserved gang still fits wherever Ray may place the newcomer ran for gangs only, so a door job declaring
// days took a GPU the 2 × 4 gang needed at its start and pushed that start out by days (found in a user
// walk-through on the local cluster). It waits behind the reservation as a one-GPU task of the same length does;
// one that ends before the reserved start still backfills.
func TestADoorDriverWithGPUsDoesNotJumpAReservation(t *testing.T) {
	h := time.Hour
	for _, pol := range []string{PolicyEASY, PolicyXFBF, DefaultPolicy} {
		b := newBench("w1", "w2")
		b.run(2, 4*time.Minute, time.Minute, true, "w1")
		b.run(2, 4*time.Minute, time.Minute, true, "w2")
		gang := timed(2, 4, 2*h, 10*time.Minute)
		door := timed(0, 0, 72*h, 5*time.Minute)
		door.Workload, door.NNodes, door.GPUsPerNode = mvp.WorkloadRayJob, 0, 0
		door.Driver = map[string]float64{"GPU": 1}
		one := timed(1, 1, 72*h, 5*time.Minute) // the same length as a one-GPU jobspec task: held
		acts := Decide(t0, b.snap(gang, door, one), named(pol))
		if w := waitOf(acts, door); w == nil || w.Code() != CodeBehindReservation || w.YieldsTo != gang.ID {
			t.Errorf("%s: the 3-day door job with a GPU for its driver: %v (%+v), want it behind %s's reservation", pol, summary(acts), w, gang.ID)
		}
		if w := waitOf(acts, one); w == nil || w.Code() != CodeBehindReservation {
			t.Errorf("%s: the 3-day one-GPU task: %v", pol, summary(acts))
		}
		short := timed(0, 0, time.Minute, 5*time.Minute)
		short.Workload, short.NNodes, short.GPUsPerNode = mvp.WorkloadRayJob, 0, 0
		short.Driver = map[string]float64{"GPU": 1}
		if acts := Decide(t0, b.snap(gang, short), named(pol)); !slices.Contains(summary(acts), "submit:"+short.ID) {
			t.Errorf("%s: a one-minute door job that ends before the reserved start did not backfill: %v", pol, summary(acts))
		}
	}
}

// TestADoorDriverWithGPUsDoesNotRaceAGangBeingPlaced: a gang admitted in a pass is placed when its driver asks for
// its groups, seconds later; a Ray-door job whose driver alone asks for a GPU, admitted in the same pass, is placed
// by Ray's job supervisor on a node of Ray's choosing, which may be the one the gang needs. mayRace checked only
// tasks with groups, so the driver went, and the gang could wait for it (found in a user walk-through: a 1 × 4 gang
// stayed unplaced for 32 s). The driver waits until the gang is placed, unless every node it may take leaves room.
func TestADoorDriverWithGPUsDoesNotRaceAGangBeingPlaced(t *testing.T) {
	for _, pol := range []string{PolicyFIFO, PolicyEASY, DefaultPolicy} {
		b := newBench("w1", "w2")
		b.run(1, time.Hour, time.Minute, true, "w2") // w2: 3 GPUs free, w1: 4
		gang := timed(1, 4, time.Hour, 10*time.Minute)
		door := timed(0, 0, time.Hour, 5*time.Minute)
		door.Workload, door.NNodes, door.GPUsPerNode = mvp.WorkloadRayJob, 0, 0
		door.Driver = map[string]float64{"GPU": 1}
		acts := Decide(t0, b.snap(gang, door), named(pol))
		if !slices.Contains(summary(acts), "submit:"+gang.ID) {
			t.Fatalf("%s: the 1 × 4 gang was not admitted: %v", pol, summary(acts))
		}
		if w := waitOf(acts, door); w == nil || w.YieldsTo != gang.ID {
			t.Errorf("%s: the door job whose driver may take w1's GPU: %v (%+v), want it to wait for %s's placement", pol, summary(acts), w, gang.ID)
		}
		// With room for both wherever the driver lands, it goes at once.
		b = newBench("w1", "w2")
		gang = timed(1, 4, time.Hour, 10*time.Minute)
		acts = Decide(t0, b.snap(gang, door), named(pol))
		if !slices.Contains(summary(acts), "submit:"+gang.ID) || !slices.Contains(summary(acts), "submit:"+door.ID) {
			t.Errorf("%s: on two empty workers both should start: %v", pol, summary(acts))
		}
	}
}

// TestADoorDriverWaitingForCPUsSaysCPUs: a Ray-door job whose driver asks only for CPUs and waits for them was
// coded gpus_busy (found in a user walk-through); it is cpus_busy, with the driver's sentence. One whose driver asks
// for a GPU stays gpus_busy.
func TestADoorDriverWaitingForCPUsSaysCPUs(t *testing.T) {
	c := cluster(worker("w1", 0, 10)) // no GPU free, 10 CPUs
	cpu := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	cpu.Driver = map[string]float64{"CPU": 40}
	gpu := task(mvp.WorkloadRayJob, 0, 0, mvp.StateQueued)
	gpu.Driver = map[string]float64{"GPU": 1}
	for _, pol := range []string{PolicyFIFO, PolicyEASY, DefaultPolicy} {
		acts := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{cpu, gpu}}, named(pol))
		if w := waitOf(acts, cpu); w == nil || w.Code() != CodeCPUsBusy || !strings.Contains(w.Reason, "waiting for room for its driver: needs a node with {CPU=40} free") {
			t.Errorf("%s: the driver waiting for 40 CPUs: %+v", pol, w)
		}
		if w := waitOf(acts, gpu); w == nil || (w.Code() != CodeGPUsBusy && w.Code() != CodeBehindReservation) {
			t.Errorf("%s: the driver waiting for a GPU: %+v", pol, w)
		}
	}
}
