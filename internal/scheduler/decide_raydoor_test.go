package scheduler

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestDecideRayJobDriver: a ray_job task without a gang is admitted on its own driver's resources, not on the
// configured default: one whose driver fits goes, one whose driver needs more GPUs than are free waits with a
// reason naming them (and holds the queue), and one whose driver no node could ever hold never fits.
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
	if w := as[1].(*Wait); !strings.Contains(w.Reason, "needs a node with its driver's resources {GPU=2} free") {
		t.Errorf("reason of the waiting driver: %q", w.Reason)
	}
	if w := as[3].(*Wait); !strings.Contains(w.Reason, "waiting behind "+big.ID) {
		t.Errorf("reason of the task behind: %q", w.Reason)
	}
	// Alone, a driver that asks for nothing is admitted even on a cluster without free GPUs.
	as = Decide(t0, Snapshot{Cluster: cluster(worker("w1", 0, 0)), Queue: []*mvp.Task{none}}, p)
	if got := strings.Join(summary(as), " "); got != "submit:"+none.ID {
		t.Errorf("a driver without resources: %s", got)
	}
}
