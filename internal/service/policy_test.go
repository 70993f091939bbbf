package service_test

import (
	"testing"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/service"
)

// TestPolicyCountsTheRunnerWithTheDriver: a workload with runner_cpus has a driver of its own in the policy,
// the configured driver plus that CPU; the others use the configured driver.
func TestPolicyCountsTheRunnerWithTheDriver(t *testing.T) {
	cfg, err := config.Parse([]byte("address: http://127.0.0.1:8265\nshared_root: /tmp\nentrypoint_num_cpus: 1\n" +
		"entrypoint_resources: {worker_node: 1}\nv2: {workloads: {grpo: {runner_cpus: 2.5}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := service.PolicyOf(cfg)
	for w, cpu := range map[mvp.Workload]float64{mvp.WorkloadPPO: 2, mvp.WorkloadGRPO: 3.5, mvp.WorkloadSFT: 1, mvp.WorkloadRayJob: 1} {
		d := p.WorkloadDriver(w)
		if d[scheduler.ResCPU] != cpu || d["worker_node"] != 1 {
			t.Errorf("%s's driver %v, want CPU %v and worker_node 1", w, d, cpu)
		}
	}
	if p.Driver[scheduler.ResCPU] != 1 {
		t.Errorf("the configured driver changed: %v", p.Driver)
	}
}
