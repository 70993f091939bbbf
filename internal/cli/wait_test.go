package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// taskServer answers GET /api/v2/tasks/{id} for the tasks of states: each request of a task takes its next state
// (the last one repeats); a state "503" answers 503 (mvp restarting), "404" that mvp knows no such task. A failed
// task's attempt says OWN_FAILURE. POST /api/v2/tasks answers a new task of id "t-new".
func taskServer(t *testing.T, states map[string][]string) (*httptest.Server, func(id string) int) {
	t.Helper()
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == "POST" && r.URL.Path == "/api/v2/tasks" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"task_id": "t-new", "state": "QUEUED"}`)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/api/v2/tasks/")
		seq, ok := states[id]
		if !ok || r.Method != "GET" {
			http.NotFound(w, r)
			return
		}
		st := seq[min(asked[id], len(seq)-1)]
		asked[id]++
		w.Header().Set("Content-Type", "application/json")
		switch st {
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"code": "unavailable", "message": "the server is starting"}}`)
		case "404":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error": {"code": "not_found", "message": "no task `+id+`"}}`)
		case "FAILED":
			io.WriteString(w, `{"task_id": "`+id+`", "state": "FAILED", "error_summary": "exit code 3", "latest_attempt_no": 1, `+
				`"attempts": [{"attempt_no": 1, "ray_status": "FAILED", "failure_kind": "RUNTIME_ERROR"}]}`)
		default:
			fmt.Fprintf(w, `{"task_id": %q, "state": %q}`, id, st)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func(id string) int { mu.Lock(); defer mu.Unlock(); return asked[id] }
}

// jobFile is a jobspec's file for a submit.
func jobFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(p, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fastWait shortens mvp wait's polls and outage for a test.
func fastWait(t *testing.T) {
	p, o := waitPoll, followOutage
	waitPoll, followOutage = 5*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { waitPoll, followOutage = p, o })
}

// TestWaitExitsByHowTheTasksEnded: mvp wait asks until every task named has ended and prints each as it ends; it
// exits 0 when all SUCCEEDED and 3 when one FAILED or was CANCELED, naming them; a requeued attempt (the task back
// in PENDING_RESOURCES) is not an end.
func TestWaitExitsByHowTheTasksEnded(t *testing.T) {
	fastWait(t)
	srv, asked := taskServer(t, map[string][]string{
		"t-ok":   {"QUEUED", "RUNNING", "PENDING_RESOURCES", "RUNNING", "SUCCEEDED"},
		"t-ok2":  {"SUCCEEDED"},
		"t-bad":  {"RUNNING", "FAILED"},
		"t-stop": {"SUBMITTED", "CANCELED"},
	})
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"wait", "t-ok", "t-ok2", "t-ok"}, env); code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0", code, out.String(), errb.String())
	}
	if want := "t-ok2\tSUCCEEDED\nt-ok\tSUCCEEDED\n"; out.String() != want {
		t.Errorf("stdout %q, want %q (each as it ends, once)", out.String(), want)
	}
	if n := asked("t-ok"); n != 5 {
		t.Errorf("t-ok asked %d times, want 5 (until it ended, through its requeue)", n)
	}

	out, errb, env = serverEnv(srv.URL)
	code := Run(context.Background(), []string{"wait", "t-bad", "t-stop", "t-ok2"}, env)
	if code != ExitNotSucceeded {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %d", code, out.String(), errb.String(), ExitNotSucceeded)
	}
	for _, want := range []string{"t-bad\tFAILED\tRUNTIME_ERROR: exit code 3\n", "t-stop\tCANCELED\n", "t-ok2\tSUCCEEDED\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout %q: want %q", out.String(), want)
		}
	}
	if e := errb.String(); !strings.Contains(e, "2 of 3 task(s) did not succeed: t-bad t-stop") {
		t.Errorf("stderr %q: want which did not succeed", e)
	}
}

// TestWaitTimeout: --timeout ends the wait with exit 4, naming the tasks that had not ended.
func TestWaitTimeout(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-q": {"PENDING_RESOURCES"}, "t-ok": {"SUCCEEDED"}})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"wait", "--timeout", "50ms", "t-q", "t-ok"}, env)
	if code != ExitWaitTimeout || out.String() != "t-ok\tSUCCEEDED\n" ||
		!strings.Contains(errb.String(), "50ms passed; 1 of 2 task(s) had not ended: t-q") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %d naming t-q", code, out.String(), errb.String(), ExitWaitTimeout)
	}
}

// TestWaitRefusals: a task mvp does not know is mvp's refusal (exit 1) at once; no task, a negative timeout or
// --dry-run with --wait are usage errors (exit 2).
func TestWaitRefusals(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-ok": {"RUNNING"}, "t-gone": {"404"}})
	spec := jobFile(t)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"wait", "t-ok", "t-gone"}, 1, "t-gone: no task t-gone"},
		{[]string{"wait"}, 2, "name at least one TASK_ID"},
		{[]string{"wait", "--timeout", "-1s", "t-ok"}, 2, "--timeout must be 0"},
		{[]string{"wait", "--timeout", "soon", "t-ok"}, 2, "invalid value"},
		{[]string{"submit", "-f", spec, "--dry-run", "--wait"}, 2, "nothing to --wait for"},
		{[]string{"submit", "-f", spec, "--timeout", "1h"}, 2, "--timeout bounds --wait"},
		{[]string{"submit", "-f", spec, "--wait", "--timeout", "-1s"}, 2, "--timeout must be 0"},
	} {
		out, errb, env := serverEnv(srv.URL)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := Run(ctx, c.args, env)
		cancel()
		if code != c.code || !strings.Contains(errb.String(), c.says) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d saying %q", c.args, code, out.String(), errb.String(),
				c.code, c.says)
		}
	}
}

// TestWaitOutlivesARestartOfMvp: 503s and refused connections while mvp restarts are waited out (said once), and
// the wait goes on; past followOutage it gives up, exit 1, naming the tasks not ended.
func TestWaitOutlivesARestartOfMvp(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-ok": {"RUNNING", "503", "503", "SUCCEEDED"}})
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"wait", "t-ok"}, env); code != 0 || out.String() != "t-ok\tSUCCEEDED\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 once mvp is back", code, out.String(), errb.String())
	}
	if n := strings.Count(errb.String(), "does not answer"); n != 1 {
		t.Errorf("stderr %q: want the outage said once", errb.String())
	}

	srv, _ = taskServer(t, map[string][]string{"t-ok": {"RUNNING", "503"}})
	out, errb, env = serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"wait", "t-ok"}, env); code != 1 ||
		!strings.Contains(errb.String(), "had not ended: t-ok") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 after the outage", code, out.String(), errb.String())
	}
}

// TestSubmitWait: mvp submit --wait prints the new task's id and state, then its end, and exits by it; with
// -o json the id goes to stderr and standard output is the end's answer alone.
func TestSubmitWait(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-new": {"QUEUED", "RUNNING", "FAILED"}})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"submit", "-f", jobFile(t), "--wait"}, env)
	if want := "t-new\tQUEUED\nt-new\tFAILED\tRUNTIME_ERROR: exit code 3\n"; code != ExitNotSucceeded || out.String() != want {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %q", code, out.String(), want, errb.String())
	}
	srv, _ = taskServer(t, map[string][]string{"t-new": {"SUCCEEDED"}})
	out, errb, env = serverEnv(srv.URL)
	code = Run(context.Background(), []string{"submit", "-f", jobFile(t), "--wait", "-o", "json"}, env)
	if code != 0 || !strings.HasPrefix(out.String(), "{") || !strings.Contains(out.String(), `"state": "SUCCEEDED"`) ||
		!strings.Contains(errb.String(), "t-new QUEUED; waiting") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestCancelSeveral: mvp cancel with several ids cancels each (a sweep submitted by mistake), a line each; one mvp
// refuses is said with its id, the others are still canceled, and the exit is 1. A name that cannot stand in a URL
// path is a usage error before any request.
func TestCancelSeveral(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v2/tasks/"), "/cancel")
		w.Header().Set("Content-Type", "application/json")
		if id == "t-2" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error": {"code": "not_found", "message": "no task t-2"}}`)
			return
		}
		fmt.Fprintf(w, `{"task_id": %q, "state": "CANCELED"}`, id)
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"cancel", "t-1", "t-2", "t-3"}, env)
	if code != 1 || out.String() != "t-1\tCANCELED\nt-3\tCANCELED\n" || !strings.Contains(errb.String(), "t-2: no task t-2") ||
		!strings.Contains(errb.String(), "1 of 3 task(s) not canceled") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	out, errb, env = serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"cancel", "t-1", ".."}, env); code != 2 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing canceled", code, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != n {
		t.Errorf("requests %q after a refused name: want none", asked[n:])
	}
}

// TestAWaitLineNamesTheFailureKindOnce: the scheduler's error summary of a failed attempt already names its kind
// ("attempt 1: RUNTIME_ERROR: exit code 3: …", internal/scheduler/conclude.go), and mvp wait put the kind before it
// again: "FAILED\tRUNTIME_ERROR: attempt 1: RUNTIME_ERROR: exit code 3: …" (seen in a new user's walk-through).
// The kind is added only when the summary does not say it.
func TestAWaitLineNamesTheFailureKindOnce(t *testing.T) {
	failed := func(summary string) *mvp.Task {
		return &mvp.Task{ID: "t", State: mvp.StateFailed, ErrorSummary: summary, LatestAttemptNo: 1,
			Attempts: []*mvp.Attempt{{No: 1, FailureKind: "RUNTIME_ERROR"}}}
	}
	for _, tc := range []struct {
		t    *mvp.Task
		want string
	}{
		{failed("attempt 1: RUNTIME_ERROR: exit code 3: verl-standin: done"), "t\tFAILED\tattempt 1: RUNTIME_ERROR: exit code 3: verl-standin: done\n"},
		{failed("exit code 3"), "t\tFAILED\tRUNTIME_ERROR: exit code 3\n"},
		{failed(""), "t\tFAILED\tRUNTIME_ERROR\n"},
	} {
		var b strings.Builder
		if err := printEnd(&b, tc.t); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("summary %q: printed %q, want %q", tc.t.ErrorSummary, b.String(), tc.want)
		}
	}
}

// TestAnInterruptedWaitSaysTheTasksGoOn: Ctrl-C on `mvp wait` (or `mvp submit --wait`) printed "mvp wait: context
// canceled" and exited 1, the code of mvp's refusal, and read as if the tasks had been canceled. It says that it
// stopped waiting and that the tasks go on, naming them, and exits 130 (ExitInterrupted), as a shell reports Ctrl-C.
func TestAnInterruptedWaitSaysTheTasksGoOn(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-q": {"PENDING_RESOURCES"}, "t-new": {"QUEUED"}})
	for _, args := range [][]string{{"wait", "t-q"}, {"submit", "-f", jobFile(t), "--wait"}} {
		out, errb, env := serverEnv(srv.URL)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		code := Run(ctx, args, env)
		cancel()
		e := errb.String()
		if code != ExitInterrupted || strings.Contains(e, "context") || !strings.Contains(e, "stopped waiting") ||
			!strings.Contains(e, "go on") || !strings.Contains(e, "t-") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d saying the task goes on", args, code, out.String(), e,
				ExitInterrupted)
		}
	}
}

// TestATimeoutWithoutUnitSaysSo: `mvp wait --timeout 3600 ID` (seconds, as the jobspec's *_s fields count) said
// only `invalid value "3600" for flag -timeout: parse error`. It says that a unit is wanted, with examples.
func TestATimeoutWithoutUnitSaysSo(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
	code := Run(context.Background(), []string{"wait", "--timeout", "3600", "t-ok"}, env)
	if first, _, _ := strings.Cut(errb.String(), "\n"); code != 2 || strings.Contains(first, "parse error") ||
		!strings.Contains(first, "3600s") {
		t.Errorf("exit %d, first line %q; want 2 and a hint such as 3600s", code, first)
	}
}

// TestSubmitWaitTimeout: mvp submit --wait --timeout gives up waiting as mvp wait --timeout does (exit 4, naming
// the task, which stays submitted).
func TestSubmitWaitTimeout(t *testing.T) {
	fastWait(t)
	srv, _ := taskServer(t, map[string][]string{"t-new": {"QUEUED", "PENDING_RESOURCES"}})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"submit", "-f", jobFile(t), "--wait", "--timeout", "50ms"}, env)
	if code != ExitWaitTimeout || out.String() != "t-new\tQUEUED\n" ||
		!strings.Contains(errb.String(), "50ms passed; 1 of 1 task(s) had not ended: t-new") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %d naming t-new", code, out.String(), errb.String(), ExitWaitTimeout)
	}
}
