package raycompat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/workload"
)

// FuzzSubmit feeds the door's POST /api/jobs/ a body as Ray's client (or anyone holding the token) may send it,
// through the real decoding and workload.PrepareRayJob into a SQLite store. A refusal is an *mvp.Error of a 4xx code
// with a message; a submission taken is a task whose Ray view (GET /api/jobs/{id}) shows the entrypoint, metadata
// and runtime_env sent, and whose first attempt builds into a Ray submission that carries them.
func FuzzSubmit(f *testing.F) {
	for _, s := range []string{
		`{"entrypoint": "python train.py"}`,
		`{"entrypoint": "echo hi", "submission_id": "raysubmit_1", "metadata": {"mvp.nnodes": "2", "mvp.n_gpus_per_node": "4"}}`,
		`{"entrypoint": "x", "runtime_env": {"working_dir": "gcs://_ray_pkg_0a1b.zip", "env_vars": {"A": "b"}}, "entrypoint_num_cpus": 1}`,
		`{"entrypoint": "x", "entrypoint_resources": {"worker_node": 1}, "entrypoint_label_selector": {"zone": "a"}}`,
		`{"entrypoint": "x", "job_id": "old"}`, `{"Entrypoint": "x"}`, `{"entrypoint": "x", "metadata": {"k": 1}}`,
		`{"entrypoint": "echo a"} {"entrypoint": "echo b"}`, `{"entrypoint": "echo a"} x`, "{\"entrypoint\": \"caf\xe9\"}",
		`{"entrypoint": "\ud800"}`, `{"entrypoint": "x", "submission_id": ".."}`, `{"entrypoint": "x", "submission_id": "a/b"}`,
		`{"entrypoint": "x", "metadata": {"task_id": "t"}}`, `{"entrypoint": "x", "entrypoint_memory": -1}`,
		`{"entrypoint": "x", "runtime_env": {"env_vars": {"A": 1}}}`, `{"entrypoint": "x", "entrypoint_num_gpus": 1e308, "entrypoint_resources": {"GPU": 1e308}}`,
		`null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	settings := workload.Settings{SharedRoot: f.TempDir(), EntrypointNumCPUs: 1, EntrypointResources: map[string]float64{"worker_node": 1},
		TimeLimits: jobspec.Defaults{DefaultMaxRuntimeS: 3 * 86400, MaxRuntimeCapS: 30 * 86400, DefaultMaxQueuedS: 7 * 86400,
			MaxQueuedCapS: 30 * 86400}}
	n := 0
	now := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), Clock: fixedClock(now), MaxBodyBytes: 1 << 20,
		NewID: func(w mvp.Workload, _ time.Time, _ int) string {
			n++
			return fmt.Sprintf("mvp2-%s-20251223-143201-%08x", w, n)
		},
		Prepare: func(r *mvp.RayJobRequest) (*mvp.Task, error) { return workload.PrepareRayJob(r, settings) },
		Build:   func(t *mvp.Task, n int) (*mvp.JobSubmission, error) { return workload.BuildTask(t, n, settings) }}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		err := d.submit(rec, httptest.NewRequest("POST", "/api/jobs/", bytes.NewReader(body)))
		if err != nil {
			var e *mvp.Error
			if !errors.As(err, &e) || (e.Code != mvp.CodeInvalid && e.Code != mvp.CodeTooLarge && e.Code != mvp.CodeConflict) ||
				strings.TrimSpace(e.Message) == "" {
				t.Fatalf("%q: %#v, want a 4xx *mvp.Error with a message", body, err)
			}
			return
		}
		var answer struct {
			SubmissionID string `json:"submission_id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || answer.SubmissionID == "" {
			t.Fatalf("%q taken, answered %q: %v", body, rec.Body.Bytes(), err)
		}
		task, err := db.TaskBySubmissionID(ctx, answer.SubmissionID)
		if err != nil {
			t.Fatalf("%q taken as %s, which is not found: %v", body, answer.SubmissionID, err)
		}
		var sent mvp.RayJobRequest
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatalf("%q taken, but does not decode: %v", body, err)
		}
		shown := d.details(task) // the metadata shown adds mvp.task_id
		if shown.Entrypoint != sent.Entrypoint || (len(sent.RuntimeEnv) > 0 && !reflect.DeepEqual(shown.RuntimeEnv, sent.RuntimeEnv)) {
			t.Fatalf("%q taken, shown as entrypoint %q, runtime_env %v", body, shown.Entrypoint, shown.RuntimeEnv)
		}
		for k, v := range sent.Metadata {
			if got, ok := shown.Metadata[k]; !ok || got != v {
				t.Fatalf("%q taken, metadata %q shown as %q", body, k, got)
			}
		}
		sub, err := d.Build(task, 1)
		if err != nil {
			t.Fatalf("%q taken, but its first attempt does not build: %v", body, err)
		}
		// What Ray is sent is what was sent, with mvp's own keys and variables added (and exec before an entrypoint
		// that is one plain Python command, nothing a shell would read: workload.execEntrypoint).
		execed := sub.Entrypoint == "exec "+strings.TrimLeft(sent.Entrypoint, " ") &&
			strings.HasPrefix(strings.TrimLeft(sent.Entrypoint, " "), "python") &&
			!strings.ContainsAny(sent.Entrypoint, "'\"`$;&|<>(){}[]*?~#!\\\t\n\r")
		if sub.Entrypoint != sent.Entrypoint && !execed || !reflect.DeepEqual(sub.EntrypointLabelSelector, sent.EntrypointLabelSelector) {
			t.Fatalf("%q taken, sent to Ray as entrypoint %q, label selector %v", body, sub.Entrypoint, sub.EntrypointLabelSelector)
		}
		for k, v := range sent.Metadata {
			if sub.Metadata[k] != v {
				t.Fatalf("%q taken, metadata %q sent to Ray as %q", body, k, sub.Metadata[k])
			}
		}
		for k, v := range sent.RuntimeEnv {
			if k != "env_vars" && !reflect.DeepEqual(sub.RuntimeEnv[k], v) {
				t.Fatalf("%q taken, runtime_env.%s sent to Ray as %v", body, k, sub.RuntimeEnv[k])
			}
		}
		env, _ := sub.RuntimeEnv["env_vars"].(map[string]any)
		sentEnv, _ := sent.RuntimeEnv["env_vars"].(map[string]any)
		for k, v := range sentEnv {
			if k != "MVP_TASK_ID" && k != "MVP_ATTEMPT_NO" && k != "MVP_TASK_DIR" && env[k] != v {
				t.Fatalf("%q taken, env_vars.%s sent to Ray as %v", body, k, env[k])
			}
		}
	})
}
