package config

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/scheduler"
)

// TestARayTokenEnvThatIsNotAVariableNameIsRefused: v2.ray.token_env names the variable with Ray's token, as
// v2.auth.token_env and v2.secrets.key_env name theirs, and is refused as they are when it is no variable name:
// taken as given, os.Getenv found nothing in it and every Ray call went out without the token (401 from a
// RAY_AUTH_MODE=token cluster, long after start).
func TestARayTokenEnvThatIsNotAVariableNameIsRefused(t *testing.T) {
	for _, v := range []string{"'RAY AUTH TOKEN'", "'1TOKEN'", "'$RAY_AUTH_TOKEN'"} {
		_, err := Parse([]byte("v2:\n  ray:\n    token_env: " + v + "\n"))
		if err == nil || !strings.Contains(err.Error(), "v2.ray.token_env") {
			t.Errorf("token_env %s: %v, want an error naming v2.ray.token_env", v, err)
		}
	}
	c, err := Parse([]byte("v2:\n  ray:\n    token_env: MY_RAY_TOKEN\n"))
	if err != nil || c.V2.Ray.TokenEnv != "MY_RAY_TOKEN" {
		t.Fatalf("a valid name: %v", err)
	}
}

// TestAnEmptyVariableNameOrScheduleIsNotTakenForTheDefault: a token or key variable written empty, or an empty
// checkpoint schedule, is refused naming the key, as an empty path is: taken for the default, `key_env: ""` (meant
// as "no secrets") still read $MVP_SECRETS_KEY, and `checkpoint_schedule: ""` (meant as "none") still
// checkpointed every 10 minutes.
func TestAnEmptyVariableNameOrScheduleIsNotTakenForTheDefault(t *testing.T) {
	for _, key := range []string{"v2.auth.token_env", "v2.secrets.key_env", "v2.ray.token_env",
		"v2.sqlite.checkpoint_schedule"} {
		parts := strings.Split(key, ".")
		y := "v2:\n  " + parts[1] + ":\n    " + parts[2] + ": ''\n"
		_, err := Parse([]byte(y))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: '': %v, want an error naming %s", key, err, key)
		}
		if _, err := Parse([]byte("v2:\n  " + parts[1] + ":\n    " + parts[2] + ":\n")); err != nil {
			t.Errorf("%s: null must take the default: %v", key, err)
		}
	}
}

// TestAnAddressWithAPortOutOfRangeIsRefused: address's port, when it names one, is 1..65535, as
// v2.ray.gcs_address's is; before, http://127.0.0.1:99999 was accepted and every Ray call failed after start.
func TestAnAddressWithAPortOutOfRangeIsRefused(t *testing.T) {
	for _, a := range []string{"http://127.0.0.1:99999", "http://127.0.0.1:0", "https://ray.example:65536"} {
		_, err := Parse([]byte("address: " + a + "\n"))
		if err == nil || !strings.Contains(err.Error(), "address") {
			t.Errorf("%s: %v, want an error naming address", a, err)
		}
	}
	for _, a := range []string{"http://127.0.0.1:8265", "http://ray.example", "https://[::1]:443"} {
		if _, err := Parse([]byte("address: " + a + "\n")); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestAnAddressWithoutAHostIsRefused: http://:8265 names no host; it is refused as address, not later as the
// v2.ray.gcs_address derived from it.
func TestAnAddressWithoutAHostIsRefused(t *testing.T) {
	_, err := Parse([]byte("address: 'http://:8265'\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "address (line 1):") {
		t.Errorf("%v, want an error naming address", err)
	}
}

// TestAnEntrypointResourceNameMvpCannotAdmitIsRefused: entrypoint_resources is every jobspec driver's demand. A
// name beginning "label:" is how mvp carries a label selector in that demand (mvp.DriverLabelPrefix; the Ray door
// refuses it in a request), so mvp admitted the driver by node labels while Ray asked for a resource; an empty
// name is no resource Ray has. Both are refused naming the key.
func TestAnEntrypointResourceNameMvpCannotAdmitIsRefused(t *testing.T) {
	for _, y := range []string{"entrypoint_resources: {'label:pool': 1}\n", "entrypoint_resources: {'': 1}\n",
		"entrypoint_resources: {worker_node: 1, ' ': 1}\n"} {
		_, err := Parse([]byte(y))
		if err == nil || !strings.HasPrefix(err.Error(), "entrypoint_resources") {
			t.Errorf("%q: %v, want an error naming entrypoint_resources", y, err)
		}
	}
	if _, err := Parse([]byte("entrypoint_resources: {worker_node: 1, 'node:10.0.0.1': 0.01}\n")); err != nil {
		t.Errorf("a custom resource with a colon: %v", err)
	}
}

// TestARayJobRunnerCPUsIsRefused: v2.workloads.ray_job.runner_cpus was parsed and never used: a Ray door job's
// driver takes what its request names (mvp.RayJobRequest.Driver, never nil), and the scheduler adds a workload's
// runner_cpus only to a task without a driver of its own. A value other than 0 is refused naming the key and
// saying where a Ray job's driver CPU goes.
func TestARayJobRunnerCPUsIsRefused(t *testing.T) {
	_, err := Parse([]byte("v2: {workloads: {ray_job: {runner_cpus: 2}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "v2.workloads.ray_job.runner_cpus") ||
		!strings.Contains(err.Error(), "entrypoint_num_cpus") {
		t.Errorf("%v, want an error naming v2.workloads.ray_job.runner_cpus and entrypoint_num_cpus", err)
	}
	for _, y := range []string{"v2: {workloads: {ray_job: {runner_cpus: 0, cpus_per_gpu: 2}}}\n",
		"v2: {workloads: {ray_job: {cpus_per_gpu: 2}}}\n"} {
		if _, err := Parse([]byte(y)); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}

// TestANegativeDurationNamesItsOwnKey: a negative retry_interval_s or starvation_s is refused naming that key
// and its value; before, the message named two keys ("retry_interval_s and gang_wait_s", "fair_share_half_life_s
// and starvation_s"), of which the other could not be the wrong one (it is refused earlier, as not above 0).
func TestANegativeDurationNamesItsOwnKey(t *testing.T) {
	for key, want := range map[string]string{
		"retry_interval_s": "v2.scheduler.retry_interval_s (line 1): -1 must not be negative",
		"starvation_s":     "v2.scheduler.starvation_s (line 1): -1 must not be negative",
	} {
		_, err := Parse([]byte("v2: {scheduler: {" + key + ": -1}}\n"))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q…", key, err, want)
		}
	}
}

// TestAValueErrorNamesTheLine: a value of the right kind but out of range is refused naming its key and its
// line, as an unknown key or a value of the wrong kind already was ("key (line N): …"); before, only the key.
func TestAValueErrorNamesTheLine(t *testing.T) {
	for doc, want := range map[string]string{
		"address: http://127.0.0.1:8265\nv2:\n  scheduler:\n    tick_s: 0.01\n":                                 "v2.scheduler.tick_s (line 4): 0.01 must be between",
		"shared_root: /tmp\nentrypoint_num_cpus: -1\n":                                                          "entrypoint_num_cpus (line 2): -1 must not be negative",
		"v2:\n  ray:\n    request_timeout_s: .nan\n":                                                            "v2.ray.request_timeout_s (line 3): NaN is not a finite number",
		"v2:\n  sqlite:\n    db_path: ''\n":                                                                     "v2.sqlite.db_path (line 3): is empty",
		"v2:\n  auth:\n    users:\n      - name: alice\n        token_env: MVP_TOKEN_ALICE\n        share: 0\n": "v2.auth.users[0].share (line 6): 0 must be above 0",
		// A share so small that usage ÷ share is +Inf: GET /api/v2/users answered 500 (found by a user's-eye drill).
		"v2:\n  auth:\n    users:\n      - name: alice\n        token_env: MVP_TOKEN_ALICE\n        share: 1e-320\n": "v2.auth.users[0].share (line 6): 1e-320 must be between 0.001 and 1000000",
		"v2:\n  auth:\n    users:\n      - name: alice\n        token_env: MVP_TOKEN_ALICE\n        share: 1e300\n":  "v2.auth.users[0].share (line 6): 1e+300 must be between 0.001 and 1000000",
		"runtime_env:\n  env_vars:\n    A: 1\n":                     "runtime_env.env_vars.A (line 3): must be a string",
		"entrypoint_resources:\n  worker_node: 1\n  'label:x': 1\n": "entrypoint_resources.label:x (line 3): a resource name",
		// Ray takes a job asking for these, then does not start it: every task would fail (found by a drill).
		"entrypoint_resources:\n  worker_node: 1\n  GPU: 1\n": "entrypoint_resources.GPU (line 3): Ray does not take GPU among the resources",
		"entrypoint_resources:\n  worker_node: 0.00001\n":     "entrypoint_resources.worker_node (line 2): 1e-05 is less than the step",
		"entrypoint_num_cpus: 0.00001\n":                      "entrypoint_num_cpus (line 1): 1e-05 is less than the step",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v; want %q…", doc, err, want)
		}
	}
	// A value the file does not give (a default, or one derived from another key) has no line to name.
	_, err := Parse([]byte("address: 'http://h:8265'\nv2: {scheduler: {default_max_runtime_s: 2592001}}\n"))
	if err == nil || strings.Contains(err.Error(), "(line") && !strings.Contains(err.Error(), "default_max_runtime_s (line 2)") {
		t.Errorf("%v", err)
	}
}

// TestAnEmptyPolicyIsNotTakenForTheDefault: `v2.scheduler.policy: ""` silently meant the default policy, where an
// empty token variable, key variable or schedule is refused naming the key. It is refused too, saying to leave the
// key out for the default and naming every policy (scheduler.PolicyNames); left out or null, it is the default.
func TestAnEmptyPolicyIsNotTakenForTheDefault(t *testing.T) {
	for _, y := range []string{"v2:\n  scheduler:\n    policy: ''\n", "v2: {scheduler: {policy: \"\"}}\n"} {
		_, err := Parse([]byte(y))
		if err == nil || !strings.HasPrefix(err.Error(), "v2.scheduler.policy (line ") ||
			!strings.Contains(err.Error(), "leave the key out") {
			t.Errorf("%q: %v, want an error naming v2.scheduler.policy that says to leave the key out", y, err)
			continue
		}
		for _, name := range scheduler.PolicyNames {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%q: %v, want the policy %s named", y, err, name)
			}
		}
	}
	for _, y := range []string{"v2:\n  scheduler:\n    policy:\n", "v2: {scheduler: {tick_s: 2}}\n"} {
		if _, err := Parse([]byte(y)); err != nil {
			t.Errorf("%q: %v, want the default policy", y, err)
		}
	}
}

// TestATopLevelKeyNamedAsAV2SectionIsWarnedOf: a top-level scheduler: or api: (meant as v2.scheduler, v2.api)
// was silently not read. Top-level keys are shared with the cluster's other tools, so it is not refused; Parse
// returns a warning naming the key, its line and v2.<name>, for each of v2's sections. Other top-level keys, and
// the sections under v2:, are not warned of.
func TestATopLevelKeyNamedAsAV2SectionIsWarnedOf(t *testing.T) {
	c, err := Parse([]byte("scheduler:\n  tick_s: 5\napi:\n  port: 9000\nsomething_else: 1\nv2:\n  api:\n    port: 9001\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 2 || !strings.HasPrefix(c.Warnings[0], "scheduler (line 1):") ||
		!strings.Contains(c.Warnings[0], "v2.scheduler") || !strings.HasPrefix(c.Warnings[1], "api (line 3):") ||
		!strings.Contains(c.Warnings[1], "v2.api") {
		t.Errorf("warnings %q, want one for scheduler (line 1) naming v2.scheduler and one for api (line 3) naming v2.api",
			c.Warnings)
	}
	for _, name := range []string{"auth", "sqlite", "ray", "workloads", "metrics", "secrets"} {
		c, err := Parse([]byte(name + ": {}\n"))
		if err != nil || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "v2."+name) {
			t.Errorf("top-level %s: %v, warnings %q; want one naming v2.%s", name, err, c.Warnings, name)
		}
	}
	c, err = Parse([]byte("v2:\n  scheduler:\n    tick_s: 5\n"))
	if err != nil || len(c.Warnings) != 0 {
		t.Errorf("v2.scheduler: %v, warnings %q; want none", err, c.Warnings)
	}
}
