package scheduler

import (
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestTheRunnerCPUIsHeldUntilTheGangIsPlaced: Ray says RUNNING as soon as the driver process starts; verl's
// TaskRunner actor is created only after the driver has imported verl and called ray.init (seconds to tens of
// seconds). In that window Ray's view shows the driver's own CPU taken but not the runner's, and the attempt's
// driver is no longer reserved (it "has started"), so the runner's CPU is free for the next admission: the
// second 1×4 PPO is admitted and one of the two TaskRunners, or gangs, never gets its CPU.
func TestTheRunnerCPUIsHeldUntilTheGangIsPlaced(t *testing.T) {
	p := runnerPolicy()
	// 27 CPUs were free; the first driver (1 CPU) has started, its runner (1 CPU) and gang (12) not yet.
	big := mvp.Node{ID: "n8", Alive: true, Total: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
		Available: map[string]float64{"GPU": 8, "CPU": 26, "worker_node": 99}}
	first := task(mvp.WorkloadPPO, 1, 4, mvp.StateRunning)
	started := t0
	att := &mvp.Attempt{TaskID: first.ID, No: 1, RaySubmissionID: first.ID + "--a01", RayStatus: mvp.RayRunning,
		CreatedAt: t0, RunningAt: &started, DriverNodeID: "n8"}
	second := task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)
	acts := Decide(t0, Snapshot{Cluster: cluster(big), Queue: []*mvp.Task{second},
		Active: []ActiveAttempt{{Task: first, Attempt: att, Nodes: []string{"n8"}}}}, p)
	if len(acts) != 1 || isSubmit(acts[0]) {
		t.Errorf("second PPO 1×4 beside a running driver whose TaskRunner has not started: %v, want a wait", summary(acts))
	}
}
