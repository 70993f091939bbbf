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
