//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
)

// env is what scripts/e2e.sh hands the tests.
var env struct {
	dashboard, gcs, python, probeScript, repo, bin string
	// rayToken is the test cluster's Ray token ("" when it has none).
	rayToken string
}

var (
	rayc  *ray.Client
	probe *ray.Probe
)

func TestMain(m *testing.M) {
	env.dashboard = os.Getenv("MVP_E2E_DASHBOARD_URL")
	env.gcs = os.Getenv("MVP_E2E_GCS_ADDRESS")
	env.python = os.Getenv("MVP_E2E_RAY_PYTHON")
	env.probeScript = os.Getenv("MVP_E2E_PROBE_SCRIPT")
	env.repo = os.Getenv("MVP_E2E_REPO")
	env.bin = os.Getenv("MVP_E2E_BIN")
	if env.dashboard == "" || env.bin == "" {
		fmt.Println("e2e: MVP_E2E_* not set; run `make test-e2e` (scripts/e2e.sh), which starts a cluster. Skipping.")
		os.Exit(0)
	}
	// No single HTTP call of a test may hang until the package's timeout: its panic skips every cleanup (the
	// services started would outlive the run) and prints no mvp log. Long streams use their own clients.
	http.DefaultClient.Timeout = time.Minute
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rayToken := os.Getenv("MVP_E2E_RAY_TOKEN")
	env.rayToken = rayToken
	var probeEnv []string
	if rayToken != "" {
		probeEnv = []string{"RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN=" + rayToken}
	}
	rayc = ray.New(ray.Options{DashboardURL: env.dashboard, Token: rayToken, Timeout: 15 * time.Second, Logger: logger})
	probe = ray.NewProbe(ray.ProbeOptions{Python: env.python, Script: env.probeScript, Address: env.gcs, Env: probeEnv, Logger: logger})
	code := m.Run()
	probe.Close()
	os.Exit(code)
}

// waitFor polls cond until it holds or the deadline passes; cond returns whether it holds and what it saw.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := cond()
		if seen != "" {
			last = seen
		}
		if ok {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// workers returns the alive worker nodes of the live view.
func workers(t testing.TB) []mvp.Node {
	t.Helper()
	var v *mvp.ClusterView
	// The probe restarts itself after a cluster restart (TestRayOutage): retry for a while before failing.
	waitFor(t, 60*time.Second, "a cluster reading", func() (bool, string) {
		var err error
		v, err = probe.ReadCluster(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	var out []mvp.Node
	for _, n := range v.Nodes {
		if n.Alive && !n.IsHead && n.Total["GPU"] > 0 {
			out = append(out, n)
		}
	}
	return out
}

func freeGPUs(t testing.TB) []float64 {
	var out []float64
	for _, n := range workers(t) {
		out = append(out, n.Available["GPU"])
	}
	return out
}

// waitIdle waits until every worker GPU is free again, so a test starts on an idle cluster. A test waits for its
// own jobs to end; jobs still holding GPUs after 30 s were left by a test that failed (mvp's SIGTERM leaves Ray's
// jobs running, by design): they are stopped, and drivers left with no parent are killed, so that one failure does
// not fail every test after it.
func waitIdle(t testing.TB) {
	t.Helper()
	idle := func() (bool, string) {
		ns := workers(t)
		for _, n := range ns {
			if n.Available["GPU"] != n.Total["GPU"] {
				return false, fmt.Sprint(freeGPUs(t))
			}
		}
		return len(ns) > 0, fmt.Sprintf("%d workers", len(ns))
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if ok, _ := idle(); ok {
			return
		}
	}
	stopLeftovers(t)
	waitFor(t, 90*time.Second, "an idle cluster", idle)
}

// dashboardGet sends a GET of path to the test cluster's dashboard, with its token when it has one.
func dashboardGet(t testing.TB, path string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, env.dashboard+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env.rayToken != "" {
		req.Header.Set("Authorization", "Bearer "+env.rayToken)
	}
	return http.DefaultClient.Do(req)
}

// stopLeftovers stops every submitted Ray job that is still pending or running.
func stopLeftovers(t testing.TB) {
	t.Helper()
	resp, err := dashboardGet(t, "/api/jobs/")
	if err != nil {
		t.Logf("list Ray's jobs to stop leftovers: %v", err)
		return
	}
	defer resp.Body.Close()
	var jobs []struct {
		SubmissionID *string `json:"submission_id"`
		Status       string  `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jobs); err != nil {
		t.Logf("list Ray's jobs to stop leftovers (HTTP %d): %v", resp.StatusCode, err)
		return
	}
	for _, j := range jobs {
		if j.SubmissionID != nil && (j.Status == "PENDING" || j.Status == "RUNNING") {
			err := rayc.StopJob(context.Background(), *j.SubmissionID)
			t.Logf("stopping job %s, which a test before this one left %s: %v", *j.SubmissionID, j.Status, err)
		}
	}
	killOrphanedDrivers(t)
}

// killOrphanedDrivers kills the test workloads' drivers that run with no parent: Ray no longer follows them (its
// job ended, e.g. stopped while its shell was starting the command), so no stop reaches them, and they hold their
// GPUs until their run ends.
func killOrphanedDrivers(t testing.TB) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		if ppidOf(f) != 1 {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if err != nil || !(bytes.Contains(cmd, []byte("verl.trainer.")) || bytes.Contains(cmd, []byte("mvp_testkit."))) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		t.Logf("killing process %d, a driver that a test before this one left with no parent: %s", pid, cmdline(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// direct submits a job to Ray behind mvp's back; it is stopped when the test ends.
func direct(t testing.TB, id, entrypoint string) {
	t.Helper()
	err := rayc.SubmitJob(ctxT(t), &mvp.JobSubmission{Entrypoint: entrypoint, SubmissionID: id,
		EntrypointResources: map[string]float64{"worker_node": 1}})
	if err != nil {
		t.Fatalf("direct submit %s: %v", id, err)
	}
	t.Cleanup(func() { _ = rayc.StopJob(context.Background(), id) })
}

func waitJob(t testing.TB, id string, timeout time.Duration, want func(*mvp.JobInfo) bool) *mvp.JobInfo {
	t.Helper()
	var info *mvp.JobInfo
	waitFor(t, timeout, "ray job "+id, func() (bool, string) {
		var err error
		info, err = rayc.GetJob(ctxT(t), id)
		if err != nil {
			return false, err.Error()
		}
		return want(info), string(info.Status)
	})
	return info
}

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// service is a real `mvp serve` process.
type service struct {
	t          testing.TB
	dir        string
	cfgPath    string
	sharedRoot string
	dbPath     string
	port       int
	token      string
	extraEnv   []string
	serveArgs  []string
	cmd        *exec.Cmd
	logPath    string
	c          *api.Client
	exited     chan struct{}
}

// serviceOpts tune the service's dev.yaml.
type serviceOpts struct {
	tickS, retryS, gangWaitS float64
	maxRunning               int
	extraV2                  string
	// schedExtra is added inside v2.scheduler's mapping, e.g. ", policy: fifo".
	schedExtra string
	// authExtra is added inside v2.auth's mapping, e.g. ", users: [{name: alice, token_env: T}]".
	authExtra string
	env       []string
	// rayTokenEnv names the variable holding Ray's token (token-auth clusters).
	rayTokenEnv string
	// logCopyS is v2.ray.log_copy_s (default 1 in tests).
	logCopyS float64
	// logStreams is v2.ray.max_log_streams (default 0: followers copy; Ray 2.60 keeps a place of its state API
	// for good for each stream whose log stops growing, so a test that streams takes some of the cluster's 100).
	logStreams int
	// dataDir, when set, holds the database and the shared root (e.g. a small filesystem).
	dataDir string
	// sharedRoot, when set, is the shared root alone (the database stays in the test's folder).
	sharedRoot string
	// checkpoint is v2.sqlite.checkpoint_schedule (default: the service's own, every 10 min).
	checkpoint string
	// rayPython is v2.ray.python, the probe's Python (default: the cluster's, with Ray).
	rayPython string
	// serveArgs are added to mvp serve's arguments (after the defaults, so they win).
	serveArgs []string
	// nodePythonPath: dev.yaml's runtime_env sets no PYTHONPATH; jobs find the verl stand-in on the nodes' own
	// PYTHONPATH (ray-up.sh puts py-entrypoints there), as a cluster whose image has verl installed does.
	nodePythonPath bool
	// pyExecutable is runtime_env.py_executable: the command Ray starts the jobs' Python workers with (their
	// supervisors too), e.g. a script that sleeps before it runs Python, so that each job stays PENDING meanwhile.
	pyExecutable string
	// dashboard and gcs, when set, are the Ray addresses the service uses (address, v2.ray.gcs_address) instead of
	// the test cluster's: a proxy in front of them, or a cluster of the test's own.
	dashboard, gcs string
}

func startService(t testing.TB, o serviceOpts) *service {
	t.Helper()
	if o.tickS == 0 {
		o.tickS = 0.5
	}
	if o.retryS == 0 {
		o.retryS = 3
	}
	if o.gangWaitS == 0 {
		o.gangWaitS = 120
	}
	if o.maxRunning == 0 {
		o.maxRunning = 16 // the service's default (a 0 in the file means no bound)
	}
	if o.checkpoint == "" {
		o.checkpoint = "@every 10m"
	}
	if o.logCopyS == 0 {
		o.logCopyS = 1
	}
	if o.rayTokenEnv == "" {
		o.rayTokenEnv = "MVP_E2E_NO_RAY_TOKEN"
	}
	if o.rayPython == "" {
		o.rayPython = env.python
	}
	if o.dashboard == "" {
		o.dashboard = env.dashboard
	}
	if o.gcs == "" {
		o.gcs = env.gcs
	}
	dir := t.TempDir()
	data := dir
	if o.dataDir != "" {
		data = o.dataDir
	}
	s := &service{t: t, dir: dir, sharedRoot: filepath.Join(data, "shared"), dbPath: filepath.Join(data, "db", "mvp.sqlite3"),
		port: freePort(t), token: "e2e-token-0123456789abcdef", extraEnv: o.env, serveArgs: o.serveArgs}
	if o.sharedRoot != "" {
		s.sharedRoot = o.sharedRoot
	}
	s.cfgPath = filepath.Join(dir, "dev.yaml")
	runtimeEnv := fmt.Sprintf("runtime_env:\n  env_vars:\n    PYTHONPATH: %s\n", filepath.Join(env.repo, "py-entrypoints"))
	if o.nodePythonPath {
		runtimeEnv = "runtime_env:\n  env_vars: {HF_HUB_OFFLINE: '1'}\n"
	}
	if o.pyExecutable != "" {
		runtimeEnv += fmt.Sprintf("  py_executable: %s\n", o.pyExecutable)
	}
	cfg := fmt.Sprintf(`address: %s
shared_root: %s
entrypoint_num_cpus: 1
entrypoint_resources: {worker_node: 1}
%sv2:
  api: {host: 127.0.0.1, port: %d}
  auth: {token_env: MVP_E2E_TOKEN%s}
  sqlite: {db_path: %s, checkpoint_schedule: %q}
  scheduler: {tick_s: %g, retry_interval_s: %g, max_running_tasks: %d, gang_wait_s: %g%s}
  ray: {gcs_address: %s, python: %s, probe_script: %s, token_env: %s, log_copy_s: %g, max_log_streams: %d}
%s`, o.dashboard, s.sharedRoot, runtimeEnv, s.port, o.authExtra, s.dbPath, o.checkpoint, o.tickS, o.retryS,
		o.maxRunning, o.gangWaitS, o.schedExtra, o.gcs, o.rayPython, env.probeScript, o.rayTokenEnv, o.logCopyS,
		o.logStreams, o.extraV2)
	if err := os.WriteFile(s.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s.logPath = filepath.Join(dir, "mvp.log")
	s.c = &api.Client{Addr: fmt.Sprintf("http://127.0.0.1:%d", s.port), Token: s.token}
	s.start()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			b, _ := os.ReadFile(s.logPath)
			t.Logf("=== mvp serve log (%s) ===\n%s", s.logPath, tail(string(b), 200))
		}
	})
	return s
}

func (s *service) start() {
	s.t.Helper()
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	fmt.Fprintf(f, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(env.bin, append([]string{"serve", "--config", s.cfgPath, "--log-level", "debug"}, s.serveArgs...)...)
	cmd.Env = append(os.Environ(), append([]string{"MVP_E2E_TOKEN=" + s.token}, s.extraEnv...)...)
	cmd.Stdout, cmd.Stderr = f, f
	// Pdeathsig: a test binary that dies (Ctrl-C, CI's TERM, go test's timeout) takes its services with it; they
	// outlived it and went on deciding, against whatever cluster later took their Ray ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(s.exited) }()
	waitFor(s.t, 30*time.Second, "mvp serve to answer /healthz", func() (bool, string) {
		select {
		case <-s.exited:
			// Only a crash point (exit status 86, tests only) may end it before it answers; anything else is a
			// start that failed (a port taken since it was chosen, say), which the test must not take for a start.
			if code := cmd.ProcessState.ExitCode(); code != 86 {
				b, _ := os.ReadFile(s.logPath)
				s.t.Fatalf("mvp serve exited (status %d) before it answered /healthz:\n%s", code, tail(string(b), 40))
			}
			return true, "exited at a crash point"
		default:
		}
		resp, err := http.Get(s.c.Addr + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// kill ends the process at once (SIGKILL to its group: the probe child dies too).
func (s *service) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// stop sends SIGTERM and waits for a graceful exit.
func (s *service) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Errorf("mvp serve did not stop within 30 s of SIGTERM")
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// waitExit waits for the process to end by itself (a crash point) and returns its exit code.
func (s *service) waitExit(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.t.Fatalf("mvp serve did not exit within %s", timeout)
	}
	code := s.cmd.ProcessState.ExitCode()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // its probe child
	s.cmd = nil
	return code
}

func (s *service) submit(spec string) *mvp.Task {
	s.t.Helper()
	raw, err := s.c.Submit(ctxT(s.t), []byte(spec), false)
	if err != nil {
		s.t.Fatalf("submit: %v", err)
	}
	var t mvp.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		s.t.Fatal(err)
	}
	return &t
}

func (s *service) get(id string) *mvp.Task {
	s.t.Helper()
	t, _, err := s.c.Get(ctxT(s.t), id)
	if err != nil {
		s.t.Fatalf("get %s: %v", id, err)
	}
	return t
}

// waitState waits for a task to reach state; a terminal state other than the one wanted fails at once.
func (s *service) waitState(id string, state mvp.State, timeout time.Duration) *mvp.Task {
	s.t.Helper()
	var t *mvp.Task
	waitFor(s.t, timeout, fmt.Sprintf("%s to be %s", id, state), func() (bool, string) {
		t = s.get(id)
		if t.State.Terminal() && t.State != state {
			s.t.Fatalf("%s ended %s (want %s): %s", id, t.State, state, t.ErrorSummary)
		}
		return t.State == state, fmt.Sprintf("%s %s", t.State, t.PendingReason)
	})
	return t
}

// waitCanceled waits until task id is CANCELED and mvp has seen its Ray job end (its last attempt's Ray status is
// terminal; a task canceled before it ran has no job). The stand-in writes into the task's folder under shared_root
// until its driver is gone: a test that returned at CANCELED raced its own TempDir's removal ("unlinkat …/shared/jobs:
// directory not empty", seen once in CI).
func (s *service) waitCanceled(id string, timeout time.Duration) *mvp.Task {
	s.t.Helper()
	var got *mvp.Task
	waitFor(s.t, timeout, id+" canceled and its Ray job ended", func() (bool, string) {
		got = s.get(id)
		if got.State != mvp.StateCanceled {
			return false, string(got.State)
		}
		if len(got.Attempts) == 0 {
			return true, ""
		}
		a := got.Attempts[len(got.Attempts)-1]
		return a.RayStatus.Terminal(), "Ray: " + string(a.RayStatus)
	})
	return got
}

// waitJudged waits until the first attempt of task id carries a failure kind (or the task has ended) and returns
// the task as it then is.
func (s *service) waitJudged(id string, timeout time.Duration) *mvp.Task {
	s.t.Helper()
	var got *mvp.Task
	waitFor(s.t, timeout, "attempt 1 of "+id+" to be judged", func() (bool, string) {
		got = s.get(id)
		if len(got.Attempts) == 0 { // not admitted yet
			return got.State.Terminal(), fmt.Sprintf("%s %s, no attempt", got.State, got.PendingReason)
		}
		a := got.Attempts[0]
		return a.FailureKind != "" || got.State.Terminal(), fmt.Sprintf("%s %s %q", got.State, a.FailureKind, a.Message)
	})
	return got
}

func (s *service) events(id string) []*mvp.Event {
	s.t.Helper()
	var all []*mvp.Event
	cursor := ""
	for {
		p, _, err := s.c.Events(ctxT(s.t), id, cursor, 1000)
		if err != nil {
			s.t.Fatal(err)
		}
		all = append(all, p.Events...)
		if p.NextCursor == "" {
			return all
		}
		cursor = p.NextCursor
	}
}

func (s *service) logs(id string, attempt int) string {
	s.t.Helper()
	var b bytes.Buffer
	if err := s.c.Logs(ctxT(s.t), id, attempt, false, &b); err != nil {
		s.t.Fatalf("logs %s: %v", id, err)
	}
	return b.String()
}

// spec is a jobspec for the stand-in: hold seconds, exit code, and extra overrides.
func spec(workload string, nnodes, gpus int, hold float64, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workload: %s\nnnodes: %d\nn_gpus_per_node: %d\nmodel_path: /models/qwen\ntrain_file: /data/train.parquet\nval_file: /data/test.parquet\noverrides:\n  - mvp_test.hold_s=%g\n",
		workload, nnodes, gpus, hold)
	for _, e := range extra {
		fmt.Fprintf(&b, "  - %q\n", e)
	}
	return b.String()
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

var _ = io.Discard

// raceBehindMVPsBack submits a 2×4 task that waits (mvp_test.wait_file) between admission and verl's resource
// check, takes 2 GPUs behind mvp's back for holdS seconds, then lets the check run: it fails with verl's message.
func raceBehindMVPsBack(t *testing.T, s *service, holdS int, extraYAML ...string) *mvp.Task {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "go")
	task := s.submit(spec("ppo", 2, 4, 1, "mvp_test.wait_file="+gate) + strings.Join(extraYAML, ""))
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	// RUNNING is the driver's process started: ray.init() and its TaskRunner come after, and on a loaded machine
	// they took longer than the thief's hold, whose count starts once its group is placed (the check then found
	// every GPU free and the race was not lost).
	waitAtGate(t, s, task.ID, gate)
	direct(t, uniq("thief"), fmt.Sprintf("python3 -m mvp_testkit.hold --bundles 1 --gpus-per-bundle 2 --hold %d", holdS))
	waitFor(t, 60*time.Second, "the thief to hold 2 GPUs", func() (bool, string) {
		sum := 0.0
		for _, g := range freeGPUs(t) {
			sum += g
		}
		return sum <= 6, fmt.Sprint(freeGPUs(t))
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return task
}

// fragmentRunningGang runs a 1×4 task whose driver waits on a gate, then fragments the cluster behind mvp's back
// (one 2-GPU bundle on each worker, held holdS seconds, so 2 + 2 stay free) and opens the gate: verl's total check
// passes (4 ≥ 4) and its placement group can never be placed. It returns the task and the fragmenter's id.
func fragmentRunningGang(t *testing.T, s *service, holdS int, extraYAML ...string) (*mvp.Task, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "go")
	task := s.submit(spec("ppo", 1, 4, 1, "mvp_test.wait_file="+gate) + strings.Join(extraYAML, ""))
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	waitAtGate(t, s, task.ID, gate)
	frag := uniq("fragmenter")
	direct(t, frag, fmt.Sprintf("python3 -m mvp_testkit.hold --bundles 2 --gpus-per-bundle 2 --strategy STRICT_SPREAD --hold %d", holdS))
	waitFor(t, 60*time.Second, "2 + 2 free GPUs", func() (bool, string) {
		g := freeGPUs(t)
		return len(g) == 2 && g[0] == 2 && g[1] == 2, fmt.Sprint(g)
	})
	writeFile(t, gate, "")
	return task, frag
}

// waitAtGate waits until attempt 1 of task id says (in its driver log) that it waits for the file gate
// (mvp_test.wait_file): the run is then past ray.init() and its TaskRunner's start, just before verl's check.
func waitAtGate(t *testing.T, s *service, id, gate string) {
	t.Helper()
	waitFor(t, 120*time.Second, "attempt 1's driver to wait at its gate", func() (bool, string) {
		var b bytes.Buffer
		err := s.c.Logs(ctxT(t), id, 1, false, &b)
		return strings.Contains(b.String(), "verl-standin: waiting for "+gate), fmt.Sprintf("%v: %q", err, tail(b.String(), 3))
	})
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
