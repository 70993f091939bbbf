package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/sqlite"
)

// writeTemp writes body to a file in a test's temporary folder and returns its path.
func writeTemp(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestErrorsCannotDriveTheTerminal: an error echoed what the user typed as it was, so an -e with an escape
// sequence (pasted from a coloured log) reached the terminal raw, from the CLI's own message ("-e bogus\x1b=1:")
// and from the field the server named ("env.X\x1b[2J:"). The error line shows control characters escaped; the
// usage's own line breaks stay.
func TestErrorsCannotDriveTheTerminal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":"invalid","field":"env.X\u001b[2J","message":"\"X\\u001b[2J\" is not a name"}}`))
	}))
	defer srv.Close()
	spec := writeTemp(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\n")
	for _, args := range [][]string{
		{"submit", "-f", spec, "-e", "bogus\x1b[2J=1"},
		{"submit", "-f", spec, "-e", "nnodes=\x1b[2J"},
		{"submit", "-f", spec, "-e", "env.X\x1b[2J=1"},
		{"get", "x\x1b[2J", "-o", "x\x1b[2J"},
	} {
		_, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), args, env)
		if code == 0 || strings.ContainsRune(errb.String(), 0x1b) || !strings.Contains(errb.String(), `\x1b[2J`) {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
	_, errb, env := serverEnv(srv.URL)
	Run(context.Background(), []string{"get"}, env) // a usage error keeps its lines
	if !strings.Contains(errb.String(), "\nusage: mvp get TASK_ID\n") {
		t.Errorf("usage lines lost: %q", errb.String())
	}
}

// TestSecretsDeleteWithJSONPrintsJSON: `mvp secrets delete NAME -o json` printed "NAME\tdeleted", a line that is
// not JSON, on stdout, where a script reading -o json expects JSON (the API answers 204 without a body). It prints
// what `mvp schedule delete -o json` prints, {"deleted": NAME}, and the same in YAML.
func TestSecretsDeleteWithJSONPrintsJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for format, want := range map[string]string{"json": "{\n  \"deleted\": \"wandb\"\n}\n", "yaml": "deleted: wandb\n",
		"table": "wandb\tdeleted\n"} {
		out, errb, env := serverEnv(srv.URL)
		if code := Run(context.Background(), []string{"secrets", "delete", "wandb", "-o", format}, env); code != 0 ||
			out.String() != want {
			t.Errorf("-o %s: exit %d, stdout %q (want %q), stderr %q", format, code, out.String(), want, errb.String())
		}
	}
}

// TestBenchLoadRefusesFlagsItCannotHonour: `mvp bench load --clients 0` ran 64 clients (loadgen's default for 0),
// thousands of submits the user asked not to send; --duration -1s ran nothing and exited 0 with a report of zeros;
// -o yaml printed the table; a -f that cannot be read exited 1. Each is a usage error (exit 2) before any request.
func TestBenchLoadRefusesFlagsItCannotHonour(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		http.Error(w, "not reached", http.StatusTeapot)
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"--clients", "0"}, {"--clients", "-3"}, {"--duration", "0s"}, {"--duration", "-1s"}, {"-o", "yaml"},
		{"-f", filepath.Join(t.TempDir(), "missing.yaml")}, {"--server-pid", "-1"},
	} {
		_, errb, env := serverEnv(srv.URL)
		if code := Run(context.Background(), append([]string{"bench", "load"}, args...), env); code != 2 ||
			!strings.Contains(errb.String(), strings.TrimLeft(args[0], "-")) {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent", requests)
	}
}

// TestListCutsALongReasonBetweenCharacters: `mvp list` cut a reason longer than 60 bytes at byte 60, which could
// fall inside a character (an error summary from a job's traceback in another script than Latin): the table then
// held a byte that is not UTF-8, shown as garbage. The cut is after 60 characters.
func TestListCutsALongReasonBetweenCharacters(t *testing.T) {
	summary := "x" + strings.Repeat("é", 100) // byte 60 is the middle of an é
	var b strings.Builder
	p := &api.TaskPage{Tasks: []*mvp.Task{{ID: "mvp2-ppo-20251223-143201-7f3a", State: mvp.StateFailed, ErrorSummary: summary}}}
	if err := printList(&b, p, nil, listArgs{}); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(b.String()) || !strings.Contains(b.String(), "x"+strings.Repeat("é", 59)+"…") {
		t.Errorf("list: %q", b.String())
	}
}

// TestAnAddressThatIsNotAURLNamesMVPADDR: MVP_ADDR=host:: or http://[::1 said only `parse "http://host::/api/v2/tasks":
// invalid port "::" after host`, which names neither the variable to fix nor what it should look like.
func TestAnAddressThatIsNotAURLNamesMVPADDR(t *testing.T) {
	for _, addr := range []string{"notaurl::", "http://[::1", "ftp://127.0.0.1:8080"} {
		_, errb, env := serverEnv(addr)
		if code := Run(context.Background(), []string{"list"}, env); code != 1 ||
			!strings.Contains(errb.String(), "MVP_ADDR") || !strings.Contains(errb.String(), "http://127.0.0.1:8080") {
			t.Errorf("MVP_ADDR=%s: exit %d: %s", addr, code, errb.String())
		}
	}
}

// TestEveryVerbTakesMVPADDRAlike: MVP_ADDR=host:port (no scheme, as curl takes it) worked for `mvp list` and
// `mvp secrets`, but `mvp schedule` built its own client from MVP_ADDR as written and failed on it. It reads
// MVP_ADDR through clientOf, as the other verbs do.
func TestEveryVerbTakesMVPADDRAlike(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"schedules": [], "secrets": [], "tasks": []}`))
	}))
	defer srv.Close()
	hostPort := " " + strings.TrimPrefix(srv.URL, "http://") + " "
	for _, args := range [][]string{{"list"}, {"secrets", "list"}, {"schedule", "list"}} {
		_, errb, env := serverEnv(hostPort)
		if code := Run(context.Background(), args, env); code != 0 {
			t.Errorf("%v with MVP_ADDR=%q: exit %d: %s", args, hostPort, code, errb.String())
		}
	}
}

// TestResubmitRefusesAMalformedSettingAsSubmitDoes: `mvp submit -e nnodes` (no =) is a usage error found before any
// request (exit 2), but `mvp resubmit ID -e nnodes` sent it and exited 1 on the server's 400: the same mistake in
// the command, two exit codes. Resubmit checks each -e's key=value shape first, as submit does.
func TestResubmitRefusesAMalformedSettingAsSubmitDoes(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":"invalid","field":"set[0]","message":"want key=value"}}`))
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"resubmit", "mvp2-ppo-20251223-143201-7f3a", "-e", "nnodes"},
		{"resubmit", "mvp2-ppo-20251223-143201-7f3a", "--dry-run", "-e", "=1"},
	} {
		_, errb, env := serverEnv(srv.URL)
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), "key=value") {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent for settings that are not key=value", requests)
	}
}

// TestHelpSaysWhatOTakes: `mvp logs --help` listed "-o output: table, json or yaml" though logs refuses any -o but
// table (the log is printed as it is), and `mvp results --help` did not say that with --get, -o names the file to
// write; `mvp help` said every client verb takes -o table|json|yaml. logs' help lists no -o (logs takes none) and
// says the log is printed as it is; `mvp logs ID -o xml` said "-o must be table, json or yaml".
func TestHelpSaysWhatOTakes(t *testing.T) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	Run(context.Background(), []string{"results", "--help"}, env)
	var oHelp string
	for l := range strings.Lines(errb.String()) {
		if strings.HasPrefix(strings.TrimSpace(oHelp), "-o string") {
			oHelp += l
			break
		}
		oHelp = l
	}
	if !strings.Contains(oHelp, "with --get") || strings.Contains(oHelp, `(default "table")`) {
		t.Errorf("mvp results --help says of -o: %q", oHelp)
	}
	errb.Reset()
	Run(context.Background(), []string{"logs", "--help"}, env)
	if !strings.Contains(errb.String(), "printed as it is") || strings.Contains(errb.String(), "  -o") {
		t.Errorf("mvp logs --help:\n%s", errb.String())
	}
	for _, o := range []string{"xml", "table", "json"} {
		errb.Reset()
		if code := Run(context.Background(), []string{"logs", "mvp2-ppo-20251223-143201-7f3a", "-o", o}, env); code != 2 ||
			!strings.Contains(errb.String(), "-o does not apply to logs") {
			t.Errorf("mvp logs ID -o %s: exit %d: %s", o, code, errb.String())
		}
	}
	if !strings.Contains(usage, "logs prints the log as it is") {
		t.Error("mvp help says every client verb takes -o json")
	}
}

// TestAnAnswerCutOffSaysTheChangeWasMade: a server that went away while it sent a submit's 201 left `mvp submit:
// unexpected EOF`, naming neither the request nor that the task was created: a user who submits again has two.
// The message says the server took it (its status came) and to look with mvp list before repeating it; a read cut
// off says to run it again.
func TestAnAnswerCutOffSaysTheChangeWasMade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "500")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"task_id": "mvp2`))
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	spec := writeTemp(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\n")
	id := "mvp2-ppo-20251223-143201-7f3a"
	for _, c := range []struct{ args, want []string }{
		{[]string{"submit", "-f", spec}, []string{"POST /api/v2/tasks", "HTTP 201", "mvp list"}},
		{[]string{"cancel", id}, []string{"POST /api/v2/tasks/" + id + "/cancel", "look before"}},
		{[]string{"get", id, "-o", "json"}, []string{"GET /api/v2/tasks/" + id, "again"}},
	} {
		_, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), c.args, env)
		for _, w := range c.want {
			if code != 1 || !strings.Contains(errb.String(), w) {
				t.Errorf("%v: exit %d, stderr %q lacks %q", c.args, code, errb.String(), w)
			}
		}
	}
}

// TestAResultCutOffSaysSo: a result file whose download was cut off printed part of it and `mvp results: unexpected
// EOF`, not saying that what was printed is incomplete, nor which file. It says both, and to fetch it again (with -o
// FILE, that FILE was not written).
func TestAResultCutOffSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "500")
		w.Write([]byte("part"))
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	_, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"results", "mvp2-ppo-20251223-143201-7f3a", "--get", "a01/summary.json"}, env)
	for _, w := range []string{"a01/summary.json", "incomplete", "again"} {
		if code != 1 || !strings.Contains(errb.String(), w) {
			t.Errorf("exit %d, stderr %q lacks %q", code, errb.String(), w)
		}
	}
	file := filepath.Join(t.TempDir(), "summary.json") // with -o FILE, nothing is written: it says so
	_, errb, env = serverEnv(srv.URL)
	code = Run(context.Background(), []string{"results", "mvp2-ppo-20251223-143201-7f3a", "--get", "a01/summary.json",
		"-o", file}, env)
	if _, err := os.Stat(file); code != 1 || err == nil || !strings.Contains(errb.String(), file+" was not written") {
		t.Errorf("-o %s: exit %d, stat %v: %s", file, code, err, errb.String())
	}
}

// TestResultsToAFolderThatCannotBeWrittenIsAUsageError: `mvp results ID --get PATH -o /missing/dir/x` exited 1 (as
// if the server had said no) with "open /missing/dir/.x.3514447072: no such file or directory", a temporary name
// the user never gave. It is a mistake in the command, found before any request: exit 2, naming the file given.
func TestResultsToAFolderThatCannotBeWrittenIsAUsageError(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests++ }))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "missing", "x")
	_, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"results", "mvp2-ppo-20251223-143201-7f3a", "--get", "a01/x", "-o", file}, env)
	if code != 2 || !strings.Contains(errb.String(), "write "+file+": ") || strings.Contains(errb.String(), ".x.") ||
		requests != 0 {
		t.Errorf("exit %d, %d requests: %s", code, requests, errb.String())
	}
}

// TestALogCutOffSaysSo: `mvp logs ID` whose answer was cut off printed part of the log and `mvp logs: unexpected
// EOF` (only a followed log said what happened). It says the log printed is incomplete and to run it again.
func TestALogCutOffSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "500")
		w.Write([]byte("line 1\n"))
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	_, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "mvp2-ppo-20251223-143201-7f3a"}, env)
	for _, w := range []string{"mvp2-ppo-20251223-143201-7f3a", "incomplete", "again"} {
		if code != 1 || !strings.Contains(errb.String(), w) {
			t.Errorf("exit %d, stderr %q lacks %q", code, errb.String(), w)
		}
	}
}

// TestAnAnswerThatIsNotJSONNamesTheServer: a server at MVP_ADDR that answered 200 with text that is not JSON (another
// service, a proxy's page) left `mvp get: decode /api/v2/tasks/ID: invalid character 'h' looking for beginning of
// value`, which says neither what answered nor what to check. It names the address, the start of the answer and
// MVP_ADDR.
func TestAnAnswerThatIsNotJSONNamesTheServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from another service"))
	}))
	defer srv.Close()
	for _, args := range [][]string{{"get", "mvp2-ppo-20251223-143201-7f3a"}, {"cancel", "mvp2-ppo-20251223-143201-7f3a"},
		{"list"}, {"queue"}} {
		_, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), args, env)
		for _, w := range []string{srv.URL, "hello from another service", "MVP_ADDR"} {
			if code != 1 || !strings.Contains(errb.String(), w) {
				t.Errorf("%v: exit %d, stderr %q lacks %q", args, code, errb.String(), w)
			}
		}
	}
}

// TestBackupTakesFlagsAfterTheFile: `mvp backup FILE --config dev.yaml` (flags after the file, as every client verb
// takes them) said "name one new file to write the backup to" though one was named: the flags after FILE were
// taken for more files. Backup reads flags wherever they are, as the client verbs do.
func TestBackupTakesFlagsAfterTheFile(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "mvp.sqlite3")
	db, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	to := filepath.Join(dir, "backup.sqlite3")
	out, errb, env := serverEnv("")
	if code := Run(context.Background(), []string{"backup", to, "--db-path", dbPath}, env); code != 0 ||
		!strings.Contains(out.String(), "integrity ok") {
		t.Errorf("mvp backup FILE --db-path P: exit %d: %s", code, errb.String())
	}
}

// TestAFileNamedThatCannotBeReadExitsTwo: the spec's exit 2 covers "a file named that cannot be read", as
// `mvp submit -f missing.yaml` does; `mvp sim --trace missing.csv` and `mvp backup --config missing.yaml FILE`
// exited 1 ("the server said no or could not be reached"), though neither asks a server.
func TestAFileNamedThatCannotBeReadExitsTwo(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, args := range [][]string{
		{"sim", "--trace", missing, "--nodes", "2", "--gpus-per-node", "4"},
		{"backup", "--config", missing, filepath.Join(dir, "backup.sqlite3")},
	} {
		_, errb, env := serverEnv("")
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), missing) {
			t.Errorf("mvp %v: exit %d: %s", args, code, errb.String())
		}
	}
}

// TestAnInterruptedChangeMayHaveBeenCarriedOut: Ctrl-C on `mvp submit` (or cancel) while it waited for the answer
// said only `Post "…": interrupt signal received`; the server may have stored the task already, and a user who
// submits again has two. The message says the change may have been carried out and to look first; an interrupted
// read says nothing of the kind.
func TestAnInterruptedChangeMayHaveBeenCarriedOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	spec := writeTemp(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\n")
	id := "mvp2-ppo-20251223-143201-7f3a"
	for _, c := range []struct {
		args []string
		may  bool
	}{{[]string{"submit", "-f", spec}, true}, {[]string{"cancel", id}, true}, {[]string{"get", id}, false}} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, errb, env := serverEnv(srv.URL)
		code := Run(ctx, c.args, env)
		cancel()
		if code != 1 || strings.Contains(errb.String(), "may have been carried out") != c.may {
			t.Errorf("%v: exit %d: %s", c.args, code, errb.String())
		}
	}
}

// TestScheduleTableShowsCronEscaped: the server keeps a cron line as written, and one with a carriage return,
// vertical tab or form feed among its fields parses (they are white space to the cron parser): `mvp schedule list`
// printed them raw, so a user's schedule broke the rows of the operator's table (the carriage return sent the
// cursor back over it). Cron, time zone and last outcome are shown with control characters escaped.
func TestScheduleTableShowsCronEscaped(t *testing.T) {
	var b strings.Builder
	outcome := "failed: \x1b[2Jboom"
	list := []*mvp.Schedule{{Name: "evil", Owner: "alice", Cron: "0 2 * * *\r\v\f", Timezone: "UTC", LastOutcome: outcome},
		{Name: "tabs", Owner: "alice", Cron: "0\t2 * * *", Timezone: "UTC"}}
	if err := printSchedules(&b, list, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\r\v\f\t\x1b") || strings.Count(out, "\n") != 3 || !strings.Contains(out, `0 2 * * *\x0d\x0b\x0c`) {
		t.Errorf("schedule list: %q", out)
	}
}

// TestDryRunShowsTheEntrypointEscaped: `mvp submit --dry-run` (and `mvp resubmit ID --dry-run`, which the operator
// runs on a user's task) printed the entrypoint as it was, and an override is one line but may hold an escape
// sequence: it reached the terminal raw. The entrypoint and the reason are shown with control characters escaped.
func TestDryRunShowsTheEntrypointEscaped(t *testing.T) {
	raw := []byte(`{"admission": {"verdict": "fits_now", "reason": "ok\u001b[2J"}, "ray_submission": {"submission_id": "s",` +
		` "entrypoint": "python3 -m verl 'foo.bar=\u001b[31mred'"}}`)
	var b strings.Builder
	if err := printDryRun(&b, raw); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), `foo.bar=\x1b[31mred`) {
		t.Errorf("dry run: %q", b.String())
	}
}

// TestATokenWithALineEndWorks: MVP_TOKEN read from a file with its line end (`export MVP_TOKEN="$(cat f)"` keeps a
// \r of a CRLF file; `read` or an editor's paste can keep a \n) failed before any request with `net/http: invalid
// header field value for "Authorization"`, naming neither MVP_TOKEN nor the line end. The token is sent without
// the white space around it (as the server reads the header: trailing spaces already worked).
func TestATokenWithALineEndWorks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-0123456789abcdef" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"code":"forbidden","message":"the token is not valid"}}`))
			return
		}
		w.Write([]byte(`{"tasks": []}`))
	}))
	defer srv.Close()
	for _, tok := range []string{"tok-0123456789abcdef\n", "tok-0123456789abcdef\r\n", " tok-0123456789abcdef\t"} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "MVP_ADDR" {
				return srv.URL
			}
			return tok
		}}
		if code := Run(context.Background(), []string{"list", "-o", "json"}, env); code != 0 {
			t.Errorf("MVP_TOKEN=%q: exit %d: %s", tok, code, errb.String())
		}
	}
}

// TestSubmitTakesOneJobspec: `mvp submit -f a.yaml -f b.yaml` submitted b.yaml alone and exited 0, a user who
// meant two tasks lost one without a word (the flag package keeps the last value). -f given twice is a usage error,
// for submit and schedule create alike.
func TestSubmitTakesOneJobspec(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"task_id": "mvp2-ppo-20251223-143201-7f3a", "state": "QUEUED"}`))
	}))
	defer srv.Close()
	a := writeTemp(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\n")
	b := writeTemp(t, "workload: sft\nnnodes: 1\nn_gpus_per_node: 1\n")
	for _, args := range [][]string{
		{"submit", "-f", a, "-f", b},
		{"schedule", "create", "nightly", "--cron", "@daily", "-f", a, "-f", b},
	} {
		_, errb, env := serverEnv(srv.URL)
		if code := Run(context.Background(), args, env); code != 2 || !strings.Contains(errb.String(), "-f") {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent", requests)
	}
}

// TestFollowingAWaitingTaskSaysItWaits: `mvp logs -f ID` of a task that has not started (queued behind others or a
// dependency) printed nothing until its first attempt began, minutes or days later: it looked hung. It says on
// stderr that the task waits, why, and that it will follow the first attempt when it starts.
func TestFollowingAWaitingTaskSaysItWaits(t *testing.T) {
	const id = "mvp2-ppo-20251223-143201-7f3a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/tasks/" + id:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"task_id": "` + id + `", "state": "QUEUED", "pending_reason": "dependency: waiting for x", "attempts": []}`))
		case "/api/v2/tasks/" + id + "/logs":
			<-r.Context().Done() // the server holds a followed log until the first attempt starts
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, errb, env := serverEnv(srv.URL)
	Run(ctx, []string{"logs", "-f", id}, env)
	if !strings.Contains(errb.String(), "QUEUED") || !strings.Contains(errb.String(), "dependency: waiting for x") ||
		!strings.Contains(errb.String(), "first attempt") {
		t.Errorf("stderr: %q", errb.String())
	}
}

// TestBenchLoadTakesMVPADDRAsTheOtherVerbs: `mvp bench load` read MVP_ADDR and MVP_TOKEN as written, so
// MVP_ADDR=host:port (which every client verb takes as http://host:port) made every operation an error, and the
// run still exited 0 with a report of errors. It reads them through clientOf, as the other verbs do.
func TestBenchLoadTakesMVPADDRAsTheOtherVerbs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"task_id": "mvp2-ppo-20251223-143201-7f3a", "state": "QUEUED"}`))
	}))
	defer srv.Close()
	out, errb, env := serverEnv(strings.TrimPrefix(srv.URL, "http://"))
	code := Run(context.Background(), []string{"bench", "load", "--clients", "1", "--duration", "50ms",
		"--submit-share", "1", "--no-verify", "-o", "json"}, env)
	var res struct {
		Ops map[string]struct{ Count, Errors int } `json:"ops"`
	}
	if code != 0 || json.Unmarshal(out.Bytes(), &res) != nil || res.Ops["submit"].Count == 0 || res.Ops["submit"].Errors != 0 {
		t.Errorf("exit %d, %s: %s", code, out.String(), errb.String())
	}
}

// TestBenchLoadWhereEveryOperationFailedExitsOne: `mvp bench load` with a wrong token (or against a server that
// refuses everything) reported thousands of operations, all errors, and exited 0, a success to the script that ran
// it. A run where every operation failed exits 1 saying why (the first error).
func TestBenchLoadWhereEveryOperationFailedExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":{"code":"forbidden","message":"the token is not valid"}}`))
	}))
	defer srv.Close()
	_, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"bench", "load", "--clients", "1", "--duration", "50ms"}, env)
	if code != 1 || !strings.Contains(errb.String(), "the token is not valid") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}
