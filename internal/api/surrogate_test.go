package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestALoneSurrogateIsRefusedNotReplaced: a JSON string escaping half of a UTF-16 surrogate pair ("\ud800" alone)
// is no character, and Go's decoder silently makes it U+FFFD. A submit and a schedule refused it (400, the YAML
// parser), but a resubmit's set and a secret's value took it: the task would run, and the secret hold, a value that
// was not sent. Both are refused (400) and nothing is stored; a whole pair ("\ud83d\ude00") is one character and
// is taken.
func TestALoneSurrogateIsRefusedNotReplaced(t *testing.T) {
	base := usersMain(t, servicetest.OneNode(4), nil, 60).URL()
	resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, nil)
	var origin struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal(body, &origin); resp.StatusCode != 201 || err != nil {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	for _, set := range []string{`a\ud800b`, `\udc00`, `a\ud800\u0041`} {
		resp, body := do(t, base, "POST", "/api/v2/tasks/"+origin.ID+"/resubmit", "application/json",
			`{"set": ["env.X=`+set+`"]}`, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "surrogate") {
			t.Errorf("resubmit with env.X=%s: %d %s, want 400 naming the lone surrogate", set, resp.StatusCode, body)
		}
		resp, body = do(t, base, "PUT", "/api/v2/secrets/k", "application/json", `{"value": "`+set+`"}`, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "surrogate") {
			t.Errorf("secret %s: %d %s, want 400 naming the lone surrogate", set, resp.StatusCode, body)
		}
	}
	if resp, body := do(t, base, "GET", "/api/v2/tasks", "", "", nil); strings.Count(string(body), `"task_id"`) != 1 {
		t.Errorf("a refused resubmit made a task: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "GET", "/api/v2/secrets", "", "", nil); string(body) != "{\"secrets\":[]}\n" {
		t.Errorf("a refused secret was stored: %d %s", resp.StatusCode, body)
	}
	// A whole pair, and an escaped backslash before a u, are text like any other.
	if resp, body := do(t, base, "PUT", "/api/v2/secrets/k", "application/json", `{"value": "\ud83d\ude00 \\ud800"}`, nil); resp.StatusCode != 201 {
		t.Errorf("a surrogate pair: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "POST", "/api/v2/tasks/"+origin.ID+"/resubmit?dry_run=true", "application/json",
		`{"set": ["env.X=\ud83d\ude00 \\ud800"]}`, nil); resp.StatusCode != 200 || !strings.Contains(string(body), `"X":"😀 \\ud800"`) {
		t.Errorf("a surrogate pair in a resubmit: %d %s", resp.StatusCode, body)
	}
}
