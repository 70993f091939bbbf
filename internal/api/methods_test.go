package api_test

import (
	"encoding/json"
	"testing"

	"github.com/mvp2/mvp/internal/api"
)

// TestAMethodNotServedIs405AndHEADIsGET: what the router answers a method a path does not serve, and HEAD, as
// specs/api.md says: 405 with Allow listing the path's methods, in the JSON error shape (plain text on the Ray
// door's paths, as Ray's job server), before any token is checked; HEAD is served as GET, token and all, without a
// body.
func TestAMethodNotServedIs405AndHEADIsGET(t *testing.T) {
	base, _ := newServer(t)
	noToken := map[string]string{"Authorization": ""}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		allow, ctype string
	}{
		{"DELETE", "/api/v2/tasks", nil, "POST, GET", "application/json"},
		{"DELETE", "/api/v2/tasks", noToken, "POST, GET", "application/json"},
		{"OPTIONS", "/api/v2/tasks", nil, "POST, GET", "application/json"},
		{"PUT", "/ray/api/jobs/", nil, "POST, GET", "text/plain; charset=utf-8"},
	} {
		resp, body := do(t, base, c.method, c.path, "", "", c.hdr)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s (token: %v): %d, Allow %q, %s; want 405, Allow %q, %s: %s", c.method, c.path, c.hdr == nil,
				resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), c.allow, c.ctype, body)
		}
		var e api.ErrorBody
		if c.ctype == "application/json" && (json.Unmarshal(body, &e) != nil || e.Error.Code != "method") {
			t.Errorf("%s %s: %s; want the error shape with code method", c.method, c.path, body)
		}
	}
	resp, body := do(t, base, "HEAD", "/api/v2/tasks", "", "", nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD /api/v2/tasks: %d %s %q; want GET's 200 and headers, no body", resp.StatusCode,
			resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := do(t, base, "HEAD", "/api/v2/tasks", "", "", noToken); resp.StatusCode != 401 {
		t.Errorf("HEAD /api/v2/tasks without a token: %d; want 401, as GET", resp.StatusCode)
	}
}
