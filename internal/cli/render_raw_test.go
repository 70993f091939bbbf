package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestJSONOutputIsTheAPIsAnswer: `-o json` is documented as "the API's own answer". A schedule's jobspec is
// kept as sent (env: {TORCH_VERSION: 2.10} runs with "2.10"); the CLI re-decoded it into float64 and showed 2.1.
func TestJSONOutputIsTheAPIsAnswer(t *testing.T) {
	answer := `{"name":"nightly","owner":"alice","cron":"0 2 * * *","timezone":"UTC","overlap":"skip",` +
		`"jobspec":{"env":{"TORCH_VERSION":2.10},"max_runtime_s":12345678901234567},"paused":false,` +
		`"created_at":"2026-12-03T21:06:08Z","updated_at":"2026-12-03T21:06:08Z","last_fire_at":"2026-12-03T21:06:08Z",` +
		`"last_task_id":"","last_outcome":"","missed":0,"next_run_at":null,"task_ids":[]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"schedule", "get", "nightly", "-o", "json"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, want := range []string{`"TORCH_VERSION": 2.10`, `12345678901234567`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mvp schedule get -o json lacks %s of the API's answer:\n%s", want, out)
		}
	}
}
