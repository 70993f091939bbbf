package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

func TestParseDefaultsAndSharedKeys(t *testing.T) {
	c, err := Parse([]byte(`
address: http://10.0.0.1:8265
shared_root: /private
entrypoint_num_cpus: 1
runtime_env:
  env_vars: {HF_ENDPOINT: "https://example"}
user_code_path: /private/user/code
some_v11_key: ignored
v2:
  api: {host: 0.0.0.0, port: 8080}
  scheduler: {tick_s: 1, max_running_tasks: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.EntrypointResources["worker_node"]; got != 1 {
		t.Errorf("entrypoint_resources default: got %v", c.EntrypointResources)
	}
	if c.V2.Scheduler.RetryIntervalS != 60 || c.V2.Scheduler.GangWaitS != 120 || c.V2.Scheduler.MaxInfraRetries != 3 {
		t.Errorf("scheduler defaults: %+v", c.V2.Scheduler)
	}
	if c.V2.Ray.GCSAddress != "10.0.0.1:6379" {
		t.Errorf("gcs default: %q", c.V2.Ray.GCSAddress)
	}
	if c.V2.Workloads["sft"].CPUsPerGPU != 10 || c.V2.Workloads["ppo"].CPUsPerGPU != 3 {
		t.Errorf("workload defaults: %+v", c.V2.Workloads)
	}
	if c.V2.Auth.TokenEnv != DefaultTokenEnv || c.V2.SQLite.DBPath != DefaultDBPath ||
		c.V2.SQLite.CheckpointSchedule != "@every 10m" {
		t.Errorf("auth/sqlite defaults: %+v %+v", c.V2.Auth, c.V2.SQLite)
	}
}

func TestUnknownV2KeyNamesKeyAndLine(t *testing.T) {
	_, err := Parse([]byte("address: http://127.0.0.1:8265\nv2:\n  scheduler:\n    tick_s: 1\n    tick_ss: 2\n"))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"v2.scheduler.tick_ss", "line 5", "unknown key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestBadValues(t *testing.T) {
	for _, doc := range []string{
		"address: ftp://x\n",
		"shared_root: relative/path\n",
		"shared_root: \"/data/it's\"\n", // every job's arguments name paths under it, quoted for Hydra
		"shared_root: '/data/back\\slash'\n",
		"v2: {scheduler: {tick_s: 0.001}}\n",
		"v2: {api: {port: 70000}}\n",
		"v2: {workloads: {dpo: {cpus_per_gpu: 3}}}\n",
		"v2: {auth: {token_env: 'A B'}}\n",
		"- a list\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%q: want error", doc)
		}
	}
}

// TestTickOutOfRangeNamesTheDefault: as every other number, tick_s out of range says what leaving it out gives.
func TestTickOutOfRangeNamesTheDefault(t *testing.T) {
	if _, err := Parse([]byte("v2: {scheduler: {tick_s: 0}}\n")); err == nil || !strings.Contains(err.Error(), "leave it out for the default, 2") {
		t.Errorf("tick_s: 0: %v", err)
	}
}

func TestEmptyFileTakesDefaults(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Address != DefaultAddress || c.V2.API.Port != DefaultAPIPort {
		t.Errorf("%+v", c)
	}
}

func TestCheckpointSchedule(t *testing.T) {
	for _, ok := range []string{"off", "@hourly", "@every 90s", "*/5 * * * *"} {
		if _, err := Parse([]byte("v2: {sqlite: {checkpoint_schedule: '" + ok + "'}}\n")); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"every 10m", "@every", "* * *", "61 * * * *", "; rm -rf /"} {
		_, err := Parse([]byte("v2: {sqlite: {checkpoint_schedule: '" + bad + "'}}\n"))
		if err == nil || !strings.Contains(err.Error(), "v2.sqlite.checkpoint_schedule") || !strings.Contains(err.Error(), "@every 10m") {
			t.Errorf("%q: want an error naming the key and an example, got %v", bad, err)
		}
	}
}

// TestWorkloadDefaultsFollowTheTable: every workload of mvp.WorkloadTable gets its default cpus_per_gpu, a
// configured value wins, and an unknown workload's error lists the known ones.
func TestWorkloadDefaultsFollowTheTable(t *testing.T) {
	c, err := Parse([]byte("v2: {workloads: {sft: {cpus_per_gpu: 7}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range mvp.WorkloadTable {
		want := info.CPUsPerGPU
		if info.Name == mvp.WorkloadSFT {
			want = 7
		}
		if got := c.V2.Workloads[string(info.Name)].CPUsPerGPU; got != want {
			t.Errorf("%s: cpus_per_gpu %v, want %v", info.Name, got, want)
		}
	}
	if len(c.V2.Workloads) != len(mvp.WorkloadTable) {
		t.Errorf("%d workloads configured: %v", len(c.V2.Workloads), c.V2.Workloads)
	}
	_, err = Parse([]byte("v2: {workloads: {dpo: {cpus_per_gpu: 3}}}\n"))
	if err == nil || !strings.Contains(err.Error(), mvp.WorkloadNames()) {
		t.Errorf("unknown workload: %v", err)
	}
}

// TestRunnerCPUsFollowTheTable: runner_cpus (the CPU of verl's TaskRunner, counted with the driver) defaults to the
// workload table's (1 for ppo and grpo, 0 for sft and ray_job), a configured 0 wins, and a negative is refused.
func TestRunnerCPUsFollowTheTable(t *testing.T) {
	c, err := Parse([]byte("v2: {workloads: {grpo: {runner_cpus: 0}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[mvp.Workload]float64{mvp.WorkloadPPO: 1, mvp.WorkloadGRPO: 0, mvp.WorkloadSFT: 0, mvp.WorkloadRayJob: 0}
	for _, info := range mvp.WorkloadTable {
		if got := c.V2.Workloads[string(info.Name)].RunnerCPUs; got != want[info.Name] {
			t.Errorf("%s: runner_cpus %v, want %v", info.Name, got, want[info.Name])
		}
	}
	_, err = Parse([]byte("v2: {workloads: {ppo: {runner_cpus: -1}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "v2.workloads.ppo.runner_cpus") {
		t.Errorf("negative runner_cpus: %v, want an error naming the key", err)
	}
}

func TestMetricsKeys(t *testing.T) {
	for _, tc := range []struct {
		yaml       string
		on, public bool
	}{
		{"", true, false},
		{"v2: {metrics: {public: true}}", true, true},
		{"v2: {metrics: {enabled: false}}", false, false},
		{"v2: {metrics: {enabled: true, public: false}}", true, false},
	} {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if c.V2.Metrics.On() != tc.on || c.V2.Metrics.Public != tc.public {
			t.Errorf("%q: on %v public %v, want %v %v", tc.yaml, c.V2.Metrics.On(), c.V2.Metrics.Public, tc.on, tc.public)
		}
	}
	if _, err := Parse([]byte("v2: {metrics: {publik: true}}")); err == nil || !strings.Contains(err.Error(), "publik") {
		t.Errorf("a misspelt metrics key: %v, want an error naming it", err)
	}
}

func TestUsersKeys(t *testing.T) {
	c, err := Parse([]byte(`v2:
  auth:
    users: [{name: alice, token_env: MVP_TOKEN_ALICE, max_gpus: 16, max_queued: 100, max_priority: 80, share: 1},
            {name: bob, token_env: MVP_TOKEN_BOB}]
  scheduler: {fair_share_half_life_s: 3600}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.V2.Auth.Users[0], c.V2.Auth.Users[1]
	if a.MaxGPUs != 16 || a.MaxQueued != 100 || *a.MaxPriority != 80 || a.Share != 1 {
		t.Errorf("alice %+v", a)
	}
	if b.Share != 1 || *b.MaxPriority != 100 || b.MaxGPUs != 0 {
		t.Errorf("bob's defaults %+v", b)
	}
	s := c.V2.Scheduler
	if !s.FairShareOn() || s.HalfLife().Hours() != 1 || s.StarvationBound().Hours() != 24 {
		t.Errorf("fair share %v, half-life %v, starvation %v", s.FairShareOn(), s.HalfLife(), s.StarvationBound())
	}
	for _, bad := range []struct{ doc, want string }{
		{`{name: Alice, token_env: T1}`, "name"},
		{`{name: operator, token_env: T1}`, "internal token"},
		{`{name: a, token_env: "x y"}`, "token_env"},
		{`{name: a, token_env: MVP_INTERNAL_TOKEN}`, "already"},
		{`{name: a, token_env: T1}, {name: a, token_env: T2}`, "twice"},
		{`{name: a, token_env: T1}, {name: b, token_env: T1}`, "already"},
		// A user's token would be Ray's token, or the key that seals every secret.
		{`{name: a, token_env: RAY_AUTH_TOKEN}`, "v2.ray.token_env"},
		{`{name: a, token_env: MVP_SECRETS_KEY}`, "v2.secrets.key_env"},
		{`{name: a, token_env: T1, max_priority: 101}`, "max_priority"},
		{`{name: a, token_env: T1, max_gpus: -1}`, "v2.auth.users[0].max_gpus (line 1): -1 must not be negative"},
		{`{name: a, token_env: T1, max_queued: -1}`, "v2.auth.users[0].max_queued (line 1): -1 must not be negative"},
		{`{name: a, token_env: T1, share: -1}`, "v2.auth.users[0].share (line 1): -1 must be above 0"},
		// A share of 0 was taken as 1 without a word (walk-through 12): given, it is refused like any 0 that means
		// nothing.
		{`{name: a, token_env: T1, share: 0}`, "v2.auth.users[0].share (line 1): 0 must be above 0"},
		{`{name: a, token_env: T1, share: .nan}`, "share"},
		{`{name: a, token_env: T1, share: .inf}`, "share"},
		{`{name: a, token_env: T1, share: -.inf}`, "finite"},
	} {
		_, err := Parse([]byte("v2: {auth: {users: [" + bad.doc + "]}}\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("users [%s]: %v, want an error naming %q", bad.doc, err, bad.want)
		}
	}
}

// TestNumbersMustBeFinite: .nan and .inf passed every range check (a NaN compares false); tick_s: .nan made a
// service that never scheduled and panicked on stop. Every number of the file must be finite.
func TestNumbersMustBeFinite(t *testing.T) {
	for _, doc := range []string{
		"v2: {scheduler: {tick_s: .nan}}\n",
		"v2: {scheduler: {gang_wait_s: .inf}}\n",
		"v2: {scheduler: {retry_interval_s: .nan}}\n",
		"v2: {scheduler: {fair_share_half_life_s: .inf}}\n",
		"v2: {scheduler: {starvation_s: .nan}}\n",
		"v2: {scheduler: {runtime_grace_s: .inf}}\n",
		"v2: {ray: {request_timeout_s: .nan}}\n",
		"v2: {ray: {log_copy_s: .inf}}\n",
		"v2: {ray: {package_retention_s: .nan}}\n",
		"v2: {workloads: {ppo: {cpus_per_gpu: .nan}}}\n",
		"entrypoint_num_cpus: .nan\n",
		"entrypoint_resources: {worker_node: .inf}\n",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "finite") {
			t.Errorf("%q: %v; want an error that asks for a finite number", doc, err)
		}
	}
}

// TestNegativeOrZeroWhereMeaningless: negative timeouts, intervals and sizes were accepted (request_timeout_s: -5
// meant Ray calls without a timeout), and an explicit 0 was silently replaced by the default. A 0 where it has no
// meaning is refused, naming the key and the default.
func TestNegativeOrZeroWhereMeaningless(t *testing.T) {
	for _, doc := range []string{
		"v2: {ray: {request_timeout_s: -5}}\n",
		"v2: {ray: {request_timeout_s: 0}}\n",
		"v2: {ray: {log_copy_s: -1}}\n",
		"v2: {ray: {log_copy_s: 0}}\n",
		"v2: {ray: {keep_finished_jobs: -3}}\n",
		"v2: {ray: {keep_finished_jobs: 0}}\n",
		"v2: {ray: {max_log_streams: -1}}\n",
		"v2: {ray: {max_log_streams: 1001}}\n", // more than Ray's state API serves at its most
		"v2: {api: {max_body_bytes: -1}}\n",
		"v2: {api: {max_body_bytes: 0}}\n",
		"entrypoint_num_cpus: -1\n",
		"v2: {scheduler: {tick_s: 0}}\n",
		"v2: {scheduler: {gang_wait_s: 0}}\n",
		"v2: {scheduler: {default_max_runtime_s: 0}}\n",
		"v2: {scheduler: {max_runtime_cap_s: 0}}\n",
		"v2: {scheduler: {default_max_queued_s: 0}}\n",
		"v2: {scheduler: {max_queued_cap_s: 0}}\n",
		"v2: {scheduler: {fair_share_half_life_s: 0}}\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%q: accepted", doc)
		}
	}
}

// TestExplicitZeroIsKept: where 0 means something, a 0 in the file is kept, not replaced by the default (it was:
// max_infra_retries: 0 gave 3 retries, retry_interval_s: 0 a minute, port: 0 port 8080, max_running_tasks: 0 (no
// bound) 16).
func TestExplicitZeroIsKept(t *testing.T) {
	c, err := Parse([]byte("v2:\n  api: {port: 0}\n  scheduler: {max_running_tasks: 0, max_infra_retries: 0, max_resource_retries: 0, retry_interval_s: 0, runtime_grace_s: 0, starvation_s: 0}\n" +
		"  workloads: {ppo: {cpus_per_gpu: 0}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.V2.Scheduler
	if c.V2.API.Port != 0 || s.MaxRunningTasks != 0 || s.MaxInfraRetries != 0 || s.MaxResourceRetries != 0 || s.RetryIntervalS != 0 ||
		s.RuntimeGraceS != 0 || s.StarvationS != 0 || c.V2.Workloads["ppo"].CPUsPerGPU != 0 {
		t.Errorf("explicit zeros replaced: port %d, scheduler %+v, workloads %+v", c.V2.API.Port, s, c.V2.Workloads)
	}
	// Left out, they take their defaults.
	d, err := Parse([]byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if d.V2.API.Port != DefaultAPIPort || d.V2.Scheduler.MaxInfraRetries != DefaultMaxInfraRetries || d.V2.Scheduler.RetryIntervalS != DefaultRetryIntervalS {
		t.Errorf("defaults: %+v", d.V2)
	}
}

// TestWrongKindNamesTheKey: tick_s: fast said "line 3: cannot unmarshal !!str `fast` into float64", naming the
// line but not the key.
func TestWrongKindNamesTheKey(t *testing.T) {
	for doc, want := range map[string]string{
		"v2:\n  scheduler:\n    tick_s: fast\n":       "v2.scheduler.tick_s (line 3): must be a number",
		"v2: {scheduler: {max_infra_retries: 1.5}}\n": "v2.scheduler.max_infra_retries (line 1): must be a whole number",
		"v2: {scheduler: {fair_share: maybe}}\n":      "v2.scheduler.fair_share (line 1): must be true or false",
		"v2: {api: {port: [1]}}\n":                    "v2.api.port (line 1): must be a whole number",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", doc, err, want)
		}
	}
	if _, err := Parse([]byte("v2: {scheduler: {tick_s: 1, retry_interval_s: 2.5, fair_share: false}}\n")); err != nil {
		t.Errorf("good kinds: %v", err)
	}
}

// TestWrongKindOfASharedOrTextKeyNamesTheKey: a value of the wrong kind for a top-level key, a text key or a list
// under v2 came out as the YAML decoder's "line 1: cannot unmarshal !!seq into string", naming no key. Found by
// running mvp serve on such files.
func TestWrongKindOfASharedOrTextKeyNamesTheKey(t *testing.T) {
	for doc, want := range map[string]string{
		"address: [1]\n":                   "address (line 1): must be text",
		"shared_root: {a: 1}\n":            "shared_root (line 1): must be text",
		"user_code_path: [x]\n":            "user_code_path (line 1): must be text",
		"entrypoint_num_cpus: abc\n":       "entrypoint_num_cpus (line 1): must be a number",
		"entrypoint_resources: 5\n":        "entrypoint_resources (line 1): must be a mapping",
		"entrypoint_resources: {gpu: x}\n": "entrypoint_resources.gpu (line 1): must be a number",
		"runtime_env: x\n":                 "runtime_env (line 1): must be a mapping",
		"v2: {api: {host: [1]}}\n":         "v2.api.host (line 1): must be text",
		"v2: {auth: {users: 5}}\n":         "v2.auth.users (line 1): must be a list",
		"v2: {workloads: {ppo: 3}}\n":      "v2.workloads.ppo (line 1): must be a mapping",
		"other_tool: [1]\naddress: [1]\n":  "address (line 2): must be text",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", doc, err, want)
		}
	}
	if _, err := Parse([]byte("other_tool: [1]\naddress: http://h:1\nentrypoint_num_cpus: 2\nuser_code_path:\nruntime_env: {env_vars: {A: b}}\n")); err != nil {
		t.Errorf("good kinds: %v", err)
	}
}

// TestAConfigThatCannotBeReadNamesTheFlag: `mvp serve` run from another folder than the one holding
// configs/dev.yaml (its default) said only "read config: open configs/dev.yaml: no such file or directory", naming
// neither the flag that names the file nor what it should be. Found by running mvp serve so.
func TestAConfigThatCannotBeReadNamesTheFlag(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), "nope.yaml"), t.TempDir()} {
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--config") {
			t.Errorf("Load(%s): %v; want the path and --config named", path, err)
		}
	}
}

// TestAGCSAddressThatIsNotHostPortIsRefused: v2.ray.gcs_address "notaport", "host:99999" or a URL was taken as
// given; the probe then failed at every tick, in the log only, while mvp served. It is refused at start, naming the
// key.
func TestAGCSAddressThatIsNotHostPortIsRefused(t *testing.T) {
	for _, bad := range []string{"notaport", "'h:99999'", "'http://10.0.0.1:6379'", "':6379'", "'h:'"} {
		_, err := Parse([]byte("v2: {ray: {gcs_address: " + bad + "}}\n"))
		if err == nil || !strings.Contains(err.Error(), "v2.ray.gcs_address") || !strings.Contains(err.Error(), "host:port") {
			t.Errorf("gcs_address %s: %v; want it refused as not host:port", bad, err)
		}
	}
	for _, good := range []string{"10.0.0.1:6379", "head.example:6379", "'[::1]:6379'"} {
		if _, err := Parse([]byte("v2: {ray: {gcs_address: " + good + "}}\n")); err != nil {
			t.Errorf("gcs_address %s: %v", good, err)
		}
	}
}

// TestRuntimeEnvVarsAreStrings: dev.yaml's runtime_env.env_vars took any value and printed it with fmt.Sprint into
// every job (FOO: with no value became "<nil>", 1.5e6 became "1.5e+06", a null PYTHONPATH "/code:<nil>"). Ray
// takes strings only: anything else is refused, naming the variable.
func TestRuntimeEnvVarsAreStrings(t *testing.T) {
	for _, doc := range []string{
		"runtime_env: {env_vars: {FOO: }}\n", "runtime_env: {env_vars: {BIG: 1.5e6}}\n",
		"runtime_env: {env_vars: {N: 1}}\n", "runtime_env: {env_vars: {L: [a]}}\n", "runtime_env: {env_vars: [A]}\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "runtime_env.env_vars") {
			t.Errorf("%q: %v", doc, err)
		}
	}
	if _, err := Parse([]byte("runtime_env: {env_vars: {HYDRA_FULL_ERROR: \"1\", HF_HOME: /hf}}\n")); err != nil {
		t.Errorf("strings: %v", err)
	}
}

// TestRuntimeEnvVarsThatNoProcessCanTakeAreRefused: a NUL in a value (or a name that is empty or holds '=' or a
// NUL) of dev.yaml's runtime_env.env_vars was taken, and every task's driver then failed to start in Ray (no
// process environment can hold it: Python's "embedded null byte", "illegal environment variable name"). Refused
// at start, naming the variable (the bad-input audit's left item).
func TestRuntimeEnvVarsThatNoProcessCanTakeAreRefused(t *testing.T) {
	for _, doc := range []string{
		"runtime_env: {env_vars: {HF_HOME: \"/hf\\0x\"}}\n",
		"runtime_env: {env_vars: {\"A=B\": x}}\n",
		"runtime_env: {env_vars: {\"\": x}}\n",
		"runtime_env: {env_vars: {\"A\\0\": x}}\n",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "runtime_env.env_vars") {
			t.Errorf("%q: %v", doc, err)
		}
	}
	if _, err := Parse([]byte("runtime_env: {env_vars: {lower.case-name: \"a=b\"}}\n")); err != nil {
		t.Errorf("a name a process environment can hold: %v", err)
	}
}

// TestAnEmptyPathIsNotTakenForTheDefault: `shared_root: ""` and `v2.sqlite.db_path: ""` silently took the
// defaults, and serve made /private/jobs and /private/common/db/mvp_v2.sqlite3 on a machine whose operator had
// meant something else (the messages audit). A path or address written empty is refused naming the key; left out
// (or null) it takes the default.
func TestAnEmptyPathIsNotTakenForTheDefault(t *testing.T) {
	for _, tc := range []struct{ doc, key string }{
		{"shared_root: ''\n", "shared_root"},
		{"address: \"\"\n", "address"},
		{"v2:\n  sqlite:\n    db_path: ''\n", "v2.sqlite.db_path"},
		{"v2:\n  ray:\n    python: ''\n", "v2.ray.python"},
		{"v2:\n  ray:\n    probe_script: ''\n", "v2.ray.probe_script"},
		{"v2:\n  ray:\n    gcs_address: ''\n", "v2.ray.gcs_address"},
		{"v2:\n  api:\n    host: ''\n", "v2.api.host"}, // not "every interface": it took 127.0.0.1
	} {
		_, err := Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%q: %v", tc.doc, err)
		}
	}
	c, err := Parse([]byte("shared_root:\nv2:\n  sqlite:\n    db_path: ~\n"))
	if err != nil || c.SharedRoot != DefaultSharedRoot {
		t.Errorf("null values take the defaults: %v %+v", err, c)
	}
}

// TestAnUnknownKeyInAListEntryIsAnError: a typo inside a v2.auth.users entry (maxgpus for max_gpus) was ignored,
// and that user ran with no limits at all. List entries are checked as every other mapping is.
func TestAnUnknownKeyInAListEntryIsAnError(t *testing.T) {
	_, err := Parse([]byte("address: http://127.0.0.1:8265\nv2:\n  auth:\n    users:\n" +
		"      - {name: alice, token_env: MVP_TOKEN_ALICE, max_gpus: 4}\n" +
		"      - name: carol\n        token_env: MVP_TOKEN_CAROL\n        maxgpus: 1\n"))
	if err == nil {
		t.Fatal("a typo in a user entry was accepted")
	}
	for _, want := range []string{"v2.auth.users[1].maxgpus", "line 8", "unknown key", "max_gpus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestDurationsBeyondTenYearsAreRefused: a duration in seconds past what mvp's clock arithmetic holds (a
// time.Duration ends at about 292 years) overflowed, and max_runtime_cap_s had no upper bound: a cap of 300 years
// let a task declare a run that the scheduler judged overstayed a minute after it started (MAX_RUNTIME_EXCEEDED),
// and at 250 years its declared end wrapped to the past, so the queue estimated its successors at now. Every
// duration key is at most ten years, and the message names the key (found by a review).
func TestDurationsBeyondTenYearsAreRefused(t *testing.T) {
	for _, key := range []string{"tick_s", "retry_interval_s", "gang_wait_s", "default_max_runtime_s",
		"max_runtime_cap_s", "default_max_queued_s", "max_queued_cap_s", "runtime_grace_s", "fair_share_half_life_s",
		"starvation_s"} {
		doc := fmt.Sprintf("v2: {scheduler: {%s: 9467280000}}\n", key) // 300 years
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v; want an error naming %s", doc, err, key)
		}
	}
	for _, key := range []string{"request_timeout_s", "log_copy_s", "package_retention_s"} {
		doc := fmt.Sprintf("v2: {ray: {%s: 9467280000}}\n", key)
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v; want an error naming %s", doc, err, key)
		}
	}
	if _, err := Parse([]byte("v2: {scheduler: {max_runtime_cap_s: 315360000, max_queued_cap_s: 315360000}}\n")); err != nil {
		t.Errorf("ten years: %v", err)
	}
}

// TestACheckpointEveryLessThanASecondIsRefused: checkpoint_schedule "@every 0s" was taken (the cron parser rounds
// it up to a checkpoint every second without a word); it is refused, naming the key (walk-through 17).
func TestACheckpointEveryLessThanASecondIsRefused(t *testing.T) {
	for _, doc := range []string{"v2: {sqlite: {checkpoint_schedule: \"@every 0s\"}}\n", "v2: {sqlite: {checkpoint_schedule: \"@every 500ms\"}}\n"} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "checkpoint_schedule") {
			t.Errorf("%q: %v; want it refused, naming checkpoint_schedule", doc, err)
		}
	}
	if _, err := Parse([]byte("v2: {sqlite: {checkpoint_schedule: \"@every 1s\"}}\n")); err != nil {
		t.Errorf("@every 1s: %v", err)
	}
}

// TestNumbersInErrorsArePlain: retry_interval_s: 99999999999 was refused as "9.9999999999e+10 s is more than ten
// years" (Go's %v turns to e-notation from a million on): a number the file gives is echoed as written, a plain
// integer or decimal, in every message that quotes one (walk-through of the config handling).
func TestNumbersInErrorsArePlain(t *testing.T) {
	for doc, want := range map[string]string{
		"v2: {scheduler: {retry_interval_s: 99999999999}}\n":                                  "v2.scheduler.retry_interval_s (line 1): 99999999999 s is more than ten years",
		"v2: {scheduler: {gang_wait_s: 315360000.5}}\n":                                       "v2.scheduler.gang_wait_s (line 1): 315360000.5 s is more than ten years",
		"v2: {scheduler: {starvation_s: 99999999999}}\n":                                      "v2.scheduler.starvation_s (line 1): 99999999999 s",
		"v2: {scheduler: {default_max_runtime_s: 99999999999}}\n":                             "v2.scheduler.default_max_runtime_s (line 1): 99999999999 s",
		"v2: {ray: {log_copy_s: 12345678901}}\n":                                              "v2.ray.log_copy_s (line 1): 12345678901 s",
		"v2: {scheduler: {tick_s: 5000000}}\n":                                                "v2.scheduler.tick_s (line 1): 5000000 must be between",
		"v2: {scheduler: {tick_s: 0.000001}}\n":                                               "v2.scheduler.tick_s (line 1): 0.000001 must be between",
		"v2: {scheduler: {runtime_grace_s: -5000000}}\n":                                      "v2.scheduler.runtime_grace_s (line 1): -5000000 must not be negative",
		"v2: {ray: {request_timeout_s: -5000000}}\n":                                          "v2.ray.request_timeout_s (line 1): -5000000 must be above 0",
		"v2: {api: {max_body_bytes: -5000000}}\n":                                             "v2.api.max_body_bytes (line 1): -5000000 must be above 0",
		"entrypoint_num_cpus: -5000000\n":                                                     "entrypoint_num_cpus (line 1): -5000000 must not be negative",
		"v2: {auth: {users: [{name: alice, token_env: MVP_TOKEN_ALICE, share: -5000000}]}}\n": "v2.auth.users[0].share (line 1): -5000000 must be above 0",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "e+") ||
			strings.Contains(err.Error(), "e-0") {
			t.Errorf("%q: %v; want an error with %q and no e-notation", doc, err, want)
		}
	}
}

// TestAnUnknownPolicyIsAConfigError: v2.scheduler.policy: bogus passed Load and stopped serve later, in
// service.Open, with "v2.scheduler.policy: …" alone, where every other bad key's error names the file
// ("config configs/dev.yaml: v2.scheduler.…"); mvp doctor and mvp sim --config took the file without a word. It
// is refused with the others, naming the file, the key and the policies to use (walk-through of the config
// handling).
func TestAnUnknownPolicyIsAConfigError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.yaml")
	if err := os.WriteFile(path, []byte("v2:\n  scheduler:\n    policy: bogus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := "config " + path + `: v2.scheduler.policy (line 3): "bogus" is not a policy; use one of ` +
		strings.Join(scheduler.PolicyNames, ", ")
	if err == nil || err.Error() != want {
		t.Errorf("Load: %v; want %s", err, want)
	}
	// An empty policy is refused (TestAnEmptyPolicyIsNotTakenForTheDefault); left out or null, it is the default.
	for _, doc := range []string{"{}", "v2: {scheduler: {policy: fifo}}\n", "v2: {scheduler: {policy: null}}\n"} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// A Ray-door package kept for less than Ray's own temporary reference could go between a client's check that mvp
// keeps it and the submission that names it: such a retention is refused, naming the key, the least and the
// default; left out, it is a week.
func TestPackageRetentionHasAFloor(t *testing.T) {
	for _, doc := range []string{"v2: {ray: {package_retention_s: 0}}\n", "v2: {ray: {package_retention_s: -1}}\n",
		"v2: {ray: {package_retention_s: 599}}\n"} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "v2.ray.package_retention_s") || !strings.Contains(err.Error(), "600") ||
			!strings.Contains(err.Error(), "604800") {
			t.Errorf("%q: %v; want it refused, naming the key, the least (600 s) and the default", doc, err)
		}
	}
	c, err := Parse([]byte("v2: {ray: {package_retention_s: 600}}\n"))
	if err != nil || c.V2.Ray.PackageRetention() != 10*time.Minute {
		t.Errorf("600 s: %v, %v", c, err)
	}
	if c, err = Parse([]byte("address: http://127.0.0.1:8265\n")); err != nil || c.V2.Ray.PackageRetention() != 7*24*time.Hour {
		t.Errorf("default: %v, %v; want a week", c.V2.Ray.PackageRetention(), err)
	}
}

// TestATokenPastedForItsVariableIsNotEchoed: users[].token_env names the variable that holds a user's token; a
// token pasted there in its place was echoed whole in the refusal, which start.sh prints and mvp.log keeps.
func TestATokenPastedForItsVariableIsNotEchoed(t *testing.T) {
	for _, tok := range []string{"s3cr3t-alice-token-9f8e7d6c", "a9f8e7d6c5b4a3f2e1d0c9b8"} {
		shown := ShownEnvName(tok)
		if strings.Contains(shown, tok[3:]) {
			t.Errorf("ShownEnvName(%q) = %q: the token is shown", tok, shown)
		}
	}
	for _, name := range []string{"MVP_TOKEN_ALICE", "RAY_AUTH_TOKEN", "tok"} {
		if got := ShownEnvName(name); got != "$"+name {
			t.Errorf("ShownEnvName(%q) = %q; want $%s", name, got, name)
		}
	}
	path := filepath.Join(t.TempDir(), "dev.yaml")
	if err := os.WriteFile(path, []byte("v2:\n  auth:\n    users: [{name: alice, token_env: s3cr3t-alice-token-9f8e7d6c}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || strings.Contains(err.Error(), "alice-token-9f8e7d6c") {
		t.Errorf("a token in token_env: %v; want it refused without the token", err)
	}
}

// TestATokenPastedForTheServicesVariablesIsNotEchoed: the same holds for the service's own *_env settings (the
// API token's, Ray's token's, the secrets key's): their refusals echoed the value whole.
func TestATokenPastedForTheServicesVariablesIsNotEchoed(t *testing.T) {
	// The second is a hex token that happens to be a valid variable name (a-f first: about 4 in 10 of
	// `openssl rand -hex`): accepted, it was echoed later, as $<token> in "no API token: set $…" and in mvp.log.
	for _, tok := range []string{"s3cr3t-0123-token-9f8e7d6c", "a9f8e7d6c5b4a3f2e1d0c9b8"} {
		for _, key := range []string{"auth: {token_env: %s}", "ray: {token_env: %s}", "secrets: {key_env: %s}",
			"auth: {users: [{name: alice, token_env: %s}]}"} {
			doc := "v2:\n  " + fmt.Sprintf(key, tok) + "\n"
			_, err := Parse([]byte(doc))
			if err == nil || strings.Contains(err.Error(), tok[3:]) {
				t.Errorf("%q: %v; want it refused without the token", doc, err)
			}
		}
	}
}

// TestSecretEnvsNamesEveryVariableOfAnMVPSecret: the variables v2/scripts/worker.sh keeps from Ray's environment
// (mvp serve --print-secret-envs): the operator's token, each user's, and the secrets key, defaults included, each
// once (the operator's token and the key may share a variable); never Ray's own token's, which the nodes need.
func TestSecretEnvsNamesEveryVariableOfAnMVPSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.yaml")
	os.WriteFile(path, []byte("address: http://127.0.0.1:8265\nshared_root: /tmp/x\nv2:\n  auth:\n    users:\n"+
		"      - {name: alice, token_env: TEAM_ALICE_PW}\n      - {name: bob, token_env: MVP_TOKEN_BOB}\n"+
		"  ray: {token_env: RAY_AUTH_TOKEN}\n"), 0o644)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.SecretEnvs(), " ")
	if want := "MVP_INTERNAL_TOKEN TEAM_ALICE_PW MVP_TOKEN_BOB MVP_SECRETS_KEY"; got != want {
		t.Errorf("SecretEnvs() = %q, want %q", got, want)
	}
	os.WriteFile(path, []byte("address: http://127.0.0.1:8265\nshared_root: /tmp/x\nv2:\n  auth: {token_env: OPS_K}\n"+
		"  secrets: {key_env: OPS_K}\n"), 0o644)
	if c, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.SecretEnvs(), " "); got != "OPS_K" {
		t.Errorf("SecretEnvs() of a token and key in one variable = %q, want it once", got)
	}
	// The operator's token in Ray's token's variable: the nodes need that one, so it is not listed.
	os.WriteFile(path, []byte("address: http://127.0.0.1:8265\nshared_root: /tmp/x\nv2:\n  auth: {token_env: RAY_AUTH_TOKEN}\n"), 0o644)
	if c, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.SecretEnvs(), " "); got != "MVP_SECRETS_KEY" {
		t.Errorf("SecretEnvs() with the API token in Ray's token's variable = %q, want only MVP_SECRETS_KEY", got)
	}
}

// TestMaxLogStreamsDefaultsToNone: v2.ray.max_log_streams left out is 0, no streams from Ray's state API (Ray
// 2.60 holds a place of its limited state API requests for good for each stream whose log stops growing); a
// value is kept as written.
func TestMaxLogStreamsDefaultsToNone(t *testing.T) {
	d, err := Parse([]byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if d.V2.Ray.MaxLogStreams != 0 {
		t.Errorf("max_log_streams %d by default; want 0", d.V2.Ray.MaxLogStreams)
	}
	c, err := Parse([]byte("v2: {ray: {max_log_streams: 400}}\n"))
	if err != nil || c.V2.Ray.MaxLogStreams != 400 {
		t.Errorf("max_log_streams: 400: %v, %d", err, c.V2.Ray.MaxLogStreams)
	}
}

// TestAYAMLErrorInDevYAMLNamesItsLine: yaml.v3 named the line of its parser's context, often one before the line
// at fault (an unclosed "[" on line 3 read "line 2"); the error names the line where the file stops being YAML.
func TestAYAMLErrorInDevYAMLNamesItsLine(t *testing.T) {
	_, err := Parse([]byte("address: http://127.0.0.1:8265\nv2:\n  api: [1\n  scheduler: {}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3:") {
		t.Fatalf("%v, want it to name line 3", err)
	}
}
