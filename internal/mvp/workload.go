package mvp

import (
	"slices"
	"strings"
)

// Workload names the verl entrypoint a task runs.
type Workload string

// The workloads. Each has one entry in WorkloadTable.
const (
	WorkloadPPO  Workload = "ppo"
	WorkloadGRPO Workload = "grpo"
	WorkloadSFT  Workload = "sft"
	// WorkloadRayJob is a job submitted through the Ray-Jobs-compatible door (/ray): the user's entrypoint as
	// given, its gang from its metadata (mvp.nnodes, mvp.n_gpus_per_node), or none.
	WorkloadRayJob Workload = "ray_job"
)

// WorkloadInfo is what mvp knows of one workload, in one place.
type WorkloadInfo struct {
	Name Workload
	// CPUsPerGPU is the default CPU of one verl bundle {"CPU": c, "GPU": 1}; dev.yaml's
	// v2.workloads.<name>.cpus_per_gpu overrides it.
	CPUsPerGPU float64
	// RunnerCPUs is the CPU of the Ray actor the driver starts to run the training before it asks for its gang:
	// verl's main_ppo runs everything in a TaskRunner actor of num_cpus=1; the Ray SFT trainer has none. dev.yaml's
	// v2.workloads.<name>.runner_cpus overrides it.
	RunnerCPUs float64
	// Module is the Python module the Ray entrypoint runs (python3 -m Module).
	Module string
	// RequiresValFile says whether the jobspec's val_file is required.
	RequiresValFile bool
	// RayDoor is true for the workload of the Ray-Jobs-compatible door: its tasks are made by POST /ray/api/jobs/
	// (never from a jobspec), it runs the user's own entrypoint (no Module) and its gang is optional.
	RayDoor bool
}

// WorkloadTable is the one list of workloads. The task id pattern, dev.yaml's defaults and checks, the messages
// that name the workloads and the Ray submission builder all derive from it; a workload is added here (and, in
// package workload, its builder's arguments: a test fails for a workload without them).
var WorkloadTable = []WorkloadInfo{
	{Name: WorkloadPPO, CPUsPerGPU: 3, RunnerCPUs: 1, Module: "verl.trainer.main_ppo", RequiresValFile: true},
	{Name: WorkloadGRPO, CPUsPerGPU: 3, RunnerCPUs: 1, Module: "verl.trainer.main_ppo", RequiresValFile: true},
	{Name: WorkloadSFT, CPUsPerGPU: 10, Module: "verl.trainer.sft_trainer_ray"},
	{Name: WorkloadRayJob, CPUsPerGPU: 1, RayDoor: true},
}

// Workloads lists every workload's name, in WorkloadTable's order.
var Workloads = func() []Workload {
	out := make([]Workload, len(WorkloadTable))
	for i, w := range WorkloadTable {
		out[i] = w.Name
	}
	return out
}()

// Info returns the workload's entry in WorkloadTable; ok is false for an unknown name.
func (w Workload) Info() (info WorkloadInfo, ok bool) {
	i := slices.IndexFunc(WorkloadTable, func(e WorkloadInfo) bool { return e.Name == w })
	if i < 0 {
		return WorkloadInfo{}, false
	}
	return WorkloadTable[i], true
}

// Valid reports whether w is a known workload.
func (w Workload) Valid() bool {
	_, ok := w.Info()
	return ok
}

// WorkloadNames lists the workloads for a message: "ppo, grpo, sft or ray_job".
func WorkloadNames() string { return names(func(WorkloadInfo) bool { return true }) }

// JobSpecWorkloadNames lists the workloads a jobspec may name (all but the Ray door's) for a message:
// "ppo, grpo or sft".
func JobSpecWorkloadNames() string { return names(func(w WorkloadInfo) bool { return !w.RayDoor }) }

func names(keep func(WorkloadInfo) bool) string {
	var names []string
	for _, w := range WorkloadTable {
		if keep(w) {
			names = append(names, string(w.Name))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
