//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
)

// TestWorkerShStartsAWorkerWithTheGPUsItHas: v2/scripts/worker.sh start (specs/deploy.md), run on this machine
// (MVP_LOCAL=1: no docker here; in a deployment the same script runs in the worker container through docker exec,
// which internal/hostscripts covers with a fake docker), joins a real head with a real `ray start`. The node must
// come with the GPU count `mvp doctor --num-gpus` gives (no NVML here: RAY_GPUS_PER_WORKER=3, an odd count no
// default has), the worker_node resource drivers ask for, and the labels handed to ray start after `--`; mvp must
// see that node and run a 1 × 3 gang on it, and warn that a 1 × 4 task cannot start there.
func TestWorkerShStartsAWorkerWithTheGPUsItHas(t *testing.T) {
	c := startOwnCluster(t, 0, 0) // the head alone: worker.sh starts its only worker
	const gpus = 3
	name := "worker1" // ray-down.sh of the cluster stops it: its process group and its marked processes
	pgidFile := filepath.Join(c.dir, name+".pgid")
	p := c.spareAgentPort
	args := []string{"-c", `echo $$ > "$0"; exec bash "$@"`, pgidFile, filepath.Join(env.repo, "v2", "scripts", "worker.sh"),
		"start", "--", "--node-ip-address=127.0.0.1", "--num-cpus=16", "--object-store-memory=80000000",
		"--disable-usage-stats", `--labels={"mvp-dev/worker": "by-worker-sh"}`,
		"--dashboard-agent-listen-port=" + strconv.Itoa(p), "--dashboard-agent-grpc-port=" + strconv.Itoa(p+1),
		"--metrics-export-port=" + strconv.Itoa(p+2)}
	cmd := exec.Command("bash", args...)
	venvBin := filepath.Dir(env.python)
	cmd.Env = append(os.Environ(), "MVP_LOCAL=1", "RAY_HEAD_ADDRESS="+c.gcs, "RAY_BIN="+filepath.Join(venvBin, "ray"),
		"MVP_BIN="+env.bin, "RAY_GPUS_PER_WORKER="+strconv.Itoa(gpus), "MVP_RAY_NODE="+filepath.Join(c.dir, name),
		"PATH="+venvBin+":"+os.Getenv("PATH"), "RAY_USAGE_STATS_ENABLED=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("worker.sh start: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("starting a Ray worker with --num-gpus=%d", gpus); !strings.Contains(string(out), want) {
		t.Errorf("worker.sh start did not say %q:\n%s", want, tail(string(out), 20))
	}
	t.Logf("worker.sh start returned in %s", time.Since(began).Round(time.Millisecond))

	own := ray.NewProbe(ray.ProbeOptions{Python: env.python, Script: env.probeScript, Address: c.gcs,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	defer own.Close()
	var node mvp.Node
	waitFor(t, 90*time.Second, "the node worker.sh started to be alive in Ray", func() (bool, string) {
		v, err := own.ReadCluster(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, n := range v.Nodes {
			if n.Alive && !n.IsHead {
				node = n
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d nodes", len(v.Nodes))
	})
	if node.Total["GPU"] != gpus || node.Total["worker_node"] != 100 || node.Labels["mvp-dev/worker"] != "by-worker-sh" {
		t.Fatalf("the node worker.sh started: GPU %g, worker_node %g, labels %v; want GPU %d, worker_node 100, mvp-dev/worker=by-worker-sh",
			node.Total["GPU"], node.Total["worker_node"], node.Labels, gpus)
	}

	s := startService(t, serviceOpts{dashboard: c.dashboard, gcs: c.gcs})
	task := s.submit(spec("ppo", 1, gpus, 1))
	done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second)
	if got := done.Attempts[len(done.Attempts)-1].DriverNodeID; got != node.ID {
		t.Errorf("the 1 × %d task's driver ran on node %q, want the node worker.sh started (%s)", gpus, got, node.ID)
	}
	raw, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, gpus+1, 1)), false)
	if err != nil {
		t.Fatalf("submit a 1 × %d task: %v", gpus+1, err)
	}
	var created struct {
		Warning string `json:"warning"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatalf("the answer to a submit: %v: %s", err, raw)
	}
	if want := fmt.Sprintf("at most %d GPU", gpus); !strings.Contains(created.Warning, "cannot start") || !strings.Contains(created.Warning, want) {
		t.Errorf("a 1 × %d task on a cluster whose only worker has %d GPUs: warning %q; want it to say it cannot start, %q",
			gpus+1, gpus, created.Warning, want)
	}
}
