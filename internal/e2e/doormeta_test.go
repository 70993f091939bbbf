//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/workload"
)

// TestARayJobNamingMvpsMetadataKeysIsRefusedAtTheDoor: `ray job submit --metadata-json` naming one of the keys
// mvp sets on every door job (workload.RayJobMetadataKeys: task_id, attempt_no, mvp.task_id, …) is refused by
// Ray's own CLI against mvp's door: a non-zero exit whose output names the key; nothing is queued in mvp and
// nothing reaches Ray. Before, Ray's job got mvp's value while the door showed the user's (walk-through 17).
func TestARayJobNamingMvpsMetadataKeysIsRefusedAtTheDoor(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	for _, key := range workload.RayJobMetadataKeys {
		id := uniq("meta")
		meta, _ := json.Marshal(map[string]string{key: "x", "owner": "alice"})
		out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id,
			"--metadata-json", string(meta), "--", "echo", "never")
		if code == 0 || !strings.Contains(out, strconv.Quote(key)) || !strings.Contains(out, "mvp's own") {
			t.Errorf("metadata key %s: exit %d, want non-zero and the key named:\n%s", key, code, out)
		}
		if _, err := rayc.GetJob(ctxT(t), id); !errors.Is(err, mvp.ErrJobNotFound) {
			t.Errorf("metadata key %s: Ray has a job %s (%v); want none", key, id, err)
		}
	}
	page, _, err := s.c.List(ctxT(t), "", "", 50, "")
	if err != nil || len(page.Tasks) != 0 {
		t.Errorf("refused requests left tasks in mvp: %+v (%v)", page, err)
	}
	// A key of the user's own beside mvp's is taken, and kept as the user named it.
	id := uniq("meta-ok")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id,
		"--metadata-json", `{"owner": "alice", "task": "mine"}`, "--", "echo", "fine")
	if code != 0 {
		t.Fatalf("submit with the user's own keys (exit %d):\n%s", code, out)
	}
	d.waitStatus(id, "SUCCEEDED", "", 2*time.Minute)
	if info, err := rayc.GetJob(ctxT(t), mustTask(t, d, id).Attempts[0].RaySubmissionID); err != nil ||
		info.Metadata["owner"] != "alice" || info.Metadata["task"] != "mine" {
		t.Errorf("Ray's job of %s: %+v (%v); want the user's metadata owner=alice task=mine", id, info, err)
	}
}

// recorder is a reverse proxy in front of a service that keeps the body of every job submission (POST
// /ray/api/jobs/) it passes on, as the client sent it.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	srv    *httptest.Server
}

func newRecorder(t *testing.T, s *service) *recorder {
	target, err := url.Parse(s.c.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.TrimRight(req.URL.Path, "/") == "/ray/api/jobs" {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			r.bodies = append(r.bodies, b)
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// TestARayDoorTasksJobspecIsTheBodyRaysCLISent: a job submitted with `ray job submit` through mvp's door (through
// a proxy that keeps the request's body) shows as its mvp task's `jobspec` the very body Ray's CLI sent, byte for
// byte, without the driver resources dev.yaml gave it; its `effective_spec` is where those show
// (entrypoint_resources worker_node, entrypoint_num_cpus). It showed the defaults as if the request had named
// them (walk-through 17).
func TestARayDoorTasksJobspecIsTheBodyRaysCLISent(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	d := newRayDoor(t, s)
	rec := newRecorder(t, s)
	id := uniq("jobspec")
	out, code := d.run(time.Minute, []string{"RAY_API_SERVER_ADDRESS=" + rec.srv.URL + "/ray"},
		"job", "submit", "--no-wait", "--submission-id", id, "--metadata-json", `{"owner": "alice"}`,
		"--", "echo", "as", "submitted")
	if code != 0 {
		t.Fatalf("submit (exit %d):\n%s", code, out)
	}
	rec.mu.Lock()
	bodies := rec.bodies
	rec.mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("the proxy saw %d submissions, want 1: %q", len(bodies), bodies)
	}
	sent := bodies[0]
	t.Logf("Ray's CLI sent %s", sent)
	var req map[string]any
	if err := json.Unmarshal(sent, &req); err != nil || req["submission_id"] != id {
		t.Fatalf("the body Ray's CLI sent is not its submission of %s: %s (%v)", id, sent, err)
	}
	task := mustTask(t, d, id)
	_, raw, err := s.c.Get(ctxT(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var detail struct {
		JobSpec       string         `json:"jobspec"`
		EffectiveSpec map[string]any `json:"effective_spec"`
	}
	if err := json.Unmarshal(raw, &detail); err != nil {
		t.Fatal(err)
	}
	if detail.JobSpec != string(sent) {
		t.Errorf("the task's jobspec is not the body Ray's CLI sent:\n got %s\nsent %s", detail.JobSpec, sent)
	}
	if strings.Contains(detail.JobSpec, "worker_node") {
		t.Errorf("the jobspec %s holds dev.yaml's driver resources, which the request did not name", detail.JobSpec)
	}
	if eff := fmt.Sprint(detail.EffectiveSpec); !strings.Contains(eff, "worker_node") {
		t.Errorf("effective_spec %s lacks the driver resources dev.yaml gave the job (entrypoint_resources worker_node)", eff)
	}
	d.waitStatus(id, "SUCCEEDED", "", 2*time.Minute)
}
