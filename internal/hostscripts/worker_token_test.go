package hostscripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerScriptHandsOverRaysToken: on a cluster started with RAY_AUTH_MODE=token, `ray start` on a worker and
// `mvp doctor` (which reads Ray's dashboard with the token from v2.ray.token_env) both need Ray's token. The host
// scripts hand the variables of MVP_PASS_ENV (default "MVP_SECRETS_KEY RAY_AUTH_TOKEN") to the container by name
// when they are set on the host (specs/deploy.md, "Once", step 3), but worker.sh's in_worker hands over only
// RAY_GPUS_PER_WORKER: `worker.sh check` then reports Ray as unreachable (401) and `worker.sh start` runs
// `ray start` without the token, unless the worker container happens to hold it already.
func TestWorkerScriptHandsOverRaysToken(t *testing.T) {
	r := newRig(t)
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(fakeRay), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"FAKE_RAY_LOG=" + filepath.Join(r.dir, "ray.args"), "MVP_WORKER_CONTAINER=ray-worker-test",
		"RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2", "RAY_AUTH_TOKEN=ray-token-0123456789abcdef"}
	for _, verb := range []string{"start", "check"} {
		os.Remove(filepath.Join(r.dir, "docker.log"))
		r.run("worker.sh", append(env, verb)...)
		log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log"))
		var execs []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.HasPrefix(l, "exec ") && strings.Contains(l, " ray-worker-test bash -c") { // the docker call, not a line of its script
				execs = append(execs, l)
			}
		}
		if len(execs) == 0 {
			t.Fatalf("worker.sh %s made no docker exec:\n%s", verb, log)
		}
		for _, l := range execs {
			if !strings.Contains(l, "-e RAY_AUTH_TOKEN ") {
				t.Errorf("worker.sh %s: docker exec without -e RAY_AUTH_TOKEN (set on the host, in MVP_PASS_ENV): %s", verb, l)
			}
			if strings.Contains(l, "ray-token-0123456789abcdef") {
				t.Errorf("worker.sh %s: the token's value is on docker's command line: %s", verb, l)
			}
		}
	}
}
