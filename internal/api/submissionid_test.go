package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestATaskNamedByItsDoorSubmissionIDIsNamed: a job sent through the Ray door as
// JobSubmissionClient().submit_job(..., submission_id="my-gang-job-1") is the task mvp2-ray_job-…; `mvp get
// my-gang-job-1` answered 'no task "my-gang-job-1" (task ids look like …)', though the web page's
// /ui/tasks/my-gang-job-1 leads to the task. The 404 now names the task id to use.
func TestATaskNamedByItsDoorSubmissionIDIsNamed(t *testing.T) {
	m := servicetest.Start(t, nil)
	at := time.Now()
	id := "mvp2-ray_job-20251223-143201-0d3a"
	if err := m.Store().CreateTask(context.Background(), &mvp.Task{ID: id, Workload: mvp.WorkloadRayJob,
		State: mvp.StateQueued, SubmissionID: "my-gang-job-1", Driver: map[string]float64{}, JobSpecYAML: "",
		SpecJSON: []byte(`{"entrypoint":"python x.py"}`), CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v2/tasks/my-gang-job-1", "/api/v2/tasks/my-gang-job-1/logs"} {
		resp, b := do(t, m.URL(), "GET", p, "", "", nil)
		var eb api.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != 404 || !containsAll(eb.Error.Message, id, "submission id") {
			t.Errorf("GET %s: %d %s; want a 404 that names the task %s", p, resp.StatusCode, b, id)
		}
	}
	resp, b := do(t, m.URL(), "GET", "/api/v2/tasks/no-such-job", "", "", nil)
	if resp.StatusCode != 404 || containsAll(string(b), "submission id") {
		t.Errorf("an unknown id: %d %s", resp.StatusCode, b)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestATaskNamedByAnAttemptsSubmissionIDIsNamed: every driver log begins "Running entrypoint for job
// <task_id>--a01", and Ray's dashboard lists its jobs by that id; `mvp get <task_id>--a01` answered only 'no task
// … (task ids look like …)'. The 404 names the task and the attempt, to a caller who may see the task.
func TestATaskNamedByAnAttemptsSubmissionIDIsNamed(t *testing.T) {
	m := servicetest.Start(t, nil)
	at := time.Now()
	id := "mvp2-ppo-20251223-143201-0d3a"
	if err := m.Store().CreateTask(context.Background(), &mvp.Task{ID: id, Workload: mvp.WorkloadPPO, NNodes: 1,
		GPUsPerNode: 1, State: mvp.StateQueued, JobSpecYAML: "workload: ppo\n", SpecJSON: []byte(`{}`),
		CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v2/tasks/" + id + "--a02", "/api/v2/tasks/" + id + "--a02/events"} {
		resp, b := do(t, m.URL(), "GET", p, "", "", nil)
		var eb api.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != 404 || !containsAll(eb.Error.Message, id+":", "attempt 2") {
			t.Errorf("GET %s: %d %s; want a 404 that names the task %s and attempt 2", p, resp.StatusCode, b, id)
		}
	}
	resp, b := do(t, m.URL(), "GET", "/api/v2/tasks/mvp2-ppo-20251223-143201-ffff--a01", "", "", nil)
	if resp.StatusCode != 404 || containsAll(string(b), "attempt") {
		t.Errorf("the attempt of an unknown task: %d %s", resp.StatusCode, b)
	}
}
