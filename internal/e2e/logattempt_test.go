//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestALogAnswerNamesTheAttemptWhoseLogItHolds: a gang task with two attempts on the real cluster (attempt 1 loses
// the race for its GPUs to a job behind mvp's back and is requeued; attempt 2 runs once that job is stopped).
// Every answer of GET /api/v2/tasks/{id}/logs names in X-Mvp-Log-Attempt the attempt whose log it holds (each
// driver log begins with Ray's "Running entrypoint for job <task>--aNN"): a follow begun while attempt 1 runs ends
// with it and names 1; a read and a follow while the task waits for its second attempt name 1; once attempt 2
// exists a read and a follow without ?attempt name 2 and hold its log only; ?attempt=1 still names 1.
func TestALogAnswerNamesTheAttemptWhoseLogItHolds(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	gate := filepath.Join(t.TempDir(), "go")
	task := s.submit(spec("ppo", 2, 4, 1, "mvp_test.wait_file="+gate))
	id := task.ID
	marker := func(n int) string { return fmt.Sprintf("Running entrypoint for job %s--a%02d", id, n) }
	// logsOf reads (or follows) the log, attempt 0 meaning the latest, and checks that the answer names want and
	// holds that attempt's log and no other's.
	logsOf := func(what string, attempt int, follow bool, want int, timeout time.Duration) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var b bytes.Buffer
		n, err := s.c.LogsOf(ctx, id, attempt, follow, &b)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		checkAttemptLog(t, what, n, b.String(), want, marker)
		return b.String()
	}

	s.waitState(id, mvp.StateRunning, 2*time.Minute)
	waitFor(t, 90*time.Second, "attempt 1's driver to wait at its gate", func() (bool, string) {
		var b bytes.Buffer
		err := s.c.Logs(ctxT(t), id, 1, false, &b)
		return strings.Contains(b.String(), "verl-standin: waiting for "+gate), fmt.Sprintf("%v: %q", err, tail(b.String(), 3))
	})

	// A follow of the latest attempt, begun while attempt 1 runs.
	followed := &servicetest.Buffer{}
	type answer struct {
		n   int
		err error
	}
	first := make(chan answer, 1)
	fctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	go func() {
		n, err := s.c.LogsOf(fctx, id, 0, true, followed)
		first <- answer{n, err}
	}()
	waitFor(t, time.Minute, "the follow to have attempt 1's lines", func() (bool, string) {
		return strings.Contains(followed.String(), "verl-standin: waiting for"), fmt.Sprintf("%q", tail(followed.String(), 3))
	})

	// Two GPUs taken behind mvp's back until the test stops the job that holds them; then the gate opens and
	// verl's check fails: attempt 1 ends INSUFFICIENT_RESOURCES and the task waits for its GPUs.
	thief := uniq("thief")
	direct(t, thief, "python3 -m mvp_testkit.hold --bundles 1 --gpus-per-bundle 2 --hold 900")
	waitFor(t, 90*time.Second, "the thief to hold 2 GPUs", func() (bool, string) {
		return sum(freeGPUs(t)) <= 6, fmt.Sprint(freeGPUs(t))
	})
	writeFile(t, gate, "")
	select {
	case a := <-first:
		if a.err != nil {
			t.Fatalf("the follow begun during attempt 1: %v", a.err)
		}
		checkAttemptLog(t, "the follow begun during attempt 1", a.n, followed.String(), 1, marker)
		if !strings.Contains(followed.String(), "is less than total desired GPUs") {
			t.Errorf("the follow begun during attempt 1 lacks verl's failure: %q", tail(followed.String(), 5))
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the follow of attempt 1 did not end with it")
	}
	w := s.waitState(id, mvp.StatePendingResources, 2*time.Minute)
	if w.LatestAttemptNo != 1 || w.Attempts[0].FailureKind != mvp.FailureInsufficientResources {
		t.Fatalf("after the race: latest attempt %d, attempt 1 %s %q", w.LatestAttemptNo, w.Attempts[0].FailureKind, w.Attempts[0].Message)
	}
	// The thief holds its GPUs until stopped: the task cannot start attempt 2 meanwhile.
	logsOf("a read while the task waits", 0, false, 1, time.Minute)
	logsOf("a follow while the task waits", 0, true, 1, 2*time.Minute)
	if w := s.get(id); w.LatestAttemptNo != 1 {
		t.Fatalf("attempt %d began while the thief held its GPUs", w.LatestAttemptNo)
	}

	if err := rayc.StopJob(ctxT(t), thief); err != nil {
		t.Fatalf("stop the thief: %v", err)
	}
	waitFor(t, 3*time.Minute, "attempt 2 to be sent to Ray", func() (bool, string) {
		w := s.get(id)
		return w.LatestAttemptNo == 2, fmt.Sprintf("%s, latest attempt %d", w.State, w.LatestAttemptNo)
	})
	logsOf("a follow of the latest once attempt 2 exists", 0, true, 2, 3*time.Minute)
	s.waitState(id, mvp.StateSucceeded, 3*time.Minute)
	if got := logsOf("a read of the latest", 0, false, 2, time.Minute); !strings.Contains(got, "verl-standin: driver exits with code 0") {
		t.Errorf("a read of the latest lacks attempt 2's end: %q", tail(got, 5))
	}
	if got := logsOf("a read of ?attempt=1", 1, false, 1, time.Minute); !strings.Contains(got, "is less than total desired GPUs") {
		t.Errorf("a read of ?attempt=1 lacks verl's failure: %q", tail(got, 5))
	}
	logsOf("a follow of ?attempt=1", 1, true, 1, time.Minute)
}

// checkAttemptLog checks that an answer naming attempt n (X-Mvp-Log-Attempt) names want and holds attempt want's
// driver log and no other attempt's (marker(k) is the line Ray writes in attempt k's log, usually its first).
func checkAttemptLog(t *testing.T, what string, n int, log string, want int, marker func(int) string) {
	t.Helper()
	if n != want {
		t.Errorf("%s: X-Mvp-Log-Attempt %d, want %d", what, n, want)
	}
	if !strings.Contains(log, marker(want)) {
		t.Errorf("%s: the log is not attempt %d's (no %q): %q", what, want, marker(want), tail(log, 5))
	}
	for k := 1; k <= 2; k++ {
		if k != want && strings.Contains(log, marker(k)) {
			t.Errorf("%s: the answer naming attempt %d holds attempt %d's log: %q", what, n, k, tail(log, 5))
		}
	}
}
