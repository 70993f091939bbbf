//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// cli runs bin/mvp against the service and returns stdout, stderr and the exit code.
func (s *service) cli(args ...string) (string, string, int) {
	s.t.Helper()
	return s.cliAs(s.token, args...)
}

// cliAs runs bin/mvp with the given token (a named user's, or the operator's).
func (s *service) cliAs(token string, args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(env.bin, args...)
	cmd.Env = append(os.Environ(), "MVP_ADDR="+s.c.Addr, "MVP_TOKEN="+token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestCLIAndAPI drives the CLI and the API against a real mvp serve and the real cluster.
func TestCLIAndAPI(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	dir := t.TempDir()
	file := filepath.Join(dir, "job.yaml")
	// 12 s of steps: a step line, which the TaskRunner prints and Ray forwards to the driver's log asynchronously,
	// must be followed while the task still runs.
	if err := os.WriteFile(file, []byte(spec("ppo", 2, 4, 12)), 0o644); err != nil {
		t.Fatal(err)
	}

	// submit with -e, then follow the log at once, while it waits and runs.
	out, errs, code := s.cli("submit", "-f", file, "-e", "nnodes=1", "-e", "env.WANDB_MODE=offline", "-o", "json")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errs)
	}
	var task mvp.Task
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.NNodes != 1 {
		t.Fatalf("submit output %q: %v", out, err)
	}
	// Right after the submit, as README shows it: the task may not have an attempt yet, and logs -f waits for it.
	follow := exec.Command(env.bin, "logs", "-f", task.ID)
	follow.Env = append(os.Environ(), "MVP_ADDR="+s.c.Addr, "MVP_TOKEN="+s.token)
	pipe, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	sawStepWhileRunning, sawDone := false, false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "verl-standin: step") && !sawStepWhileRunning {
			sawStepWhileRunning = !s.get(task.ID).State.Terminal()
		}
		if strings.Contains(line, "verl-standin: driver exits with code 0") { // the driver's own last line (see _standin.py)
			sawDone = true
		}
	}
	if err := follow.Wait(); err != nil {
		t.Errorf("logs -f: %v", err)
	}
	if !sawStepWhileRunning || !sawDone {
		t.Errorf("logs -f did not stream: step while running %v, done %v", sawStepWhileRunning, sawDone)
	}
	s.waitState(task.ID, mvp.StateSucceeded, 60*time.Second)
	if out, _, code := s.cli("get", task.ID); code != 0 || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, task.ID+"--a01") {
		t.Errorf("get: %d %s", code, out)
	}
	if out, _, _ := s.cli("logs", task.ID, "--attempt", "1"); !strings.Contains(out, "verl-standin: driver exits with code 0") {
		t.Errorf("logs: %q", tail(out, 3))
	}

	// Dry-run verdicts: fits now, waits for GPUs, can never fit.
	verdict := func(nnodes, gpus int) string {
		t.Helper()
		out, errs, code := s.cli("submit", "-f", file, "-e", "nnodes="+itoa(nnodes), "-e", "n_gpus_per_node="+itoa(gpus), "--dry-run", "-o", "json")
		if code != 0 {
			t.Fatalf("dry run: %s", errs)
		}
		var d struct {
			Admission struct{ Verdict, Reason string } `json:"admission"`
		}
		json.Unmarshal([]byte(out), &d)
		return d.Admission.Verdict
	}
	if v := verdict(1, 2); v != api.VerdictFitsNow {
		t.Errorf("1×2 on an idle cluster: %s", v)
	}
	if v := verdict(1, 8); v != api.VerdictNeverFits {
		t.Errorf("1×8 on 4-GPU nodes: %s", v)
	}
	hold := uniq("hold-all")
	direct(t, hold, "python3 -m mvp_testkit.hold --bundles 2 --gpus-per-bundle 4 --strategy STRICT_SPREAD --hold 600")
	waitFor(t, 60*time.Second, "all GPUs held", func() (bool, string) {
		g := freeGPUs(t)
		return len(g) == 2 && g[0] == 0 && g[1] == 0, ""
	})
	if v := verdict(1, 2); v != api.VerdictWaits {
		t.Errorf("1×2 with every GPU held: %s", v)
	}
	if p, _, err := s.c.List(ctxT(t), "", "", 500, ""); err != nil || len(p.Tasks) != 1 {
		t.Errorf("a dry run stored a task (or list failed: %v)", err)
	}

	// Paging: 5 more tasks wait (the GPUs are held); list them 2 at a time.
	for i := 0; i < 5; i++ {
		if _, errs, code := s.cli("submit", "-f", file, "-e", "nnodes=1"); code != 0 {
			t.Fatal(errs)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		p, _, err := s.c.List(ctxT(t), "", "", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Tasks {
			if seen[x.ID] {
				t.Fatalf("duplicate %s across pages", x.ID)
			}
			seen[x.ID] = true
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if len(seen) != 6 {
		t.Errorf("paged through %d tasks, want 6", len(seen))
	}
	out, _, _ = s.cli("list", "--limit", "2")
	if !strings.Contains(out, "more: mvp list --limit 2 --cursor ") { // the next page keeps the page size
		t.Errorf("list table lacks the next-page hint:\n%s", out)
	}
	// Events paging.
	var evs []*mvp.Event
	cursor = ""
	for {
		p, _, err := s.c.Events(ctxT(t), task.ID, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, p.Events...)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("events out of order")
		}
	}
	if len(evs) < 4 {
		t.Errorf("%d events", len(evs))
	}

	// Cancel the waiting ones through the CLI; a second cancel is a conflict with the server's message.
	for id := range seen {
		if id == task.ID {
			continue
		}
		if out, errs, code := s.cli("cancel", id); code != 0 || !strings.Contains(out, "CANCELED") {
			t.Errorf("cancel %s: %d %s %s", id, code, out, errs)
		}
		if _, errs, code := s.cli("cancel", id); code == 0 || !strings.Contains(errs, "already CANCELED") {
			t.Errorf("second cancel: %d %s", code, errs)
		}
	}
	// A real submit of a task that can never start on this cluster is taken (exit 0, the id on stdout) with a
	// warning on stderr that says why.
	out, errs, code = s.cli("submit", "-f", file, "-e", "nnodes=1", "-e", "n_gpus_per_node=8")
	never := strings.Fields(out)
	if code != 0 || len(never) != 2 || never[1] != "QUEUED" ||
		!strings.Contains(errs, "warning: queued, but it cannot start on the cluster as it is now: needs 1 node(s) with 8 GPU") {
		t.Errorf("submit of a 1 × 8 task on 4-GPU nodes: exit %d, stdout %q, stderr %q", code, out, errs)
	} else if _, errs, code := s.cli("cancel", never[0]); code != 0 {
		t.Errorf("cancel %s: %s", never[0], errs)
	}
	if _, errs, code := s.cli("get", "mvp2-ppo-20251223-143201-0000"); code != 1 || !strings.Contains(errs, "no task") {
		t.Errorf("unknown task: %d %s", code, errs)
	}
	if _, errs, code := s.cli("submit"); code != 2 || !strings.Contains(errs, "-f job.yaml is required") {
		t.Errorf("usage error: %d %s", code, errs)
	}
	_ = rayc.StopJob(context.Background(), hold)
}

func itoa(n int) string { return strconv.Itoa(n) }
