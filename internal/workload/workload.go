// Package workload turns an effective jobspec and the cluster's dev.yaml settings into the exact Ray submission
// of an attempt: the verl entrypoint with its Hydra overrides, runtime_env, entrypoint resources and metadata.
package workload

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Settings are the dev.yaml values a submission takes.
type Settings struct {
	SharedRoot          string
	EntrypointNumCPUs   float64
	EntrypointResources map[string]float64
	// RuntimeEnv is dev.yaml's runtime_env; its env_vars are merged with the task's env (the task wins).
	RuntimeEnv   map[string]any
	UserCodePath string
	// TimeLimits are the defaults and caps of max_runtime_s and max_queued_s (v2.scheduler).
	TimeLimits jobspec.Defaults
	// StopGraceS is the time Ray gives a stopped job between SIGTERM and SIGKILL (RAY_JOB_STOP_WAIT_TIME_S, read
	// by Ray's job supervisor from the job's runtime_env), 0 included; nil leaves Ray's default (3 s).
	StopGraceS *int
	// Limits bound jobspec parsing; zero means jobspec.DefaultLimits.
	Limits jobspec.Limits
	// Instance is the database's id (mvp.MetaInstance in every job's metadata); empty leaves it out.
	Instance string
}

// Prepare parses and validates a request body and returns the task it describes (no id, no state): the raw
// jobspec as submitted and the effective spec with defaults applied.
func Prepare(body []byte, s Settings) (*mvp.Task, error) {
	l := s.Limits
	if l == (jobspec.Limits{}) {
		l = jobspec.DefaultLimits
	}
	spec, err := jobspec.Parse(body, l)
	if err != nil {
		return nil, err
	}
	if err := spec.CheckCaps(s.TimeLimits); err != nil {
		return nil, err
	}
	d := s.TimeLimits
	d.UserCodePath = s.UserCodePath
	eff := spec.Effective(d)
	if len(body) > sizeCheckFrom {
		if err := checkRunnable(eff, s); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(eff)
	if err != nil {
		return nil, fmt.Errorf("encode effective spec: %w", err)
	}
	return &mvp.Task{Workload: eff.Workload, Name: eff.Name, NNodes: eff.NNodes, GPUsPerNode: eff.GPUsPerNode,
		JobSpecYAML: string(body), SpecJSON: b, MaxRuntimeS: eff.MaxRuntimeS, MaxQueuedS: eff.MaxQueuedS,
		HeartbeatTimeoutS: eff.HeartbeatTimeoutS, AfterOK: eff.AfterOK, AfterAny: eff.AfterAny, ResumeFrom: eff.ResumeFrom,
		Priority: *eff.Priority, PriorityDefaulted: spec.Priority == nil}, nil
}

// maxArgBytes is what Linux takes in one argument or one environment string (MAX_ARG_STRLEN, 128 KiB), less room
// for what Ray adds: Ray runs the entrypoint as one argument of /bin/sh, and hands the job its runtime_env in one
// environment variable.
const maxArgBytes = 120 << 10

// sizeCheckFrom is the jobspec size from which Prepare builds the job to measure it: below it, what the user
// controls cannot come near maxArgBytes however it quotes (at most 4 bytes a character in the shell, 6 in JSON).
const sizeCheckFrom = 16 << 10

// checkRunnable builds attempt 1 of spec (under a placeholder id) and refuses a command line or a runtime_env that
// Linux would refuse when Ray starts the job: the task would wait for its GPUs only to fail at start.
func checkRunnable(spec *jobspec.Spec, s Settings) error {
	sub, err := Build(fmt.Sprintf("mvp2-%s-20060102-150405-ffff", spec.Workload), 1, spec, s)
	if err != nil {
		return err
	}
	if n := len(sub.Entrypoint); n > maxArgBytes {
		return mvp.Errorf(mvp.CodeInvalid, "overrides", "the job's command line would be %d bytes, quoted for the "+
			"shell; Linux refuses one argument past 128 KiB: shorten the overrides (quotes count four times)", n)
	}
	// Measured as Ray hands it over (non-ASCII escaped: é is six bytes there, two in Go's JSON). The values of the
	// secrets a task names are put in at each submission, and measured then (withSecrets).
	if n := sub.RayConfigBytes(); n > mvp.MaxRayConfigBytes {
		return mvp.Errorf(mvp.CodeInvalid, "env", "the job's runtime_env would be about %d bytes as Ray hands it to "+
			"the job (JSON, non-ASCII characters escaped to six bytes each), in one environment variable, which "+
			"Linux refuses past 128 KiB (%d here, with room for Ray's own): shorten env", n, mvp.MaxRayConfigBytes)
	}
	return nil
}

// BuildTask returns the Ray submission of attempt n of a stored task, from its effective spec (a ray_job's is its
// Ray Jobs request).
func BuildTask(t *mvp.Task, n int, s Settings) (*mvp.JobSubmission, error) {
	var sub *mvp.JobSubmission
	var err error
	if info, ok := t.Workload.Info(); ok && info.RayDoor {
		sub, err = buildRayJob(t, n, s)
	} else {
		var spec jobspec.Spec
		if err := json.Unmarshal(t.SpecJSON, &spec); err != nil {
			return nil, fmt.Errorf("decode effective spec of %s: %w", t.ID, err)
		}
		sub, err = Build(t.ID, n, &spec, s)
	}
	if err != nil {
		return nil, err
	}
	if s.Instance != "" {
		sub.Metadata[mvp.MetaInstance] = s.Instance
	}
	return sub, nil
}

// Build returns the Ray submission of attempt n of task taskID.
func Build(taskID string, n int, spec *jobspec.Spec, s Settings) (*mvp.JobSubmission, error) {
	fs := taskfs.FS{Root: s.SharedRoot}
	taskDir, err := fs.TaskDir(taskID)
	if err != nil {
		return nil, err
	}
	attemptDir, err := fs.AttemptDir(taskID, n)
	if err != nil {
		return nil, err
	}
	info, ok := spec.Workload.Info()
	if !ok {
		return nil, mvp.Errorf(mvp.CodeInvalid, "workload", "unknown workload %q; one of %s", spec.Workload, mvp.WorkloadNames())
	}
	if info.RayDoor {
		return nil, mvp.Errorf(mvp.CodeInvalid, "workload", "%s is built from its Ray Jobs request (BuildTask), not a jobspec", spec.Workload)
	}
	argsOf, ok := workloadArgs[spec.Workload]
	if !ok {
		return nil, fmt.Errorf("build %s: workload %q is in mvp.WorkloadTable but has no builder in package workload", taskID, spec.Workload)
	}
	checkpoints, err := CheckpointDir(fs, taskID, spec)
	if err != nil {
		return nil, err
	}
	common := []string{
		"trainer.nnodes=" + fmt.Sprint(spec.NNodes),
		"trainer.n_gpus_per_node=" + fmt.Sprint(spec.GPUsPerNode),
		"trainer.project_name=mvp",
		"trainer.experiment_name=" + taskID,
		"trainer.default_local_dir=" + hydraPath(checkpoints),
		// Hydra's record of the run (.hydra/: config, overrides), else under the worker's working folder.
		"hydra.run.dir=" + hydraPath(filepath.Join(attemptDir, "hydra")),
	}
	if spec.ResumeFrom != "" {
		common = append(common, "trainer.resume_mode=auto")
	}
	args := argsOf(spec, taskDir, common)
	// The user's overrides come last: Hydra keeps the last value of a repeated key, so they win.
	args = append(args, spec.Overrides...)

	// exec: Ray runs the entrypoint with /bin/sh -c, and dash does not exec a lone command, so the driver would be
	// the shell's child. Ray stops a job by signalling the process it started and the children it sees at that
	// instant: a stop while the shell was starting its command left the driver running with no parent, Ray saying
	// STOPPED (6 of 20 stops 0.2 s after the submit, on Ray 2.60), and a node's raylet that ends kills its workers'
	// children, not their grandchildren. With exec the process Ray signals is the driver.
	words := []string{"exec", "python3", "-m", info.Module}
	for _, a := range args {
		words = append(words, ShellQuote(a))
	}

	env := map[string]string{}
	runtimeEnv := map[string]any{}
	for k, v := range s.RuntimeEnv {
		if k == "env_vars" {
			if m, ok := v.(map[string]any); ok {
				for ek, ev := range m {
					env[ek] = fmt.Sprint(ev)
				}
			}
			continue
		}
		runtimeEnv[k] = v
	}
	for k, v := range spec.Env {
		env[k] = v // the task wins over dev.yaml
	}
	codePath := spec.CodePath
	if codePath == "" {
		codePath = s.UserCodePath
	}
	if codePath != "" {
		if pp := env["PYTHONPATH"]; pp != "" {
			env["PYTHONPATH"] = codePath + ":" + pp
		} else {
			// First on the node's own PYTHONPATH (where verl may live), not instead of it: Ray expands ${VAR} in
			// env_vars to the node's value, or to nothing when it has none.
			env["PYTHONPATH"] = codePath + ":${PYTHONPATH}"
		}
	}
	// mvp's own variables win over both (those not MVP_* are listed in jobspec.MvpSetsEnv, which secrets may not name).
	env["MVP_TASK_ID"] = taskID
	env["MVP_ATTEMPT_NO"] = fmt.Sprint(n)
	env["MVP_TASK_DIR"] = taskDir
	env["VERL_FILE_LOGGER_PATH"] = filepath.Join(attemptDir, "metrics.jsonl")
	env["MVP_PROGRESS_FILE"] = filepath.Join(attemptDir, mvp.ProgressFile)
	resultsDir, err := fs.AttemptResultsDir(taskID, n)
	if err != nil {
		return nil, err
	}
	env["MVP_RESULTS_DIR"] = resultsDir
	env["TENSORBOARD_DIR"] = filepath.Join(attemptDir, "tensorboard")
	if s.StopGraceS != nil {
		env["RAY_JOB_STOP_WAIT_TIME_S"] = fmt.Sprint(*s.StopGraceS)
	}
	envAny := make(map[string]any, len(env))
	for k, v := range env {
		envAny[k] = v
	}
	runtimeEnv["env_vars"] = envAny

	res := map[string]float64{}
	for k, v := range s.EntrypointResources {
		res[k] = v
	}
	if len(res) == 0 {
		res["worker_node"] = 1
	}
	return &mvp.JobSubmission{
		Entrypoint:          strings.Join(words, " "),
		SubmissionID:        mvp.SubmissionID(taskID, n),
		RuntimeEnv:          runtimeEnv,
		EntrypointNumCPUs:   s.EntrypointNumCPUs,
		EntrypointResources: res,
		Metadata: map[string]string{"mvp": "v2", "task_id": taskID, "attempt_no": fmt.Sprint(n),
			"workload": string(spec.Workload), "name": spec.Name},
	}, nil
}

// CheckpointDir is where a task's run keeps its checkpoints: its own <task dir>/checkpoints, or, for a run that
// resumes (resume_from), the checkpoint folder of the task it resumes from, so that verl's resume_mode=auto finds
// the latest checkpoint there and the chain continues in one folder.
func CheckpointDir(fs taskfs.FS, taskID string, spec *jobspec.Spec) (string, error) {
	owner := taskID
	if spec.ResumeFrom != "" {
		owner = spec.ResumeFrom
	}
	dir, err := fs.TaskDir(owner)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, taskfs.CheckpointFolder), nil
}

// workloadArgs gives each workload of mvp.WorkloadTable its Hydra arguments before the user's overrides, from the
// spec, the task folder and the arguments every workload takes (common). Every workload of the table has an entry:
// TestEveryWorkloadBuilds fails for one without.
var workloadArgs = map[mvp.Workload]func(spec *jobspec.Spec, taskDir string, common []string) []string{
	mvp.WorkloadPPO: func(spec *jobspec.Spec, taskDir string, common []string) []string {
		args := append([]string{"algorithm.adv_estimator=gae"}, rlData(spec)...)
		args = append(args, "critic.model.path="+hydraPath(spec.ModelPath))
		return append(append(args, common...), rlDirs(taskDir)...)
	},
	mvp.WorkloadGRPO: func(spec *jobspec.Spec, taskDir string, common []string) []string {
		args := []string{"algorithm.adv_estimator=grpo",
			"actor_rollout_ref.rollout.n=5",
			"actor_rollout_ref.actor.use_kl_loss=True",
			"actor_rollout_ref.actor.kl_loss_coef=0.001",
			"actor_rollout_ref.actor.kl_loss_type=low_var_kl",
			"algorithm.use_kl_in_reward=False"}
		args = append(args, rlData(spec)...)
		return append(append(args, common...), rlDirs(taskDir)...)
	},
	mvp.WorkloadSFT: func(spec *jobspec.Spec, taskDir string, common []string) []string {
		args := []string{"model.path=" + hydraPath(spec.ModelPath), "data.train_files=" + hydraPath(spec.TrainFile)}
		if spec.ValFile != "" {
			args = append(args, "data.val_files="+hydraPath(spec.ValFile))
		}
		return append(args, common...)
	},
}

// rlData is the data and model arguments of verl's main_ppo (PPO and GRPO).
func rlData(spec *jobspec.Spec) []string {
	return []string{"data.train_files=" + hydraPath(spec.TrainFile), "data.val_files=" + hydraPath(spec.ValFile),
		"actor_rollout_ref.model.path=" + hydraPath(spec.ModelPath)}
}

// rlDirs is where main_ppo writes its rollout and validation samples: the task folder.
func rlDirs(taskDir string) []string {
	return []string{"trainer.rollout_data_dir=" + hydraPath(filepath.Join(taskDir, "rollout")),
		"trainer.validation_data_dir=" + hydraPath(filepath.Join(taskDir, "validation"))}
}

// hydraPath is a path as a Hydra override value that Hydra reads back as that one string. Unquoted, Hydra takes
// only letters, digits and _ / - \ + . $ % * : (its OverrideLexer grammar): a comma would make a sweep, which it
// refuses without --multirun, and @ = ~ are syntax errors. A path with any other character is quoted; paths
// hold no quote or backslash (jobspec's pathRE; shared_root is checked by the config), so nothing in it needs an
// escape.
func hydraPath(p string) string {
	if strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_/-+.%:", r))
	}) < 0 {
		return p
	}
	return "'" + p + "'"
}

// ShellQuote quotes s for a POSIX shell: Ray runs the entrypoint through one, and nothing a user wrote may be
// interpreted by it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-+=./,:@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SortedEnv lists env_vars of a submission as KEY=VALUE in order (for tests and display).
func SortedEnv(s *mvp.JobSubmission) []string {
	m, _ := s.RuntimeEnv["env_vars"].(map[string]any)
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(out)
	return out
}
