package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestADotNameIsRefusedBeforeAnyRequest: a task id, schedule or secret name of "." or ".." went into the URL path
// as it was (url.PathEscape leaves dots alone), so the path climbed a folder: the server answered a redirect to
// its clean form and `mvp cancel ..` said "mvp's API does not redirect: set MVP_ADDR to the API's own address", the
// wrong thing to fix. Such a name is refused before any request, as a usage error (exit 2) that names it.
func TestADotNameIsRefusedBeforeAnyRequest(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		http.Error(w, "not reached", http.StatusTeapot)
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"get", ".."}, {"cancel", "."}, {"resubmit", ".."}, {"events", ".."}, {"logs", "."},
		{"results", ".."}, {"results", "..", "--get", "a01/x"},
		{"schedule", "delete", ".."}, {"schedule", "get", "."}, {"schedule", "pause", ".."},
		{"secrets", "delete", ".."},
	} {
		_, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), args, env)
		msg, name := errb.String(), args[1]
		if args[0] == "schedule" || args[0] == "secrets" {
			name = args[2]
		}
		if code != 2 || strings.Contains(msg, "MVP_ADDR") || !strings.Contains(msg, `"`+name+`"`) {
			t.Errorf("%v: exit %d: %s", args, code, msg)
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent for names that cannot stand in a URL path", requests)
	}
}

// TestAnEmptyNameIsRefusedBeforeAnyRequest: an empty task id or name (`mvp cancel "$ID"` in a script whose ID was
// never set) made a path with an empty segment, /api/v2/tasks//cancel: the server answered a redirect to its clean
// form and mvp said "mvp's API does not redirect: set MVP_ADDR to the API's own address", or, for `mvp get ""`, "no
// such endpoint /api/v2/tasks/" (exit 1): neither says that the id was empty. It is a usage error (exit 2) that
// says so, before any request.
func TestAnEmptyNameIsRefusedBeforeAnyRequest(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		http.Error(w, "not reached", http.StatusTeapot)
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"get", ""}, {"cancel", ""}, {"cancel", "mvp2-ppo-20251223-143201-7f3a", ""}, {"resubmit", ""},
		{"events", ""}, {"logs", ""}, {"logs", "", "-f"}, {"results", ""}, {"results", "", "--get", "a01/x"},
		{"wait", ""}, {"wait", "mvp2-ppo-20251223-143201-7f3a", ""},
		{"schedule", "delete", ""}, {"schedule", "get", ""}, {"schedule", "pause", ""}, {"schedule", "resume", ""},
		{"secrets", "delete", ""},
	} {
		_, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), args, env)
		msg := errb.String()
		if code != 2 || strings.Contains(msg, "MVP_ADDR") || !strings.Contains(msg, "empty") {
			t.Errorf("%q: exit %d: %s", args, code, msg)
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent for empty names", requests)
	}
}
