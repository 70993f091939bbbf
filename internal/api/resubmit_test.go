package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestResubmit: a resubmit is a new task from the stored effective spec with the changes asked for, linked both
// ways; --resume points verl at the checkpoint folder the origin used (through a chain of resumes, the first's)
// and is refused while the origin still runs; bad changes are refused naming the change.
func TestResubmit(t *testing.T) {
	m := servicetest.Start(t, nil)
	c := m.Client()
	ctx := context.Background()
	raw, err := c.Submit(ctx, []byte(goodSpec+"name: first\noverrides: [trainer.total_epochs=1]\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	var origin mvp.Task
	_ = json.Unmarshal(raw, &origin)
	for deadline := time.Now().Add(10 * time.Second); ; { // it runs, so it may leave checkpoints to resume from
		got, _, err := c.Get(ctx, origin.ID)
		if err == nil && got.LatestAttemptNo > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the origin was not submitted within 10 s: %+v %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	_, _, err = c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true})
	var e *mvp.Error
	if !errors.As(err, &e) || e.Code != mvp.CodeConflict || e.Field != "resume" {
		t.Errorf("resume of a live task: %v", err)
	}
	again, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Set: []string{"name=second", "overrides=trainer.total_epochs=2"}})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == origin.ID || again.Name != "second" || again.OriginID != origin.ID || again.ResumeFrom != "" ||
		again.State != mvp.StateQueued || again.NNodes != 1 {
		t.Errorf("resubmit: %+v", again)
	}
	if _, _, err := c.Cancel(ctx, origin.ID); err != nil {
		t.Fatal(err)
	}
	// Taken once the loop recorded the canceled job's stop (TestAResumeWaitsForTheCanceledRunToStop).
	var resumed *mvp.Task
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resumed, _, err = c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resumed.ResumeFrom != origin.ID || resumed.OriginID != origin.ID {
		t.Errorf("resumed: resume_from %q origin %q", resumed.ResumeFrom, resumed.OriginID)
	}
	got, _, err := c.Get(ctx, origin.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Resubmits, " ") != again.ID+" "+resumed.ID {
		t.Errorf("origin's resubmits %v, want %s %s", got.Resubmits, again.ID, resumed.ID)
	}
	// --resume picks the folder; a resume_from set beside it was dropped without a word. Found in a user walk-through.
	if _, err := c.ResubmitDryRun(ctx, origin.ID, api.ResubmitRequest{Resume: true, Set: []string{"resume_from=" + again.ID}}); !errors.As(err, &e) ||
		e.Code != mvp.CodeInvalid || !strings.Contains(e.Message, "resume_from") {
		t.Errorf("resume with resume_from set as well: %v, want 400 naming resume_from", err)
	}
	// A resume of the resume continues in the first task's checkpoint folder.
	if _, _, err := c.Cancel(ctx, resumed.ID); err != nil {
		t.Fatal(err)
	}
	var dry json.RawMessage
	for deadline := time.Now().Add(10 * time.Second); ; { // its job, if it was sent one, must have stopped
		if dry, err = c.ResubmitDryRun(ctx, resumed.ID, api.ResubmitRequest{Resume: true}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var d struct {
		Spec map[string]any    `json:"effective_spec"`
		Ray  mvp.JobSubmission `json:"ray_submission"`
	}
	_ = json.Unmarshal(dry, &d)
	ckpt := m.Config.SharedRoot + "/jobs/" + origin.ID + "/checkpoints"
	if d.Spec["resume_from"] != origin.ID || !strings.Contains(d.Ray.Entrypoint, "trainer.default_local_dir="+ckpt) ||
		!strings.Contains(d.Ray.Entrypoint, "trainer.resume_mode=auto") ||
		!strings.Contains(d.Ray.Entrypoint, "trainer.total_epochs=1") {
		t.Errorf("resume of a resume: %v\n%s", d.Spec["resume_from"], d.Ray.Entrypoint)
	}
	for _, req := range []api.ResubmitRequest{{Set: []string{"nnode=1"}}, {Set: []string{"nnodes"}}, {Set: []string{"nnodes=0"}}} {
		if _, _, err := c.Resubmit(ctx, origin.ID, req); !errors.As(err, &e) || e.Code != mvp.CodeInvalid {
			t.Errorf("%v: %v", req.Set, err)
		}
	}
	base := m.URL()
	if resp, body := do(t, base, "POST", "/api/v2/tasks/"+origin.ID+"/resubmit", "application/json", `{"resme": true}`, nil); resp.StatusCode != 400 {
		t.Errorf("unknown body field: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "POST", "/api/v2/tasks/"+origin.ID+"/resubmit", "application/json", `{"resume": false} {"resume": true}`, nil); resp.StatusCode != 400 {
		t.Errorf("two JSON values: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "POST", "/api/v2/tasks/"+origin.ID+"/resubmit", "", "", nil); resp.StatusCode != 201 {
		t.Errorf("empty body: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, base, "POST", "/api/v2/tasks/mvp2-ppo-20251223-143201-ffff/resubmit", "", "", nil); resp.StatusCode != 404 {
		t.Errorf("unknown task: %d", resp.StatusCode)
	}
	// A run resumes only from checkpoints of its own workload: an sft run cannot start from a ppo trainer's folder.
	sft := strings.Replace(strings.Replace(goodSpec, "ppo", "sft", 1), "val_file: /v\n", "", 1)
	if resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml", sft+"resume_from: "+origin.ID+"\n", nil); resp.StatusCode != 400 ||
		!strings.Contains(string(body), "resume_from") || !strings.Contains(string(body), "ppo") {
		t.Errorf("sft resuming from a ppo task: %d %s", resp.StatusCode, body)
	}
	// resume_from in a jobspec is checked like a dependency.
	if resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"resume_from: mvp2-ppo-20251223-143201-ffff\n", nil); resp.StatusCode != 400 ||
		!strings.Contains(string(body), "resume_from") {
		t.Errorf("resume_from unknown: %d %s", resp.StatusCode, body)
	}
}

// A JSON value of the wrong type was answered with Go's own words ("cannot unmarshal string into Go struct field
// ResubmitRequest.set of type []string"). The answer names the key and what it takes. Found in a user walk-through.
func TestJSONTypeErrorsSpeakJSON(t *testing.T) {
	base, _ := newServer(t)
	_, created := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, nil)
	var task struct {
		ID string `json:"task_id"`
	}
	json.Unmarshal(created, &task)
	for _, c := range []struct{ path, body, want string }{
		{"/api/v2/tasks/" + task.ID + "/resubmit", `{"set": "nnodes=1"}`, `"set" must be a list of strings, got a string`},
		{"/api/v2/schedules", `{"name": "n", "cron": 5}`, `"cron" must be a string, got a number`},
		{"/api/v2/schedules", `{"name": "n", "cron": "@every 1h", "jobspec": "workload: ppo"}`, `jobspec must be a JSON object`},
		{"/ray/api/jobs/", `{"entrypoint": 5}`, `"entrypoint" must be a string, got a number`},
	} {
		resp, raw := do(t, base, "POST", c.path, "application/json", c.body, nil)
		b := strings.ReplaceAll(string(raw), `\"`, `"`) // the JSON answer's quotes
		if resp.StatusCode != 400 || strings.Contains(string(b), "Go struct") || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s, want 400 saying %s", c.path, c.body, resp.StatusCode, b, c.want)
		}
	}
}

// TestResubmitTakesTodaysDefaults: a field the jobspec did not give (max_runtime_s, max_queued_s, priority) was
// stored in the effective spec with the default of its day, and a resubmit after the operator lowered the cap was
// refused over a number the user never wrote. A resubmit takes what the user gave, and today's defaults.
func TestResubmitTakesTodaysDefaults(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 259200, 604800
	cfg.UserCodePath = "/code/first"
	var id string
	t.Run("before", func(t *testing.T) {
		base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
		resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, nil)
		var got struct {
			ID string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, b)
		}
		id = got.ID
	})
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 40000, 50000
	// The code's folder too (dev.yaml's user_code_path fills a jobspec's missing code_path): moved by the operator,
	// a resubmit ran the old path, which failed or ran old code.
	cfg.UserCodePath = "/code/moved"
	base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
	resp, b := do(t, base, "POST", "/api/v2/tasks/"+id+"/resubmit", "application/json", `{}`, nil)
	if resp.StatusCode != 201 || !strings.Contains(string(b), `"max_runtime_s":40000`) {
		t.Errorf("resubmit after the cap was lowered: %d %s; want 201 with today's default 40000", resp.StatusCode, b)
	}
	resp, b = do(t, base, "POST", "/api/v2/tasks/"+id+"/resubmit?dry_run=true", "application/json", `{}`, nil)
	var dry struct {
		Spec struct {
			CodePath string `json:"code_path"`
		} `json:"effective_spec"`
	}
	if err := json.Unmarshal(b, &dry); err != nil || resp.StatusCode != 200 || dry.Spec.CodePath != "/code/moved" {
		t.Errorf("resubmit after user_code_path moved: %d code_path %q (%s); want today's /code/moved", resp.StatusCode, dry.Spec.CodePath, b)
	}
}

// TestResubmitTakesTodaysDefaultsForAZeroValue: a jobspec may give max_runtime_s or max_queued_s as 0, or
// code_path as "", which is the same as leaving it out (the cluster's default fills it: specs/api.md "0 is the same
// as absent"). A resubmit read the field as given by the user and kept the value of the submit's day: the old
// user_code_path after the operator moved the code, a time limit above today's cap refused.
func TestResubmitTakesTodaysDefaultsForAZeroValue(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 259200, 604800
	cfg.UserCodePath = "/code/first"
	var id string
	t.Run("before", func(t *testing.T) {
		base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
		resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml",
			goodSpec+"max_runtime_s: 0\nmax_queued_s: 0\ncode_path: \"\"\n", nil)
		var got struct {
			ID string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, b)
		}
		id = got.ID
	})
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 40000, 50000
	cfg.UserCodePath = "/code/moved"
	base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
	resp, b := do(t, base, "POST", "/api/v2/tasks/"+id+"/resubmit?dry_run=true", "application/json", `{}`, nil)
	var dry struct {
		Spec struct {
			CodePath    string `json:"code_path"`
			MaxRuntimeS int    `json:"max_runtime_s"`
		} `json:"effective_spec"`
	}
	if err := json.Unmarshal(b, &dry); err != nil || resp.StatusCode != 200 || dry.Spec.CodePath != "/code/moved" ||
		dry.Spec.MaxRuntimeS != 40000 {
		t.Errorf("resubmit of a jobspec with max_runtime_s 0 and code_path \"\": %d (%s); want today's 40000 and /code/moved",
			resp.StatusCode, b)
	}
}

// TestAResumeNeedsARunThatCouldHaveLeftCheckpoints: a task that ended before any attempt was sent to Ray (canceled
// while it waited) left no checkpoint folder; resuming from it was taken and silently started from scratch.
// It is refused (409) with what to do instead, by --resume and by resume_from in a jobspec alike.
func TestAResumeNeedsARunThatCouldHaveLeftCheckpoints(t *testing.T) {
	m := servicetest.Start(t, nil) // one node of 4 GPUs
	c := m.Client()
	ctx := context.Background()
	raw, err := c.Submit(ctx, []byte(strings.Replace(goodSpec, "nnodes: 1", "nnodes: 2", 1)), false) // never fits
	if err != nil {
		t.Fatal(err)
	}
	var never mvp.Task
	_ = json.Unmarshal(raw, &never)
	if _, _, err := c.Cancel(ctx, never.ID); err != nil {
		t.Fatal(err)
	}
	var e *mvp.Error
	if _, _, err := c.Resubmit(ctx, never.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) ||
		e.Code != mvp.CodeConflict || !strings.Contains(e.Message, "never ran") || !strings.Contains(e.Message, "without resuming") {
		t.Errorf("--resume of a task that never ran: %v, want 409 saying it never ran", err)
	}
	if resp, body := do(t, m.URL(), "POST", "/api/v2/tasks", "application/yaml", goodSpec+"resume_from: "+never.ID+"\n", nil); resp.StatusCode != 409 ||
		!strings.Contains(string(body), "never ran") {
		t.Errorf("resume_from a task that never ran: %d %s", resp.StatusCode, body)
	}
	// A plain resubmit of it is fine.
	if _, _, err := c.Resubmit(ctx, never.ID, api.ResubmitRequest{Set: []string{"nnodes=1"}}); err != nil {
		t.Errorf("resubmit without resuming: %v", err)
	}
}
