package workload

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const taskID = "mvp2-ppo-20251223-143201-7f3a"

func settings() Settings {
	return Settings{SharedRoot: "/private", EntrypointNumCPUs: 1,
		EntrypointResources: map[string]float64{"worker_node": 1},
		RuntimeEnv: map[string]any{"env_vars": map[string]any{"HF_ENDPOINT": "https://hf-mirror.example",
			"WANDB_MODE": "online", "PYTHONPATH": "/opt/extra"}},
		UserCodePath: "/private/user/code"}
}

func prepared(t *testing.T, doc string) *jobspec.Spec {
	t.Helper()
	task, err := Prepare([]byte(doc), settings())
	if err != nil {
		t.Fatal(err)
	}
	var s jobspec.Spec
	if err := json.Unmarshal(task.SpecJSON, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestGolden(t *testing.T) {
	docs := map[string]string{
		"ppo": "workload: ppo\nnnodes: 2\nn_gpus_per_node: 8\nmodel_path: /private/models/Qwen2.5-0.5B-Instruct\n" +
			"train_file: /private/datasets/gsm8k/train.parquet\nval_file: /private/datasets/gsm8k/test.parquet\n" +
			"overrides: [trainer.total_epochs=1, algorithm.adv_estimator=reinforce_plus_plus]\nenv: {WANDB_MODE: offline}\n",
		"grpo": "workload: grpo\nnnodes: 1\nn_gpus_per_node: 4\nname: grpo-gsm8k\nmodel_path: /private/models/q\n" +
			"train_file: /private/d/train.parquet\nval_file: /private/d/test.parquet\ncode_path: /private/alice/code\n" +
			"overrides: [actor_rollout_ref.rollout.n=8]\n",
		"sft": "workload: sft\nnnodes: 1\nn_gpus_per_node: 2\nmodel_path: /private/models/q\n" +
			"train_file: /private/d/sft.parquet\noverrides: [data.messages_key=messages]\n",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			got, err := Build(strings.Replace(taskID, "ppo", name, 1), 1, prepared(t, doc), settings())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(got, "", "  ")
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update once)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(b)) {
				t.Errorf("payload differs from %s:\n%s", path, b)
			}
		})
	}
}

func TestMergeAndOrder(t *testing.T) {
	s := prepared(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"+
		"overrides: [trainer.total_epochs=3]\nenv: {WANDB_MODE: offline}\n")
	p, err := Build(taskID, 2, s, settings())
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(SortedEnv(p), "\n")
	for _, want := range []string{"WANDB_MODE=offline", "HF_ENDPOINT=https://hf-mirror.example",
		"PYTHONPATH=/private/user/code:/opt/extra", "MVP_ATTEMPT_NO=2",
		"VERL_FILE_LOGGER_PATH=/private/jobs/" + taskID + "/attempts/a02/metrics.jsonl"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if p.SubmissionID != taskID+"--a02" || !strings.HasSuffix(p.Entrypoint, "trainer.total_epochs=3") {
		t.Errorf("%s %s", p.SubmissionID, p.Entrypoint)
	}
	if _, err := Build("../etc", 1, s, settings()); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("bad task id: %v", err)
	}
}

// TestNothingReachesTheShell runs the generated entrypoint through /bin/sh with the program swapped for printf and
// checks that every argument arrives exactly as written.
func TestNothingReachesTheShell(t *testing.T) {
	hostile := []string{
		"a.b=with spaces", "a.c=it's \"quoted\"", "a.d=x; touch /tmp/mvp-pwned", "a.e=$(touch /tmp/mvp-pwned)",
		"a.f=`id`", "a.g=*", "a.h=$HOME", "a.i=back\\slash", "a.j=", "a.k=tab\there", "a.l=|&><!#~",
	}
	s := prepared(t, "workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\n")
	s.Overrides = hostile
	p, err := Build(strings.Replace(taskID, "ppo", "sft", 1), 1, s, settings())
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Replace(p.Entrypoint, "python3 -m verl.trainer.sft_trainer_ray", "printf '%s\\n'", 1)
	out, err := exec.Command("/bin/sh", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	got := lines[len(lines)-len(hostile):]
	for i := range hostile {
		if got[i] != hostile[i] {
			t.Errorf("argument %d: got %q, want %q", i, got[i], hostile[i])
		}
	}
	if _, err := os.Stat("/tmp/mvp-pwned"); err == nil {
		t.Error("the shell ran user text")
	}
	for _, s := range []string{"a\nb", "'", "", "plain"} {
		out, err := exec.Command("/bin/sh", "-c", "printf '%s' "+ShellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("ShellQuote(%q) round trip: %q %v", s, out, err)
		}
	}
}

// TestEveryWorkloadBuilds: every workload of mvp.WorkloadTable has a builder that runs the table's module, and
// the builder knows no workload outside the table. A workload added to the table without its builder fails here.
func TestEveryWorkloadBuilds(t *testing.T) {
	for _, info := range mvp.WorkloadTable {
		if info.RayDoor {
			continue // built from its Ray Jobs request: TestBuildRayJob
		}
		t.Run(string(info.Name), func(t *testing.T) {
			spec := &jobspec.Spec{Workload: info.Name, NNodes: 1, GPUsPerNode: 2, ModelPath: "/m", TrainFile: "/t", ValFile: "/v"}
			id := "mvp2-" + string(info.Name) + "-20251223-143201-7f3a"
			got, err := Build(id, 1, spec, settings())
			if err != nil {
				t.Fatalf("no submission for workload %s: %v", info.Name, err)
			}
			if want := "exec python3 -m " + info.Module + " "; !strings.HasPrefix(got.Entrypoint, want) {
				t.Errorf("entrypoint %q does not start with %q", got.Entrypoint, want)
			}
			if got.Metadata["workload"] != string(info.Name) || !strings.Contains(got.Entrypoint, "trainer.n_gpus_per_node=2") {
				t.Errorf("metadata %v, entrypoint %q", got.Metadata, got.Entrypoint)
			}
		})
	}
	for w := range workloadArgs {
		if !w.Valid() {
			t.Errorf("builder for %q, which is not in mvp.WorkloadTable", w)
		}
	}
}

// TestWorkloadWithoutBuilder: a name in the table without a builder is an error that says so, not a panic.
func TestWorkloadWithoutBuilder(t *testing.T) {
	saved := workloadArgs[mvp.WorkloadSFT]
	delete(workloadArgs, mvp.WorkloadSFT)
	defer func() { workloadArgs[mvp.WorkloadSFT] = saved }()
	spec := &jobspec.Spec{Workload: mvp.WorkloadSFT, NNodes: 1, GPUsPerNode: 1, ModelPath: "/m", TrainFile: "/t"}
	_, err := Build("mvp2-sft-20251223-143201-7f3a", 1, spec, settings())
	if err == nil || !strings.Contains(err.Error(), "no builder") {
		t.Errorf("err = %v", err)
	}
	spec.Workload = "dpo"
	if _, err := Build("mvp2-sft-20251223-143201-7f3a", 1, spec, settings()); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("unknown workload: %v", err)
	}
}

// TestResumeFrom: a run that resumes gets the checkpoint folder of the task it resumes from and
// trainer.resume_mode=auto, before the user's overrides (which still win); a run that does not keeps its own.
func TestResumeFrom(t *testing.T) {
	from := "mvp2-ppo-20251223-120000-0001"
	spec := &jobspec.Spec{Workload: mvp.WorkloadPPO, NNodes: 1, GPUsPerNode: 2, ModelPath: "/m", TrainFile: "/t",
		ValFile: "/v", ResumeFrom: from, Overrides: []string{"trainer.resume_mode=disable"}}
	id := "mvp2-ppo-20251223-143201-7f3a"
	got, err := Build(id, 2, spec, settings())
	if err != nil {
		t.Fatal(err)
	}
	e := got.Entrypoint
	if !strings.Contains(e, "trainer.default_local_dir=/private/jobs/"+from+"/checkpoints") ||
		strings.Index(e, "trainer.resume_mode=auto") > strings.Index(e, "trainer.resume_mode=disable") ||
		!strings.Contains(e, "trainer.resume_mode=auto") {
		t.Errorf("entrypoint %s", e)
	}
	spec.ResumeFrom, spec.Overrides = "", nil
	got, _ = Build(id, 1, spec, settings())
	if !strings.Contains(got.Entrypoint, "trainer.default_local_dir=/private/jobs/"+id+"/checkpoints") ||
		strings.Contains(got.Entrypoint, "resume_mode") {
		t.Errorf("without resume: %s", got.Entrypoint)
	}
	spec.ResumeFrom = "../../etc"
	if _, err := Build(id, 1, spec, settings()); err == nil {
		t.Errorf("a resume_from that is not a task id became a path")
	}
}

// TestPathsReachHydraAsOneString: verl reads its arguments with Hydra, whose unquoted values may hold only letters,
// digits and _ / - \ + . $ % * : (hydra/grammar/OverrideLexer.g4, OverrideParser.g4). A path may also hold @ = , ~
// (jobspec's pathRE): unquoted, "a,b" is a sweep Hydra refuses without --multirun and = is a syntax error. Such a
// path must reach Hydra quoted; a plain one stays as it is.
func TestPathsReachHydraAsOneString(t *testing.T) {
	doc := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m/org@v1\n" +
		"train_file: /data/date=2024-01-01/a,b.parquet\nval_file: /home/~u/v.parquet\n"
	p, err := Build(taskID, 1, prepared(t, doc), settings())
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Replace(p.Entrypoint, "python3 -m verl.trainer.main_ppo", "printf '%s\\n'", 1)
	out, err := exec.Command("/bin/sh", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"actor_rollout_ref.model.path": "'/m/org@v1'",
		"critic.model.path":            "'/m/org@v1'",
		"data.train_files":             "'/data/date=2024-01-01/a,b.parquet'",
		"data.val_files":               "'/home/~u/v.parquet'",
		"trainer.default_local_dir":    "/private/jobs/" + taskID + "/checkpoints",
	}
	for _, arg := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		k, v, _ := strings.Cut(arg, "=")
		if w, ok := want[k]; ok {
			if v != w {
				t.Errorf("%s=%s, want %s=%s", k, v, k, w)
			}
			delete(want, k)
		}
	}
	for k := range want {
		t.Errorf("no %s argument", k)
	}
}

// TestEveryVariableMvpSetsIsReserved: jobspec.MvpSetsEnv is the list of the variables the builder sets besides
// MVP_* and RAY_*, which a jobspec's secrets may not name: a variable added here and not there would let a secret
// replace it.
func TestEveryVariableMvpSetsIsReserved(t *testing.T) {
	for _, info := range mvp.WorkloadTable {
		if info.RayDoor {
			continue
		}
		spec := &jobspec.Spec{Workload: info.Name, NNodes: 1, GPUsPerNode: 2, ModelPath: "/m", TrainFile: "/t", ValFile: "/v"}
		s := settings()
		grace := 5
		s.RuntimeEnv, s.StopGraceS = nil, &grace // every variable here is the builder's own
		got, err := Build("mvp2-"+string(info.Name)+"-20251223-143201-7f3a", 1, spec, s)
		if err != nil {
			t.Fatal(err)
		}
		env, ok := got.RuntimeEnv["env_vars"].(map[string]any)
		if !ok || env["TENSORBOARD_DIR"] == nil {
			t.Fatalf("%s: env_vars %T %v", info.Name, got.RuntimeEnv["env_vars"], got.RuntimeEnv["env_vars"])
		}
		for k := range env {
			if _, ok := jobspec.MvpSetsEnv[k]; !ok && !strings.HasPrefix(k, "MVP_") && !strings.HasPrefix(k, "RAY_") {
				t.Errorf("%s: the builder sets %s, which jobspec.MvpSetsEnv does not list", info.Name, k)
			}
		}
	}
}

// TestPrepareRefusesWhatLinuxCannotRun: Ray runs the entrypoint as one argument of /bin/sh and hands the whole
// runtime_env to the job in one environment variable; Linux refuses either past 128 KiB. Overrides within their
// own limit (64 KiB) can quote to four times that, and env vars come to 100 × 32 KiB: such a task was accepted,
// waited for GPUs, and failed at start ("Argument list too long"). It is refused at submit.
func TestPrepareRefusesWhatLinuxCannotRun(t *testing.T) {
	var b strings.Builder
	b.WriteString("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\noverrides:\n")
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "  - \"trainer.x%d=%s\"\n", i, strings.Repeat("'", 3990))
	}
	_, err := Prepare([]byte(b.String()), settings())
	if err == nil || mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), "128 KiB") {
		t.Errorf("overrides that quote to 256 KiB: %v", err)
	}
	b.Reset()
	b.WriteString("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\nenv:\n")
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, "  V%d: %s\n", i, strings.Repeat("x", 30000))
	}
	if _, err := Prepare([]byte(b.String()), settings()); err == nil || !strings.Contains(err.Error(), "128 KiB") {
		t.Errorf("150 KB of env: %v", err)
	}
	// A large spec within the limits is accepted.
	b.Reset()
	b.WriteString("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\nenv:\n")
	for i := 0; i < 2; i++ {
		fmt.Fprintf(&b, "  V%d: %s\n", i, strings.Repeat("x", 30000))
	}
	if _, err := Prepare([]byte(b.String()), settings()); err != nil {
		t.Errorf("60 KB of env: %v", err)
	}
}

// TestCodePathGoesBeforeTheNodesPythonPath: with no PYTHONPATH in dev.yaml's runtime_env, code_path replaced the
// node's PYTHONPATH (where verl may live) instead of going first on it: the job failed with "No module named
// 'verl'". Ray expands ${PYTHONPATH} in env_vars to the node's value (ray._private.utils.update_envs).
func TestCodePathGoesBeforeTheNodesPythonPath(t *testing.T) {
	s := prepared(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n")
	set := settings()
	set.RuntimeEnv = map[string]any{"env_vars": map[string]any{"HF_ENDPOINT": "https://hf-mirror.example"}}
	p, err := Build(taskID, 1, s, set)
	if err != nil {
		t.Fatal(err)
	}
	if env := strings.Join(SortedEnv(p), "\n"); !strings.Contains(env, "PYTHONPATH=/private/user/code:${PYTHONPATH}\n") {
		t.Errorf("env:\n%s\nwant PYTHONPATH=/private/user/code:${PYTHONPATH}", env)
	}
}
