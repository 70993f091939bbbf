package hostscripts

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRayUpFindsItsClusterByItsFolder: README's `make run` "beside another cluster" starts one with
// MVP_CLUSTER_DIR, MVP_RAY_PORT and MVP_RAY_DASHBOARD_PORT; ray-up.sh says it "start[s] (or find[s])" that
// cluster and is idempotent, and records the ports in <dir>/cluster.env (which run-local.sh reads). Run again with
// only MVP_CLUSTER_DIR (as `make ray-down` is run), ray-up asked the default dashboard port (8265) instead of the
// recorded one, called the live, healthy cluster "stale state", stopped it (its running jobs with it) and started
// a new head on the default ports, where another session's cluster may be. It must find the cluster it recorded.
func TestRayUpFindsItsClusterByItsFolder(t *testing.T) {
	dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"version": "4", "ray_version": "2.60.0"}`) // the recorded cluster's Job API answers
	}))
	defer dash.Close()

	dir := t.TempDir()
	head := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir, "head"))
	worker := startNamed(t, "raylet", "MVP_RAY_NODE="+filepath.Join(dir, "worker1"))
	for name, p := range map[string]sleeper{"head": head, "worker1": worker} {
		if err := os.WriteFile(filepath.Join(dir, name+".pgid"), []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A venv that ray-venv.sh takes as installed; its `ray` fails, so a (wrong) new start ends at once.
	venv := t.TempDir()
	os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	os.WriteFile(filepath.Join(venv, ".mvp-ray-2.60.0-ok"), nil, 0o644)
	os.WriteFile(filepath.Join(venv, "bin", "ray"), []byte("#!/bin/sh\necho fake ray: $* >&2\nexit 1\n"), 0o755)
	env := fmt.Sprintf("RAY_GCS_ADDRESS=127.0.0.1:6779\nRAY_DASHBOARD_URL=%s\nRAY_PYTHON=%s/bin/python3\nRAY_VENV=%s\n"+
		"MVP_CLUSTER_DIR=%s\nRAY_WORKERS=1\nRAY_AGENT_PORT_BASE=23000\nRAY_GPUS_PER_WORKER=4\n", dash.URL, venv, venv, dir)
	if err := os.WriteFile(filepath.Join(dir, "cluster.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-up.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "RAY_WORKERS=1", "MVP_RAY_VENV="+venv,
		"MVP_RAY_AGENT_PORT_BASE=23000", "MVP_RAY_START_TIMEOUT=5")
	for _, v := range []string{"MVP_RAY_PORT", "MVP_RAY_DASHBOARD_PORT", "MVP_RAY_CLIENT_PORT"} {
		cmd.Env = append(cmd.Env, v+"=") // as a shell that did not export them: the defaults
	}
	out, _ := cmd.CombinedOutput()
	// Its dashboard, not the default port's (where another cluster may answer: that is no find either).
	if !strings.Contains(string(out), "already running") || !strings.Contains(string(out), "dashboard "+dash.URL) {
		t.Errorf("ray-up.sh did not find the running cluster recorded in %s:\n%s", dir, out)
	}
	if head.exited() || worker.exited() {
		t.Errorf("ray-up.sh stopped the live cluster it was asked to find:\n%s", out)
	}
}

// TestAgentPortsAvoidTheClustersOwnPorts: ray-up.sh picks a free block for the dashboard agents' ports while the
// GCS, dashboard and Ray client ports it was given are not bound yet; a block holding one of them (seen with
// MVP_RAY_CLIENT_PORT=20001: the agent's gRPC port was 20001 too) made `ray start` refuse ("is trying to use a
// port number 20001 that is used by other components"). free-ports.py --block --avoid leaves them out: here every
// block but the one at 25000 is avoided.
func TestAgentPortsAvoidTheClustersOwnPorts(t *testing.T) {
	out, err := exec.Command("python3", filepath.Join(repoRoot(t), "scripts", "free-ports.py"), "--block", "4",
		"--avoid", "20000-24999,25004-40000").Output()
	if err != nil {
		t.Fatalf("free-ports.py: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "25000" {
		t.Errorf("free-ports.py --block 4 with every other block avoided gave %q, want 25000", got)
	}
	rayUp, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "ray-up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rayUp), `--avoid "$gcs_port,$dash_port,$client_port"`) {
		t.Errorf("ray-up.sh does not keep the agents' block off its GCS, dashboard and client ports")
	}
}

// TestRayUpStartsAgainAWorkerWhoseRayletDied: a worker's raylet killed alone (SIGKILL, as the kernel's OOM killer
// picks it) takes its node out of Ray, but other processes may live on in the node's process group (its log
// monitor did, before ray-up.sh started workers without one; here a stand-in process). ray-up.sh took the
// group for a live node ("cluster already running") and never started the worker again: the walk-through's gang
// waited as never_fits on the one worker left. A worker's group without a raylet is a dead node: what is left of it
// is stopped and the worker started again.
func TestRayUpStartsAgainAWorkerWhoseRayletDied(t *testing.T) {
	dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"version": "4", "ray_version": "2.60.0"}`)
	}))
	defer dash.Close()
	dir := t.TempDir()
	head := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir, "head"))
	leftover := startNamed(t, "log_monitor", "MVP_RAY_NODE="+filepath.Join(dir, "worker1")) // no raylet beside it
	for name, p := range map[string]sleeper{"head": head, "worker1": leftover} {
		if err := os.WriteFile(filepath.Join(dir, name+".pgid"), []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	venv := t.TempDir()
	os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	os.WriteFile(filepath.Join(venv, ".mvp-ray-2.60.0-ok"), nil, 0o644)
	os.WriteFile(filepath.Join(venv, "bin", "ray"), []byte("#!/bin/sh\necho fake ray: $* >&2\nexit 1\n"), 0o755)
	env := fmt.Sprintf("RAY_GCS_ADDRESS=127.0.0.1:6779\nRAY_DASHBOARD_URL=%s\nRAY_PYTHON=%s/bin/python3\nRAY_VENV=%s\n"+
		"MVP_CLUSTER_DIR=%s\nRAY_WORKERS=1\nRAY_AGENT_PORT_BASE=23000\nRAY_GPUS_PER_WORKER=4\n", dash.URL, venv, venv, dir)
	if err := os.WriteFile(filepath.Join(dir, "cluster.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-up.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "RAY_WORKERS=1", "MVP_RAY_VENV="+venv, "MVP_RAY_START_TIMEOUT=5")
	out, _ := cmd.CombinedOutput() // the fake `ray start` fails: what matters is that it was asked
	if !strings.Contains(string(out), "without worker(s) 1") || !strings.Contains(string(out), "fake ray: start") {
		t.Errorf("ray-up.sh did not start again the worker whose raylet is gone:\n%s", out)
	}
	if !leftover.exited() {
		t.Errorf("what was left of the dead worker's group still runs")
	}
	if head.exited() {
		t.Errorf("ray-up.sh stopped the live head:\n%s", out)
	}
}

// TestRayUpSaysWhichPortIsTaken: ray-up.sh beside a cluster already on the default ports started a head anyway;
// Ray then failed after some 40 lines of traceback ("Session name … does not match persisted value", its head
// having reached the other cluster's GCS), naming neither the port nor the setting to change (found in a user
// walk-through). It now checks its GCS, dashboard and Ray client ports first and names the one taken and its
// variable, starting nothing.
func TestRayUpSaysWhichPortIsTaken(t *testing.T) {
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	for _, v := range []string{"MVP_RAY_PORT", "MVP_RAY_DASHBOARD_PORT", "MVP_RAY_CLIENT_PORT"} {
		t.Run(v, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0") // another cluster's port
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			port := taken.Addr().(*net.TCPAddr).Port
			ports := map[string]int{"MVP_RAY_PORT": free(), "MVP_RAY_DASHBOARD_PORT": free(), "MVP_RAY_CLIENT_PORT": 20000 + free()%10000}
			ports[v] = port
			venv := t.TempDir()
			os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
			os.WriteFile(filepath.Join(venv, ".mvp-ray-2.60.0-ok"), nil, 0o644)
			os.WriteFile(filepath.Join(venv, "bin", "ray"), []byte("#!/bin/sh\necho fake ray started: $* >&2\nexit 1\n"), 0o755)
			cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-up.sh"))
			cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+t.TempDir(), "RAY_WORKERS=1", "MVP_RAY_VENV="+venv,
				"MVP_RAY_START_TIMEOUT=5")
			for k, p := range ports {
				cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", k, p))
			}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("ray-up.sh succeeded with port %d taken:\n%s", port, out)
			}
			if !strings.Contains(string(out), fmt.Sprintf("port %d", port)) || !strings.Contains(string(out), v) {
				t.Errorf("ray-up.sh does not name the taken port %d and %s:\n%s", port, v, out)
			}
			if strings.Contains(string(out), "fake ray started") {
				t.Errorf("ray-up.sh started Ray on a taken port:\n%s", out)
			}
		})
	}
}
