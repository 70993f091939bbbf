package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDryRunPrintsTheWarning: a dry run's answer carries the warning its submit would get (a resume from a folder
// with no checkpoint starts from step 0), and mvp submit --dry-run and mvp resubmit --resume --dry-run, which a
// user runs to see what a resume would do, printed the verdict and the entrypoint without it. It goes to stderr,
// as a submit's does.
func TestDryRunPrintsTheWarning(t *testing.T) {
	const warning = "it resumes from mvp2-ppo-20251223-143201-7f3a's checkpoints, but there is no checkpoint in it, so its run starts from step 0"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"dry_run": true, "effective_spec": {}, "admission": {"verdict": "fits_now", "reason": "ok"}, ` +
			`"ray_submission": {"submission_id": "s", "entrypoint": "python3"}, "warning": "` + warning + `"}`))
	}))
	defer srv.Close()
	spec := writeTemp(t, "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nresume_from: mvp2-ppo-20251223-143201-7f3a\n")
	for _, args := range [][]string{
		{"submit", "-f", spec, "--dry-run"},
		{"resubmit", "mvp2-ppo-20251223-143201-7f3a", "--resume", "--dry-run"},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			return map[string]string{"MVP_ADDR": srv.URL, "MVP_TOKEN": "tok-0123456789abcdef"}[k]
		}}
		if code := Run(context.Background(), args, env); code != 0 || !strings.Contains(out.String(), "verdict:") {
			t.Fatalf("%v: exit %d: %s %s", args, code, out.String(), errb.String())
		}
		if !strings.Contains(errb.String(), "warning: "+warning) {
			t.Errorf("%v: stderr %q, want the answer's warning", args, errb.String())
		}
	}
}
