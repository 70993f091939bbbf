package hostscripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerKeepsUsersTokensAndSecretsKeyFromRay: deploy.md tells operators to list every user's token_env
// (and the secrets key) in MVP_PASS_ENV. worker.sh hands all of MVP_PASS_ENV to the worker container's `ray start`,
// whose environment the raylet and every job's worker processes inherit: any user's job reads the other users'
// tokens and the secrets key. Only Ray's token is needed there.
func TestWorkerKeepsUsersTokensAndSecretsKeyFromRay(t *testing.T) {
	r := newRig(t)
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(fakeRay), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := r.run("worker.sh", "start", "FAKE_RAY_LOG="+filepath.Join(r.dir, "ray.args"),
		"MVP_WORKER_CONTAINER=ray-worker-test", "RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2",
		"RAY_AUTH_TOKEN=ray-token-0123456789abcdef", "MVP_SECRETS_KEY=k-0123456789abcdef",
		"MVP_TOKEN_ALICE=alice-token-0123456789", "MVP_PASS_ENV=MVP_SECRETS_KEY RAY_AUTH_TOKEN MVP_TOKEN_ALICE")
	if code != 0 {
		t.Fatalf("worker.sh start: %d %s", code, out)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log"))
	seen := false
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "exec ") && strings.Contains(l, " ray-worker-test bash -c") {
			for _, bad := range []string{"-e MVP_SECRETS_KEY", "-e MVP_TOKEN_ALICE"} {
				if strings.Contains(l, bad) {
					t.Errorf("worker.sh start hands %s to ray start in the worker container: %s", bad, l)
				}
			}
			if !strings.Contains(l, "-e RAY_AUTH_TOKEN") {
				t.Errorf("worker.sh start does not hand Ray's token over: %s", l)
			}
			seen = true
		}
	}
	if !seen {
		t.Errorf("no docker exec of ray start in the worker container:\n%s", log)
	}
}

// TestLocalWorkerKeepsUsersTokensAndSecretsKeyFromRay: with MVP_LOCAL=1 (no docker: worker.sh runs ray start on
// this machine) the script's whole environment reached ray start, so the variables deploy.md has operators export
// for mvp serve (every user's token, the API token, the secrets key) were the raylet's, and every job's on the worker.
func TestLocalWorkerKeepsUsersTokensAndSecretsKeyFromRay(t *testing.T) {
	r := newRig(t)
	const rayEnv = "#!/usr/bin/env bash\nenv > \"$FAKE_RAY_ENV\"\n"
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(rayEnv), 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(r.dir, "ray.env")
	out, code := r.run("worker.sh", "start", "MVP_LOCAL=1", "FAKE_RAY_ENV="+envFile,
		"MVP_WORKER_PASS_ENV=RAY_AUTH_TOKEN FAKE_RAY_ENV", // the fake's own variable reaches it as a listed one
		"RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2",
		"RAY_AUTH_TOKEN=ray-token-0123456789abcdef", "MVP_SECRETS_KEY=k-0123456789abcdef",
		"MVP_TOKEN_ALICE=alice-token-0123456789", "MVP_PASS_ENV=MVP_SECRETS_KEY RAY_AUTH_TOKEN MVP_TOKEN_ALICE HTTPS_PROXY",
		// mvp serve's proxy (listed) is not the worker's; the lower-case one curl and pip read is another variable.
		"HTTPS_PROXY=http://mvp-proxy:3128", "https_proxy=http://node-proxy:3128",
		// Run without docker, mvp serve reads this shell's variables whether MVP_PASS_ENV lists them or not.
		"MVP_TOKEN_BOB=bob-token-0123456789",
		// What a bare-metal node's processes need stays (an allow-list dropped GLOO_*, the CA bundle, and the mark
		// by which ray-down.sh knows the e2e cluster's nodes).
		"GLOO_SOCKET_IFNAME=eth1", "SSL_CERT_FILE=/etc/ssl/corp.pem", "MVP_RAY_NODE=/tmp/cluster",
		// Named like secrets but paths and settings Ray and jobs need (RAY_USE_TLS=1 fails without the first two);
		// and a secret in lower case.
		"RAY_TLS_SERVER_KEY=/etc/ray/tls.key", "RAY_AUTH_TOKEN_PATH=/etc/ray/token", "TOKENIZERS_PARALLELISM=false",
		"hf_token=hf-secret-0123456789")
	if code != 0 {
		t.Fatalf("worker.sh start with MVP_LOCAL=1: %d %s", code, out)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("ray start was not run: %v\n%s", err, out)
	}
	for _, bad := range []string{"MVP_SECRETS_KEY=", "MVP_TOKEN_ALICE=", "MVP_INTERNAL_TOKEN=", "MVP_TOKEN_BOB=", "hf_token="} {
		if strings.Contains("\n"+string(env), "\n"+bad) {
			t.Errorf("worker.sh start (MVP_LOCAL=1) hands %s… to ray start, whose environment every job on the worker reads", bad)
		}
	}
	for _, want := range []string{"RAY_AUTH_TOKEN=ray-token-0123456789abcdef", "PATH=", "HOME=", "RAY_GPUS_PER_WORKER=2",
		"GLOO_SOCKET_IFNAME=eth1", "SSL_CERT_FILE=/etc/ssl/corp.pem", "MVP_RAY_NODE=/tmp/cluster",
		"RAY_TLS_SERVER_KEY=/etc/ray/tls.key", "RAY_AUTH_TOKEN_PATH=/etc/ray/token", "TOKENIZERS_PARALLELISM=false",
		"https_proxy=http://node-proxy:3128"} {
		if !strings.Contains("\n"+string(env), "\n"+want) {
			t.Errorf("ray start (MVP_LOCAL=1) lacks %s in its environment:\n%s", want, env)
		}
	}
}

// TestWorkerGPUsOverridesABrokenNVML: mvp doctor refuses to count a node whose NVML fails unless --gpus N is given
// for it (RAY_GPUS_PER_WORKER, a fleet's default, does not cover it), and its refusal says so; worker.sh, the way
// a worker is started, had no way to pass --gpus. MVP_WORKER_GPUS is that way. (This machine has no NVML: the
// count given is taken over RAY_GPUS_PER_WORKER all the same.)
func TestWorkerGPUsOverridesABrokenNVML(t *testing.T) {
	r := newRig(t)
	rayLog := filepath.Join(r.dir, "ray.args")
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(fakeRay), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := r.run("worker.sh", "start", "FAKE_RAY_LOG="+rayLog, "MVP_WORKER_CONTAINER=ray-worker-test",
		"RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=8", "MVP_WORKER_GPUS=7")
	if code != 0 || !strings.Contains(out, "--num-gpus=7") {
		t.Fatalf("worker.sh start with MVP_WORKER_GPUS=7: %d %s", code, out)
	}
	// worker.sh check, which an operator reruns after setting it, runs the doctor with it too.
	if out, _ := r.run("worker.sh", "check", "MVP_WORKER_CONTAINER=ray-worker-test", "RAY_GPUS_PER_WORKER=8",
		"MVP_WORKER_GPUS=7"); !strings.Contains(out, "count 7 (--gpus)") {
		t.Errorf("worker.sh check with MVP_WORKER_GPUS=7 did not give the doctor --gpus 7:\n%s", out)
	}
	if out, code := r.run("worker.sh", "start", "MVP_WORKER_CONTAINER=ray-worker-test", "RAY_HEAD_ADDRESS=10.0.0.1:6379",
		"MVP_WORKER_GPUS=seven"); code == 0 || !strings.Contains(out, "MVP_WORKER_GPUS") {
		t.Errorf("worker.sh start with MVP_WORKER_GPUS=seven: %d %s; want it refused, naming the setting", code, out)
	}
}

// TestLocalWorkerWithoutRaysTokenListedGetsNone: MVP_WORKER_PASS_ENV="" hands ray start no token through docker; run
// here (MVP_LOCAL=1) RAY_AUTH_TOKEN reached it all the same.
func TestLocalWorkerWithoutRaysTokenListedGetsNone(t *testing.T) {
	r := newRig(t)
	const rayEnv = "#!/usr/bin/env bash\nenv > \"$FAKE_RAY_ENV\"\n"
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(rayEnv), 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(r.dir, "ray.env")
	out, code := r.run("worker.sh", "start", "MVP_LOCAL=1", "FAKE_RAY_ENV="+envFile, "MVP_WORKER_PASS_ENV=",
		"RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2", "RAY_AUTH_TOKEN=ray-token-0123456789abcdef")
	if code != 0 {
		t.Fatalf("worker.sh start: %d %s", code, out)
	}
	env, _ := os.ReadFile(envFile)
	if strings.Contains("\n"+string(env), "\nRAY_AUTH_TOKEN=") {
		t.Errorf("MVP_WORKER_PASS_ENV=\"\" still handed RAY_AUTH_TOKEN to ray start (MVP_LOCAL=1)")
	}
}

// TestLocalWorkerKeepsTheConfigsSecretVariablesFromRay: with MVP_LOCAL=1, worker.sh took out of ray start's
// environment MVP_TOKEN_ENV's and MVP_PASS_ENV's variables and those named like a secret; a user's token in a
// variable named otherwise (dev.yaml's v2.auth.users[].token_env: TEAM_CAROL_PW, say), which MVP_PASS_ENV need not
// list when mvp serve runs without docker, reached the raylet and every job on the node. worker.sh now also asks
// mvp which variables its config names for its secrets (mvp serve --print-secret-envs) and keeps those out.
func TestLocalWorkerKeepsTheConfigsSecretVariablesFromRay(t *testing.T) {
	r := newRig(t)
	cfg := filepath.Join(r.dir, "home", "configs", "dev.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "  auth:\n    token_env: OPS_API_PASS\n    users: [{name: carol, token_env: TEAM_CAROL_PW}]\n"+
		"  secrets: {key_env: VAULT_K}\n"...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const rayEnv = "#!/usr/bin/env bash\nenv > \"$FAKE_RAY_ENV\"\n"
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(rayEnv), 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(r.dir, "ray.env")
	out, code := r.run("worker.sh", "start", "MVP_LOCAL=1", "FAKE_RAY_ENV="+envFile,
		"MVP_WORKER_PASS_ENV=RAY_AUTH_TOKEN FAKE_RAY_ENV", "RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2",
		"MVP_PASS_ENV=RAY_AUTH_TOKEN", "OPS_API_PASS=ops-0123456789", "TEAM_CAROL_PW=carol-0123456789",
		"VAULT_K=vault-0123456789", "TEAM_CAROL_HOME=/home/carol")
	if code != 0 {
		t.Fatalf("worker.sh start with MVP_LOCAL=1: %d %s", code, out)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("ray start was not run: %v\n%s", err, out)
	}
	for _, bad := range []string{"OPS_API_PASS=", "TEAM_CAROL_PW=", "VAULT_K="} {
		if strings.Contains("\n"+string(env), "\n"+bad) {
			t.Errorf("worker.sh start (MVP_LOCAL=1) hands %s… (named in dev.yaml for an mvp secret) to ray start", bad)
		}
	}
	for _, want := range []string{"TEAM_CAROL_HOME=/home/carol", "RAY_GPUS_PER_WORKER=2", "PATH="} {
		if !strings.Contains("\n"+string(env), "\n"+want) {
			t.Errorf("ray start (MVP_LOCAL=1) lacks %s in its environment:\n%s", want, env)
		}
	}
	// A config mvp refuses: the worker starts all the same, and says what it could not keep out.
	bad := filepath.Join(r.dir, "bad.yaml")
	os.WriteFile(bad, []byte("v2: [not, a, mapping]\n"), 0o644)
	os.Remove(envFile)
	out, code = r.run("worker.sh", "start", "MVP_LOCAL=1", "MVP_CONFIG="+bad, "FAKE_RAY_ENV="+envFile,
		"MVP_WORKER_PASS_ENV=RAY_AUTH_TOKEN FAKE_RAY_ENV", "RAY_HEAD_ADDRESS=10.0.0.1:6379", "RAY_GPUS_PER_WORKER=2")
	if _, err := os.Stat(envFile); code != 0 || err != nil || !strings.Contains(out, "could not ask") {
		t.Errorf("worker.sh start with a config mvp refuses: exit %d, ray start run: %v; want 0, run, and a line "+
			"saying the config's secret variables could not be asked for:\n%s", code, err == nil, out)
	}
}
