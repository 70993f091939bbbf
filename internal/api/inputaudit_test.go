package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
)

// TestResubmitRefusesABodyNotUTF8: a resubmit body whose set entries hold bytes that are not UTF-8 was taken, Go's
// decoder silently turning each such byte into U+FFFD: the new task ran with an env value (or override) other than
// the one sent. POST /api/v2/tasks refuses such a body; so must resubmit, and nothing is stored.
func TestResubmitRefusesABodyNotUTF8(t *testing.T) {
	base, db := newServer(t)
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, nil)
	var tk struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal(b, &tk); err != nil || resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{"/resubmit", "/resubmit?dry_run=true"} {
		resp, b = do(t, base, "POST", "/api/v2/tasks/"+tk.ID+path, "application/json",
			"{\"set\": [\"env.TAG=caf\xe9\"]}", nil)
		var eb api.ErrorBody
		if resp.StatusCode != 400 || json.Unmarshal(b, &eb) != nil || !strings.Contains(eb.Error.Message, "UTF-8") {
			t.Errorf("%s with a body that is not UTF-8: %d %s", path, resp.StatusCode, b)
		}
	}
	if n, _ := db.CountTasks(t.Context()); n != 1 {
		t.Errorf("%d tasks; the resubmit stored one", n)
	}
}
