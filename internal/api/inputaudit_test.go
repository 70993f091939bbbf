package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
)

// submitGood submits goodSpec and returns the task's id.
func submitGood(t *testing.T, base string) (tk struct {
	ID string `json:"task_id"`
}) {
	t.Helper()
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, nil)
	if err := json.Unmarshal(b, &tk); err != nil || resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	return tk
}

// TestResubmitRefusesABodyNotUTF8: a resubmit body whose set entries hold bytes that are not UTF-8 was taken, Go's
// decoder silently turning each such byte into U+FFFD: the new task ran with an env value (or override) other than
// the one sent. POST /api/v2/tasks refuses such a body; so must resubmit, and nothing is stored.
func TestResubmitRefusesABodyNotUTF8(t *testing.T) {
	base, db := newServer(t)
	tk := submitGood(t, base)
	for _, path := range []string{"/resubmit", "/resubmit?dry_run=true"} {
		resp, b := do(t, base, "POST", "/api/v2/tasks/"+tk.ID+path, "application/json",
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

// TestResubmitRefusesABodyOfAnotherType: a resubmit's body is JSON (or nothing); another Content-Type is 415, as
// for every other body the API reads, and nothing is stored.
func TestResubmitRefusesABodyOfAnotherType(t *testing.T) {
	base, db := newServer(t)
	tk := submitGood(t, base)
	for _, ct := range []string{"text/html", "application/x-www-form-urlencoded", "application/json; charset"} {
		resp, b := do(t, base, "POST", "/api/v2/tasks/"+tk.ID+"/resubmit", ct, `{"set": ["name=x"]}`, nil)
		if resp.StatusCode != 415 || !strings.Contains(string(b), "application/json") {
			t.Errorf("a resubmit sent as %s: %d %s, want 415 naming application/json", ct, resp.StatusCode, b)
		}
	}
	if n, _ := db.CountTasks(t.Context()); n != 1 {
		t.Errorf("%d tasks; a refused resubmit stored one", n)
	}
	// JSON, text/plain (curl -d's default is a form, but a script may say text/plain) and no type are taken.
	for _, ct := range []string{"application/json", "text/plain", ""} {
		if resp, b := do(t, base, "POST", "/api/v2/tasks/"+tk.ID+"/resubmit?dry_run=true", ct, `{"set": ["name=x"]}`, nil); resp.StatusCode != 200 && resp.StatusCode != 201 {
			t.Errorf("a resubmit sent as %q: %d %s", ct, resp.StatusCode, b)
		}
	}
}
