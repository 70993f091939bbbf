package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestListMoreHintKeepsTheFilters: a filtered `mvp list` ends its page with "more: mvp list --cursor C". The cursor
// is a place in the list (created_at and task id), not the filter: the command as printed lists every task after
// that place, whatever its state, workload or owner. Seen on the local cluster: `mvp list --state CANCELED
// --limit 2`, then the printed command, listed FAILED and SUCCEEDED tasks. The hint must repeat the filters (and
// the page size) it was given.
func TestListMoreHintKeepsTheFilters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/tasks":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"tasks": [{"task_id": "mvp2-sft-20251223-143201-7f3a", "state": "CANCELED", "workload": "sft", "owner": "alice"}], "next_cursor": "CUR"}`)
		case "/api/v2/queue":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"queue": []}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"list", "--state", "CANCELED", "--workload", "sft", "--owner", "alice", "--limit", "1"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var hint string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "more: ") {
			hint = l
		}
	}
	for _, want := range []string{"--cursor CUR", "--state CANCELED", "--workload sft", "--owner alice"} {
		if !strings.Contains(hint, want) {
			t.Errorf("the next page's command %q lacks %s: it would list other tasks than the filter asked for", hint, want)
		}
	}
}

// TestShellWordQuotesWhatAShellReads: the next page's command is pasted into a shell: a value with a space, a
// quote or a $ is one quoted word.
func TestShellWordQuotesWhatAShellReads(t *testing.T) {
	for in, want := range map[string]string{"CANCELED": "CANCELED", "a b": "'a b'", "it's": `'it'\''s'`, "$x": "'$x'", "": "''"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestListStateIsNotCaseSensitive: `mvp list --state running` was refused (400: unknown state "running"): states
// are upper case, and the CLI now asks for the state whatever its case (walk-through 17).
func TestListStateIsNotCaseSensitive(t *testing.T) {
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v2/tasks":
			asked = r.URL.Query().Get("state")
			io.WriteString(w, `{"tasks": []}`)
		default:
			io.WriteString(w, `{"queue": []}`)
		}
	}))
	defer srv.Close()
	_, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"list", "--state", "running"}, env); code != 0 || asked != "RUNNING" {
		t.Errorf("exit %d, state asked %q; want RUNNING (stderr %s)", code, asked, errb.String())
	}
}

// TestEventsMoreHintKeepsThePageSize: `mvp events ID --limit 2` ended its page with "more: mvp events ID --cursor
// C", without --limit: the printed command's page held the API's default 100 events, not 2, where `mvp list`'s
// hint repeats its page size (seen on the local cluster).
func TestEventsMoreHintKeepsThePageSize(t *testing.T) {
	const id = "mvp2-ppo-20251223-143201-7f3a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"events": [{"id": 1, "type": "CREATED", "payload": {}}], "next_cursor": "CUR"}`)
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"events", id, "--limit", "2"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "more: mvp events " + id + " --limit 2 --cursor CUR"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the next page's command is not %q:\n%s", want, out.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"events", id}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "more: mvp events " + id + " --cursor CUR"; !strings.Contains(out.String(), want) {
		t.Errorf("without --limit the next page's command is not %q:\n%s", want, out.String())
	}
}
