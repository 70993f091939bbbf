package mvp

// RayJobRequest is a submission through the Ray-Jobs-compatible door: the body of Ray's POST /api/jobs/ as Ray
// 2.60's JobSubmissionClient sends it. It is a ray_job task's effective spec (spec_json), from which every attempt's
// submission to Ray is built.
type RayJobRequest struct {
	Entrypoint string `json:"entrypoint"`
	// SubmissionID is the user's, or the task id when the user gave none.
	SubmissionID            string             `json:"submission_id"`
	RuntimeEnv              map[string]any     `json:"runtime_env"`
	Metadata                map[string]string  `json:"metadata"`
	EntrypointNumCPUs       float64            `json:"entrypoint_num_cpus,omitempty"`
	EntrypointNumGPUs       float64            `json:"entrypoint_num_gpus,omitempty"`
	EntrypointMemory        int64              `json:"entrypoint_memory,omitempty"`
	EntrypointResources     map[string]float64 `json:"entrypoint_resources,omitempty"`
	EntrypointLabelSelector map[string]string  `json:"entrypoint_label_selector,omitempty"`
}

// The metadata keys by which a ray_job names its gang: nnodes worker nodes with n_gpus_per_node free GPUs each,
// admitted together as a jobspec task's gang is. Without them a ray_job has no gang and is admitted on its
// driver's own resources.
const (
	MetaNNodes      = "mvp.nnodes"
	MetaGPUsPerNode = "mvp.n_gpus_per_node"
)

// The metadata keys by which a ray_job declares its time limits, as a jobspec's max_runtime_s and max_queued_s
// (whole seconds, within the same caps); absent, the configured defaults.
const (
	MetaMaxRuntimeS = "mvp.max_runtime_s"
	MetaMaxQueuedS  = "mvp.max_queued_s"
)

// Driver is what the request's driver takes, in Ray's resource names: entrypoint_num_cpus as CPU,
// entrypoint_num_gpus as GPU, entrypoint_memory as memory, and entrypoint_resources; and each constraint of
// entrypoint_label_selector as a key of its own (DriverLabelKey), which only a node whose labels match offers. It
// is never nil.
func (r *RayJobRequest) Driver() map[string]float64 {
	d := map[string]float64{}
	for k, v := range r.EntrypointResources {
		d[k] = v
	}
	if r.EntrypointNumCPUs > 0 {
		d["CPU"] += r.EntrypointNumCPUs
	}
	if r.EntrypointNumGPUs > 0 {
		d["GPU"] += r.EntrypointNumGPUs
	}
	if r.EntrypointMemory > 0 {
		d["memory"] += float64(r.EntrypointMemory)
	}
	for k, v := range r.EntrypointLabelSelector {
		d[DriverLabelKey(k, v)] = 1 // a node whose labels match offers it (LabelMatches)
	}
	return d
}

// MetaInstance is the metadata key of the database id of the mvp that submitted a Ray job: its own jobs among the
// cluster's (another mvp may share the cluster).
const MetaInstance = "mvp_instance"

// MetaDoorTaskID is the metadata key under which the Ray-Jobs door shows a job's mvp task id.
const MetaDoorTaskID = "mvp.task_id"
