//go:build e2e

package e2e

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/ray"
)

// ownCluster is a small Ray cluster a test starts for itself (ray-up.sh with free ports and a folder of its own),
// for what the shared cluster must not have: an environment variable on the head, say. It is stopped when the test
// ends; its nodes' logs are printed when the test failed.
type ownCluster struct {
	dir, dashboard, gcs string
	ray                 *ray.Client
	// spareAgentPort is the first of three free ports for the dashboard agent of one more node, one the test starts
	// itself.
	spareAgentPort int
}

// startOwnCluster starts a head and `workers` workers (0: the head alone) of `gpus` GPUs each; env is added to the environment of
// ray-up.sh, so every node's `ray start` (the head's dashboard, where Ray's job manager runs, among them) sees it.
func startOwnCluster(t *testing.T, workers, gpus int, env2 ...string) *ownCluster {
	t.Helper()
	// Not t.TempDir(): Ray's socket paths live under the folder, and a long test name would make them too long.
	dir, err := os.MkdirTemp("", "mvp-own.")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", filepath.Join(env.repo, "scripts", "free-ports.py"), "--block",
		strconv.Itoa(3+3*(workers+2))).Output()
	if err != nil {
		t.Fatalf("free ports for a cluster of the test's own: %v", err)
	}
	base, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("free-ports.py said %q: %v", out, err)
	}
	c := &ownCluster{dir: dir, dashboard: "http://127.0.0.1:" + strconv.Itoa(base+1), gcs: "127.0.0.1:" + strconv.Itoa(base),
		spareAgentPort: base + 3 + 3*(workers+1)}
	script := func(name string) *exec.Cmd {
		cmd := exec.Command("bash", filepath.Join(env.repo, "scripts", name))
		cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "RAY_WORKERS="+strconv.Itoa(workers),
			"RAY_GPUS_PER_WORKER="+strconv.Itoa(gpus), "RAY_CPUS_PER_WORKER="+strconv.Itoa(4*gpus),
			"MVP_RAY_PORT="+strconv.Itoa(base), "MVP_RAY_DASHBOARD_PORT="+strconv.Itoa(base+1),
			"MVP_RAY_CLIENT_PORT="+strconv.Itoa(base+2), "MVP_RAY_AGENT_PORT_BASE="+strconv.Itoa(base+3),
			"MVP_RAY_START_TIMEOUT=120")
		cmd.Env = append(cmd.Env, env2...)
		return cmd
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.printLogs(t)
		}
		if out, err := script("ray-down.sh").CombinedOutput(); err != nil {
			t.Errorf("ray-down.sh of the test's own cluster %s: %v\n%s", dir, err, out)
			return
		}
		_ = os.RemoveAll(dir)
	})
	began := time.Now()
	if out, err := script("ray-up.sh").CombinedOutput(); err != nil {
		t.Fatalf("ray-up.sh of a cluster of the test's own (%s): %v\n%s", dir, err, out)
	}
	t.Logf("own cluster in %s up in %s (GCS %s, dashboard %s)", dir, time.Since(began).Round(time.Second), c.gcs, c.dashboard)
	c.ray = ray.New(ray.Options{DashboardURL: c.dashboard, Timeout: 15 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	return c
}

// printLogs prints the tails of the cluster's node logs, its job manager's log and its drivers' logs.
func (c *ownCluster) printLogs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	more, _ := filepath.Glob(filepath.Join(c.dir, "ray", "session_latest", "logs", "job-driver-*.log"))
	files = append(files, more...)
	more, _ = filepath.Glob(filepath.Join(c.dir, "ray", "session_latest", "logs", "dashboard_JobHead.log"))
	files = append(files, more...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		t.Logf("--- %s (last 30 lines)\n%s", f, tail(string(b), 30))
	}
}

// TestADriverThatCannotStartWithinRaysStartTimeoutIsRequeued: on a cluster whose head has
// RAY_JOB_START_TIMEOUT_SECONDS=10, the job supervisor of attempt 1 cannot start within it (its Python worker is
// held at a gate, through runtime_env.py_executable, the way an image pull or a slow runtime env holds it). Ray's job
// manager fails the job JOB_SUPERVISOR_ACTOR_START_TIMEOUT ("Job supervisor actor failed to start within 10.0
// seconds…") and kills the supervisor: nothing of the run ran. mvp must class it INSUFFICIENT_RESOURCES and requeue
// the task (PENDING_RESOURCES, next_run_at after retry_interval_s, the next attempt number), as
// specs/failure-kinds.md says, not fail it; attempt 2, whose supervisor starts, runs to its end.
func TestADriverThatCannotStartWithinRaysStartTimeoutIsRequeued(t *testing.T) {
	const startTimeout = 10
	c := startOwnCluster(t, 1, 2, "RAY_JOB_START_TIMEOUT_SECONDS="+strconv.Itoa(startTimeout))
	held, gate := gatedPython(t)
	const retryS = 3
	s := startService(t, serviceOpts{dashboard: c.dashboard, gcs: c.gcs, pyExecutable: held, retryS: retryS})
	task := s.submit(spec("ppo", 1, 2, 1))
	got := s.waitJudged(task.ID, time.Duration(startTimeout+60)*time.Second)
	first := got.Attempts[0]
	info, err := c.ray.GetJob(ctxT(t), first.RaySubmissionID)
	if err != nil {
		t.Fatalf("Ray's job of attempt 1: %v", err)
	}
	t.Logf("Ray: %s %s %q; mvp: %s %s %q", info.Status, info.ErrorType, info.Message, got.State, first.FailureKind, first.Message)
	if info.ErrorType != "JOB_SUPERVISOR_ACTOR_START_TIMEOUT" {
		t.Errorf("Ray's error type for attempt 1: %q, want JOB_SUPERVISOR_ACTOR_START_TIMEOUT", info.ErrorType)
	}
	want := "Job supervisor actor failed to start within " + strconv.Itoa(startTimeout) + ".0 seconds"
	if first.FailureKind != "INSUFFICIENT_RESOURCES" || !strings.Contains(first.Message, want) {
		t.Errorf("attempt 1: %s %q; want INSUFFICIENT_RESOURCES saying %q", first.FailureKind, first.Message, want)
	}
	if got.State != "PENDING_RESOURCES" || got.NextRunAt == nil {
		t.Fatalf("the task after attempt 1: %s, next_run_at %v; want PENDING_RESOURCES with a next_run_at", got.State, got.NextRunAt)
	}
	if log := s.logs(task.ID, 1); strings.Contains(log, "verl-standin") {
		t.Errorf("attempt 1's driver ran, though Ray says its supervisor never started:\n%s", tail(log, 10))
	}
	if _, err := os.Stat(filepath.Join(s.sharedRoot, "jobs", task.ID, "results", "a01", "summary.json")); err == nil {
		t.Errorf("attempt 1 wrote results, though Ray says its supervisor never started")
	}
	t.Logf("processes still held at the gate after Ray's verdict: %v", heldAt(held))
	writeFile(t, gate, "")
	done := s.waitState(task.ID, "SUCCEEDED", 180*time.Second)
	if n := len(done.Attempts); n != 2 {
		t.Fatalf("%d attempts, want 2 (the one that never started and its retry)", n)
	}
	second := done.Attempts[1]
	if second.No != 2 || second.FailureKind != "" {
		t.Errorf("attempt 2: number %d, failure %q; want 2, none", second.No, second.FailureKind)
	}
	if second.CreatedAt.Before(got.NextRunAt.Add(-time.Second)) {
		t.Errorf("attempt 2 was made at %s, before the task's next_run_at %s", second.CreatedAt, *got.NextRunAt)
	}
	// Ray's job manager kills the supervisor actor when it fails the job, but the Python worker that was starting
	// for it was still held at the gate (measured on Ray 2.60): let go with the gate, it must not run attempt 1's
	// driver beside attempt 2 (Ray's JobSupervisor.run refuses a job that is no longer PENDING).
	driverLog := filepath.Join(c.dir, "ray", "session_latest", "logs", "job-driver-"+first.RaySubmissionID+".log")
	if b, err := os.ReadFile(driverLog); err == nil && strings.Contains(string(b), "verl-standin") {
		t.Errorf("attempt 1's driver ran once its supervisor's worker was let go:\n%s", tail(string(b), 10))
	}
	if _, err := os.Stat(filepath.Join(s.sharedRoot, "jobs", task.ID, "results", "a01", "summary.json")); err == nil {
		t.Errorf("attempt 1 wrote results once its supervisor's worker was let go")
	}
	retried := false
	for _, e := range s.events(task.ID) {
		retried = retried || e.Type == "RETRY_SCHEDULED" && strings.Contains(string(e.Payload), "INSUFFICIENT_RESOURCES")
	}
	if !retried {
		t.Errorf("no RETRY_SCHEDULED event naming INSUFFICIENT_RESOURCES")
	}
}

// heldAt lists the processes whose command line runs script (read from /proc).
func heldAt(script string) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), script) {
			out = append(out, filepath.Base(filepath.Dir(f))+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// gatedPython writes a Python for runtime_env.py_executable that waits until the file gate exists before it runs
// the cluster's Python: the job supervisors (and workers) started with it are held at the gate.
func gatedPython(t *testing.T) (held, gate string) {
	t.Helper()
	folder := t.TempDir()
	gate = filepath.Join(folder, "go")
	held = filepath.Join(folder, "gated-python")
	writeFile(t, held, "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.2; done\nexec "+env.python+" \"$@\"\n")
	if err := os.Chmod(held, 0o755); err != nil {
		t.Fatal(err)
	}
	return held, gate
}
