//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestProgressIsShown: the stand-in writes progress.json into its attempt folder each step, as verl's file logger
// would be adapted to; mvp shows it on the task and in the list while it runs, and its last word once it ended.
func TestProgressIsShown(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 1, 8))
	waitFor(t, 90*time.Second, "progress on the running task", func() (bool, string) {
		got := s.get(task.ID)
		if got.Progress == nil || got.Progress.Step == nil {
			return false, string(got.State)
		}
		return got.State == mvp.StateRunning && *got.Progress.Step >= 1, fmt.Sprintf("%s step %d", got.State, *got.Progress.Step)
	})
	page, _, err := s.c.List(ctxT(t), "", "", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != 1 || page.Tasks[0].Progress == nil || page.Tasks[0].Progress.AttemptNo != 1 {
		t.Errorf("the list does not show the progress: %+v", page.Tasks)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 90*time.Second)
	p := done.Progress
	if p == nil || p.PercentComplete == nil || *p.PercentComplete != 100 || p.Name != "done" || p.Metrics["loss"] <= 0 {
		t.Errorf("final progress %+v", p)
	}
	if got := readFile(t, s.sharedRoot+"/jobs/"+task.ID+"/attempts/a01/metrics.jsonl"); !strings.Contains(got, `"step": 1`) {
		t.Errorf("metrics.jsonl: %q", got)
	}
}

// TestHeartbeatLostIsRetriedThenFails: a run that stops writing progress for heartbeat_timeout_s is stopped by mvp
// through Ray (HEARTBEAT_LOST), retried like an INFRA failure, and the task fails when max_infra_retries is used up.
func TestHeartbeatLostIsRetriedThenFails(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", max_infra_retries: 1, runtime_grace_s: 2"})
	task := s.submit(spec("ppo", 1, 1, 300, "mvp_test.stall_after=2") + "heartbeat_timeout_s: 8\n")
	done := s.waitState(task.ID, mvp.StateFailed, 4*time.Minute)
	if len(done.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2 (one retry, max_infra_retries: 1)", len(done.Attempts))
	}
	for _, a := range done.Attempts {
		if a.FailureKind != mvp.FailureHeartbeatLost || a.RayStatus != mvp.RayStopped {
			t.Errorf("attempt %d: %s %s %q", a.No, a.FailureKind, a.RayStatus, a.Message)
		}
	}
	if !strings.Contains(done.ErrorSummary, "HEARTBEAT_LOST") || !strings.Contains(done.ErrorSummary, "max_infra_retries") {
		t.Errorf("summary %q", done.ErrorSummary)
	}
	lost := 0
	for _, e := range s.events(task.ID) {
		if e.Type == mvp.EventHeartbeatLost {
			lost++
		}
	}
	if lost != 2 {
		t.Errorf("%d HEARTBEAT_LOST events, want 2", lost)
	}
	if done.Progress == nil || *done.Progress.Step != 2 || done.Progress.AttemptNo != 2 {
		t.Errorf("the last progress before the stall: %+v", done.Progress)
	}
}
