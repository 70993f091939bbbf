//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// crashCase drives a service armed with a crash point to that point; it returns the task involved ("" when the
// client never learnt its id) and the state the task must settle in after the restart.
type crashCase struct {
	point string
	drive func(t *testing.T, s *service) (id string, want mvp.State)
	// gangWaitS is the service's v2.scheduler.gang_wait_s (0: the harness default).
	gangWaitS float64
	// check, when set, checks the settled task further.
	check func(t *testing.T, final *mvp.Task)
}

var crashCases = []crashCase{
	{"api_after_insert", func(t *testing.T, s *service) (string, mvp.State) {
		if _, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)), false); err == nil {
			t.Errorf("the submit was answered although the process died before answering")
		}
		return "", mvp.StateSucceeded
	}, 0, nil},
	{"queued_to_submitting", func(t *testing.T, s *service) (string, mvp.State) {
		return s.submit(spec("ppo", 1, 1, 1)).ID, mvp.StateSucceeded
	}, 0, nil},
	{"submitting_before_ray", func(t *testing.T, s *service) (string, mvp.State) {
		return s.submit(spec("ppo", 1, 1, 1)).ID, mvp.StateSucceeded
	}, 0, nil},
	{"submitting_after_ray", func(t *testing.T, s *service) (string, mvp.State) {
		return s.submit(spec("ppo", 1, 1, 1)).ID, mvp.StateSucceeded
	}, 0, nil},
	{"submitted_to_running", func(t *testing.T, s *service) (string, mvp.State) {
		return s.submit(spec("ppo", 1, 1, 2)).ID, mvp.StateSucceeded
	}, 0, nil},
	{"final_log_fetch", func(t *testing.T, s *service) (string, mvp.State) {
		return s.submit(spec("ppo", 1, 1, 1)).ID, mvp.StateSucceeded
	}, 0, nil},
	{"cancel_before_stop", func(t *testing.T, s *service) (string, mvp.State) {
		id := s.submit(spec("ppo", 1, 1, 300)).ID
		s.waitState(id, mvp.StateRunning, 90*time.Second)
		if _, _, err := s.c.Cancel(ctxT(t), id); err == nil {
			t.Errorf("the cancel was answered although the process died before answering")
		}
		return id, mvp.StateCanceled
	}, 0, nil},
	{"requeue", func(t *testing.T, s *service) (string, mvp.State) {
		// The race of TestRaceFailsFastThenRetries: GPUs taken between admission and verl's check.
		return raceBehindMVPsBack(t, s, 15).ID, mvp.StateSucceeded // the thief outlasts the gate and the check on a busy machine
	}, 0, nil},
	{"judged_before_stop", func(t *testing.T, s *service) (string, mvp.State) {
		// A stuck gang is judged (GANG_STUCK written) and mvp dies before it asks Ray to stop the job: after the
		// restart the stop is retried, the attempt is requeued, and attempt 2 runs once the fragmenter is gone.
		task, _ := fragmentRunningGang(t, s, 45)
		return task.ID, mvp.StateSucceeded
	}, 4, func(t *testing.T, final *mvp.Task) {
		// Without the retried stop, attempt 1 would wait for the fragmenter and then succeed on its own.
		if a := final.Attempts[0]; len(final.Attempts) != 2 || a.RayStatus != mvp.RayStopped ||
			a.FailureKind != mvp.FailureInsufficientResources {
			t.Errorf("%d attempts; attempt 1 %s %s: the stop of the judged gang was not retried after the restart",
				len(final.Attempts), a.RayStatus, a.FailureKind)
		}
	}},
}

// TestCrashMatrix kills mvp serve at each named crash point ($MVP_CRASH_REPEAT times, default 3), starts it again
// and checks: no acknowledged task lost, exactly one Ray job per attempt, every task settles.
func TestCrashMatrix(t *testing.T) {
	repeat := 3
	if n, err := strconv.Atoi(os.Getenv("MVP_CRASH_REPEAT")); err == nil && n > 0 {
		repeat = n
	}
	report := os.Getenv("MVP_CRASH_REPORT")
	for _, c := range crashCases {
		for run := 1; run <= repeat; run++ {
			t.Run(fmt.Sprintf("%s/%d", c.point, run), func(t *testing.T) {
				start := time.Now()
				waitIdle(t)
				s := startService(t, serviceOpts{retryS: 1, gangWaitS: c.gangWaitS, env: []string{"MVP_CRASH_POINT=" + c.point}})
				id, want := c.drive(t, s)
				if code := s.waitExit(120 * time.Second); code != 86 {
					t.Fatalf("exit code %d, want 86 from crash point %s", code, c.point)
				}
				s.extraEnv = nil
				s.start()
				if id == "" {
					page, _, err := s.c.List(ctxT(t), "", "", 10, "")
					if err != nil || len(page.Tasks) != 1 {
						t.Fatalf("after the restart: %v tasks (err %v), want the 1 inserted", page, err)
					}
					id = page.Tasks[0].ID
				}
				final := s.waitState(id, want, 180*time.Second)
				if want == mvp.StateCanceled {
					waitFor(t, 60*time.Second, "the canceled attempt to end", func() (bool, string) {
						a := s.get(id).Attempts[0]
						return a.RayStatus.Terminal(), string(a.RayStatus)
					})
				}
				for _, a := range final.Attempts {
					if _, err := rayc.GetJob(ctxT(t), a.RaySubmissionID); err != nil {
						t.Errorf("attempt %d has no Ray job: %v", a.No, err)
					}
				}
				if c.check != nil {
					c.check(t, final)
				}
				next := mvp.SubmissionID(id, final.LatestAttemptNo+1)
				if _, err := rayc.GetJob(ctxT(t), next); !errors.Is(err, mvp.ErrJobNotFound) {
					t.Errorf("an extra Ray job %s exists: %v", next, err)
				}
				if report != "" {
					result := "ok"
					if t.Failed() {
						result = "FAILED"
					}
					f, err := os.OpenFile(report, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
					if err == nil {
						fmt.Fprintf(f, "%s\t%d\t%s\t%d\t%.1f\n", c.point, run, result, len(final.Attempts), time.Since(start).Seconds())
						f.Close()
					}
				}
			})
		}
	}
}
