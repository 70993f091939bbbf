package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmitBehindRedirectIsNotASuccess: MVP_ADDR points at a front that answers 301 (an http→https redirect, a
// moved host). Go's client would follow a 301 for a POST as a GET, so `mvp submit` read GET /api/v2/tasks (a task
// list, 200) and reported success although nothing was submitted, and `mvp schedule delete NAME` printed "deleted
// schedule". A redirect is an error that says where to point MVP_ADDR.
func TestSubmitBehindRedirectIsNotASuccess(t *testing.T) {
	posts := 0
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" || r.Method == "DELETE":
			posts++
			w.WriteHeader(201)
			w.Write([]byte(`{"task_id":"mvp2-ppo-20251223-143201-7f3a","state":"QUEUED"}`))
		case r.URL.Path == "/api/v2/tasks":
			w.Write([]byte(`{"tasks":[],"next_cursor":""}`))
		default:
			w.Write([]byte(`{"name":"nightly","cron":"0 2 * * *"}`))
		}
	}))
	defer back.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, back.URL+r.URL.RequestURI(), http.StatusMovedPermanently)
	}))
	defer front.Close()
	spec := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(spec, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\n"), 0o644)
	for _, args := range [][]string{{"submit", "-f", spec}, {"schedule", "delete", "nightly"}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "MVP_ADDR" {
				return front.URL
			}
			return ""
		}}
		code := Run(context.Background(), args, env)
		if code == 0 && posts == 0 {
			t.Errorf("%v: exit 0 and printed %q, but the server never got the %s (it was redirected and replayed as a GET)",
				args, out.String(), args[0])
		}
		if code == 0 || !strings.Contains(errb.String(), "redirect") || !strings.Contains(errb.String(), "MVP_ADDR") {
			t.Errorf("%v: exit %d, stderr %q; want a failure that names the redirect and MVP_ADDR", args, code, errb.String())
		}
	}
}

// TestSubmitAnswerWithoutTaskIDIsNotASuccess: a 2xx answer to a submit that names no task (MVP_ADDR pointing at
// something that is not mvp, or a proxy's own page) printed an empty line and exited 0, so a script took it for a
// submission. It is an error that says what came back and where to point MVP_ADDR.
func TestSubmitAnswerWithoutTaskIDIsNotASuccess(t *testing.T) {
	for _, body := range []string{`{}`, `{"status":"ok"}`, `<html>welcome</html>`, ``} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.Write([]byte(body))
		}))
		spec := filepath.Join(t.TempDir(), "job.yaml")
		os.WriteFile(spec, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\n"), 0o644)
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "MVP_ADDR" {
				return srv.URL
			}
			return ""
		}}
		code := Run(context.Background(), []string{"submit", "-f", spec}, env)
		srv.Close()
		if code == 0 || !strings.Contains(errb.String(), "task_id") || !strings.Contains(errb.String(), "MVP_ADDR") {
			t.Errorf("answer %q: exit %d, stdout %q, stderr %q; want a failure that names task_id and MVP_ADDR",
				body, code, out.String(), errb.String())
		}
	}
}
