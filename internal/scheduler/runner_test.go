package scheduler

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// runnerPolicy is policy() with verl's TaskRunner counted for PPO and GRPO, as service.PolicyOf builds it from the
// workload table (runner_cpus 1; the Ray SFT trainer has none).
func runnerPolicy() Policy {
	p := policy()
	drv := map[string]float64{"worker_node": 1, "CPU": 2}
	p.Drivers = map[mvp.Workload]map[string]float64{mvp.WorkloadPPO: drv, mvp.WorkloadGRPO: drv}
	return p
}

// TestTheRunnerCPUIsAdmittedWithTheGang: verl's main_ppo starts a TaskRunner actor (num_cpus=1) before it asks for
// its gang. A node with the gang's GPUs and CPUs and the driver's CPU free, but not one CPU more, would start a
// driver whose TaskRunner never gets a CPU (the head has none): the run hangs before verl's check, holding nothing
// that mvp's stuck-gang rule sees. So PPO waits there (code cpus_busy, saying why), SFT, which has no runner, does
// not, and PPO goes once one more CPU is free.
func TestTheRunnerCPUIsAdmittedWithTheGang(t *testing.T) {
	p := runnerPolicy()
	// n1: 4 GPUs and 13 CPUs free (12 for a 1×4 PPO gang, 1 for the driver); n2: 4 GPUs, no CPU.
	tight := cluster(worker("n1", 4, 13), worker("n2", 4, 0))
	ppo := task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)
	acts := Decide(t0, Snapshot{Cluster: tight, Queue: []*mvp.Task{ppo}}, p)
	if len(acts) != 1 {
		t.Fatalf("PPO 1×4 with no CPU for its TaskRunner: %v, want one wait", summary(acts))
	}
	w, ok := acts[0].(*Wait)
	if !ok {
		t.Fatalf("PPO 1×4 with no CPU for its TaskRunner was admitted: %v", summary(acts))
	}
	if w.Never() || w.Code() != CodeCPUsBusy {
		t.Errorf("code %s (never %v), want %s: %q", w.Code(), w.Never(), CodeCPUsBusy, w.Reason)
	}
	for _, want := range []string{"waiting for CPUs", "4 GPU free", "12 CPU", "CPU=2", "runner_cpus"} {
		if !strings.Contains(w.Reason, want) {
			t.Errorf("reason %q does not say %q", w.Reason, want)
		}
	}

	// The Ray SFT trainer runs in its driver: 1×1 takes 10 + 1 CPUs, which fit.
	sft := task(mvp.WorkloadSFT, 1, 1, mvp.StateQueued)
	if acts := Decide(t0, Snapshot{Cluster: tight, Queue: []*mvp.Task{sft}}, p); len(acts) != 1 || !isSubmit(acts[0]) {
		t.Errorf("SFT 1×1 (no runner) on 13 free CPUs: %v, want a submit", summary(acts))
	}

	// One CPU more, and PPO goes.
	roomy := cluster(worker("n1", 4, 14), worker("n2", 4, 0))
	acts = Decide(t0, Snapshot{Cluster: roomy, Queue: []*mvp.Task{task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)}}, p)
	if len(acts) != 1 || !isSubmit(acts[0]) {
		t.Errorf("PPO 1×4 on 14 free CPUs: %v, want a submit", summary(acts))
	}

	// A submitted PPO attempt whose driver has not started yet holds its runner's CPU too (it is reserved with
	// the driver): on an 8-GPU node with 27 CPUs free, the first 1×4 keeps 12 + 2, and the 13 left are one short
	// of a second 1×4 (with the first's runner not counted, 14 were left and the second went).
	big := mvp.Node{ID: "n8", Alive: true, Total: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
		Available: map[string]float64{"GPU": 8, "CPU": 27, "worker_node": 100}}
	first := task(mvp.WorkloadPPO, 1, 4, mvp.StateSubmitted)
	att := &mvp.Attempt{TaskID: first.ID, No: 1, RaySubmissionID: first.ID + "--a01", RayStatus: mvp.RayPending,
		CreatedAt: t0}
	second := task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)
	acts = Decide(t0, Snapshot{Cluster: cluster(big), Queue: []*mvp.Task{second},
		Active: []ActiveAttempt{{Task: first, Attempt: att}}}, p)
	if len(acts) != 1 {
		t.Fatalf("second PPO beside a pending one: %v", summary(acts))
	}
	if w, ok := acts[0].(*Wait); !ok || w.Code() != CodeCPUsBusy {
		t.Errorf("second PPO 1×4 beside a pending one: %v, want a cpus_busy wait", summary(acts))
	}
}

// TestFragmentedIsNotSaidOfAShortageOfCPUs: a gang whose GPUs are free on enough nodes, but whose CPUs are not,
// was told it was fragmented ("the largest free node has 4", for a gang of 4 GPUs per node).
func TestFragmentedIsNotSaidOfAShortageOfCPUs(t *testing.T) {
	acts := Decide(t0, Snapshot{Cluster: cluster(worker("n1", 4, 5), worker("n2", 4, 5)),
		Queue: []*mvp.Task{task(mvp.WorkloadPPO, 2, 4, mvp.StateQueued)}}, policy())
	w, ok := acts[0].(*Wait)
	if !ok || w.Code() != CodeCPUsBusy || strings.Contains(w.Reason, "fragmented") {
		t.Errorf("2×4 PPO on two nodes with 4 GPUs and 5 CPUs free each: %v %q, want cpus_busy", summary(acts), w.Reason)
	}
	// Truly fragmented: 2 + 2 GPUs free for a 1×4 gang.
	acts = Decide(t0, Snapshot{Cluster: cluster(worker("n1", 2, 48), worker("n2", 2, 48)),
		Queue: []*mvp.Task{task(mvp.WorkloadPPO, 1, 4, mvp.StateQueued)}}, policy())
	if w, ok := acts[0].(*Wait); !ok || w.Code() != CodeFragmented {
		t.Errorf("1×4 on 2 + 2 free GPUs: %v, want fragmented", summary(acts))
	}
}

func isSubmit(a Action) bool {
	_, ok := a.(Submit)
	return ok
}
