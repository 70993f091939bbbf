package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogsFollowWhenTheNextAttemptIsAlreadyThere: an attempt requeued at once (HEARTBEAT_LOST and INFRA are
// retried without waiting; so is every retry with retry_interval_s: 0) usually has its successor submitted in the
// same scheduler pass that ends it. `mvp logs -f` then finds attempt 2 at its first look after attempt 1's stream
// ended, took attempt 2 for the one it had followed, saw it running and exited 0 without a word: the user is told
// nothing while the task runs on (specs/api.md: "`mvp logs -f` (without `--attempt`) says so on stderr, waits for
// the next attempt and follows it too, to the task's end"). Seen on the local cluster with heartbeat_timeout_s: 5
// and mvp_test.stall_after=1: the command returned 0 at 10:38:48, when attempt 2 was submitted.
func TestLogsFollowWhenTheNextAttemptIsAlreadyThere(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	var mu sync.Mutex
	gets := 0
	const ended1 = `{"attempt_no": 1, "ray_status": "STOPPED", "failure_kind": "HEARTBEAT_LOST", "end_time": "2025-12-23T14:33:01Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			switch r.URL.Query().Get("attempt") {
			case "": // the latest attempt when the stream began: attempt 1, which the server names
				w.Header().Set("X-Mvp-Log-Attempt", "1")
				io.WriteString(w, "attempt one: step 1\n")
			case "2":
				io.WriteString(w, "attempt two: done\n")
			default:
				http.NotFound(w, r)
			}
		case "/api/v2/tasks/" + id:
			gets++
			w.Header().Set("Content-Type", "application/json")
			if gets <= 2 { // attempt 1 ended and attempt 2 was submitted in the same pass: it runs already
				io.WriteString(w, `{"task_id": "`+id+`", "state": "RUNNING", "latest_attempt_no": 2, "attempts": [`+ended1+
					`, {"attempt_no": 2, "ray_status": "RUNNING"}]}`)
				return
			}
			io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 2, "attempts": [`+ended1+
				`, {"attempt_no": 2, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || !strings.Contains(out.String(), "attempt two: done") {
		t.Errorf("exit %d, stdout %q, stderr %q: want attempt 1's log, then attempt 2's, to the task's end", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "attempt 2") {
		t.Errorf("stderr %q does not say that attempt 2 is followed", errb.String())
	}
	// It said only "following attempt 2": not why attempt 1 ended, which the gap between two attempts says
	// ("attempt 1 ended (HEARTBEAT_LOST) …") when the next one is not there yet.
	if !strings.Contains(errb.String(), "mvp logs: attempt 1 ended (HEARTBEAT_LOST); the task is RUNNING: following attempt 2\n") {
		t.Errorf("stderr %q does not say how attempt 1 ended", errb.String())
	}
}

// TestLogsFollowSaysHowTheTaskEnded: `mvp logs -f` of a task retried after HEARTBEAT_LOST said, for attempts 1 to
// 3, how each ended and that it followed the next; when attempt 4 ended the task FAILED, it stopped without a word,
// as if the run had simply finished (found in a user walk-through). A task that ends other than SUCCEEDED is said
// on stderr, with how its last attempt ended.
func TestLogsFollowSaysHowTheTaskEnded(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3b"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	var mu sync.Mutex
	gets := 0
	const ended1 = `{"attempt_no": 1, "ray_status": "STOPPED", "failure_kind": "HEARTBEAT_LOST", "end_time": "2025-12-23T14:33:01Z"}`
	const ended2 = `{"attempt_no": 2, "ray_status": "STOPPED", "failure_kind": "HEARTBEAT_LOST", "end_time": "2025-12-23T14:40:01Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			switch r.URL.Query().Get("attempt") {
			case "":
				w.Header().Set("X-Mvp-Log-Attempt", "1")
				io.WriteString(w, "attempt one: step 1\n")
			case "2":
				io.WriteString(w, "attempt two: step 1\n")
			default:
				http.NotFound(w, r)
			}
		case "/api/v2/tasks/" + id:
			gets++
			w.Header().Set("Content-Type", "application/json")
			if gets <= 2 { // the command's first look, and the look after attempt 1's stream
				io.WriteString(w, `{"task_id": "`+id+`", "state": "RUNNING", "latest_attempt_no": 2, "attempts": [`+ended1+
					`, {"attempt_no": 2, "ray_status": "RUNNING"}]}`)
				return
			}
			io.WriteString(w, `{"task_id": "`+id+`", "state": "FAILED", "latest_attempt_no": 2, "attempts": [`+ended1+`, `+ended2+`]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || !strings.Contains(out.String(), "attempt two: step 1") {
		t.Errorf("exit %d, stdout %q, stderr %q: want both attempts' logs", code, out.String(), errb.String())
	}
	if !strings.HasSuffix(errb.String(), "mvp logs: attempt 2 ended (HEARTBEAT_LOST); the task is FAILED\n") {
		t.Errorf("stderr %q does not end saying how the task ended", errb.String())
	}
}
