package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/sqlite"
)

func TestInterleaveLetsFlagsFollowArguments(t *testing.T) {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	follow := fs.Bool("f", false, "")
	attempt := fs.Int("attempt", 0, "")
	if err := fs.Parse(interleave(fs, []string{"mvp2-ppo-20251223-143201-7f3a", "-f", "--attempt", "2"})); err != nil {
		t.Fatal(err)
	}
	if !*follow || *attempt != 2 || fs.Arg(0) != "mvp2-ppo-20251223-143201-7f3a" {
		t.Errorf("follow %v attempt %d args %v", *follow, *attempt, fs.Args())
	}
}

func TestReadSpecAppliesSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(path, []byte("workload: ppo\nnnodes: 2\nn_gpus_per_node: 8\n"), 0o644)
	b, err := readSpec(path, []string{"nnodes=1", "env.WANDB_MODE=offline", "overrides=trainer.total_epochs=2"})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	yaml.Unmarshal(b, &doc)
	if doc["nnodes"] != 1 || doc["env"].(map[string]any)["WANDB_MODE"] != "offline" ||
		doc["overrides"].([]any)[0] != "trainer.total_epochs=2" {
		t.Errorf("%v", doc)
	}
	if _, err := readSpec(path, []string{"nnode=1"}); err == nil || !strings.Contains(err.Error(), `did you mean "nnodes"`) {
		t.Errorf("typo: %v", err)
	}
	raw, _ := readSpec(path, nil)
	if string(raw) != "workload: ppo\nnnodes: 2\nn_gpus_per_node: 8\n" {
		t.Errorf("without -e the file must go as it is: %q", raw)
	}
}

func TestHelpAndUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := Run(context.Background(), []string{"--help"}, env); code != 0 || !strings.Contains(out.String(), "Example:") {
		t.Errorf("help: %d %s", code, out.String())
	}
	if code := Run(context.Background(), nil, env); code != 2 || !strings.Contains(errb.String(), "Example:") {
		t.Errorf("no verb: %d (want 2, the usage on stderr)", code)
	}
	if code := Run(context.Background(), []string{"frobnicate"}, env); code != 2 {
		t.Errorf("unknown verb: %d", code)
	}
	if code := Run(context.Background(), []string{"get"}, env); code != 2 || !strings.Contains(errb.String(), "TASK_ID") {
		t.Errorf("get without id: %d %s", code, errb.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"submit", "-h"}, env); code != 0 || !strings.Contains(errb.String(), "e.g. mvp submit") {
		t.Errorf("verb help: %d %s", code, errb.String())
	}
}

func TestProgressText(t *testing.T) {
	pct, step, total := 42.0, int64(17), int64(40)
	p := &mvp.Progress{AttemptNo: 1, PercentComplete: &pct, Step: &step, TotalSteps: &total, Name: "epoch 2",
		Metrics: map[string]float64{"reward": 0.5, "loss": 1.25}}
	if got := progressText(p, false); got != "42% step 17/40" {
		t.Errorf("short: %q", got)
	}
	if got := progressText(p, true); got != "42% step 17/40 epoch 2 loss=1.25 reward=0.5" {
		t.Errorf("long: %q", got)
	}
	if got := progressText(nil, true); got != "-" {
		t.Errorf("none: %q", got)
	}
	if got := progressText(&mvp.Progress{Step: &step}, false); got != "step 17" {
		t.Errorf("step only: %q", got)
	}
	var b bytes.Buffer
	if err := printTask(&b, &mvp.Task{ID: "x", Progress: p, HeartbeatTimeoutS: 60}); err != nil ||
		!strings.Contains(b.String(), "progress:") || !strings.Contains(b.String(), "every 60 s") {
		t.Errorf("get shows no progress: %v\n%s", err, b.String())
	}
}

// TestQueueTakesNoTaskID: `mvp queue` (as README and its usage show it) asked for a TASK_ID and exited 2; with one,
// it ignored it. It shows the whole queue and refuses an argument.
func TestQueueTakesNoTaskID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/queue" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"policy":"xfchain","cluster_known":true,"queue":[{"task_id":"mvp2-ppo-20251223-143201-7f3a","position":1,"code":"gpus_busy","reason":"all GPUs are busy"}]}`)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": srv.URL, "MVP_TOKEN": "t"}[k]
	}}
	if code := Run(context.Background(), []string{"queue"}, env); code != 0 || !strings.Contains(out.String(), "mvp2-ppo-20251223-143201-7f3a") {
		t.Fatalf("mvp queue: exit %d\n%s%s", code, out.String(), errb.String())
	}
	// MVP_ADDR as host:port, without http:// (it failed with "first path segment in URL cannot contain colon").
	out.Reset()
	bare := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": strings.TrimPrefix(srv.URL, "http://"), "MVP_TOKEN": "t"}[k]
	}}
	if code := Run(context.Background(), []string{"queue"}, bare); code != 0 || !strings.Contains(out.String(), "mvp2-ppo-20251223-143201-7f3a") {
		t.Errorf("MVP_ADDR without http://: exit %d\n%s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), []string{"queue", "extra"}, env); code != 2 {
		t.Errorf("mvp queue extra: exit %d, want 2 (usage): %s", code, errb.String())
	}
}

// TestHelpOfSubcommandsExitsZero: --help of the verbs with their own flag sets (sim, sim gen, users) printed
// "flag: help requested" and exited 2.
func TestHelpOfSubcommandsExitsZero(t *testing.T) {
	for _, args := range [][]string{{"sim", "--help"}, {"sim", "gen", "--help"}, {"users", "--help"}, {"get", "--help"}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		if code := Run(context.Background(), args, env); code != 0 || strings.Contains(errb.String(), "help requested") {
			t.Errorf("mvp %v: exit %d\n%s", args, code, errb.String())
		}
	}
}

// TestOutputFormatIsChecked: -o xml of secrets and users fell back to a table without a word, and logs ignored -o.
func TestOutputFormatIsChecked(t *testing.T) {
	for _, args := range [][]string{{"secrets", "list", "-o", "xml"}, {"users", "-o", "xml"}, {"list", "-o", "xml"},
		{"schedule", "list", "-o", "xml"}, {"logs", "mvp2-ppo-20251223-143201-7f3a", "-o", "json"}, {"users", "extra"}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		if code := Run(context.Background(), args, env); code != 2 {
			t.Errorf("mvp %v: exit %d, want 2\n%s", args, code, errb.String())
		}
	}
}

// TestWiredVerbsUsageExitsTwo: a bad flag of serve exited 1 (as if the server had said no).
func TestWiredVerbsUsageExitsTwo(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
		Serve: func(context.Context, []string, io.Writer) error {
			return Usage(errors.New("flag provided but not defined: -bogus"))
		}}
	if code := Run(context.Background(), []string{"serve", "--bogus"}, env); code != 2 {
		t.Errorf("serve --bogus: exit %d, want 2", code)
	}
}

// --attempt 0 printed the latest attempt's log and --limit 0 every event, exit 0: the server refuses both (400),
// the CLI dropped them as "not given". Found in a user walk-through.
func TestNumberFlagsOutOfRangeAreUsageErrors(t *testing.T) {
	id := "mvp2-ppo-20251223-143201-7f3a"
	for _, args := range [][]string{{"logs", id, "--attempt", "0"}, {"logs", id, "--attempt", "-1"},
		{"events", id, "--limit", "0"}, {"list", "--limit", "-5"},
		// a state that is none of mvp's exited 1 (the server's 400), where a --limit out of range exits 2 (a drill)
		{"list", "--state", "bogus"}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), "must be") {
			t.Errorf("mvp %v: exit %d, want 2 saying the range\n%s", args, code, errb.String())
		}
	}
}

// `mvp submit -f` of a file that is not there exited 1, the code of "the server said no"; it is the command's
// mistake (2). Found in a user walk-through.
func TestSubmitOfAMissingFileIsAUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
	for _, args := range [][]string{{"submit", "-f", "/nonexistent/job.yaml"}, {"schedule", "create", "n", "--cron", "@every 1h", "-f", "/nonexistent/job.yaml"}} {
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), "no such file") {
			t.Errorf("mvp %v: exit %d, want 2\n%s", args, code, errb.String())
		}
	}
}

// A bad flag was reported twice: by the flag package with the usage, then again as the verb's error. Found in a
// user walk-through.
func TestABadFlagIsReportedOnce(t *testing.T) {
	for _, args := range [][]string{{"list", "--bogus"}, {"submit", "-f"}, {"users", "--bogus"}, {"schedule", "list", "--bogus"}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		code := Run(context.Background(), args, env)
		msg := "flag provided but not defined"
		if args[0] == "submit" {
			msg = "flag needs an argument"
		}
		if code != 2 || strings.Count(errb.String(), msg) != 1 {
			t.Errorf("mvp %v: exit %d, %d reports\n%s", args, code, strings.Count(errb.String(), msg), errb.String())
		}
	}
}

// TestLogsFollowFollowsTheNextAttempt: `mvp logs -f` followed one attempt; when that attempt failed and the task
// was requeued (it lost the race for GPUs), the stream ended on a traceback with exit 0 and not a word, as if the
// task had ended. It now says the task will run again, waits for its next attempt and follows that one too, to the
// task's end, as the Ray door's tail does.
func TestLogsFollowFollowsTheNextAttempt(t *testing.T) {
	const id = "mvp2-ppo-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	var mu sync.Mutex
	gets := 0
	const ended1 = `{"attempt_no": 1, "ray_status": "FAILED", "failure_kind": "INSUFFICIENT_RESOURCES", "end_time": "2025-12-23T14:33:01Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			switch r.URL.Query().Get("attempt") {
			case "", "1":
				io.WriteString(w, "ValueError: Total available GPUs 4.0 is less than total desired GPUs 8\n")
			case "2":
				io.WriteString(w, "verl-standin: done after 3 step(s)\n")
			default:
				http.NotFound(w, r)
			}
		case "/api/v2/tasks/" + id:
			gets++
			w.Header().Set("Content-Type", "application/json")
			switch {
			case gets <= 3: // requeued, waiting
				io.WriteString(w, `{"task_id": "`+id+`", "state": "PENDING_RESOURCES", "latest_attempt_no": 1, "attempts": [`+ended1+`]}`)
			case gets <= 4: // its next attempt runs
				io.WriteString(w, `{"task_id": "`+id+`", "state": "RUNNING", "latest_attempt_no": 2, "attempts": [`+ended1+
					`, {"attempt_no": 2, "ray_status": "RUNNING"}]}`)
			default:
				io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 2, "attempts": [`+ended1+
					`, {"attempt_no": 2, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || !strings.Contains(out.String(), "ValueError") || !strings.Contains(out.String(), "done after 3 step(s)") {
		t.Fatalf("exit %d, stdout %q (want attempt 1's log, then attempt 2's)", code, out.String())
	}
	if e := errb.String(); !strings.Contains(e, "attempt 1 ended (INSUFFICIENT_RESOURCES)") ||
		!strings.Contains(e, "attempt 2") {
		t.Errorf("stderr %q does not say the task ran again and that attempt 2 is followed", e)
	}
}

// mvp backup copies the database named by dev.yaml into a new file and says how many tasks it holds.
func TestBackupVerb(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "db", "mvp.sqlite3")
	db, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	cfg := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(cfg, []byte("v2:\n  sqlite: {db_path: "+dbPath+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	to := filepath.Join(dir, "backup.sqlite3")
	code := Run(context.Background(), []string{"backup", "--config", cfg, to}, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 || !strings.Contains(out.String(), "0 tasks, integrity ok") {
		t.Fatalf("mvp backup: exit %d, %q %q", code, out.String(), errb.String())
	}
	if code := Run(context.Background(), []string{"backup", "--config", cfg, to}, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code == 0 {
		t.Errorf("a second backup over the same file succeeded")
	}
	// An empty name is a usage error (exit 2), not "back up to <the working folder>: the file exists already"
	// (walk-through 17).
	errb.Reset()
	if code := Run(context.Background(), []string{"backup", "--config", cfg, ""}, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code != 2 || !strings.Contains(errb.String(), "name one new file") {
		t.Errorf("mvp backup '': exit %d, %q; want 2 asking for a file name", code, errb.String())
	}
}

// TestJobTextCannotDriveTheTerminal: what a job writes (its progress file, the error text Ray keeps from its
// output, its result files' names) reached the terminal raw in mvp get, list, queue, events and results: escape
// sequences cleared the screen and coloured text, and a newline in a name added a fake row. It is now shown with
// control characters escaped.
func TestJobTextCannotDriveTheTerminal(t *testing.T) {
	const bad = "boom \x1b[2J\x1b[31mRED\x1b[0m\nFAKE ROW\r\x07\x7f\u009b"
	task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-7f3a", Name: "n" + bad, State: mvp.StateFailed, ErrorSummary: bad,
		PendingReason: bad, Progress: &mvp.Progress{Name: bad, Metrics: map[string]float64{"loss" + bad: 1}}}
	var out bytes.Buffer
	if err := printTask(&out, task); err != nil {
		t.Fatal(err)
	}
	if err := printList(&out, &api.TaskPage{Tasks: []*mvp.Task{task}}, nil, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if err := printQueue(&out, &scheduler.QueueView{Queue: []scheduler.QueueEntry{{TaskID: task.ID, Reason: bad}}}, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if err := printResults(&out, &api.ResultList{Files: []mvp.ResultFile{{Path: "a01/" + bad + ".txt"}}}); err != nil {
		t.Fatal(err)
	}
	if err := printEvents(&out, task.ID, 0, &api.EventPage{Events: []*mvp.Event{{ID: 1, Type: "X",
		Payload: []byte("{\"message\":\"\u009b31m \u007f\"}")}}}); err != nil { // JSON may hold these raw
		t.Fatal(err)
	}
	for _, c := range []string{"\x1b", "\r", "\x07", "\x7f", "\u009b"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("the output holds the control character %q:\n%s", c, out.String())
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "FAKE ROW") {
			t.Errorf("a newline in job text made a line of its own: %q", line)
		}
	}
	if !strings.Contains(out.String(), `boom \x1b[2J`) {
		t.Errorf("the text is not shown escaped:\n%s", out.String())
	}
}

// TestEditingASpecKeepsItsChecks: with -e (and for mvp schedule create, which sends JSON), the CLI sends an edited
// copy of the file, in which a field given twice kept its last value and a second YAML document was dropped: the
// server's refusals never came, or came with the copy's line numbers. The file's shape is now checked first, with
// its own line numbers.
func TestEditingASpecKeepsItsChecks(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"dup.yaml":   {"workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nnnodes: 2\n", `"nnodes" is given twice (line 6)`},
		"two.yaml":   {"workload: ppo\nnnodes: 1\n---\nnnodes: 2\n", "more than one YAML document"},
		"typo.yaml":  {"# a comment\nworkload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nnam: x\n", `unknown field "nam" (line 5)`},
		"alias.yaml": {"workload: &w ppo\nname: *w\n", "anchors and aliases"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readSpec(path, []string{"name=x"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with -e: %v, want an error saying %s", name, err, c.want)
		}
		if _, err := specJSON([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as a schedule's jobspec: %v, want an error saying %s", name, err, c.want)
		}
	}
}

// TestResultsGetTakesNoFormat: every client verb takes -o table|json|yaml, but with --get, -o names the file to
// write: `-o json` wrote a file named json in the working folder, silently, and printed nothing.
func TestResultsGetTakesNoFormat(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, f := range []string{"json", "yaml", "table"} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		code := Run(context.Background(), []string{"results", "mvp2-ppo-20251223-143201-7f3a", "--get", "a01/x.json", "-o", f}, env)
		if code != 2 || !strings.Contains(errb.String(), "./"+f) {
			t.Errorf("results --get -o %s: exit %d, %q; want a usage error saying how to name such a file", f, code, errb.String())
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a file named %s was written", f)
		}
	}
}

// TestNoTokenSaysWhichVariable: with MVP_TOKEN empty the server's 401 ("missing Authorization: Bearer <token>
// header") did not say what the CLI user should set.
func TestNoTokenSaysWhichVariable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error": {"code": "unauthorized", "message": "missing Authorization: Bearer <token> header"}}`)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "MVP_ADDR" {
			return srv.URL
		}
		return ""
	}}
	if code := Run(context.Background(), []string{"list"}, env); code != 1 || !strings.Contains(errb.String(), "set MVP_TOKEN") {
		t.Errorf("list without a token: exit %d, %q; want it to say to set MVP_TOKEN", code, errb.String())
	}
}

// TestTheTaskYieldedToIsShown: a reason said the task it waited behind was in yields_to, and neither mvp queue nor
// mvp list showed it.
func TestTheTaskYieldedToIsShown(t *testing.T) {
	const big = "mvp2-ppo-20251223-143201-b1b1"
	e := scheduler.QueueEntry{TaskID: "mvp2-ppo-20251223-143201-5a5a", Code: "behind_reservation", Position: 2,
		Reason: "waiting behind the task that holds a reservation", YieldsTo: big}
	var q, l bytes.Buffer
	if err := printQueue(&q, &scheduler.QueueView{Queue: []scheduler.QueueEntry{e}}, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	task := &mvp.Task{ID: e.TaskID, State: mvp.StatePendingResources}
	if err := printList(&l, &api.TaskPage{Tasks: []*mvp.Task{task}}, &scheduler.QueueView{Queue: []scheduler.QueueEntry{e}}, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q.String(), big) {
		t.Errorf("mvp queue does not name the task yielded to:\n%s", q.String())
	}
	if !strings.Contains(l.String(), big) {
		t.Errorf("mvp list does not name the task yielded to:\n%s", l.String())
	}
}

// TestMistakesInTheCommandExitTwo: a mistake in the command line itself exits 2 (usage), as the docs say; these
// exited 1, as if the server had said no: --limit above the API's cap, a --from-file that cannot be read, and a
// result path the CLI refuses before asking. Found in walk-through 7.
func TestMistakesInTheCommandExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"list", "--limit", "501"},
		{"events", "mvp2-ppo-20251223-143201-7f3a", "--limit", "1001"},
		{"secrets", "put", "x", "--from-file", "/nonexistent/file"},
		{"results", "mvp2-ppo-20251223-143201-7f3a", "--get", "../x"},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		if code := Run(context.Background(), args, env); code != 2 {
			t.Errorf("mvp %v: exit %d, want 2\n%s", args, code, errb.String())
		}
	}
}

// TestErrorsAfterEditingCiteTheFilesLines: with -e, what is sent is an edited copy (re-encoded, keys sorted, no
// comments), and the server's value errors cited the copy's line: "(line 1)" for a field on line 9 of the file.
// They now cite the file's line, or say that -e set the value.
func TestErrorsAfterEditingCiteTheFilesLines(t *testing.T) {
	m := servicetest.Start(t, nil)
	path := filepath.Join(t.TempDir(), "job.yaml")
	body := "workload: ppo\n\n# a comment\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\nmax_runtime_s: 99999999999\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": servicetest.Token}[k]
		}}
		if code := Run(context.Background(), args, env); code != 1 {
			t.Errorf("%v: exit %d, want 1: %s%s", args, code, out.String(), errb.String())
		}
		return errb.String()
	}
	if got := run("submit", "-f", path, "--dry-run"); !strings.Contains(got, "(line 9)") {
		t.Errorf("without -e: %q, want line 9", got)
	}
	if got := run("submit", "-f", path, "-e", "nnodes=1", "--dry-run"); !strings.Contains(got, "(line 9 of "+path+")") {
		t.Errorf("with -e of another field: %q, want line 9 of the file", got)
	}
	// A schedule's jobspec goes as JSON, a copy even without -e.
	if got := run("schedule", "create", "nightly", "--cron", "0 2 * * *", "-f", path); !strings.Contains(got, "(line 9 of "+path+")") {
		t.Errorf("schedule create: %q, want line 9 of the file", got)
	}
	fixed := strings.Replace(body, "99999999999", "3600", 1)
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	// A number too large to read, given with -e, is refused before it is sent, naming the -e and the range (it
	// was sent, and the server's "(line 1)" became "(as -e … set it)"; that mapping is TestRelinedBlamesOnlyTheEditThatSetTheField's).
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": servicetest.Token}[k]
	}}
	if code := Run(context.Background(), []string{"submit", "-f", path, "-e", "max_runtime_s=99999999999", "--dry-run"}, env); code != 2 ||
		!strings.Contains(errb.String(), "-e max_runtime_s=99999999999") || !strings.Contains(errb.String(), "out of range") {
		t.Errorf("-e max_runtime_s=99999999999: exit %d: %s", code, errb.String())
	}
}

// TestLogsFollowOutlivesARestartBetweenAttempts: while `mvp logs -f` waited for a requeued task's next attempt,
// a restart of mvp (a refused or cut connection, a 503 while it stops) ended the follow with "nothing answers".
// It now keeps waiting through a short outage, and says so.
func TestLogsFollowOutlivesARestartBetweenAttempts(t *testing.T) {
	const id = "mvp2-ppo-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	var mu sync.Mutex
	gets := 0
	const ended1 = `{"attempt_no": 1, "ray_status": "FAILED", "failure_kind": "INSUFFICIENT_RESOURCES", "end_time": "2025-12-23T14:33:01Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			if r.URL.Query().Get("attempt") == "2" {
				io.WriteString(w, "verl-standin: done after 3 step(s)\n")
			} else {
				io.WriteString(w, "ValueError: Total available GPUs 4.0 is less than total desired GPUs 8\n")
			}
		case "/api/v2/tasks/" + id:
			gets++
			switch {
			case gets == 2: // mvp stopping
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error": {"code": "unavailable", "message": "mvp is stopping"}}`)
				return
			case gets == 3: // mvp gone: the connection is cut unanswered
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if gets < 5 {
				io.WriteString(w, `{"task_id": "`+id+`", "state": "PENDING_RESOURCES", "latest_attempt_no": 1, "attempts": [`+ended1+`]}`)
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
	if code != 0 || !strings.Contains(out.String(), "done after 3 step(s)") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the follow to outlive the restart and show attempt 2", code, out.String(), errb.String())
	}
	if e := errb.String(); strings.Count(e, "does not answer") != 1 {
		t.Errorf("stderr %q: want one line saying mvp does not answer and the follow waits", e)
	}
}

// TestRelinedBlamesOnlyTheEditThatSetTheField (review): an error in env.B, which came from the file, was put on
// "-e env.A=1" because both are under env.
func TestRelinedBlamesOnlyTheEditThatSetTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte("workload: ppo\nenv:\n  B: [1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func() error {
		return &api.StatusError{Status: 400, Detail: api.ErrorDetail{Field: "env.B", Message: "env must map names to string values (line 4)"}}
	}
	if got := relined(mk(), path, []string{"env.A=1"}, true).(*api.StatusError).Detail.Message; !strings.Contains(got, "(line 2 of "+path+")") {
		t.Errorf("-e env.A=1, error in env.B: %q, want the file's line of env", got)
	}
	if got := relined(mk(), path, []string{"env.B=x"}, true).(*api.StatusError).Detail.Message; !strings.Contains(got, "(as -e env.B=x set it)") {
		t.Errorf("-e env.B=x: %q, want that -e named", got)
	}
	if got := relined(mk(), path, []string{"env={}"}, true).(*api.StatusError).Detail.Message; !strings.Contains(got, "(as -e env={} set it)") {
		t.Errorf("-e env={}: %q, want that -e named (it set the whole map)", got)
	}
}

// TestGetSaysWhenMaxQueuedNoLongerApplies: a waiting task that has run (requeued after a run Ray lost) is bound by
// its max_queued_s no more; mvp get showed the limit as if it still held (walk-through 11).
func TestGetSaysWhenMaxQueuedNoLongerApplies(t *testing.T) {
	var b bytes.Buffer
	task := &mvp.Task{ID: "x", State: mvp.StatePendingResources, MaxQueuedS: 45, LatestAttemptNo: 1}
	if err := printTask(&b, task); err != nil || !strings.Contains(b.String(), "no longer applies") {
		t.Errorf("a requeued task that has run: %v\n%s", err, b.String())
	}
	b.Reset()
	left := 30
	task.QueuedLeftS = &left // still bound: its attempt lost a race
	if err := printTask(&b, task); err != nil || strings.Contains(b.String(), "no longer applies") || !strings.Contains(b.String(), "30s left") {
		t.Errorf("a task still bound: %v\n%s", err, b.String())
	}
}

// TestGetShowsOwnerAndPriority: mvp get showed neither whose task it is nor its priority; only -o json did
// (walk-through 12).
func TestGetShowsOwnerAndPriority(t *testing.T) {
	var b bytes.Buffer
	if err := printTask(&b, &mvp.Task{ID: "x", Owner: "alice", Priority: 30}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"owner:", "alice", "priority:", "30"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("mvp get does not show %q:\n%s", want, b.String())
		}
	}
}

// TestListByOwner: the operator lists one user's tasks with mvp list --owner (the API took owner=; the CLI had no
// way to send it: walk-through 12).
func TestListByOwner(t *testing.T) {
	t.Setenv("MVP_TEST_TOKEN_ALICE", "alice-token-0123456789abcdef")
	cfg := servicetest.Config(t)
	cfg.V2.Auth.Users = []config.User{{Name: "alice", TokenEnv: "MVP_TEST_TOKEN_ALICE", Share: 1}}
	m := servicetest.Start(t, &service.Main{Config: cfg})
	spec := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	op := &api.Client{Addr: m.URL(), Token: servicetest.Token}
	alice := &api.Client{Addr: m.URL(), Token: "alice-token-0123456789abcdef"}
	var mine, hers mvp.Task
	for c, into := range map[*api.Client]*mvp.Task{op: &mine, alice: &hers} {
		raw, err := c.Submit(context.Background(), []byte(spec), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": servicetest.Token}[k]
	}}
	if code := Run(context.Background(), []string{"list", "--owner", "alice"}, env); code != 0 {
		t.Fatalf("mvp list --owner alice: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), hers.ID) || strings.Contains(out.String(), mine.ID) {
		t.Errorf("mvp list --owner alice:\n%s\nwant %s and not %s", out.String(), hers.ID, mine.ID)
	}
}

// TestQueueSaysWhenAReservationsHolderIsEstimatedLater: the reserved start is what backfill keeps free for the
// holder now; the forecast can start it later (a task ahead of it becomes startable first: its owner's quota frees,
// a dependency ends). `mvp queue` printed both times with no word of why they differ (walk-through 14); it says so.
func TestQueueSaysWhenAReservationsHolderIsEstimatedLater(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"policy":"xfchain","cluster_known":true,`+
			`"reservations":[{"task_id":"mvp2-ppo-20251223-143201-7f3a","nodes":["n1"],"start":"2025-12-23T15:32:01Z"}],`+
			`"queue":[{"task_id":"mvp2-ppo-20251223-143201-7f3a","position":1,"code":"gpus_busy","reason":"all GPUs are busy","est_start":"2025-12-23T20:32:01Z"}]}`)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": srv.URL, "MVP_TOKEN": "t", "TZ": "UTC"}[k]
	}}
	if code := Run(context.Background(), []string{"queue"}, env); code != 0 {
		t.Fatalf("mvp queue: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "reserved: ") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "reserved: mvp2-ppo-20251223-143201-7f3a on n1 from ") ||
		!strings.Contains(line, "estimated to start later, at ") {
		t.Errorf("reserved line: %q", line)
	}
}

// TestGetShowsTheDoorSubmissionID: a job sent through the Ray door with its own submission_id (JobSubmissionClient's
// submission_id="my-gang-job-1") is an mvp task with another id; `mvp get` showed nothing that tied the two,
// though `-o json` has submission_id (the walk-through: `mvp get my-gang-job-1` is 404, and the task's table did not
// say which Ray job it was).
func TestGetShowsTheDoorSubmissionID(t *testing.T) {
	var b bytes.Buffer
	task := &mvp.Task{ID: "mvp2-ray_job-20261129-201642-be38", Workload: "ray_job", SubmissionID: "my-gang-job-1", DoorDeleted: true}
	if err := printTask(&b, task); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^submission_id:\s+my-gang-job-1 \(Ray door; deleted there\)$`).MatchString(b.String()) {
		t.Errorf("no submission_id row:\n%s", b.String())
	}
	b.Reset()
	if err := printTask(&b, &mvp.Task{ID: "mvp2-ppo-20251223-143201-7f3a", Workload: "ppo"}); err != nil || strings.Contains(b.String(), "submission_id") {
		t.Errorf("a jobspec task shows a submission_id row (%v):\n%s", err, b.String())
	}
}

// TestQueueSaysWhenAReservationsStartIsUnknown: with a job Ray runs outside mvp holding a node's GPUs, `mvp queue`
// printed "reserved: mvp2-grpo-… on A, B from -": a reservation "from -" does not say that its start is unknown
// (the API's start is null: nothing declared says when those GPUs are free).
func TestQueueSaysWhenAReservationsStartIsUnknown(t *testing.T) {
	var b bytes.Buffer
	q := &scheduler.QueueView{Reservations: []scheduler.Reservation{{TaskID: "mvp2-grpo-20261129-203056-7f35", Nodes: []string{"a", "b"}}}}
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "from -") || !strings.Contains(b.String(), "start unknown") {
		t.Errorf("a reservation without a start:\n%s", b.String())
	}
}

// A GPU node that is down is listed with the nodes, marked down, so that a nodes_down task's reason can be read
// against it.
func TestQueueListsTheNodesThatAreDown(t *testing.T) {
	var b bytes.Buffer
	q := &scheduler.QueueView{ClusterKnown: true, Nodes: []scheduler.NodeFree{{NodeID: "w1", FreeGPUs: 4, RayFreeGPUs: 4, TotalGPUs: 4}},
		DownNodes: []scheduler.NodeDown{{NodeID: "w2", TotalGPUs: 4}}}
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^w2 \(down\) +- +- +4$`).MatchString(b.String()) {
		t.Errorf("the node that is down:\n%s", b.String())
	}
}

// TestQueueSaysWhyTheClusterCannotBeRead: with Ray down, `mvp queue` said "the cluster could not be read: nothing
// is admitted until it can" without the reason the API gives in cluster_error (which address did not answer, which
// setting names it); `mvp queue -o json` had it.
func TestQueueSaysWhyTheClusterCannotBeRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"at":"2026-11-29T20:48:55Z","policy":"xfchain","cluster_known":false,"nodes":[],"queue":[],`+
			`"reservations":[],"starting":[],"cluster_error":"ray is unavailable (dial tcp 127.0.0.1:8465: connection refused)"}`)
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"queue"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "dial tcp 127.0.0.1:8465") {
		t.Errorf("mvp queue does not say why the cluster cannot be read:\n%s", out.String())
	}
}

// TestQueueNamesWhatTheForecastStartsBeforeAReservationsHolder: on the real cluster (fair share on, two users
// flooding), the reservation's holder was first in line (position 1, rank 1) and `mvp queue` said it was "estimated
// to start later, at 21:10:16, after a task ahead of it": nothing was ahead of it. The tasks the forecast started
// first were ranked behind it now (their owners' charge drops once their running tasks end), and that is what then
// happened. The line names the tasks estimated to start before it instead of asserting one is ahead of it.
func TestQueueNamesWhatTheForecastStartsBeforeAReservationsHolder(t *testing.T) {
	at := func(s string) *time.Time { v, _ := time.Parse(time.RFC3339, s); return &v }
	q := &scheduler.QueueView{
		Reservations: []scheduler.Reservation{{TaskID: "mvp2-ppo-20261129-210627-7e8c", Nodes: []string{"n1", "n2"}, Start: at("2026-11-29T21:07:36Z")}},
		Queue: []scheduler.QueueEntry{
			{TaskID: "mvp2-ppo-20261129-210627-7e8c", Owner: "operator", Position: 1, Rank: 1, Code: "gpus_busy", EstStart: at("2026-11-29T21:10:16Z")},
			{TaskID: "mvp2-ppo-20261129-210640-2a33", Owner: "alice", Position: 2, Rank: 2, Code: "gpus_busy", EstStart: at("2026-11-29T21:08:16Z")},
			{TaskID: "mvp2-ppo-20261129-210640-7f68", Owner: "bob", Position: 5, Rank: 5, Code: "gpus_busy", EstStart: at("2026-11-29T21:07:36Z")},
			{TaskID: "mvp2-ppo-20261129-210640-f3ef", Owner: "bob", Position: 6, Rank: 6, Code: "gpus_busy", EstStart: at("2026-11-29T21:12:00Z")},
		},
	}
	var b bytes.Buffer
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "reserved: ") {
			line = l
		}
	}
	if strings.Contains(line, "ahead of it") {
		t.Errorf("the holder is first in line, yet the line says a task is ahead of it: %q", line)
	}
	if !strings.Contains(line, "mvp2-ppo-20261129-210640-7f68") || !strings.Contains(line, "mvp2-ppo-20261129-210640-2a33") ||
		strings.Contains(line, "mvp2-ppo-20261129-210640-f3ef") {
		t.Errorf("the line does not name the tasks estimated to start before the holder (7f68, 2a33; not f3ef): %q", line)
	}
}

// TestEstimatesSayWhatTheyAssume: a task waiting behind 20-second runs was shown EST START three days away (each
// running task counted for its declared max_runtime_s, default v2.scheduler.default_max_runtime_s, 3 days), which
// a new user read as broken (walk-through). mvp queue and mvp list say under the table what the estimates assume,
// when they show one; without an estimate there is nothing to say.
func TestEstimatesSayWhatTheyAssume(t *testing.T) {
	at, _ := time.Parse(time.RFC3339, "2026-12-03T10:00:00Z")
	q := &scheduler.QueueView{Queue: []scheduler.QueueEntry{{TaskID: "mvp2-ppo-20261130-180000-7f3a", Position: 1,
		Code: "gpus_busy", EstStart: &at}}}
	const note = "every run lasts its declared max_runtime_s"
	var b bytes.Buffer
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), note) || !strings.Contains(b.String(), "default_max_runtime_s") {
		t.Errorf("mvp queue:\n%s\nwant a line saying what the estimates assume", b.String())
	}
	b.Reset()
	page := &api.TaskPage{Tasks: []*mvp.Task{{ID: "mvp2-ppo-20261130-180000-7f3a", State: mvp.StatePendingResources}}}
	if err := printList(&b, page, q, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), note) {
		t.Errorf("mvp list:\n%s\nwant a line saying what the estimates assume", b.String())
	}
	b.Reset()
	q.Queue[0].EstStart = nil
	if err := printList(&b, page, q, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), note) {
		t.Errorf("mvp list without an estimate:\n%s\nsays what estimates assume", b.String())
	}
}

// TestSecretsSaysWhatIsWrong: `mvp secrets put wandb s3cret` (the value as an argument, as most CLIs take it) and
// `mvp secrets lsit` printed only "mvp secrets: usage: …", the whole usage, without saying what was wrong. Each
// now says it (exit 2, nothing sent): the value is read from standard input, an unknown subcommand is named.
func TestSecretsSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"secrets", "put", "wandb", "s3cret"}, "standard input"},
		{[]string{"secrets", "lsit"}, `unknown subcommand "lsit"`},
		{[]string{"secrets", "delete"}, "takes the NAME"},
		{[]string{"secrets", "list", "extra"}, "no argument"},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("v"),
			Getenv: func(string) string { return "http://127.0.0.1:1" }}
		code := Run(context.Background(), c.args, env)
		if first, _, _ := strings.Cut(errb.String(), "\n"); code != 2 || !strings.Contains(first, c.want) {
			t.Errorf("mvp %v: exit %d, first line %q; want exit 2 and %q", c.args, code, first, c.want)
		}
	}
}

// TestHelpOfAVerb: `mvp help submit` printed the general usage (exit 0) and `mvp help frob` too; `mvp --version`
// was an unknown command. `mvp help VERB` is VERB -h, an unknown VERB exit 2; --version is `mvp version`.
func TestHelpOfAVerb(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	// Asked for, the help goes to stdout, as `mvp help` and `mvp -h` put theirs: `mvp help submit | less` showed
	// nothing when it went to stderr.
	if code := Run(context.Background(), []string{"help", "submit"}, env); code != 0 || !strings.Contains(out.String(), "e.g. mvp submit") || errb.Len() != 0 {
		t.Errorf("help submit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"help", "schedule", "create"}, env); code != 0 || !strings.Contains(out.String(), "mvp schedule create") || errb.Len() != 0 {
		t.Errorf("help schedule create: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), []string{"help", "frob"}, env); code != 2 || !strings.Contains(errb.String(), `unknown command "frob"`) {
		t.Errorf("help frob: exit %d\n%s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), []string{"--version"}, env); code != 0 || !strings.HasPrefix(out.String(), "mvp ") {
		t.Errorf("--version: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestAListFilterGivenTwiceIsRefused: `mvp list --state QUEUED --state RUNNING` listed the RUNNING tasks alone (the
// flag package keeps the last value) and said nothing, as if none were QUEUED. A filter given twice is a usage
// error, as -f given twice is.
func TestAListFilterGivenTwiceIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"list", "--state", "QUEUED", "--state", "RUNNING"},
		{"list", "--workload", "ppo", "--workload", "sft"},
		{"list", "--owner", "alice", "--owner", "bob"},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "http://127.0.0.1:1" }}
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), "given twice") {
			t.Errorf("mvp %v: exit %d: %s", args, code, errb.String())
		}
	}
}

// TestLogsFollowInterruptedExits130: Ctrl-C on `mvp logs -f` ends it with 130 (interrupted; the task goes on), as
// mvp wait's, not 1, which says the server refused or could not be reached (found by a user's-eye drill).
func TestLogsFollowInterruptedExits130(t *testing.T) {
	const id = "mvp2-ppo-20251223-143201-7f3a"
	following := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			io.WriteString(w, "step 1\n")
			w.(http.Flusher).Flush()
			once.Do(func() { close(following) })
			<-r.Context().Done() // a run that goes on: the log is held open
		case "/api/v2/tasks/" + id:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"task_id": "`+id+`", "state": "RUNNING", "latest_attempt_no": 1, "attempts": [{"attempt_no": 1, "ray_status": "RUNNING"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		select {
		case <-following:
		case <-time.After(10 * time.Second):
		}
		cancel(errors.New("interrupt signal received"))
	}()
	code := Run(ctx, []string{"logs", "-f", id}, env)
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 130 saying it was interrupted", code, out.String(), errb.String())
	}
}

// TestADoorJobWithoutAGangSaysSo: a job sent through the Ray door without a gang (no placement group declared, its
// driver alone takes resources) showed "gang: 0 × 0 GPU" in `mvp get` and "0×0" in `mvp list`, which reads as a
// gang of nothing (found by a user's-eye drill). Both say it has no gang, and get shows what its driver takes.
func TestADoorJobWithoutAGangSaysSo(t *testing.T) {
	task := &mvp.Task{ID: "mvp2-ray_job-20261129-201642-be38", Workload: "ray_job", SubmissionID: "raysubmit_1",
		Driver: map[string]float64{"CPU": 2, "GPU": 1}}
	var b bytes.Buffer
	if err := printTask(&b, task); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^gang:\s+none \(the Ray driver alone, with 1 GPU\)$`).MatchString(b.String()) ||
		!regexp.MustCompile(`(?m)^driver:\s+CPU=2, GPU=1$`).MatchString(b.String()) {
		t.Errorf("mvp get of a door job without a gang:\n%s", b.String())
	}
	b.Reset()
	if err := printList(&b, &api.TaskPage{Tasks: []*mvp.Task{task}}, nil, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "0×0") || !regexp.MustCompile(`ray_job\s+driver\s`).MatchString(b.String()) {
		t.Errorf("mvp list of a door job without a gang:\n%s", b.String())
	}
	b.Reset()
	if err := printTask(&b, &mvp.Task{ID: "x", Workload: "ppo", NNodes: 2, GPUsPerNode: 8}); err != nil ||
		!regexp.MustCompile(`(?m)^gang:\s+2 × 8 GPU$`).MatchString(b.String()) || strings.Contains(b.String(), "driver:") {
		t.Errorf("mvp get of a gang task (%v):\n%s", err, b.String())
	}
}

// TestQueueSaysTheStartWaitsForAPassUnderWay: while the scheduler's pass waited on a job server that did not
// answer, `mvp queue` printed "starting now: X" for half a minute. With the API's scheduler note it says the
// start waits for the pass under way, and why.
func TestQueueSaysTheStartWaitsForAPassUnderWay(t *testing.T) {
	q := &scheduler.QueueView{Policy: "xfchain", ClusterKnown: true, Starting: []string{"mvp2-ppo-20261203-065959-7f3a"}}
	var b bytes.Buffer
	if err := printQueue(&b, q, queueNotes{Scheduler: "the scheduler's last pass began 25s ago: it is waiting, on Ray perhaps"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "scheduler: the scheduler's last pass began 25s ago") ||
		!strings.Contains(b.String(), "starting once the pass under way ends: mvp2-ppo-20261203-065959-7f3a") ||
		strings.Contains(b.String(), "starting now") {
		t.Errorf("mvp queue while a pass waits:\n%s", b.String())
	}
	b.Reset()
	if err := printQueue(&b, q, queueNotes{}); err != nil || !strings.Contains(b.String(), "starting now: mvp2-ppo") ||
		strings.Contains(b.String(), "scheduler:") {
		t.Errorf("mvp queue (%v):\n%s", err, b.String())
	}
}

// TestGetSaysRaysOutageOfARunningTask: mvp get of a RUNNING task while Ray cannot be read showed RUNNING and
// nothing else (found by a drill); the service's ray_outage is printed.
func TestGetSaysRaysOutageOfARunningTask(t *testing.T) {
	var b bytes.Buffer
	task := &mvp.Task{ID: "x", State: mvp.StateRunning, RayOutage: "Ray cannot be read, so this state is what Ray last said"}
	if err := printTask(&b, task); err != nil || !strings.Contains(b.String(), "ray_outage:") ||
		!strings.Contains(b.String(), "what Ray last said") {
		t.Errorf("a running task during Ray's outage: %v\n%s", err, b.String())
	}
}
