package workload

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestBuildRayJob: a ray_job is prepared from its Ray request (gang from metadata, driver from the entrypoint
// resources and the label selector) and every attempt passes the request on as given, under the attempt's submission id, with mvp's
// metadata and variables added.
func TestBuildRayJob(t *testing.T) {
	s := settings()
	grace := 7
	s.StopGraceS = &grace
	req := &mvp.RayJobRequest{Entrypoint: "python script.py --x 'a b'", SubmissionID: "my-job",
		RuntimeEnv:        map[string]any{"working_dir": "gcs://_ray_pkg_0123456789abcdef.zip", "env_vars": map[string]any{"A": "1"}},
		Metadata:          map[string]string{"owner": "alice", mvp.MetaNNodes: "2", mvp.MetaGPUsPerNode: "4"},
		EntrypointNumCPUs: 1.5, EntrypointNumGPUs: 0.5, EntrypointMemory: 1 << 30,
		EntrypointResources: map[string]float64{"worker_node": 1}, EntrypointLabelSelector: map[string]string{"k": "v"}}
	task, err := PrepareRayJob(req, s)
	if err != nil {
		t.Fatal(err)
	}
	if task.Workload != mvp.WorkloadRayJob || task.NNodes != 2 || task.GPUsPerNode != 4 || task.SubmissionID != "my-job" ||
		!reflect.DeepEqual(task.Driver, map[string]float64{"CPU": 1.5, "GPU": 0.5, "memory": 1 << 30, "worker_node": 1,
			mvp.DriverLabelKey("k", "v"): 1}) {
		t.Errorf("prepared task: %+v", task)
	}
	task.ID = "mvp2-ray_job-20251223-143201-7f3a"
	got, err := BuildTask(task, 2, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Entrypoint != req.Entrypoint || got.SubmissionID != task.ID+"--a02" || got.EntrypointNumCPUs != 1.5 ||
		got.EntrypointNumGPUs != 0.5 || got.EntrypointMemory != 1<<30 || got.EntrypointLabelSelector["k"] != "v" ||
		got.EntrypointResources["worker_node"] != 1 || got.RuntimeEnv["working_dir"] != "gcs://_ray_pkg_0123456789abcdef.zip" {
		t.Errorf("submission: %+v", got)
	}
	if m := got.Metadata; m["owner"] != "alice" || m["task_id"] != task.ID || m["attempt_no"] != "2" || m["submission_id"] != "my-job" {
		t.Errorf("metadata: %v", m)
	}
	env := strings.Join(SortedEnv(got), " ")
	for _, want := range []string{"A=1", "MVP_ATTEMPT_NO=2", "MVP_TASK_ID=" + task.ID, "RAY_JOB_STOP_WAIT_TIME_S=7"} {
		if !strings.Contains(env, want) {
			t.Errorf("env_vars %s lack %s", env, want)
		}
	}
	if _, ok := req.RuntimeEnv["env_vars"].(map[string]any)["MVP_TASK_ID"]; ok {
		t.Error("the build changed the request")
	}

	none, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo hi"}, s)
	if err != nil || none.NNodes != 0 || none.GPUsPerNode != 0 || !reflect.DeepEqual(none.Driver, map[string]float64{"CPU": 1, "worker_node": 1}) {
		t.Errorf("no gang: %+v %v", none, err)
	}
	for _, bad := range []*mvp.RayJobRequest{
		{},
		{Entrypoint: "x", Metadata: map[string]string{mvp.MetaNNodes: "2"}},
		{Entrypoint: "x", Metadata: map[string]string{mvp.MetaNNodes: "0", mvp.MetaGPUsPerNode: "1"}},
		{Entrypoint: "x", Metadata: map[string]string{mvp.MetaNNodes: "1", mvp.MetaGPUsPerNode: "many"}},
		{Entrypoint: "x", EntrypointNumGPUs: -1},
		{Entrypoint: "x", EntrypointMemory: -1},
		{Entrypoint: "x", EntrypointResources: map[string]float64{"r": -1}},
		{Entrypoint: "x", RuntimeEnv: map[string]any{"env_vars": []any{"A=1"}}},
		{Entrypoint: "x", RuntimeEnv: map[string]any{"env_vars": map[string]any{"A": 1.0}}},
	} {
		if _, err := PrepareRayJob(bad, s); mvp.ErrorCode(err) != mvp.CodeInvalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestRayJobDriverBeyondAnyNumber: entrypoint_num_cpus and entrypoint_resources.CPU that add up past a float64
// are refused, not stored as +Inf (which the task's driver text could not hold: it was admitted on the default).
func TestRayJobDriverBeyondAnyNumber(t *testing.T) {
	req := &mvp.RayJobRequest{Entrypoint: "python x.py", EntrypointNumCPUs: 1e308,
		EntrypointResources: map[string]float64{"CPU": 1e308}}
	if _, err := PrepareRayJob(req, settings()); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("a driver of %v CPUs: %v", req.Driver()["CPU"], err)
	}
}

// TestRayJobWithoutDriverResourcesGetsDevYamls: a job sent through the door without any entrypoint_* resources ran
// its driver on the head node (Ray 2.60 pins such a driver there with a label selector), which
// entrypoint_resources {"worker_node": 1} exists to prevent; and dev.yaml's runtime_env env_vars, merged into every
// jobspec task's, were left out. Such a job gets dev.yaml's driver resources, and dev.yaml's env_vars under its own.
func TestRayJobWithoutDriverResourcesGetsDevYamls(t *testing.T) {
	s := settings() // entrypoint_num_cpus 1, worker_node 1, env HF_ENDPOINT, WANDB_MODE, PYTHONPATH
	req := &mvp.RayJobRequest{Entrypoint: "python x.py", SubmissionID: "plain",
		RuntimeEnv: map[string]any{"env_vars": map[string]any{"WANDB_MODE": "offline"}}}
	task, err := PrepareRayJob(req, s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(task.Driver, map[string]float64{"CPU": 1, "worker_node": 1}) {
		t.Errorf("driver %v; want dev.yaml's", task.Driver)
	}
	task.ID = "mvp2-ray_job-20251223-143201-7f3b"
	got, err := BuildTask(task, 1, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.EntrypointNumCPUs != 1 || got.EntrypointResources["worker_node"] != 1 {
		t.Errorf("submission's driver: cpus %v resources %v", got.EntrypointNumCPUs, got.EntrypointResources)
	}
	env, _ := got.RuntimeEnv["env_vars"].(map[string]any)
	if env["HF_ENDPOINT"] != "https://hf-mirror.example" || env["WANDB_MODE"] != "offline" {
		t.Errorf("env_vars %v; want dev.yaml's under the job's own", env)
	}
	// A job that names any driver resource keeps exactly what it named.
	own := &mvp.RayJobRequest{Entrypoint: "python x.py", SubmissionID: "own", EntrypointNumCPUs: 2}
	if task, err := PrepareRayJob(own, s); err != nil || !reflect.DeepEqual(task.Driver, map[string]float64{"CPU": 2}) {
		t.Errorf("own driver: %v %v", task.Driver, err)
	}
}

// A job through the Ray door names no priority (Ray's request has none): it gets the default a jobspec that names
// none gets. It got 0, so every later jobspec task overtook it in the queue, unannounced. Found in review.
func TestRayJobGetsTheDefaultPriority(t *testing.T) {
	task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "python x.py"}, settings())
	if err != nil {
		t.Fatal(err)
	}
	if task.Priority != mvp.DefaultPriority {
		t.Errorf("priority %d, want the default %d", task.Priority, mvp.DefaultPriority)
	}
}

// TestARayJobThatCannotStartIsRefused: the door took what the shell or Linux cannot run (a NUL in the entrypoint,
// a 900 KB entrypoint or metadata: "Argument list too long") or what left the job PENDING in Ray (600 KB of
// env_vars), and the job failed or hung in Ray. Each is now a 400 naming the field and its limit.
func TestARayJobThatCannotStartIsRefused(t *testing.T) {
	s := settings()
	big := strings.Repeat("x", 200<<10)
	env := map[string]any{}
	for i := range 20 {
		env[fmt.Sprintf("V%d", i)] = strings.Repeat("y", 30<<10)
	}
	for _, c := range []struct {
		req   *mvp.RayJobRequest
		field string
	}{
		{&mvp.RayJobRequest{Entrypoint: "echo a\x00b"}, "entrypoint"},
		{&mvp.RayJobRequest{Entrypoint: "echo " + big}, "entrypoint"},
		{&mvp.RayJobRequest{Entrypoint: "echo", Metadata: map[string]string{"k": big}}, "metadata"},
		{&mvp.RayJobRequest{Entrypoint: "echo", RuntimeEnv: map[string]any{"env_vars": env}}, "runtime_env"},
		{&mvp.RayJobRequest{Entrypoint: "echo", RuntimeEnv: map[string]any{"env_vars": map[string]any{"A": "a\x00b"}}}, "runtime_env"},
		// Ray hands runtime_env and metadata together to the driver, JSON with non-ASCII escaped, in one variable
		// (RAY_JOB_CONFIG_JSON_ENV_VAR): each under its own limit, together over Linux's (found in review: both
		// started /bin/sh with "Argument list too long").
		{&mvp.RayJobRequest{Entrypoint: "echo", RuntimeEnv: map[string]any{"env_vars": map[string]any{"A": strings.Repeat("y", 80<<10)}},
			Metadata: map[string]string{"m": strings.Repeat("z", 60<<10)}}, "runtime_env"},
		{&mvp.RayJobRequest{Entrypoint: "echo", RuntimeEnv: map[string]any{"env_vars": map[string]any{"B": strings.Repeat("é", 40<<10)}}}, "runtime_env"},
		// A label selector mvp cannot admit by (Ray refuses it too), and a resource named as mvp carries labels.
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointLabelSelector: map[string]string{"pool": "a b"}}, "entrypoint_label_selector"},
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointLabelSelector: map[string]string{"pool": "in(a,)"}}, "entrypoint_label_selector"},
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointResources: map[string]float64{mvp.DriverLabelKey("pool", "a"): 1}}, "entrypoint_resources"},
		// Ray takes these, and then its job supervisor cannot start: "Use the 'num_cpus' and 'num_gpus' keyword
		// instead of 'CPU' and 'GPU' in 'resources' keyword"; "The precision of the fractional quantity of resource
		// x cannot go beyond 0.0001" (found by a user's-eye drill: admitted, sent to Ray, FAILED as UNKNOWN).
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointResources: map[string]float64{"GPU": 1}}, "entrypoint_resources"},
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointResources: map[string]float64{"CPU": 1}}, "entrypoint_resources"},
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointResources: map[string]float64{"x": 0.00001}}, "entrypoint_resources"},
		{&mvp.RayJobRequest{Entrypoint: "echo", EntrypointNumCPUs: 0.00001}, "entrypoint_num_cpus"},
	} {
		_, err := PrepareRayJob(c.req, s)
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != c.field {
			t.Errorf("%.60q: %v, want a 400 on %s", fmt.Sprint(c.req), err, c.field)
		}
	}
	if _, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo " + strings.Repeat("x", 100<<10)}, s); err != nil {
		t.Errorf("a 100 KiB entrypoint: %v", err)
	}
}

// TestARayJobMayNotNameMvpsMetadataKeys: mvp writes its own keys into every job's metadata (task_id, attempt_no,
// mvp_instance…); a door request naming one had its value replaced in Ray's job while the door's view showed the
// user's, so the two answers disagreed and the user's value was lost without a word (walk-through 17). Such a
// request is refused, naming the key; and every key a built submission adds is one RayJobMetadataKeys names.
func TestARayJobMayNotNameMvpsMetadataKeys(t *testing.T) {
	s := settings()
	s.Instance = "db-1"
	for _, key := range RayJobMetadataKeys {
		_, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo hi", Metadata: map[string]string{key: "mine"}}, s)
		if mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), strconv.Quote(key)) {
			t.Errorf("metadata key %s: %v; want a 400 naming it", key, err)
		}
	}
	task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo hi", SubmissionID: "s", Metadata: map[string]string{"owner": "alice"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	task.ID = "mvp2-ray_job-20251223-143201-7f3a"
	got, err := BuildTask(task, 1, s)
	if err != nil {
		t.Fatal(err)
	}
	for k := range got.Metadata {
		if k != "owner" && !slices.Contains(RayJobMetadataKeys, k) {
			t.Errorf("a built job's metadata key %q is not in RayJobMetadataKeys: a request may name it and lose it", k)
		}
	}
}

// TestARayJobMayNotSetMvpsVariables: a door request's runtime_env.env_vars.MVP_TASK_ID was replaced by mvp's own
// without a word (found by a user's-eye drill), where a jobspec's env naming it is refused. Such a request is
// refused, naming the variable; every variable a built submission sets is one RayJobEnvKeys names.
func TestARayJobMayNotSetMvpsVariables(t *testing.T) {
	s := settings()
	for _, key := range RayJobEnvKeys {
		_, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo hi", RuntimeEnv: map[string]any{"env_vars": map[string]any{key: "mine"}}}, s)
		if mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), key) {
			t.Errorf("env var %s: %v; want a 400 naming it", key, err)
		}
	}
	task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "echo hi", RuntimeEnv: map[string]any{"env_vars": map[string]any{"MINE": "x"}}}, s)
	if err != nil {
		t.Fatal(err)
	}
	task.ID = "mvp2-ray_job-20251223-143201-7f3a"
	sub, err := buildRayJob(task, 1, s)
	if err != nil {
		t.Fatal(err)
	}
	devYAMLs, _ := s.RuntimeEnv["env_vars"].(map[string]any) // dev.yaml's, under the job's own
	for k := range sub.RuntimeEnv["env_vars"].(map[string]any) {
		if _, dev := devYAMLs[k]; !dev && k != "MINE" && k != "RAY_JOB_STOP_WAIT_TIME_S" && !slices.Contains(RayJobEnvKeys, k) {
			t.Errorf("the submission sets %s, which RayJobEnvKeys does not name", k)
		}
	}
}

// TestARayDoorCommandIsExecedWhenItIsOne: a Ray-door entrypoint that is one plain Python command is sent with exec
// before it, so the process Ray stops is the driver (a stop while /bin/sh was starting it left it running: see
// Build); anything the shell must read (quotes, expansions, operators, builtins, assignments) and any other program
// (setsid, exec'd as the session's leader, forks and exits at once) is sent as written.
func TestARayDoorCommandIsExecedWhenItIsOne(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"python script.py --lr 0.1", "exec python script.py --lr 0.1"},
		{"  python3 -m pkg.train a=1 b=x,y @f %p +z", "exec python3 -m pkg.train a=1 b=x,y @f %p +z"},
		{"/opt/venv/bin/python train.py", "exec /opt/venv/bin/python train.py"},
		{"python script.py --x 'a b'", "python script.py --x 'a b'"},
		{`python -c "print(1)"`, `python -c "print(1)"`},
		{"python a.py; python b.py", "python a.py; python b.py"},
		{"python a.py && echo done", "python a.py && echo done"},
		{"python a.py > out.log", "python a.py > out.log"},
		{"python $SCRIPT", "python $SCRIPT"},
		{"python ~/a.py", "python ~/a.py"},
		{"python a.py*", "python a.py*"},
		{"A=1 python a.py", "A=1 python a.py"},
		{"cd /work", "cd /work"},
		{"echo hi", "echo hi"},
		{"exec python a.py", "exec python a.py"},
		{"python3.11 -m pkg", "exec python3.11 -m pkg"},
		{"setsid python a.py", "setsid python a.py"},
		{"time python a.py", "time python a.py"},
		{"./run.sh --x 1", "./run.sh --x 1"},
		{"torchrun --nproc_per_node 8 train.py", "torchrun --nproc_per_node 8 train.py"},
		{"pythonista a.py", "pythonista a.py"},
		{"python2 a.py", "python2 a.py"},
		{"python a.py\tb", "python a.py\tb"},
		{"python a.py\npython b.py", "python a.py\npython b.py"},
	} {
		if got := execEntrypoint(c.in); got != c.want {
			t.Errorf("%q: sent %q, want %q", c.in, got, c.want)
		}
	}
	task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "python train.py"}, settings())
	if err != nil {
		t.Fatal(err)
	}
	task.ID = "mvp2-ray_job-20251223-143201-7f3a"
	got, err := BuildTask(task, 1, settings())
	if err != nil || got.Entrypoint != "exec python train.py" || got.ShellStartsDriver {
		t.Errorf("built: %+v, %v", got, err)
	}
	for _, e := range []string{"cd /tmp && python train.py", "exec bash run.sh"} { // a shell starts the driver
		task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: e}, settings())
		if err != nil {
			t.Fatal(err)
		}
		task.ID = "mvp2-ray_job-20251223-143201-7f3b"
		if got, err := BuildTask(task, 1, settings()); err != nil || got.Entrypoint != e || !got.ShellStartsDriver {
			t.Errorf("%q built: %+v, %v", e, got, err)
		}
	}
}

// TestARayJobDeclaresItsTimeLimitsInMetadata: a Ray-door job had no way to declare its run time, so mvp planned
// every one for v2.scheduler.default_max_runtime_s (days): a job of a minute could never backfill before a
// reservation and made every estimate behind it days long (found in a user walk-through). The metadata keys
// mvp.max_runtime_s and mvp.max_queued_s declare them, as a jobspec's fields do, within the same caps; absent, the
// defaults; mvp enforces them as for any task.
func TestARayJobDeclaresItsTimeLimitsInMetadata(t *testing.T) {
	s := settings()
	s.TimeLimits.DefaultMaxRuntimeS, s.TimeLimits.MaxRuntimeCapS = 259200, 604800
	s.TimeLimits.DefaultMaxQueuedS, s.TimeLimits.MaxQueuedCapS = 604800, 1209600
	task, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "python a.py",
		Metadata: map[string]string{mvp.MetaMaxRuntimeS: "600", mvp.MetaMaxQueuedS: "3600"}}, s)
	if err != nil || task.MaxRuntimeS != 600 || task.MaxQueuedS != 3600 {
		t.Fatalf("declared 600 s and 3600 s: %+v, %v", task, err)
	}
	task, err = PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "python a.py"}, s)
	if err != nil || task.MaxRuntimeS != 259200 || task.MaxQueuedS != 604800 {
		t.Fatalf("none declared: %+v, %v", task, err)
	}
	for meta, says := range map[[2]string]string{
		{mvp.MetaMaxRuntimeS, "0"}:      "from 1 to 604800",
		{mvp.MetaMaxRuntimeS, "soon"}:   "from 1 to 604800",
		{mvp.MetaMaxRuntimeS, "604801"}: "v2.scheduler.max_runtime_cap_s",
		{mvp.MetaMaxQueuedS, "1209601"}: "v2.scheduler.max_queued_cap_s",
		{mvp.MetaMaxQueuedS, "-5"}:      "from 1 to 1209600",
	} {
		_, err := PrepareRayJob(&mvp.RayJobRequest{Entrypoint: "python a.py", Metadata: map[string]string{meta[0]: meta[1]}}, s)
		if mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), meta[0]) || !strings.Contains(err.Error(), says) {
			t.Errorf("metadata %s=%q: %v, want a 400 naming it and saying %q", meta[0], meta[1], err, says)
		}
	}
}
