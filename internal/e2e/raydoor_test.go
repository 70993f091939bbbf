//go:build e2e

package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// rayDoor runs Ray 2.60's own client (the `ray` CLI and JobSubmissionClient of the pinned wheel) against a
// service's Ray Jobs door, as a user would point it there: RAY_API_SERVER_ADDRESS=http://<mvp>/ray and Ray's
// token mode with mvp's token.
type rayDoor struct {
	t   *testing.T
	s   *service
	env []string
}

func newRayDoor(t *testing.T, s *service) *rayDoor {
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "RAY_ADDRESS" || k == "RAY_API_SERVER_ADDRESS" || strings.HasPrefix(k, "RAY_AUTH") || k == "RAY_JOB_HEADERS" {
			continue // the client must talk to mvp, with mvp's token only
		}
		base = append(base, kv)
	}
	base = append(base, "RAY_API_SERVER_ADDRESS="+s.c.Addr+"/ray", "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN="+s.token)
	return &rayDoor{t: t, s: s, env: base}
}

// run runs `ray <args>` and returns its combined output and exit code; extra overrides the environment.
func (d *rayDoor) run(timeout time.Duration, extra []string, args ...string) (string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(env.python), "ray"), args...)
	cmd.Env = append(append([]string{}, d.env...), extra...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		d.t.Fatalf("ray %s did not end within %s:\n%s", strings.Join(args, " "), timeout, out)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			d.t.Fatalf("ray %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// status reads a job through the door as the SDK does (GET /ray/api/jobs/{id}).
func (d *rayDoor) status(id string) (string, string) {
	d.t.Helper()
	req, _ := http.NewRequest("GET", d.s.c.Addr+"/ray/api/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+d.s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var j struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &j) != nil {
		return "", fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	return j.Status, j.Message
}

func (d *rayDoor) waitStatus(id, status, msg string, timeout time.Duration) string {
	d.t.Helper()
	var m string
	waitFor(d.t, timeout, fmt.Sprintf("ray job %s to be %s (%q)", id, status, msg), func() (bool, string) {
		var st string
		st, m = d.status(id)
		return st == status && strings.Contains(m, msg), st + " " + m
	})
	return m
}

// workingDir makes a job folder: script.py prints a file of its working_dir and the given lines (one every
// pause seconds), then exits with the given code.
func workingDir(t *testing.T) string {
	dir := t.TempDir()
	script := `import os, sys, time
code, n, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print("data:", open(os.path.join("sub", "data.txt")).read().strip(), "task:", os.environ.get("MVP_TASK_ID", "?"), flush=True)
for i in range(n):
    print("line", i, flush=True)
    time.sleep(pause)
print("done with", code, flush=True)
sys.exit(code)
`
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "data.txt"), []byte("from-the-working-dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRayDoorCLI: the unmodified `ray job` CLI against mvp: submit with a working_dir (package upload, waits,
// prints the logs, exit status), --no-wait, status, logs -f, stop, list, delete, and 401/403 with a missing or
// wrong token. Its jobs are mvp tasks (`mvp list` shows them).
func TestRayDoorCLI(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	dir := workingDir(t)

	ok := uniq("cli-ok")
	out, code := d.run(3*time.Minute, nil, "job", "submit", "--working-dir", dir, "--submission-id", ok, "--", "python", "script.py", "0", "2", "0.2")
	if code != 0 || !strings.Contains(out, "data: from-the-working-dir task: mvp2-ray_job-") || !strings.Contains(out, "line 1") ||
		!strings.Contains(out, "done with 0") || !strings.Contains(out, "succeeded") {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	if n := len(d.s.events(mustTask(t, d, ok).ID)); n == 0 {
		t.Error("no events")
	}
	files, _ := filepath.Glob(filepath.Join(s.sharedRoot, "ray_packages", "_ray_pkg_*.zip"))
	if len(files) != 1 {
		t.Errorf("kept packages: %v", files)
	}

	bad := uniq("cli-fail")
	out, code = d.run(3*time.Minute, nil, "job", "submit", "--working-dir", dir, "--submission-id", bad, "--", "python", "script.py", "3", "0", "0")
	if code != 1 || !strings.Contains(out, "done with 3") || !strings.Contains(out, "failed") {
		t.Errorf("a failing job (exit %d):\n%s", code, out)
	}

	// --no-wait, then logs -f follows it to its end.
	follow := uniq("cli-follow")
	out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--working-dir", dir, "--submission-id", follow, "--", "python", "script.py", "0", "6", "0.5")
	if code != 0 || !strings.Contains(out, follow) {
		t.Fatalf("submit --no-wait (exit %d):\n%s", code, out)
	}
	out, code = d.run(3*time.Minute, nil, "job", "logs", "-f", follow)
	if code != 0 || !strings.Contains(out, "line 5") || !strings.Contains(out, "done with 0") {
		t.Errorf("logs -f (exit %d):\n%s", code, out)
	}
	out, code = d.run(time.Minute, nil, "job", "status", follow)
	if code != 0 || !strings.Contains(out, "Job '"+follow+"' succeeded") {
		t.Errorf("status (exit %d):\n%s", code, out)
	}

	// A long job is stopped: the mvp task is canceled, the client sees STOPPED.
	long := uniq("cli-stop")
	if out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--working-dir", dir, "--submission-id", long, "--", "python", "script.py", "0", "600", "1"); code != 0 {
		t.Fatalf("submit the long job (exit %d):\n%s", code, out)
	}
	d.waitStatus(long, "RUNNING", "", 2*time.Minute)
	out, code = d.run(2*time.Minute, nil, "job", "stop", long)
	if code != 0 || !strings.Contains(out, "STOPPED") && !strings.Contains(out, "stopped") {
		t.Errorf("stop (exit %d):\n%s", code, out)
	}
	if st := mustTask(t, d, long); st.State != mvp.StateCanceled {
		t.Errorf("the stopped job's task is %s", st.State)
	} else if info, err := rayc.GetJob(ctxT(t), st.ID+"--a01"); err != nil || !info.Status.Terminal() {
		// `ray job stop` waits for STOPPED: the driver must have stopped by then (it returned while the job ran
		// on for seconds: found in a walk-through).
		t.Errorf("when `ray job stop` returned, Ray's job was %+v (%v); want it ended", info, err)
	}

	out, code = d.run(time.Minute, nil, "job", "list")
	for _, id := range []string{ok, bad, follow, long} {
		if !strings.Contains(out, id) {
			t.Errorf("list (exit %d) lacks %s:\n%s", code, id, out)
		}
	}
	page, _, err := s.c.List(ctxT(t), "", string(mvp.WorkloadRayJob), 50, "")
	if err != nil || len(page.Tasks) != 4 {
		t.Errorf("mvp list of ray_job tasks: %+v %v", page, err)
	}

	out, code = d.run(time.Minute, nil, "job", "delete", long)
	if code != 0 {
		t.Errorf("delete (exit %d):\n%s", code, out)
	}
	if out, code = d.run(time.Minute, nil, "job", "status", long); code == 0 || !strings.Contains(out, "does not exist") {
		t.Errorf("status of a deleted job (exit %d):\n%s", code, out)
	}

	// 401 without a token, 403 with a wrong one.
	out, code = d.run(time.Minute, []string{"RAY_AUTH_MODE=disabled"}, "job", "list")
	if code == 0 || !strings.Contains(out, "Authentication required") {
		t.Errorf("no token (exit %d):\n%s", code, out)
	}
	out, code = d.run(time.Minute, []string{"RAY_AUTH_TOKEN=" + s.token + "-wrong"}, "job", "list")
	if code == 0 || !strings.Contains(out, "Authentication failed") {
		t.Errorf("a wrong token (exit %d):\n%s", code, out)
	}
}

// mustTask returns the mvp task behind a door job.
func mustTask(t *testing.T, d *rayDoor, id string) *mvp.Task {
	t.Helper()
	req, _ := http.NewRequest("GET", d.s.c.Addr+"/ray/api/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+d.s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || j.Metadata["mvp.task_id"] == "" {
		t.Fatalf("job %s: %v %+v", id, err, j)
	}
	return d.s.get(j.Metadata["mvp.task_id"])
}

// TestRayDoorSDK: JobSubmissionClient with runtime_env (env_vars), metadata and entrypoint_memory: submit, wait,
// status, logs, job info, list, stop of a finished job, delete.
func TestRayDoorSDK(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	id := uniq("sdk")
	script := `import json, sys, time
from ray.job_submission import JobSubmissionClient, JobStatus
c = JobSubmissionClient()
sid = c.submit_job(entrypoint="python -c \"import os; print('greeting', os.environ['GREETING'])\"",
    submission_id=sys.argv[1], runtime_env={"env_vars": {"GREETING": "hello sdk"}},
    metadata={"owner": "alice"}, entrypoint_memory=100 * 1024 * 1024, entrypoint_num_cpus=0.5)
deadline = time.time() + 180
while c.get_job_status(sid) not in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED} and time.time() < deadline:
    time.sleep(0.5)
info = c.get_job_info(sid)
out = {"sid": sid, "status": str(info.status.value), "logs": c.get_job_logs(sid), "metadata": info.metadata,
       "runtime_env": info.runtime_env, "start": info.start_time, "end": info.end_time,
       "listed": [j.submission_id for j in c.list_jobs()], "stopped": c.stop_job(sid), "deleted": c.delete_job(sid)}
try:
    c.get_job_info(sid)
    out["after_delete"] = "found"
except RuntimeError as e:
    out["after_delete"] = str(e)
print("RESULT " + json.dumps(out))
`
	var r struct {
		SID         string            `json:"sid"`
		Status      string            `json:"status"`
		Logs        string            `json:"logs"`
		Metadata    map[string]string `json:"metadata"`
		RuntimeEnv  map[string]any    `json:"runtime_env"`
		Start, End  *int64
		Listed      []string `json:"listed"`
		Stopped     bool     `json:"stopped"`
		Deleted     bool     `json:"deleted"`
		AfterDelete string   `json:"after_delete"`
	}
	runSDKScript(t, d, script, id, &r)
	if r.SID != id || r.Status != "SUCCEEDED" || !strings.Contains(r.Logs, "greeting hello sdk") || r.Metadata["owner"] != "alice" ||
		r.Start == nil || r.End == nil || *r.End < *r.Start || r.Stopped || !r.Deleted ||
		!strings.Contains(r.AfterDelete, "does not exist") {
		t.Errorf("sdk result: %+v", r)
	}
	found := false
	for _, l := range r.Listed {
		found = found || l == id
	}
	if !found {
		t.Errorf("list_jobs lacks %s: %v", id, r.Listed)
	}
	page, _, err := s.c.List(ctxT(t), "", string(mvp.WorkloadRayJob), 10, "")
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].Driver["memory"] != 100*1024*1024 || page.Tasks[0].State != mvp.StateSucceeded {
		t.Errorf("the mvp task: %+v %v", page, err)
	}
}

// TestRayDoorWaitsBehindGang: while a gang holds every GPU, a job submitted with the ray CLI with a gang in its
// metadata is PENDING with mvp's reason, then runs once the GPUs are free.
func TestRayDoorWaitsBehindGang(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	ns := workers(t)
	busy := s.submit(spec("ppo", len(ns), int(ns[0].Total["GPU"]), 60)) // long enough for two ray CLI runs on a busy machine
	s.waitState(busy.ID, mvp.StateRunning, 2*time.Minute)

	dir := workingDir(t)
	id := uniq("gang")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--working-dir", dir, "--submission-id", id,
		"--metadata-json", `{"mvp.nnodes": "1", "mvp.n_gpus_per_node": "2"}`, "--", "python", "script.py", "0", "1", "0")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	msg := d.waitStatus(id, "PENDING", "queued in mvp: waiting for GPUs", time.Minute)
	if !strings.Contains(msg, "GPU") {
		t.Errorf("the pending message does not say what it waits for: %q", msg)
	}
	out, code = d.run(time.Minute, nil, "job", "status", id)
	if code != 0 || !strings.Contains(out, "PENDING") || !strings.Contains(out, "queued in mvp: waiting for GPUs") {
		t.Errorf("status while waiting (exit %d):\n%s", code, out)
	}
	s.waitState(busy.ID, mvp.StateSucceeded, 3*time.Minute)
	d.waitStatus(id, "SUCCEEDED", "", 3*time.Minute)
	task := mustTask(t, d, id)
	if task.NNodes != 1 || task.GPUsPerNode != 2 || task.LatestAttemptNo != 1 {
		t.Errorf("the gang job's task: %+v", task)
	}
}

// TestRayDoorRequeuedRace: a job of the door whose gang loses the race for GPUs (taken behind mvp's back between
// admission and verl's check) is requeued by mvp and runs again; Ray's client sees one job that ends SUCCEEDED.
func TestRayDoorRequeuedRace(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	gate := filepath.Join(t.TempDir(), "go")
	id := uniq("race")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id,
		"--metadata-json", `{"mvp.nnodes": "2", "mvp.n_gpus_per_node": "4"}`, "--",
		"python3", "-m", "verl.trainer.main_ppo", "trainer.nnodes=2", "trainer.n_gpus_per_node=4", "mvp_test.hold_s=1",
		"mvp_test.wait_file="+gate)
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	d.waitStatus(id, "RUNNING", "", 2*time.Minute)
	waitAtGate(t, s, mustTask(t, d, id).ID, gate) // past ray.init() and the TaskRunner's start (raceBehindMVPsBack)
	direct(t, uniq("thief"), "python3 -m mvp_testkit.hold --bundles 1 --gpus-per-bundle 2 --hold 15")
	waitFor(t, 60*time.Second, "the thief to hold 2 GPUs", func() (bool, string) {
		sum := 0.0
		for _, g := range freeGPUs(t) {
			sum += g
		}
		return sum <= 6, fmt.Sprint(freeGPUs(t))
	})
	writeFile(t, gate, "")
	d.waitStatus(id, "PENDING", "queued in mvp: ", 2*time.Minute)
	// PENDING as Ray shows a job not started: no driver, so not the failed attempt's node, job id or exit code
	// (a client reading driver_exit_code took the requeued job for ended).
	req, _ := http.NewRequest("GET", d.s.c.Addr+"/ray/api/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+d.s.token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		var j struct {
			Status         string  `json:"status"`
			JobID          *string `json:"job_id"`
			DriverNodeID   *string `json:"driver_node_id"`
			DriverExitCode *int    `json:"driver_exit_code"`
		}
		err = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if err != nil || j.Status == "PENDING" && (j.JobID != nil || j.DriverNodeID != nil || j.DriverExitCode != nil) {
			t.Errorf("the requeued job as the door shows it (%v): %+v; want no job id, driver node or exit code", err, j)
		}
	} else {
		t.Errorf("GET the requeued job: %v", err)
	}
	d.waitStatus(id, "SUCCEEDED", "", 3*time.Minute)
	task := mustTask(t, d, id)
	if task.LatestAttemptNo < 2 || task.Attempts[0].FailureKind != mvp.FailureInsufficientResources {
		t.Errorf("the task was not requeued after losing the race: %+v", task.Attempts)
	}
	out, code = d.run(time.Minute, nil, "job", "list")
	if code != 0 || strings.Count(out, id) != 1 {
		t.Errorf("list (exit %d) should show %s once:\n%s", code, id, out)
	}
}

// TestRayDoorPackages: `ray job submit` with a runtime_env naming a local wheel in py_modules and a local .tar.gz as
// working_dir, through the door: Ray's client uploads the wheel by its file name and the archive by its hash, mvp keeps both, and the
// job (submitted to Ray by mvp later) imports the wheel's module and reads the archive's file.
func TestRayDoorPackages(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	dir := t.TempDir()
	wheel := filepath.Join(dir, "mvpwheel-0.1-py3-none-any.whl")
	writeZip(t, wheel, map[string]string{
		"mvpwheel/__init__.py":            "HELLO = 'hello from the wheel'\n",
		"mvpwheel-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: mvpwheel\nVersion: 0.1\n",
		"mvpwheel-0.1.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: mvp-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"mvpwheel-0.1.dist-info/RECORD": "mvpwheel/__init__.py,,\nmvpwheel-0.1.dist-info/METADATA,,\n" +
			"mvpwheel-0.1.dist-info/WHEEL,,\nmvpwheel-0.1.dist-info/RECORD,,\n",
	})
	archive := filepath.Join(dir, "job.tar.gz")
	writeTarGz(t, archive, map[string]string{"job/note.txt": "from the archive\n"})

	id := uniq("pkgs")
	renv, _ := json.Marshal(map[string]any{"py_modules": []string{wheel}, "working_dir": archive})
	out, code := d.run(4*time.Minute, nil, "job", "submit", "--submission-id", id, "--runtime-env-json", string(renv),
		"--", "python", "-c",
		"import glob, mvpwheel; print(mvpwheel.HELLO); p = glob.glob('**/note.txt', recursive=True); print(p, open(p[0]).read().strip())")
	if code != 0 || !strings.Contains(out, "hello from the wheel") || !strings.Contains(out, "from the archive") {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	kept, _ := filepath.Glob(filepath.Join(s.sharedRoot, "ray_packages", "*"))
	var names []string
	for _, k := range kept {
		names = append(names, filepath.Base(k))
	}
	got := strings.Join(names, " ")
	if !strings.Contains(got, "mvpwheel-0.1-py3-none-any.whl") || !strings.Contains(got, ".tar.gz") {
		t.Errorf("kept packages: %v", names)
	}
	st := mustTask(t, d, id)
	if st.State != mvp.StateSucceeded {
		t.Errorf("the task is %s", st.State)
	}
	// The request named no driver resources: it got dev.yaml's, so its driver ran on a worker, not on the head
	// (where Ray 2.60 puts such a driver).
	onWorker := false
	for _, n := range workers(t) {
		onWorker = onWorker || (len(st.Attempts) > 0 && n.ID == st.Attempts[0].DriverNodeID)
	}
	if !onWorker {
		t.Errorf("the driver ran on %q, not on a worker node", st.Attempts[0].DriverNodeID)
	}
}

func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range files {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRayDoorLabelSelector: a job's entrypoint_label_selector is part of mvp's admission, as Ray will read it.
// `ray job submit --entrypoint-label-selector` naming a worker's label (make ray-up labels each worker
// mvp-dev/worker=<n>) runs its driver on that worker; one naming a label no node has waits in mvp with a reason
// that says so, and is not handed to Ray (where it would sit PENDING for 15 minutes, holding a
// max_running_tasks place); a selector Ray could not read is refused at the door, naming the field.
func TestRayDoorLabelSelector(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	var target mvp.Node
	for _, n := range workers(t) {
		if n.Labels["mvp-dev/worker"] != "" {
			target = n // the last labelled worker: not the one the best fit would pick first by name
		}
	}
	if target.ID == "" {
		t.Fatalf("no worker has the label mvp-dev/worker (make ray-up sets it): %+v", workers(t))
	}
	label := target.Labels["mvp-dev/worker"]

	id := uniq("label")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id,
		"--entrypoint-label-selector", fmt.Sprintf(`{"mvp-dev/worker": %q}`, label), "--", "echo", "labelled")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	d.waitStatus(id, "SUCCEEDED", "", 2*time.Minute)
	task := mustTask(t, d, id)
	if a := task.Attempt(task.LatestAttemptNo); a == nil || a.DriverNodeID != target.ID {
		t.Errorf("the driver ran on %+v, want the node labelled mvp-dev/worker=%s (%s)", a, label, target.ID)
	}

	never := uniq("nolabel")
	out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", never,
		"--entrypoint-label-selector", `{"mvp-dev/worker": "in(nowhere,nothere)"}`, "--", "echo", "never")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	d.waitStatus(never, "PENDING", "can never fit on this cluster: no alive node labelled {mvp-dev/worker: in(nowhere,nothere)}", time.Minute)
	if task := mustTask(t, d, never); task.LatestAttemptNo != 0 || task.State != mvp.StatePendingResources {
		t.Errorf("a job no node can take was handed to Ray: %+v", task)
	}
	if out, code := d.run(time.Minute, nil, "job", "stop", never); code != 0 {
		t.Errorf("stop (exit %d):\n%s", code, out)
	}

	out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", uniq("badlabel"),
		"--entrypoint-label-selector", `{"mvp-dev/worker": "in(a,)"}`, "--", "echo", "bad")
	if code == 0 || !strings.Contains(out, "entrypoint_label_selector") {
		t.Errorf("a selector with an empty value was not refused (exit %d):\n%s", code, out)
	}
}

// TestRayDoorAtMvpsRoot: Ray's own CLI given mvp's URL as printed (no /ray), as a Ray user first tries it. It said
// "Jobs API is not supported on the Ray cluster. Please ensure the cluster is running Ray 1.9 or higher" (its
// version check was answered 404); the door answers Ray's paths at the root too.
func TestRayDoorAtMvpsRoot(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	root := []string{"RAY_API_SERVER_ADDRESS=" + s.c.Addr}
	id := uniq("root")
	out, code := d.run(3*time.Minute, root, "job", "submit", "--working-dir", workingDir(t), "--submission-id", id,
		"--", "python", "script.py", "0", "1", "0")
	if code != 0 || !strings.Contains(out, "data: from-the-working-dir task: mvp2-ray_job-") {
		t.Fatalf("ray job submit with mvp's root URL: exit %d:\n%s", code, out)
	}
	if out, code := d.run(time.Minute, root, "job", "status", id); code != 0 || !strings.Contains(out, "succeeded") {
		t.Errorf("ray job status with mvp's root URL: exit %d:\n%s", code, out)
	}
	// The same job through /ray.
	if st, msg := d.status(id); st != "SUCCEEDED" {
		t.Errorf("%s under /ray: %s %s", id, st, msg)
	}
}

// TestRayDoorPrunesPackagesNoTaskNeeds: packages Ray's client uploaded through the door are deleted once unused for
// v2.ray.package_retention_s, unless a task still to run names them; a job submitted again afterwards gets its
// package uploaded again by Ray's client, and runs. The packages' last use is set back by the test (the retention
// is at least 10 minutes), and mvp looks when it starts (then hourly): it is restarted.
func TestRayDoorPrunesPackagesNoTaskNeeds(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	kept := func() map[string]bool {
		files, _ := filepath.Glob(filepath.Join(s.sharedRoot, "ray_packages", "_ray_pkg_*"))
		m := map[string]bool{}
		for _, f := range files {
			m[filepath.Base(f)] = true
		}
		return m
	}
	dirOf := func(word string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "word.txt"), []byte(word+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	ended, endedDir := uniq("pruned"), dirOf(uniq("ended"))
	out, code := d.run(3*time.Minute, nil, "job", "submit", "--working-dir", endedDir, "--submission-id", ended,
		"--", "python", "-c", "print('word:', open('word.txt').read().strip())")
	if code != 0 || !strings.Contains(out, "word: ended") {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	first := kept()
	if len(first) != 1 {
		t.Fatalf("kept after one job: %v; want its package", first)
	}
	waiting := uniq("waits")
	out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--working-dir", dirOf(uniq("waiting")),
		"--submission-id", waiting, "--entrypoint-label-selector", `{"mvp-dev/worker": "nowhere"}`, "--", "echo", "never")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	d.waitStatus(waiting, "PENDING", "can never fit", time.Minute)
	var endedPkg, waitingPkg string
	for name := range kept() {
		if first[name] {
			endedPkg = name
		} else {
			waitingPkg = name
		}
	}
	if endedPkg == "" || waitingPkg == "" {
		t.Fatalf("kept: %v; want one package per job", kept())
	}
	old := time.Now().Add(-8 * 24 * time.Hour) // unused for longer than the default retention, a week
	for _, name := range []string{endedPkg, waitingPkg} {
		if err := os.Chtimes(filepath.Join(s.sharedRoot, "ray_packages", name), old, old); err != nil {
			t.Fatal(err)
		}
	}

	s.stop()
	s.start()
	waitFor(t, time.Minute, "mvp to prune the ended job's package", func() (bool, string) {
		k := kept()
		return !k[endedPkg], fmt.Sprintf("kept %v", k)
	})
	if !kept()[waitingPkg] {
		t.Errorf("the package of a job still waiting in mvp was pruned")
	}
	if b, _ := os.ReadFile(s.logPath); !strings.Contains(string(b), "pruned Ray packages") {
		t.Errorf("the service's log does not say what it pruned")
	}
	if task := mustTask(t, d, waiting); task.State != mvp.StatePendingResources {
		t.Errorf("the waiting job is %s after the restart", task.State)
	}

	// The same folder again: Ray's client asks for the package, is told it is not kept, uploads it, and the job runs.
	again := uniq("again")
	out, code = d.run(3*time.Minute, nil, "job", "submit", "--working-dir", endedDir, "--submission-id", again,
		"--", "python", "-c", "print('word:', open('word.txt').read().strip())")
	if code != 0 || !strings.Contains(out, "word: ended") || !kept()[endedPkg] {
		t.Fatalf("submit again (exit %d, kept %v):\n%s", code, kept(), out)
	}
	if out, code := d.run(time.Minute, nil, "job", "stop", waiting); code != 0 {
		t.Errorf("stop (exit %d):\n%s", code, out)
	}
}

// TestRayDoorFindsAJobByItsRayJobID: a job whose driver joins Ray (ray.init) gets a Ray job id, which the door
// shows as JobDetails.job_id; Ray's own server finds a job by it as by its submission id (find_job_by_ids), and
// its SDK takes "the job ID or submission ID". Through the door, Ray's SDK finds the job and its logs by that id.
func TestRayDoorFindsAJobByItsRayJobID(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	id := uniq("byjobid")
	script := `import json, sys, time
from ray.job_submission import JobSubmissionClient, JobStatus
c = JobSubmissionClient()
sid = c.submit_job(entrypoint="python -c \"import ray; ray.init(); print('joined', ray.get_runtime_context().get_job_id())\"",
    submission_id=sys.argv[1])
deadline = time.time() + 180
while c.get_job_status(sid) not in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED} and time.time() < deadline:
    time.sleep(0.5)
info = c.get_job_info(sid)
by = c.get_job_info(info.job_id) if info.job_id else None
print("RESULT " + json.dumps({"status": str(info.status.value), "job_id": info.job_id,
    "by_job_id": by.submission_id if by else None, "logs": c.get_job_logs(info.job_id) if info.job_id else ""}))
`
	var r struct {
		Status  string  `json:"status"`
		JobID   *string `json:"job_id"`
		ByJobID *string `json:"by_job_id"`
		Logs    string  `json:"logs"`
	}
	outb := runSDKScript(t, d, script, id, &r)
	if r.Status != "SUCCEEDED" || r.JobID == nil || r.ByJobID == nil || *r.ByJobID != id || !strings.Contains(r.Logs, "joined "+*r.JobID) {
		t.Errorf("a job found by the Ray job id the door shows: %+v\n%s", r, outb)
	}
}

// runSDKScript runs a Python script of Ray's SDK against the door with id as its argument, and decodes into out the
// JSON it prints after "RESULT " (its last such line); it returns all it printed.
func runSDKScript(t *testing.T, d *rayDoor, script, id string, out any) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sdk.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.python, path, id)
	cmd.Env = d.env
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sdk script: %v\n%s", err, outb)
	}
	i := bytes.LastIndex(outb, []byte("RESULT "))
	if i < 0 {
		t.Fatalf("no result:\n%s", outb)
	}
	if err := json.Unmarshal(bytes.TrimSpace(outb[i+len("RESULT "):]), out); err != nil {
		t.Fatalf("%v:\n%s", err, outb)
	}
	return outb
}

// TestARayDoorDriverWithAGPUWaitsBehindAReservation (found in a user walk-through): a Ray-door job whose driver
// alone asks for a GPU (`ray job submit --entrypoint-num-gpus 1`, no mvp gang) and that declares no run time (so
// mvp plans it for the default, days) went past a waiting 2 × 4 gang's reservation and took a GPU the gang needed
// at its reserved start, moving that start by days. It waits behind the reservation, naming the gang, as a 1-GPU
// jobspec task of that length does; the gang then starts no later than its reservation. A door job that declares
// a short run (metadata mvp.max_runtime_s) backfills before the reservation.
func TestARayDoorDriverWithAGPUWaitsBehindAReservation(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	ns := workers(t)
	if len(ns) != 2 || ns[0].Total["GPU"] != 4 || ns[1].Total["GPU"] != 4 {
		t.Skipf("needs two 4-GPU workers: %+v", ns)
	}
	busy := s.submit(spec("ppo", 2, 2, 25) + "max_runtime_s: 90\n").ID // 2 GPUs on each worker, for 25 s
	s.waitState(busy, mvp.StateRunning, 90*time.Second)
	waitFor(t, 60*time.Second, "two GPUs free on each worker", func() (bool, string) {
		g := freeGPUs(t)
		return len(g) == 2 && g[0] == 2 && g[1] == 2, fmt.Sprint(g)
	})
	gang := s.submit(spec("ppo", 2, 4, 2) + "max_runtime_s: 60\n").ID
	s.waitState(gang, mvp.StatePendingResources, 30*time.Second)
	id := uniq("driver-gpu")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id, "--entrypoint-num-gpus", "1",
		"--", "python", "-c", "import time; time.sleep(20)")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	task := mustTask(t, d, id)
	reserved := s.waitBehindReservation(task.ID, gang, "the door job with a GPU for its driver was admitted past the "+
		"2 × 4 gang's reservation")
	if st, msg := d.status(id); st != "PENDING" {
		t.Errorf("Ray's client sees the waiting door job as %s %q, want PENDING", st, msg)
	}
	// One that declares a short run (metadata mvp.max_runtime_s) ends before the reserved start: it backfills.
	short := uniq("driver-gpu-short")
	out, code = d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", short, "--entrypoint-num-gpus", "1",
		"--metadata-json", `{"mvp.max_runtime_s": "15"}`, "--", "python", "-c", "import time; time.sleep(2)")
	if code != 0 {
		t.Fatalf("submit of the short job (exit %d):\n%s", code, out)
	}
	d.waitStatus(short, "SUCCEEDED", "", 2*time.Minute)
	if sh := mustTask(t, d, short); sh.MaxRuntimeS != 15 || startOf(sh).After(reserved) {
		t.Errorf("the door job declaring 15 s: max_runtime_s %d, started %s (reservation %s); want it backfilled before the reservation",
			sh.MaxRuntimeS, startOf(sh).Format(time.RFC3339), reserved.Format(time.RFC3339))
	}
	g := s.waitState(gang, mvp.StateSucceeded, 240*time.Second)
	if start := startOf(g); start.After(reserved.Add(10 * time.Second)) {
		t.Errorf("the gang started at %s, after its reservation at %s", start.Format(time.RFC3339), reserved.Format(time.RFC3339))
	}
	d.waitStatus(id, "SUCCEEDED", "", 3*time.Minute)
	s.waitState(busy, mvp.StateSucceeded, 60*time.Second)
}
