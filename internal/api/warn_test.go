package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestASubmitThatCanNeverStartIsWarned: a task whose gang is larger than the cluster the scheduler last saw is
// queued (201: nodes may join) with a warning that says why it cannot start; one that fits has none.
func TestASubmitThatCanNeverStartIsWarned(t *testing.T) {
	base, _ := newServer(t) // one node of 4 GPUs
	submit := func(spec string) map[string]any {
		t.Helper()
		resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", spec, nil)
		if resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// A task that fits has no warning; once it is submitted, a pass has read the cluster.
	fits := submit(goodSpec)
	if fits["warning"] != nil {
		t.Errorf("a task that fits is warned: %v", fits["warning"])
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, b := do(t, base, "GET", "/api/v2/tasks/"+fits["task_id"].(string), "", "", nil)
		var got struct{ State string }
		if json.Unmarshal(b, &got) == nil && got.State == "SUBMITTED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task that fits was not submitted within 10 s: %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	big := submit(strings.Replace(goodSpec, "nnodes: 1", "nnodes: 2", 1))
	w, _ := big["warning"].(string)
	for _, want := range []string{"queued, but it cannot start on the cluster as it is now", "needs 2 node(s) with 4 GPU",
		"the cluster has 1 alive GPU node(s)", "mvp cancel " + big["task_id"].(string)} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if big["state"] != "QUEUED" || big["task_id"] == "" {
		t.Errorf("the task is not in the answer as a task: %v", big)
	}
}

// TestATaskShowsWhatWasSubmitted: GET of a task did not show its jobspec (the plan's Task has it): what a queued or
// canceled task asked for (model_path, overrides, env) could not be seen. It now carries `jobspec`, the body as
// sent, and `effective_spec`, with the cluster's defaults applied.
func TestATaskShowsWhatWasSubmitted(t *testing.T) {
	base, _ := newServer(t)
	body := goodSpec + "# mine\noverrides: [trainer.total_epochs=2]\n"
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", body, nil)
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	var created struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(b, &created)
	_, b = do(t, base, "GET", "/api/v2/tasks/"+created.TaskID, "", "", nil)
	var got struct {
		JobSpec       string         `json:"jobspec"`
		EffectiveSpec map[string]any `json:"effective_spec"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.JobSpec != body {
		t.Errorf("jobspec %q, want the body as sent %q", got.JobSpec, body)
	}
	if got.EffectiveSpec["model_path"] != "/m" || got.EffectiveSpec["max_runtime_s"] == nil {
		t.Errorf("effective_spec %v: want the spec with the defaults (max_runtime_s) applied", got.EffectiveSpec)
	}
	// The list stays light: no specs in it.
	if _, b := do(t, base, "GET", "/api/v2/tasks", "", "", nil); strings.Contains(string(b), "effective_spec") {
		t.Errorf("the list carries the specs: %.300s", b)
	}
}
