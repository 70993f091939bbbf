package workload

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// PrepareRayJob checks a submission made through the Ray Jobs door and returns the ray_job task it describes (no
// id, no state): its gang from the metadata keys mvp.nnodes and mvp.n_gpus_per_node (both or neither; neither:
// no gang, admitted on the driver's own resources), its driver's resources, its time limits from mvp.max_runtime_s
// and mvp.max_queued_s (or the configured defaults), and the request itself as its effective spec. A request that names no driver resources gets dev.yaml's.
func PrepareRayJob(req *mvp.RayJobRequest, s Settings) (*mvp.Task, error) {
	if strings.TrimSpace(req.Entrypoint) == "" { // blanks only: /bin/sh runs nothing and the job "succeeds"
		return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint", "entrypoint is required: the shell command the job runs")
	}
	// Ray runs the entrypoint as one argument of /bin/sh and hands the driver its variables and (in its job config)
	// the metadata through the environment: Linux refuses a single argument or variable of 128 KiB or more
	// ("Argument list too long") and a NUL cannot be passed at all; a job's variables past that budget left it
	// PENDING in Ray. Refused here, where the submitter is told.
	if strings.ContainsRune(req.Entrypoint, 0) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint", "the entrypoint holds a NUL byte, which no shell command can")
	}
	if len(req.Entrypoint) > maxRayArg {
		return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint", "the entrypoint is %d bytes; at most %d (Linux passes no "+
			"longer argument to the shell): put the command in a script of the working_dir", len(req.Entrypoint), maxRayArg)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"entrypoint_num_cpus", req.EntrypointNumCPUs}, {"entrypoint_num_gpus", req.EntrypointNumGPUs}} {
		if f.v < 0 {
			return nil, mvp.Errorf(mvp.CodeInvalid, f.name, "%s must be ≥ 0, got %g", f.name, f.v)
		}
		if err := mvp.CheckDriverResource(f.name, f.v, false); err != nil {
			return nil, mvp.Errorf(mvp.CodeInvalid, f.name, "%s: %v", f.name, err)
		}
	}
	if req.EntrypointMemory < 0 {
		return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint_memory", "entrypoint_memory must be ≥ 0 bytes, got %d", req.EntrypointMemory)
	}
	if err := mvp.CheckLabelSelector(req.EntrypointLabelSelector); err != nil {
		return nil, err
	}
	for k, v := range req.EntrypointResources {
		if strings.HasPrefix(k, mvp.DriverLabelPrefix) {
			return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint_resources", "entrypoint_resources.%s: a resource name "+
				"beginning %q is how mvp carries entrypoint_label_selector; name the resource otherwise", clip(k), mvp.DriverLabelPrefix)
		}
		if v < 0 {
			return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint_resources", "entrypoint_resources.%s must be ≥ 0, got %g", k, v)
		}
		if err := mvp.CheckDriverResource(k, v, true); err != nil { // Ray would take it, and then not start the job
			return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint_resources", "entrypoint_resources.%s: %v", clip(k), err)
		}
	}
	for k, v := range req.Driver() {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, mvp.Errorf(mvp.CodeInvalid, "entrypoint_resources", "the driver's %s (entrypoint_num_cpus, "+
				"entrypoint_num_gpus, entrypoint_memory and entrypoint_resources.%s added up) is beyond any number", clip(k), clip(k))
		}
	}
	if ev, ok := req.RuntimeEnv["env_vars"]; ok {
		m, isMap := ev.(map[string]any)
		if !isMap {
			return nil, mvp.Errorf(mvp.CodeInvalid, "runtime_env", "runtime_env.env_vars must be an object of strings")
		}
		for k, v := range m {
			sv, isString := v.(string)
			if !isString {
				return nil, mvp.Errorf(mvp.CodeInvalid, "runtime_env", "runtime_env.env_vars.%s must be a string, got %v", clip(k), v)
			}
			if strings.ContainsRune(k, 0) || strings.ContainsRune(sv, 0) {
				return nil, mvp.Errorf(mvp.CodeInvalid, "runtime_env", "runtime_env.env_vars.%s holds a NUL byte, which no "+
					"environment variable can", clip(k))
			}
			if slices.Contains(RayJobEnvKeys, k) {
				return nil, mvp.Errorf(mvp.CodeInvalid, "runtime_env", "runtime_env.env_vars.%s is mvp's own: it is set "+
					"for every attempt (the task's id, the attempt's number, the task's folder) and would replace yours; "+
					"name your variable otherwise", k)
			}
		}
	}
	// Ray's job supervisor hands the driver its runtime_env (with dev.yaml's and mvp's variables merged in) and the
	// metadata together, as JSON with every non-ASCII character escaped, in one environment variable
	// (RAY_JOB_CONFIG_JSON_ENV_VAR), which Linux caps like any other.
	envBytes, metaBytes := mvp.PyJSONBytes(req.RuntimeEnv), mvp.PyJSONBytes(req.Metadata)
	if n := envBytes + metaBytes + mvp.PyJSONBytes(s.RuntimeEnv) + rayConfigReserve; n > maxRayArg {
		field := "runtime_env"
		if metaBytes > envBytes {
			field = "metadata"
		}
		return nil, mvp.Errorf(mvp.CodeInvalid, field, "runtime_env and metadata come to about %d bytes as Ray hands "+
			"them to the driver (JSON, non-ASCII escaped, in one environment variable with dev.yaml's env_vars and "+
			"mvp's own); at most %d: pass large values in a file of the working_dir", n, maxRayArg)
	}
	if req.EntrypointNumCPUs == 0 && req.EntrypointNumGPUs == 0 && req.EntrypointMemory == 0 && len(req.EntrypointResources) == 0 {
		// Ray 2.60 runs a driver that asks for no resources on the head node (a label selector on its node id):
		// such a job gets dev.yaml's driver resources, as every jobspec task does (worker_node: 1 keeps drivers off
		// the head). They are recorded in the task's request, so what was sent is what is shown.
		r := *req
		r.EntrypointNumCPUs, r.EntrypointResources = s.EntrypointNumCPUs, maps.Clone(s.EntrypointResources)
		req = &r
	}
	for _, k := range RayJobMetadataKeys {
		if _, ok := req.Metadata[k]; ok {
			return nil, mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata key %q is mvp's own: mvp sets it on every job "+
				"it submits (its keys: %s); give yours another name", k, strings.Join(RayJobMetadataKeys, ", "))
		}
	}
	nnodes, err := metaInt(req.Metadata, mvp.MetaNNodes, jobspec.MaxNNodes)
	if err != nil {
		return nil, err
	}
	gpus, err := metaInt(req.Metadata, mvp.MetaGPUsPerNode, jobspec.MaxGPUsPerNode)
	if err != nil {
		return nil, err
	}
	if (nnodes == 0) != (gpus == 0) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata %s and %s name the gang together: give both or neither",
			mvp.MetaNNodes, mvp.MetaGPUsPerNode)
	}
	maxRuntime, err := metaSeconds(req.Metadata, mvp.MetaMaxRuntimeS, s.TimeLimits.MaxRuntimeCapS, "v2.scheduler.max_runtime_cap_s")
	if err != nil {
		return nil, err
	}
	maxQueued, err := metaSeconds(req.Metadata, mvp.MetaMaxQueuedS, s.TimeLimits.MaxQueuedCapS, "v2.scheduler.max_queued_cap_s")
	if err != nil {
		return nil, err
	}
	if maxRuntime == 0 {
		maxRuntime = s.TimeLimits.DefaultMaxRuntimeS
	}
	if maxQueued == 0 {
		maxQueued = s.TimeLimits.DefaultMaxQueuedS
	}
	spec, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the ray job request: %w", err)
	}
	return &mvp.Task{Workload: mvp.WorkloadRayJob, Name: "ray-job", NNodes: nnodes, GPUsPerNode: gpus,
		SubmissionID: req.SubmissionID, Driver: req.Driver(), JobSpecYAML: string(spec), SpecJSON: spec,
		MaxRuntimeS: maxRuntime, MaxQueuedS: maxQueued,
		Priority: mvp.DefaultPriority, PriorityDefaulted: true}, nil // a Ray request names no priority
}

// metaSeconds reads an optional time limit in whole seconds from metadata key, from 1 to capS (capSetting names
// that cap; 0: no cap); 0 when it is absent.
func metaSeconds(meta map[string]string, key string, capS int, capSetting string) (int, error) {
	v, ok := meta[key]
	if !ok {
		return 0, nil
	}
	most := capS
	if most <= 0 {
		most = math.MaxInt32
	}
	n, err := strconv.Atoi(v)
	if err == nil && n > most && capS > 0 {
		return 0, mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata %s %d is above this cluster's cap of %d s (%s)",
			key, n, capS, capSetting)
	}
	if err != nil || n < 1 || n > most {
		return 0, mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata %s must be whole seconds from 1 to %d, got %q", key, most, clip(v))
	}
	return n, nil
}

// RayJobMetadataKeys are the metadata keys mvp sets on a Ray-door job it submits (buildRayJob, BuildTask) and in
// the door's view of it: a request may not name them (its value would be replaced in Ray's job).
var RayJobMetadataKeys = []string{"mvp", "task_id", "attempt_no", "workload", "submission_id", mvp.MetaInstance, mvp.MetaDoorTaskID}

// What a Ray job may pass through a process's arguments and environment (see PrepareRayJob).
const (
	maxRayArg = 128<<10 - 1 // Linux's MAX_ARG_STRLEN (one argument or one variable), less the NUL
	// rayConfigReserve is room for what mvp adds to a job's runtime_env and metadata (its variables and keys).
	rayConfigReserve = 4 << 10
)

// metaInt reads an optional integer metadata value from 1 to max; 0 when it is absent.
func metaInt(meta map[string]string, key string, max int) (int, error) {
	v, ok := meta[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata %s must be an integer from 1 to %d, got %q", key, max, clip(v))
	}
	return n, nil
}

func clip(s string) string { return mvp.Clip(s, 80) }

// RayJobEnvKeys are the variables mvp sets in a ray_job's runtime_env.env_vars for every attempt (buildRayJob): a
// request may not set them (its value would be replaced without a word).
var RayJobEnvKeys = []string{"MVP_TASK_ID", "MVP_ATTEMPT_NO", "MVP_TASK_DIR"}

// buildRayJob returns the Ray submission of attempt n of a ray_job task: the entrypoint, runtime_env, metadata and
// entrypoint resources as the user sent them (dev.yaml's runtime_env env_vars under the job's own), with the
// attempt's submission id <task_id>--aNN, mvp's metadata
// (mvp, task_id, attempt_no, workload, submission_id) over the user's, and in runtime_env.env_vars mvp's
// MVP_TASK_ID, MVP_ATTEMPT_NO and MVP_TASK_DIR (and RAY_JOB_STOP_WAIT_TIME_S unless the user set it).
func buildRayJob(t *mvp.Task, n int, s Settings) (*mvp.JobSubmission, error) {
	var req mvp.RayJobRequest
	if err := json.Unmarshal(t.SpecJSON, &req); err != nil {
		return nil, fmt.Errorf("decode the ray job request of %s: %w", t.ID, err)
	}
	taskDir, err := taskfs.FS{Root: s.SharedRoot}.TaskDir(t.ID)
	if err != nil {
		return nil, err
	}
	runtimeEnv := maps.Clone(req.RuntimeEnv)
	if runtimeEnv == nil {
		runtimeEnv = map[string]any{}
	}
	env := map[string]any{}
	if ev, ok := s.RuntimeEnv["env_vars"].(map[string]any); ok {
		maps.Copy(env, ev) // dev.yaml's, under the job's own (as for every jobspec task)
	}
	if ev, ok := runtimeEnv["env_vars"].(map[string]any); ok {
		maps.Copy(env, ev)
	}
	if _, ok := env["RAY_JOB_STOP_WAIT_TIME_S"]; !ok && s.StopGraceS != nil {
		env["RAY_JOB_STOP_WAIT_TIME_S"] = fmt.Sprint(*s.StopGraceS)
	}
	env["MVP_TASK_ID"], env["MVP_ATTEMPT_NO"], env["MVP_TASK_DIR"] = t.ID, fmt.Sprint(n), taskDir // RayJobEnvKeys
	runtimeEnv["env_vars"] = env
	meta := maps.Clone(req.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	maps.Copy(meta, map[string]string{"mvp": "v2", "task_id": t.ID, "attempt_no": fmt.Sprint(n),
		"workload": string(t.Workload), "submission_id": req.SubmissionID})
	entrypoint := execEntrypoint(req.Entrypoint)
	return &mvp.JobSubmission{
		Entrypoint:              entrypoint,
		ShellStartsDriver:       entrypoint == req.Entrypoint, // not exec'd: the shell starts the driver
		SubmissionID:            mvp.SubmissionID(t.ID, n),
		RuntimeEnv:              runtimeEnv,
		Metadata:                meta,
		EntrypointNumCPUs:       req.EntrypointNumCPUs,
		EntrypointNumGPUs:       req.EntrypointNumGPUs,
		EntrypointMemory:        req.EntrypointMemory,
		EntrypointResources:     req.EntrypointResources,
		EntrypointLabelSelector: req.EntrypointLabelSelector,
	}, nil
}

// execEntrypoint is a Ray-door entrypoint with exec before it when it is one plain Python command: words of plain
// characters (no quote, expansion, redirection or operator), the first python, python3 or python3.N (or a path to
// one). Ray runs the entrypoint with /bin/sh -c, whose dash does not exec a lone command, so the driver was the
// shell's child, and a stop while the shell was starting it left it running with no parent, its resources held,
// while Ray said STOPPED (see Build). Only Python is exec'd: another program may act on being the session's
// leader, which exec makes it (setsid forks and its first process exits at once, so the job "succeeded"), or be
// none (a shell builtin). Any other entrypoint runs as written, as under Ray; the door shows it as submitted.
func execEntrypoint(e string) string {
	words := strings.Fields(e)
	if len(words) == 0 || !pythonProgram.MatchString(path.Base(words[0])) {
		return e
	}
	for _, r := range e {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" _./:=,@%+-", r)) {
			return e
		}
	}
	return "exec " + strings.TrimLeft(e, " ")
}

// pythonProgram is the name of a Python interpreter's program.
var pythonProgram = regexp.MustCompile(`^python(3(\.[0-9]+)?)?$`)
