package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// writePaths are the endpoints whose body a client writes; {id} is a task's id.
var writePaths = []string{"/api/v2/tasks", "/api/v2/tasks?dry_run=true", "/api/v2/tasks/{id}/resubmit",
	"/api/v2/tasks/{id}/resubmit?dry_run=true", "/api/v2/schedules"}

var writeTypes = []string{"application/yaml", "application/json", "text/plain", ""}

// FuzzWriteBody sends the API's write endpoints a body and a content type as a client may write them. Bad input
// gets a clear error and loses nothing: every answer is a 2xx or a 4xx in the one error shape with a message, never
// a 5xx; a refusal stores no task and no schedule; a task made is found by its id, with the jobspec as sent.
func FuzzWriteBody(f *testing.F) {
	spec := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	specJSON := `{"workload":"sft","nnodes":1,"n_gpus_per_node":2,"model_path":"/m","train_file":"/t"}`
	for _, c := range []struct {
		path, ctype uint8
		body        string
	}{
		{0, 0, spec}, {0, 1, specJSON}, {1, 0, spec}, {0, 2, spec}, {0, 0, "workload: ppo\noverrides: [a=1, 'b=$(x)']\n"},
		{0, 0, "a: &x [1]\nb: *x\n"}, {2, 1, `{"set": ["nnodes=1", "env.WANDB_MODE=offline"]}`}, {2, 1, `{"resume": true}`},
		{3, 1, `{"set": ["overrides=trainer.total_epochs=2"]}`}, {2, 1, ""}, {2, 1, `{"set": ["k"]}`},
		{4, 1, `{"name":"nightly","cron":"0 2 * * *","timezone":"Europe/Berlin","overlap":"skip","jobspec":` + specJSON + `}`},
		{4, 1, `{"name":"x","cronn":"@daily"}`}, {4, 1, `{"name":"x","cron":"@every 100ms","jobspec":` + specJSON + `}`},
	} {
		f.Add(c.path, c.ctype, []byte(c.body))
	}
	// The bad-input corpus's task and schedule bodies (TestBadInputCorpus replays them whole).
	corpus, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.http"))
	for _, name := range corpus {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		head, body, _ := bytes.Cut(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n\n"))
		lines := strings.Split(string(head), "\n")
		which := slices.Index(writePaths, strings.TrimPrefix(lines[0], "POST "))
		if which < 0 || strings.Contains(lines[0], "{id}") {
			continue
		}
		ctype := len(writeTypes) - 1
		for _, l := range lines[1:] {
			if v, ok := strings.CutPrefix(l, "Content-Type: "); ok {
				if i := slices.Index(writeTypes, v); i >= 0 {
					ctype = i
				}
			}
		}
		f.Add(uint8(which), uint8(ctype), body)
	}
	m := servicetest.Start(f, nil)
	hc := &http.Client{Timeout: 20 * time.Second}
	send := func(t testing.TB, method, path, ctype string, body []byte) (int, []byte) {
		req, err := http.NewRequest(method, m.URL()+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+servicetest.Token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, b := send(f, "POST", "/api/v2/tasks", "application/yaml", []byte(spec))
	var made struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(b, &made); err != nil || made.TaskID == "" {
		f.Fatalf("no task made: %d %s", code, b)
	}
	schedules := func(t *testing.T) int {
		code, b := send(t, "GET", "/api/v2/schedules", "", nil)
		var l struct {
			Schedules []json.RawMessage `json:"schedules"`
		}
		if err := json.Unmarshal(b, &l); code != 200 || err != nil {
			t.Fatalf("list schedules: %d %s", code, b)
		}
		return len(l.Schedules)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, which, ctype uint8, body []byte) {
		path := strings.ReplaceAll(writePaths[int(which)%len(writePaths)], "{id}", made.TaskID)
		tasks, _ := m.Store().CountTasks(ctx)
		scheds := schedules(t)
		code, b := send(t, "POST", path, writeTypes[int(ctype)%len(writeTypes)], body)
		if code >= 500 || code < 200 {
			t.Fatalf("POST %s %q: %d %s", path, body, code, b)
		}
		if code >= 400 {
			var e api.ErrorBody
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || strings.TrimSpace(e.Error.Message) == "" {
				t.Fatalf("POST %s %q: %d %q, not the error shape with a message", path, body, code, b)
			}
			if n, _ := m.Store().CountTasks(ctx); n != tasks {
				t.Fatalf("POST %s %q: refused (%d %s), but %d tasks became %d", path, body, code, b, tasks, n)
			}
			if n := schedules(t); n != scheds {
				t.Fatalf("POST %s %q: refused (%d %s), but %d schedules became %d", path, body, code, b, scheds, n)
			}
			return
		}
		var got struct {
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(b, &got) == nil && got.TaskID != "" && !strings.Contains(path, "dry_run") {
			code, b := send(t, "GET", "/api/v2/tasks/"+got.TaskID, "", nil)
			var detail api.TaskDetail
			if err := json.Unmarshal(b, &detail); code != 200 || err != nil {
				t.Fatalf("POST %s %q made %s, which answers %d %s", path, body, got.TaskID, code, b)
			}
			if path == "/api/v2/tasks" && detail.JobSpec != string(body) {
				t.Fatalf("POST %s %q made %s, whose jobspec is kept as %q", path, body, got.TaskID, detail.JobSpec)
			}
		}
	})
}
