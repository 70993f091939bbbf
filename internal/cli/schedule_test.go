package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestScheduleVerbs drives `mvp schedule …` against a real service.
func TestScheduleVerbs(t *testing.T) {
	m := servicetest.Start(t, nil)
	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": servicetest.Token}[k]
	}}
	run := func(want int, args ...string) string {
		t.Helper()
		out.Reset()
		errb.Reset()
		if code := Run(context.Background(), append([]string{"schedule"}, args...), env); code != want {
			t.Fatalf("mvp schedule %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	if got := run(0, "create", "nightly-eval", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin", "-f", job, "-e", "nnodes=2"); !strings.Contains(got, "nightly-eval") || !strings.Contains(got, "Europe/Berlin") {
		t.Errorf("create: %s", got)
	}
	if got := run(0, "list"); !strings.Contains(got, "nightly-eval") || !strings.Contains(got, "active") {
		t.Errorf("list: %s", got)
	}
	if got := run(0, "get", "nightly-eval", "-o", "json"); !strings.Contains(got, `"nnodes": 2`) || !strings.Contains(got, `"next_run_at"`) {
		t.Errorf("get -o json: %s", got)
	}
	if got := run(0, "pause", "nightly-eval"); !strings.Contains(got, "paused") {
		t.Errorf("pause: %s", got)
	}
	if got := run(0, "resume", "nightly-eval"); !strings.Contains(got, "active") {
		t.Errorf("resume: %s", got)
	}
	if got := run(1, "create", "bad", "--cron", "sometimes", "-f", job); !strings.Contains(got, "cron") {
		t.Errorf("bad cron: %s", got)
	}
	if got := run(0, "delete", "nightly-eval"); !strings.Contains(got, "deleted") {
		t.Errorf("delete: %s", got)
	}
	if got := run(1, "get", "nightly-eval"); !strings.Contains(got, "no schedule") {
		t.Errorf("get after delete: %s", got)
	}
	run(2, "create", "x", "-f", job)
	run(2, "pause")
	run(2, "frobnicate", "x")
	run(2)
}
