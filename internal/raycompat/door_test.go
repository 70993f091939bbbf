package raycompat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// door talks to a running service's Ray door as Ray's client does.
type door struct {
	t     *testing.T
	base  string
	token string
}

func startDoor(t *testing.T, ray *servicetest.Ray, gpus int) (*door, *service.Main) {
	t.Helper()
	cluster := servicetest.OneNode(gpus)
	for _, n := range cluster.View.Nodes {
		n.Total["memory"], n.Available["memory"] = 8<<30, 8<<30 // Ray counts memory as a resource too
	}
	m := servicetest.Start(t, &service.Main{Ray: ray, Cluster: cluster})
	return &door{t: t, base: m.URL() + "/ray", token: m.APIToken()}, m
}

// do sends a request and returns the status and the body.
func (d *door) do(method, path string, body []byte) (int, []byte) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.base+path, bytes.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// ok sends a request that must answer exactly 200 and decodes its body into out, which must hold every key
// (Ray's client builds dataclasses from these bodies: one key more or less is a TypeError).
func (d *door) ok(method, path string, body []byte, out any) {
	d.t.Helper()
	code, b := d.do(method, path, body)
	if code != http.StatusOK {
		d.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			d.t.Fatalf("%s %s: %s: %v", method, path, b, err)
		}
	}
}

type details struct {
	Type                   string            `json:"type"`
	JobID                  *string           `json:"job_id"`
	SubmissionID           string            `json:"submission_id"`
	DriverInfo             map[string]string `json:"driver_info"`
	Status                 string            `json:"status"`
	Entrypoint             string            `json:"entrypoint"`
	Message                string            `json:"message"`
	ErrorType              *string           `json:"error_type"`
	StartTime              *int64            `json:"start_time"`
	EndTime                *int64            `json:"end_time"`
	Metadata               map[string]string `json:"metadata"`
	RuntimeEnv             map[string]any    `json:"runtime_env"`
	DriverAgentHTTPAddress *string           `json:"driver_agent_http_address"`
	DriverNodeID           *string           `json:"driver_node_id"`
	DriverExitCode         *int              `json:"driver_exit_code"`
}

func (d *door) job(id string) details {
	d.t.Helper()
	var j details
	d.ok("GET", "/api/jobs/"+id, nil, &j)
	return j
}

// waitStatus waits until the job shows status (and message containing msg), and returns it.
func (d *door) waitStatus(id, status, msg string) details {
	d.t.Helper()
	var j details
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if j = d.job(id); j.Status == status && strings.Contains(j.Message, msg) {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.t.Fatalf("job %s never became %s with %q; last %+v", id, status, msg, j)
	return j
}

func waitSubmissions(t *testing.T, ray *servicetest.Ray, n int) []*mvp.JobSubmission {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(ray.Submissions()) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	subs := ray.Submissions()
	if len(subs) < n {
		t.Fatalf("%d submissions reached Ray, want %d", len(subs), n)
	}
	return subs
}

const pkg = "_ray_pkg_3cffdc30bccf94e2.zip"

// TestDoorJobLifecycle walks one job through the door as `ray job submit --working-dir` and the SDK do: package
// check and upload, submit, status, logs, a refused duplicate, stop, delete; and checks what reached Ray.
func TestDoorJobLifecycle(t *testing.T) {
	ray := servicetest.NewRay()
	d, m := startDoor(t, ray, 4)

	var version map[string]string
	d.ok("GET", "/api/version", nil, &version)
	if version["ray_version"] != "2.60.0" || version["version"] != "4" {
		t.Errorf("version: %v", version)
	}
	if code, _ := d.do("GET", "/api/packages/gcs/"+pkg, nil); code != http.StatusNotFound {
		t.Errorf("unknown package: %d, want 404 (the client uploads on 404)", code)
	}
	zip := []byte("PK\x03\x04 the archive")
	d.ok("PUT", "/api/packages/gcs/"+pkg, zip, nil)
	d.ok("GET", "/api/packages/gcs/"+pkg, nil, nil)

	body := `{"entrypoint":"python script.py --name 'a b'","submission_id":"job-1",
		"runtime_env":{"working_dir":"gcs://` + pkg + `","env_vars":{"A":"1"}},
		"metadata":{"owner":"alice"},"entrypoint_num_cpus":1.5,"entrypoint_memory":1073741824,
		"entrypoint_label_selector":{"ray.io/node-type":"worker"}}`
	var sub struct {
		JobID        string `json:"job_id"`
		SubmissionID string `json:"submission_id"`
	}
	d.ok("POST", "/api/jobs/", []byte(body), &sub)
	if sub.JobID != "job-1" || sub.SubmissionID != "job-1" {
		t.Errorf("submit answer: %+v", sub)
	}
	code, b := d.do("POST", "/api/jobs/", []byte(body))
	if code == http.StatusOK || !strings.Contains(string(b), "Job with submission_id job-1 already exists") {
		t.Errorf("a second job-1: %d %s", code, b)
	}
	// An id the door answers to (it finds mvp tasks by their ids too) cannot be taken as a new submission id:
	// the new job would shadow the task under /api/jobs/{id}.
	var first details
	d.ok("GET", "/api/jobs/job-1", nil, &first)
	other := first.Metadata["mvp.task_id"]
	code, b = d.do("POST", "/api/jobs/", []byte(`{"entrypoint":"echo hi","submission_id":"`+other+`"}`))
	if code == http.StatusOK || !strings.Contains(string(b), "already exists") {
		t.Errorf("a submission id that is a task's id: %d %s", code, b)
	}

	s := waitSubmissions(t, ray, 1)[0]
	j := d.waitStatus("job-1", "PENDING", "submitted to Ray")
	taskID := j.Metadata["mvp.task_id"]
	if s.Entrypoint != "python script.py --name 'a b'" || s.SubmissionID != taskID+"--a01" || s.EntrypointNumCPUs != 1.5 ||
		s.EntrypointMemory != 1<<30 || s.EntrypointLabelSelector["ray.io/node-type"] != "worker" ||
		s.Metadata["owner"] != "alice" || s.Metadata["task_id"] != taskID || s.RuntimeEnv["working_dir"] != "gcs://"+pkg {
		t.Errorf("submission to Ray: %+v", s)
	}
	if got, ok := ray.Package("gcs://" + pkg); !ok || !bytes.Equal(got, zip) {
		t.Errorf("the package was not uploaded to Ray before the submission: %q %v", got, ok)
	}
	if j.Type != "SUBMISSION" || j.SubmissionID != "job-1" || j.Entrypoint != s.Entrypoint || j.StartTime == nil ||
		j.EndTime != nil || j.RuntimeEnv["working_dir"] != "gcs://"+pkg || j.Metadata["owner"] != "alice" {
		t.Errorf("job: %+v", j)
	}

	ray.Set(s.SubmissionID, mvp.RayRunning)
	ray.AddLog(s.SubmissionID, "hello\n")
	d.waitStatus("job-1", "RUNNING", "")
	d.waitStatus(taskID, "RUNNING", "") // by mvp's task id too
	var logs struct {
		Logs string `json:"logs"`
	}
	d.ok("GET", "/api/jobs/job-1/logs", nil, &logs)
	if !strings.HasSuffix(logs.Logs, "hello\n") {
		t.Errorf("logs: %q", logs.Logs)
	}
	if code, b := d.do("DELETE", "/api/jobs/job-1", nil); code == http.StatusOK || !strings.Contains(string(b), "non-terminal state RUNNING") {
		t.Errorf("delete of a running job: %d %s", code, b)
	}

	var list []details
	d.ok("GET", "/api/jobs/", nil, &list)
	if len(list) != 1 || list[0].SubmissionID != "job-1" {
		t.Errorf("list: %+v", list)
	}

	var stopped struct {
		Stopped bool `json:"stopped"`
	}
	d.ok("POST", "/api/jobs/job-1/stop", nil, &stopped)
	if !stopped.Stopped {
		t.Error("stop answered stopped=false for a running job")
	}
	j = d.waitStatus("job-1", "STOPPED", "")
	if j.EndTime == nil {
		t.Errorf("stopped job without end_time: %+v", j)
	}
	d.ok("POST", "/api/jobs/job-1/stop", nil, &stopped)
	if stopped.Stopped {
		t.Error("a second stop answered stopped=true")
	}

	// Visible through mvp's own API as a ray_job task.
	c := m.Client()
	page, _, err := c.List(context.Background(), "", string(mvp.WorkloadRayJob), 10, "")
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != taskID || page.Tasks[0].SubmissionID != "job-1" {
		t.Fatalf("mvp list: %+v %v", page, err)
	}

	var deleted struct {
		Deleted bool `json:"deleted"`
	}
	d.ok("DELETE", "/api/jobs/job-1", nil, &deleted)
	if !deleted.Deleted {
		t.Error("deleted=false")
	}
	if code, b := d.do("GET", "/api/jobs/job-1", nil); code != http.StatusNotFound || string(b) != "Job job-1 does not exist" {
		t.Errorf("a deleted job: %d %q", code, b)
	}
	d.ok("GET", "/api/jobs/", nil, &list)
	if len(list) != 0 {
		t.Errorf("list after the delete: %+v", list)
	}
	kept, _, err := c.Get(context.Background(), taskID)
	if err != nil || !kept.DoorDeleted || kept.State != mvp.StateCanceled {
		t.Errorf("the mvp task after the delete: %+v %v", kept, err)
	}
	// The id is free again.
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo again","submission_id":"job-1","runtime_env":{},"metadata":{}}`), &sub)
	// The mvp task's own id is not: it names that task in mvp's API for ever, and a new job under it would make one
	// id name two tasks.
	if code, b := d.do("POST", "/api/jobs/", []byte(`{"entrypoint":"echo","submission_id":"`+taskID+`"}`)); code/100 == 2 ||
		!strings.Contains(string(b), "already exists") {
		t.Errorf("a new job under the id of a deleted job's mvp task: %d %s", code, b)
	}
}

// TestDoorRefusals: bad requests, tokens and package names get the status and message Ray's client shows.
func TestDoorRefusals(t *testing.T) {
	d, _ := startDoor(t, servicetest.NewRay(), 4)
	for _, c := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/api/jobs/", `{"entrypoint":"x","bogus":1}`, 400, `unknown field "bogus"`},
		// Ray's dataclass matches keys exactly (measured: Ray 2.60 answers 400); Go's decoder ignores their case.
		{"POST", "/api/jobs/", `{"Entrypoint":"x"}`, 400, `unknown field "Entrypoint"`},
		{"POST", "/api/jobs/", `{"entrypoint":"x","Runtime_Env":{}}`, 400, `unknown field "Runtime_Env"`},
		{"POST", "/api/jobs/", `{"runtime_env":{}}`, 400, "entrypoint is required"},
		// Only blanks is no command either: it was taken, held its driver's place in the queue and "succeeded"
		// having run nothing (found by a user's-eye drill).
		{"POST", "/api/jobs/", `{"entrypoint":"  \t\n "}`, 400, "entrypoint is required"},
		{"POST", "/api/jobs/", `{"entrypoint":"x","submission_id":"a/b"}`, 400, "submission_id"},
		// A number too large for its field said "must be a number, got number" (a drill found it).
		{"POST", "/api/jobs/", `{"entrypoint":"x","entrypoint_num_gpus":1e400}`, 400,
			`"entrypoint_num_gpus" is out of range: 1e400 does not fit in a number`},
		{"POST", "/api/jobs/", `{"entrypoint":"x","entrypoint_num_gpus":"1"}`, 400,
			`"entrypoint_num_gpus" must be a number, got a string`},
		{"POST", "/api/jobs/", `{"entrypoint":"x","metadata":{"mvp.nnodes":"2"}}`, 400, "give both or neither"},
		{"GET", "/api/jobs/nope", "", 404, "Job nope does not exist"},
		{"POST", "/api/jobs/nope/stop", "", 404, "Job nope does not exist"},
		{"GET", "/api/packages/gcs/../../etc/passwd", "", 404, ""},
		{"GET", "/api/packages/gcs/passwd", "", 400, "not one Ray's client makes"},
		{"PUT", "/api/packages/s3/" + pkg, "PK", 400, "only gcs:// packages"},
		{"PUT", "/api/packages/gcs/_ray_pkg_xyz.zip", "PK", 400, "not one Ray's client makes"},
	} {
		code, b := d.do(c.method, c.path, []byte(c.body))
		if code != c.code || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s %s %s: %d %q, want %d %q", c.method, c.path, c.body, code, b, c.code, c.msg)
		}
	}
	token := d.token
	d.token = ""
	if code, b := d.do("GET", "/api/version", nil); code != http.StatusUnauthorized || !strings.Contains(string(b), "Authorization") {
		t.Errorf("no token: %d %s", code, b)
	}
	d.token = token + "x"
	if code, b := d.do("GET", "/api/jobs/", nil); code != http.StatusForbidden || !strings.Contains(string(b), "not valid") {
		t.Errorf("wrong token: %d %s", code, b)
	}
}

// TestDoorPendingBehindGang: a job whose gang does not fit while another holds the GPUs shows PENDING with mvp's
// reason, then runs when they are free; one that can never fit says so.
func TestDoorPendingBehindGang(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	gang := `{"entrypoint":"python train.py","submission_id":"%s","runtime_env":{},"metadata":{"mvp.nnodes":"1","mvp.n_gpus_per_node":"%d"}}`
	d.ok("POST", "/api/jobs/", []byte(strings.Replace(strings.Replace(gang, "%s", "first", 1), "%d", "4", 1)), nil)
	first := waitSubmissions(t, ray, 1)[0]
	d.ok("POST", "/api/jobs/", []byte(strings.Replace(strings.Replace(gang, "%s", "second", 1), "%d", "2", 1)), nil)
	d.ok("POST", "/api/jobs/", []byte(strings.Replace(strings.Replace(gang, "%s", "huge", 1), "%d", "8", 1)), nil)
	j := d.waitStatus("second", "PENDING", "queued in mvp: waiting for GPUs: needs 1 node(s) with 2 GPU")
	if j.EndTime != nil {
		t.Errorf("pending job with an end time: %+v", j)
	}
	d.waitStatus("huge", "PENDING", "can never fit on this cluster")

	ray.Set(first.SubmissionID, mvp.RaySucceeded)
	d.waitStatus("first", "SUCCEEDED", "")
	subs := waitSubmissions(t, ray, 2)
	second := subs[1]
	if second.Metadata["submission_id"] != "second" {
		t.Fatalf("second submission: %+v", second)
	}
	ray.Set(second.SubmissionID, mvp.RayRunning)
	d.waitStatus("second", "RUNNING", "")
	ray.Set(second.SubmissionID, mvp.RayFailed)
	j = d.waitStatus("second", "FAILED", "")
	if j.EndTime == nil || j.ErrorType == nil {
		t.Errorf("failed job: %+v", j)
	}
}

// TestDoorLogTail: the WebSocket sends whole lines as text frames while the job runs and a normal close once it
// has ended and its log is drained.
func TestDoorLogTail(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python x.py","submission_id":"tail-1","runtime_env":{},"metadata":{}}`), nil)
	s := waitSubmissions(t, ray, 1)[0]

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(d.base, "http") + "/api/jobs/tail-1/logs/tail"
	if _, _, err := websocket.Dial(ctx, ws, nil); err == nil {
		t.Fatal("a tail without a token was accepted")
	}
	c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ray.Set(s.SubmissionID, mvp.RayRunning)
	ray.AddLog(s.SubmissionID, "one\ntw")
	var got []string
	read := func() bool {
		typ, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("the tail ended with %v", err)
			}
			return false
		}
		if typ != websocket.MessageText {
			t.Errorf("frame type %v", typ)
		}
		got = append(got, string(b))
		return true
	}
	if !read() {
		t.Fatal("closed before the first line")
	}
	ray.AddLog(s.SubmissionID, "o\nthree\n")
	ray.Set(s.SubmissionID, mvp.RaySucceeded)
	for read() {
	}
	all := strings.Join(got, "")
	if all != "log of "+s.SubmissionID+"\none\ntwo\nthree\n" {
		t.Errorf("tailed %q", all)
	}
	for _, f := range got {
		if !strings.HasSuffix(f, "\n") {
			t.Errorf("frame %q is not whole lines", f)
		}
	}
	if !slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, "o\n") || strings.Contains(f, "two\n") }) {
		t.Errorf("frames %q", got)
	}
}

// refusingRay refuses every submission, as Ray does a runtime_env it cannot take.
type refusingRay struct{ *servicetest.Ray }

func (refusingRay) SubmitJob(context.Context, *mvp.JobSubmission) error {
	return &mvp.Error{Code: mvp.CodeInvalid, Message: "runtime_env is not valid"}
}

// TestDoorAsRayAnswers: what Ray's own job server accepts or answers, the door does too (found in review):
// every package name Ray's client makes (wheels by their file name, tar archives), a job Ray refused has a log
// (empty: no driver ran), and ids that a URL path cannot hold as they are ("." and "..") are refused up front.
func TestDoorAsRayAnswers(t *testing.T) {
	d, _ := startDoor(t, servicetest.NewRay(), 4)
	for _, name := range []string{"x-1.0-py3-none-any.whl", "_ray_pkg_3cffdc30bccf94e2cafe0123456789abcdef0123.tar.gz",
		"_ray_pkg_3cffdc30bccf94e2cafe0123456789abcdef0123.tar.xz"} {
		if code, b := d.do("GET", "/api/packages/gcs/"+name, nil); code != http.StatusNotFound {
			t.Errorf("check of package %s: %d %s, want 404 (then the client uploads it)", name, code, b)
		}
		d.ok("PUT", "/api/packages/gcs/"+name, []byte("PK\x03\x04"), nil)
		d.ok("GET", "/api/packages/gcs/"+name, nil, nil)
	}
	for _, id := range []string{".", ".."} {
		if code, b := d.do("POST", "/api/jobs/", []byte(`{"entrypoint":"x","submission_id":"`+id+`"}`)); code != http.StatusBadRequest {
			t.Errorf("submission_id %q: %d %s", id, code, b)
		}
	}

	cluster := servicetest.OneNode(4)
	m := servicetest.Start(t, &service.Main{Ray: refusingRay{servicetest.NewRay()}, Cluster: cluster})
	r := &door{t: t, base: m.URL() + "/ray", token: m.APIToken()}
	r.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo hi","submission_id":"r-1"}`), nil)
	r.waitStatus("r-1", "FAILED", "")
	var logs struct {
		Logs string `json:"logs"`
	}
	r.ok("GET", "/api/jobs/r-1/logs", nil, &logs)
	if logs.Logs != "" {
		t.Errorf("logs of a job no driver ran: %q", logs.Logs)
	}
}

// downCluster is a cluster that cannot be read (Ray down).
type downCluster struct{}

func (downCluster) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	return nil, fmt.Errorf("probe: %w (connection refused)", mvp.ErrRayUnavailable)
}

// TestDoorSaysWhenRayIsDown: while Ray's cluster cannot be read nothing is admitted, and a job waiting at the door
// says so. It said "waiting for the scheduler's next look" for as long as the outage lasted.
func TestDoorSaysWhenRayIsDown(t *testing.T) {
	m := servicetest.Start(t, &service.Main{Ray: servicetest.NewRay(), Cluster: downCluster{}})
	d := &door{t: t, base: m.URL() + "/ray", token: m.APIToken()}
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python train.py","submission_id":"during-outage","runtime_env":{},"metadata":{}}`), nil)
	d.waitStatus("during-outage", "PENDING", "Ray's cluster cannot be read")
}

// TestADoorTasksJobspecIsTheBodyAsSubmitted: a door task's `jobspec` (GET /api/v2/tasks/{id}) is the request as
// the client sent it; the effective spec shows what mvp added (dev.yaml's driver resources for a request that
// names none). It showed the defaults as if the request had named them (walk-through 17).
func TestADoorTasksJobspecIsTheBodyAsSubmitted(t *testing.T) {
	d, m := startDoor(t, servicetest.NewRay(), 4)
	body := []byte(`{"entrypoint": "echo raw",  "submission_id": "raw-body"}`)
	d.ok("POST", "/api/jobs/", body, nil)
	page, _, err := m.Client().List(context.Background(), "", "", 10, "")
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("list: %v %v", page, err)
	}
	var detail struct {
		JobSpec       string          `json:"jobspec"`
		EffectiveSpec json.RawMessage `json:"effective_spec"`
	}
	_, raw, err := m.Client().Get(context.Background(), page.Tasks[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &detail); err != nil {
		t.Fatal(err)
	}
	if detail.JobSpec != string(body) {
		t.Errorf("jobspec %q, want the body as submitted %q", detail.JobSpec, body)
	}
	if !strings.Contains(string(detail.EffectiveSpec), `"entrypoint_resources"`) {
		t.Errorf("effective_spec %s lacks the driver resources mvp gave the job", detail.EffectiveSpec)
	}
}

// TestADoorMetadataValueThatIsNotAStringIsNamed: `{"metadata": {"a": 1}}` was refused with `"metadata" must be a
// string, got a number`, naming the map and not the key (walk-through 17); the key is named.
func TestADoorMetadataValueThatIsNotAStringIsNamed(t *testing.T) {
	d, _ := startDoor(t, servicetest.NewRay(), 4)
	code, b := d.do("POST", "/api/jobs/", []byte(`{"entrypoint": "echo hi", "metadata": {"ok": "x", "a": 1}}`))
	if code != http.StatusBadRequest || !strings.Contains(string(b), "metadata.a must be a string") {
		t.Errorf("%d %s; want 400 naming metadata.a", code, b)
	}
}

// TestDoorAnswersAtMvpsRootToo: a Ray user points Ray's client at mvp's URL as printed (`ray job submit --address
// http://<mvp>:8080`), not at …/ray. Ray's client checks /api/version first and, answered 404, said only "Jobs API
// is not supported on the Ray cluster. Please ensure the cluster is running Ray 1.9 or higher" (found in a new
// user's walk-through). Ray's paths (/api/version, /api/jobs/, /api/packages/) are none of mvp's own (/api/v2/…):
// the door answers them at the root as under /ray.
func TestDoorAnswersAtMvpsRootToo(t *testing.T) {
	ray := servicetest.NewRay()
	d, m := startDoor(t, ray, 4)
	d.base = m.URL()
	var version map[string]string
	d.ok("GET", "/api/version", nil, &version)
	if version["version"] != "4" {
		t.Errorf("version at the root: %v", version)
	}
	d.ok("PUT", "/api/packages/gcs/"+pkg, []byte("PK\x03\x04 the archive"), nil)
	body := `{"entrypoint":"python script.py","submission_id":"root-1","runtime_env":{"working_dir":"gcs://` + pkg + `"}}`
	d.ok("POST", "/api/jobs/", []byte(body), nil)
	waitSubmissions(t, ray, 1)
	d.waitStatus("root-1", "PENDING", "")
	// The same job under /ray.
	d.base = m.URL() + "/ray"
	if j := d.job("root-1"); j.SubmissionID != "root-1" {
		t.Errorf("root-1 under /ray: %+v", j)
	}
	// Without the token, as under /ray.
	d.base, d.token = m.URL(), ""
	if code, _ := d.do("GET", "/api/jobs/", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/jobs/ at the root without a token: %d, want 401", code)
	}
}

// TestDoorRefusesALoneSurrogate: a JSON string escaping half of a UTF-16 surrogate pair alone ("\ud800") is no
// character; Go's decoder makes it U+FFFD, so the door stored and ran an entrypoint that was not sent (Ray's own
// server keeps the half, and its job fails when the command is encoded). The door refuses it (400) and keeps
// nothing, as mvp's own API does; a whole pair (an emoji escaped) is taken as the character it is.
func TestDoorRefusesALoneSurrogate(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	code, b := d.do("POST", "/api/jobs/", []byte(`{"entrypoint":"echo a\ud800b","submission_id":"lone-1"}`))
	if code != http.StatusBadRequest || !strings.Contains(string(b), "surrogate") {
		t.Fatalf("a lone surrogate: %d %s; want 400 saying so", code, b)
	}
	if code, _ := d.do("GET", "/api/jobs/lone-1", nil); code != http.StatusNotFound {
		t.Errorf("the refused job was kept: GET answered %d", code)
	}
	var sub struct {
		SubmissionID string `json:"submission_id"`
		JobID        any    `json:"job_id"`
	}
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo \ud83d\ude00","submission_id":"pair-1"}`), &sub)
	var j struct {
		Entrypoint string `json:"entrypoint"`
	}
	code, b = d.do("GET", "/api/jobs/pair-1", nil)
	if code != http.StatusOK {
		t.Fatalf("GET pair-1: %d %s", code, b)
	}
	if err := json.Unmarshal(b, &j); err != nil || j.Entrypoint != "echo 😀" {
		t.Errorf("an escaped pair: entrypoint %q (%v); want the character", j.Entrypoint, err)
	}
}

// TestAJobIsFoundByTheIDItsLogNames: a door job's driver log holds (usually as its first line) Ray's "Running entrypoint for
// job <task_id>--a01: …", the id mvp submitted the attempt to Ray under, which Ray's own server would have made the
// user's submission id; `ray job status`, `ray job logs` with that id answered 404 "Job … does not exist". The door
// finds the job by the id of any of its attempts; an attempt it has not made is still 404.
func TestAJobIsFoundByTheIDItsLogNames(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo hi","submission_id":"named-1"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	j := d.job(s.SubmissionID)
	if j.SubmissionID != "named-1" || j.Metadata["mvp.task_id"]+"--a01" != s.SubmissionID {
		t.Errorf("GET /api/jobs/%s: %+v; want job named-1", s.SubmissionID, j)
	}
	ray.AddLog(s.SubmissionID, "hello\n")
	var logs struct {
		Logs string `json:"logs"`
	}
	d.ok("GET", "/api/jobs/"+s.SubmissionID+"/logs", nil, &logs)
	if !strings.HasSuffix(logs.Logs, "hello\n") {
		t.Errorf("logs by the attempt's id: %q", logs.Logs)
	}
	taskID := j.Metadata["mvp.task_id"]
	for _, id := range []string{taskID + "--a02", taskID + "--a00", taskID + "--a1", taskID + "--", "named-1--a01"} {
		if code, b := d.do("GET", "/api/jobs/"+id, nil); code != http.StatusNotFound {
			t.Errorf("GET /api/jobs/%s: %d %s; want 404", id, code, b)
		}
	}
}

// TestATailOfAnEndedLogDoesNotHoldItWhole: `ray job logs -f` (or `ray job submit`'s wait) of a job that has ended
// read the rest of its kept log into one string before framing it: mvp held about four times the log (a 30 MB log
// raised its peak memory by 120 MB), so following a training's multi-GB log could exhaust the memory of the
// service that runs the queue. Ray's own tail reads the file a chunk at a time. The tail streams the kept copy
// through its frames: here a 64 MiB log is followed with well under that much more heap in use.
func TestATailOfAnEndedLogDoesNotHoldItWhole(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python x.py","submission_id":"big-1"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	line := strings.Repeat("x", 1023) + "\n"
	ray.AddLog(s.SubmissionID, strings.Repeat(line, 64<<10)+"the last line, without its newline")
	ray.Set(s.SubmissionID, mvp.RaySucceeded)
	// Once the log is kept in the task folder (shortly after the end), as a tail of an ended job mostly finds it.
	d.waitLogKept(d.waitStatus("big-1", "SUCCEEDED", ""))

	heap := sampleHeap()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(d.base, "http") + "/api/jobs/big-1/logs/tail"
	c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(8 << 20)
	var n int
	var last string
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("the tail ended with %v", err)
			}
			break
		}
		n += len(b)
		last = string(b)
	}
	grew := heap.growth()
	want := len("log of "+s.SubmissionID+"\n") + 64<<20 + len("the last line, without its newline")
	if n != want || !strings.HasSuffix(last, "the last line, without its newline") {
		t.Errorf("tailed %d bytes ending %q; want %d ending with the last line", n, mvp.Clip(last, 40), want)
	}
	t.Logf("the heap in use grew by %d MiB", grew>>20)
	if grew > 32<<20 {
		t.Errorf("the heap in use grew by %d MiB while a 64 MiB log was tailed; want it streamed (< 32 MiB)", grew>>20)
	}
}

// TestTheLogsOfAnEndedJobAreNotHeldWhole: `ray job logs` (GET /api/jobs/{id}/logs) read the whole log into a
// string and encoded it into a second buffer: on a live mvp, the logs of a 30 MB log raised its peak memory from 36
// MB to 216 MB, so a training's multi-GB log could exhaust the memory of the service that runs the queue. The
// answer is the same JSON, streamed: here a 64 MiB log is answered with well under that much more heap in use.
func TestTheLogsOfAnEndedJobAreNotHeldWhole(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python x.py","submission_id":"big-2"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	line := strings.Repeat("é<", 341) + "\n" // 1024 bytes: characters of two bytes, and one JSON escapes
	ray.AddLog(s.SubmissionID, strings.Repeat(line, 64<<10)+"end")
	ray.Set(s.SubmissionID, mvp.RaySucceeded)
	d.waitLogKept(d.waitStatus("big-2", "SUCCEEDED", ""))

	heap := sampleHeap()
	req, _ := http.NewRequest("GET", d.base+"/api/jobs/big-2/logs", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read as Ray's client would, but without holding it: the answer's length and its end.
	h := &tailBuffer{}
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	grew := heap.growth()
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("logs: %d %v", resp.StatusCode, err)
	}
	want, _ := json.Marshal(map[string]string{"logs": "log of " + s.SubmissionID + "\n" + strings.Repeat(line, 64<<10) + "end"})
	if n != int64(len(want))+1 || !bytes.HasSuffix(want, bytes.TrimSuffix(h.last, []byte("\n"))[len(h.last)-200:]) {
		t.Errorf("answer of %d bytes ending %q; want %d ending %q", n, h.last, len(want)+1, want[len(want)-100:])
	}
	t.Logf("the heap in use grew by %d MiB", grew>>20)
	if grew > 32<<20 {
		t.Errorf("the heap in use grew by %d MiB while a 64 MiB log was answered; want it streamed (< 32 MiB)", grew>>20)
	}
}

// waitLogKept waits until the door job j's attempt has its log kept in the task folder (shortly after its end).
func (d *door) waitLogKept(j details) {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var task struct {
			Attempts []struct {
				LogKept bool `json:"log_kept"`
			} `json:"attempts"`
		}
		_, b := d.do("GET", "/../api/v2/tasks/"+j.Metadata["mvp.task_id"], nil)
		if json.Unmarshal(b, &task) == nil && len(task.Attempts) == 1 && task.Attempts[0].LogKept {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatal("the log was never kept")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heapSampler follows the peak of the heap in use from its start (sampleHeap) until growth.
type heapSampler struct {
	base    uint64
	peak    atomic.Uint64
	stop    chan struct{}
	sampled chan struct{}
	gc      int
}

// sampleHeap starts sampling the heap in use every 2 ms. Garbage counts in the heap in use until a collection:
// it collects early (GOGC 5 until growth), so that what is measured is what is held.
func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), sampled: make(chan struct{}), gc: debug.SetGCPercent(5)}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.base = ms.HeapInuse
	go func() {
		defer close(h.sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > h.peak.Load() {
				h.peak.Store(m.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return h
}

// growth stops the sampling and returns the peak's growth over the start, in bytes.
func (h *heapSampler) growth() int64 {
	close(h.stop)
	<-h.sampled
	debug.SetGCPercent(h.gc)
	return int64(h.peak.Load()) - int64(h.base)
}

// tailBuffer keeps the last 256 bytes written to it.
type tailBuffer struct{ last []byte }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.last = append(b.last, p...)
	if len(b.last) > 256 {
		b.last = append([]byte(nil), b.last[len(b.last)-256:]...)
	}
	return len(p), nil
}

// TestASubmissionIDNamingAnAttemptIsRefused: the door finds a job by its attempts' Ray submission ids
// (<task_id>--a01), so a new job taking such an id as its submission id would shadow the job it names there, as
// one taking a task id would: it is refused the same way (409), for any attempt of a task that exists.
func TestASubmissionIDNamingAnAttemptIsRefused(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo hi","submission_id":"named-2"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	taskID := strings.TrimSuffix(s.SubmissionID, "--a01")
	for _, id := range []string{s.SubmissionID, taskID + "--a07"} {
		code, b := d.do("POST", "/api/jobs/", []byte(`{"entrypoint":"echo x","submission_id":"`+id+`"}`))
		if code != http.StatusConflict || !strings.Contains(string(b), "already exists") {
			t.Errorf("submission_id %s: %d %s; want 409 already exists", id, code, b)
		}
	}
	if j := d.job(s.SubmissionID); j.SubmissionID != "named-2" {
		t.Errorf("GET /api/jobs/%s: %+v; want job named-2", s.SubmissionID, j)
	}
	// An id of that form naming no task is anyone's.
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"echo y","submission_id":"no-such-task--a01"}`), nil)
}
