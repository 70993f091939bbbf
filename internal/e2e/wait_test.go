//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/cli"
)

// TestWaitExitsByHowTheTasksEnded: on the real cluster, mvp wait of a task that runs to its end and one whose
// workload exits 3 exits 3, printing each end (the failure's kind and summary); mvp submit --wait of a task that
// succeeds prints its id, then its end, and exits 0; mvp wait --timeout of a task that cannot start yet exits 4;
// mvp cancel of two tasks cancels both.
func TestWaitExitsByHowTheTasksEnded(t *testing.T) {
	waitIdle(t)
	began := time.Now()
	s := startService(t, serviceOpts{retryS: 1})
	t.Logf("%s: service started", time.Since(began))
	ok := s.submit(spec("ppo", 1, 1, 1))
	bad := s.submit(spec("ppo", 1, 1, 1, "mvp_test.exit_code=3"))
	out, errs, code := s.cli("wait", ok.ID, bad.ID)
	if code != cli.ExitNotSucceeded {
		t.Fatalf("mvp wait: exit %d, stdout %q, stderr %q; want %d", code, out, errs, cli.ExitNotSucceeded)
	}
	failed := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, bad.ID+"\tFAILED\t") {
			failed = l
		}
	}
	if !strings.Contains(out, ok.ID+"\tSUCCEEDED\n") || !strings.Contains(failed, "RUNTIME_ERROR") ||
		strings.Count(failed, "RUNTIME_ERROR") != 1 {
		t.Errorf("mvp wait printed %q: want each task's end, the failure's kind named once", out)
	}
	if !strings.Contains(errs, "did not succeed: "+bad.ID) {
		t.Errorf("mvp wait said %q: want the task that failed named", errs)
	}
	t.Logf("%s: mvp wait of two ended", time.Since(began))
	if st := s.get(ok.ID).State; st != "SUCCEEDED" {
		t.Errorf("%s is %s after the wait", ok.ID, st)
	}

	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(spec("sft", 1, 1, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = s.cli("submit", "-f", file, "--wait")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasSuffix(lines[0], "\tQUEUED") || !strings.HasSuffix(lines[1], "\tSUCCEEDED") {
		t.Fatalf("mvp submit --wait: exit %d, stdout %q, stderr %q; want the id, then its end, exit 0", code, out, errs)
	}

	t.Logf("%s: mvp submit --wait ended", time.Since(began))
	// A gang of more nodes than the cluster has waits (never_fits): the wait runs out.
	big := s.submit(spec("ppo", 8, 1, 1))
	out, errs, code = s.cli("wait", "--timeout", "3s", big.ID)
	if code != cli.ExitWaitTimeout || out != "" || !strings.Contains(errs, "had not ended: "+big.ID) {
		t.Errorf("mvp wait --timeout: exit %d, stdout %q, stderr %q; want %d naming the task", code, out, errs, cli.ExitWaitTimeout)
	}

	// mvp cancel of several: both waiting gangs canceled, a line each.
	big2 := s.submit(spec("ppo", 8, 1, 1))
	out, errs, code = s.cli("cancel", big.ID, big2.ID)
	if code != 0 || out != big.ID+"\tCANCELED\n"+big2.ID+"\tCANCELED\n" {
		t.Errorf("mvp cancel of two: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, id := range []string{big.ID, big2.ID} {
		if st := s.get(id).State; st != "CANCELED" {
			t.Errorf("%s is %s after mvp cancel", id, st)
		}
	}
}
