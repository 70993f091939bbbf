package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestResubmitRayJobSaysWhatToDo: a ray_job task (made through the Ray door) stores a Ray job request, not a
// jobspec; its resubmit is a 400 that says to submit it again through the door, not the jobspec parser's
// `unknown field "entrypoint"` about fields the user never sent.
func TestResubmitRayJobSaysWhatToDo(t *testing.T) {
	m := servicetest.Start(t, nil)
	base := m.URL()
	resp, body := do(t, base, "POST", "/ray/api/jobs/", "application/json", `{"entrypoint":"echo hi"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("ray submit: %d %s", resp.StatusCode, body)
	}
	var rj struct {
		SubmissionID string `json:"submission_id"`
	}
	_ = json.Unmarshal(body, &rj)
	resp, body = do(t, base, "POST", "/api/v2/tasks/"+rj.SubmissionID+"/resubmit", "", "", nil)
	var eb api.ErrorBody
	_ = json.Unmarshal(body, &eb)
	if resp.StatusCode/100 != 4 || strings.Contains(eb.Error.Message, "unknown field") ||
		!strings.Contains(eb.Error.Message, "ray_job") {
		t.Errorf("resubmit of a ray_job task: %d %s", resp.StatusCode, eb.Error.Message)
	}
}
