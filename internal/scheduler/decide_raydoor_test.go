package scheduler

import (
	"strings"
	"testing"

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
