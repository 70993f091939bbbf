//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestMaxRuntimeStopsAnOverstayingRun: a run past its max_runtime_s is stopped by mvp through Ray (STOPPED) and
// the task ends FAILED with MAX_RUNTIME_EXCEEDED after one attempt; the task shows its limit and the time left.
func TestMaxRuntimeStopsAnOverstayingRun(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", runtime_grace_s: 2"})
	task := s.submit(spec("ppo", 1, 1, 300, "trainer.save_freq=1") + "max_runtime_s: 10\n")
	// The next segment of the training: it starts once this one has ended, however, and resumes where it stopped
	// (as sbatch --dependency=afterany chains). A resume that does not wait for it is refused: two runs would
	// write one checkpoint folder.
	next := s.submit(spec("ppo", 1, 1, 1, "trainer.save_freq=1") + "resume_from: " + task.ID + "\nafter_any: [" + task.ID + "]\n")
	// And the one after it, named by the segment before it: that segment's run writes in the first one's folder,
	// which is where this one resumes from (after every run that writes there).
	third := s.submit(spec("ppo", 1, 1, 1) + "resume_from: " + next.ID + "\nafter_any: [" + next.ID + ", " + task.ID + "]\n")
	if third.ResumeFrom != task.ID {
		t.Errorf("a resume from %s, which resumed from %s: resume_from %q, want the folder's task %s", next.ID, task.ID, third.ResumeFrom, task.ID)
	}
	if _, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)+"resume_from: "+task.ID+"\n"), false); err == nil ||
		!strings.Contains(err.Error(), "HTTP 409") || !strings.Contains(err.Error(), "after_any") {
		t.Errorf("a resume from the running task without waiting for it: %v; want 409 saying to name it in after_any", err)
	}
	running := s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	if running.MaxRuntimeS != 10 {
		t.Errorf("max_runtime_s on the task: %d", running.MaxRuntimeS)
	}
	waitFor(t, 30*time.Second, "runtime_left_s on the running task", func() (bool, string) {
		got := s.get(task.ID)
		return got.RuntimeLeftS != nil && *got.RuntimeLeftS <= 10, string(got.State)
	})
	done := s.waitState(task.ID, mvp.StateFailed, 90*time.Second)
	if len(done.Attempts) != 1 {
		t.Fatalf("%d attempts: a run past its time limit must not be retried", len(done.Attempts))
	}
	a := done.Attempts[0]
	if a.FailureKind != mvp.FailureMaxRuntimeExceeded || a.RayStatus != mvp.RayStopped ||
		!strings.Contains(done.ErrorSummary, "max_runtime_s") {
		t.Errorf("attempt %+v, summary %q", a, done.ErrorSummary)
	}
	if info, err := rayc.GetJob(ctxT(t), a.RaySubmissionID); err != nil || info.Status != mvp.RayStopped {
		t.Errorf("Ray's view of the job: %+v %v", info, err)
	}
	// The limit counts from when mvp saw the job RUNNING (running_at), not from Ray's start_time, which Ray stamps
	// when it takes the submission (a job PENDING for minutes was judged by then).
	if a.RunningAt == nil || a.StartTime == nil || a.RunningAt.Before(*a.StartTime) || a.EndTime == nil ||
		a.EndTime.Sub(*a.RunningAt) < 10*time.Second {
		t.Errorf("start_time %v, running_at %v, end_time %v: want running_at at or after Ray's start_time and "+
			"the run stopped at least 10 s after it", a.StartTime, a.RunningAt, a.EndTime)
	}
	// The stopped run's last checkpoint, if it wrote one: its limit counts from when its driver ran, and on a
	// loaded machine ray.init(), the TaskRunner and the placement group can take most of it (CI once stopped it
	// at 6 s before its first step). The next segment then starts from scratch, as verl does with no checkpoint.
	ckpt := filepath.Join(s.sharedRoot, "jobs", task.ID, "checkpoints", "latest_checkpointed_iteration.txt")
	latest := ""
	if b, err := os.ReadFile(ckpt); err == nil {
		latest = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read %s: %v", ckpt, err)
	}
	// Where each segment resumed from is read from its progress (metrics.resumed_from_step, which the run writes to
	// its progress file itself), not from its log's "verl-standin: resumed from step N": the TaskRunner prints that
	// and Ray forwards it to the driver's log asynchronously, and a 1-second segment's driver can exit before it
	// arrives.
	resumedFrom := func(id string) string {
		p := s.get(id).Progress
		if p == nil {
			return "(no progress)"
		}
		if v, ok := p.Metrics["resumed_from_step"]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	s.waitState(next.ID, mvp.StateSucceeded, 90*time.Second)
	if latest == "" {
		t.Logf("the stopped run wrote no checkpoint before its limit (a slow start): the next segment starts from scratch")
	}
	if got := resumedFrom(next.ID); got != latest {
		t.Errorf("the next segment resumed from step %q; want %q, the stopped run's last checkpoint (\"\": none)", got, latest)
	}
	latest = strings.TrimSpace(readFile(t, filepath.Join(s.sharedRoot, "jobs", task.ID, "checkpoints", "latest_checkpointed_iteration.txt")))
	s.waitState(third.ID, mvp.StateSucceeded, 90*time.Second)
	if got := resumedFrom(third.ID); got != latest {
		t.Errorf("the third segment resumed from step %q; want %q, the second's last checkpoint", got, latest)
	}
}

// TestMaxQueuedEndsAWaitingTask: a task that cannot start within its max_queued_s ends FAILED with
// MAX_QUEUED_EXCEEDED and never reaches Ray.
func TestMaxQueuedEndsAWaitingTask(t *testing.T) {
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 3, 1, 1) + "max_queued_s: 3\n") // 3 nodes: never fits on 2 workers
	w := s.get(task.ID)
	if w.QueuedLeftS == nil || *w.QueuedLeftS > 3 {
		t.Errorf("queued_left_s %v", w.QueuedLeftS)
	}
	done := s.waitState(task.ID, mvp.StateFailed, 60*time.Second)
	if len(done.Attempts) != 0 || !strings.Contains(done.ErrorSummary, string(mvp.FailureMaxQueuedExceeded)) {
		t.Errorf("%d attempts, summary %q", len(done.Attempts), done.ErrorSummary)
	}
}

// TestMaxQueuedHoldsAfterALostRace: an attempt that lost the race for its GPUs did not start the task, so its
// max_queued_s still bounds its wait: it ends MAX_QUEUED_EXCEEDED while it backs off, with no second Ray job (it
// had been exempt from the bound after its first attempt, however that attempt ended).
func TestMaxQueuedHoldsAfterALostRace(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 600})
	// max_queued_s bounds the whole race (admission, the driver's start, the thief, the check, the requeue): 150 s
	// leaves a loaded machine room for it.
	gang := raceBehindMVPsBack(t, s, 15, "max_queued_s: 150\n")
	var backingOff *mvp.Task
	waitFor(t, 150*time.Second, "the gang to lose its race and back off", func() (bool, string) {
		got := s.get(gang.ID)
		if got.State == mvp.StatePendingResources && backingOff == nil {
			backingOff = got
		}
		return got.State == mvp.StatePendingResources || got.State.Terminal(), string(got.State)
	})
	if backingOff == nil {
		t.Fatalf("the gang was never seen backing off (its race took longer than its max_queued_s?): %+v", s.get(gang.ID))
	}
	if backingOff.QueuedLeftS == nil {
		t.Errorf("a task backing off after a lost race shows no queued_left_s: %+v", backingOff)
	}
	done := s.waitState(gang.ID, mvp.StateFailed, 180*time.Second)
	if len(done.Attempts) != 1 || done.Attempts[0].FailureKind != mvp.FailureInsufficientResources {
		t.Fatalf("attempts %+v: want the one that lost the race, and no other", done.Attempts)
	}
	if !strings.Contains(done.ErrorSummary, string(mvp.FailureMaxQueuedExceeded)) ||
		!strings.Contains(done.ErrorSummary, "lost the race for its GPUs") {
		t.Errorf("summary %q", done.ErrorSummary)
	}
	if end := done.UpdatedAt.Sub(done.CreatedAt); end < 150*time.Second {
		t.Errorf("ended %v after its creation, before its max_queued_s of 150 s", end)
	}
	// Ray's own clients, through the door, see the expiry and the task's end, not the lost race's (walk-through 11).
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, s.c.Addr+"/ray/api/jobs/"+gang.ID, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j struct {
		Status    string  `json:"status"`
		ErrorType *string `json:"error_type"`
		EndTime   *int64  `json:"end_time"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		t.Fatalf("the door's answer (%s): %v", resp.Status, err)
	}
	if j.Status != "FAILED" || j.ErrorType == nil || *j.ErrorType != string(mvp.FailureMaxQueuedExceeded) ||
		j.EndTime == nil || *j.EndTime != done.UpdatedAt.UnixMilli() {
		t.Errorf("through the door: status %s, error_type %v, end_time %v; want FAILED, MAX_QUEUED_EXCEEDED, %d",
			j.Status, j.ErrorType, j.EndTime, done.UpdatedAt.UnixMilli())
	}
}

// TestABackingOffGangThatCannotFitHasNoEstimate: a gang that lost the race for its GPUs backs off while GPUs taken
// behind mvp's back (no declared end) keep it from fitting: the queue shows it backing off with no estimated start.
// It showed its next_run_at as its start (walk-through 11), though it could not fit then.
func TestABackingOffGangThatCannotFitHasNoEstimate(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 60})
	gang := raceBehindMVPsBack(t, s, 120)
	waitFor(t, 60*time.Second, "the gang to lose its race and back off", func() (bool, string) {
		got := s.get(gang.ID)
		return got.State == mvp.StatePendingResources && got.NextRunAt != nil, string(got.State)
	})
	waitFor(t, 20*time.Second, "the queue to show it backing off with no estimate", func() (bool, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range v.Queue {
			if e.TaskID == gang.ID {
				return e.Code == "backing_off" && e.EstStart == nil, fmt.Sprintf("%+v (est_start %v)", e, e.EstStart)
			}
		}
		return false, fmt.Sprintf("not in the queue: %+v", v.Queue)
	})
	if _, _, err := s.c.Cancel(ctxT(t), gang.ID); err != nil {
		t.Fatal(err)
	}
	s.waitState(gang.ID, mvp.StateCanceled, 30*time.Second)
}

// TestQueueSaysATaskWouldExpireBeforeItsEstimatedStart: behind a run that declares 10 minutes, a task whose
// max_queued_s ends sooner shows when it ends (queued_until) and that it would end MAX_QUEUED_EXCEEDED before its
// estimated start, in GET /api/v2/queue and in mvp list. The whole-cluster gang queued behind it is estimated at
// the run's declared end: the expiring task ends at its bound and takes no GPUs from it (the forecast held its GPUs
// for its declared 60 s after its bound, and put the gang there; ee59b11). The gang declares 600 s, so drain
// chaining would not put it ahead of the expiring task either.
func TestQueueSaysATaskWouldExpireBeforeItsEstimatedStart(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	big := s.submit(spec("ppo", 2, 4, 300) + "max_runtime_s: 600\n")
	s.waitState(big.ID, mvp.StateRunning, 90*time.Second)
	// Its gang placed: until then the queue waits behind an attempt whose end is not declared, with no estimate.
	waitFor(t, 90*time.Second, "the big gang to hold every GPU", func() (bool, string) {
		g := freeGPUs(t)
		return len(g) == 2 && g[0] == 0 && g[1] == 0, fmt.Sprint(g)
	})
	small := s.submit(spec("ppo", 1, 1, 1) + "max_queued_s: 120\nmax_runtime_s: 60\n")
	gang := s.submit(spec("ppo", 2, 4, 1) + "max_runtime_s: 600\n")
	// Its declared end counts from its gang's placement when that is after mvp saw it running (placed_at, recorded
	// the pass after mvp reads it; mvp.Attempt.RunStart).
	var bigEnd time.Time
	waitFor(t, 30*time.Second, "the big gang's placement recorded", func() (bool, string) {
		a := s.get(big.ID).Latest()
		if a == nil || a.PlacedAt == nil || a.RunStart() == nil {
			return false, fmt.Sprintf("%+v", a)
		}
		bigEnd = a.RunStart().Add(600 * time.Second)
		return true, ""
	})
	waitFor(t, 30*time.Second, "the queue to say the small task would expire first", func() (bool, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		var smallOK, gangOK bool
		var seen []string
		for _, e := range v.Queue {
			switch e.TaskID {
			case small.ID:
				want := small.CreatedAt.Add(120 * time.Second)
				smallOK = e.ExpiresBeforeStart && e.QueuedUntil != nil && e.QueuedUntil.Sub(want).Abs() < time.Second &&
					e.EstStart != nil && e.EstStart.After(*e.QueuedUntil) && strings.Contains(e.Reason, "MAX_QUEUED_EXCEEDED")
				seen = append(seen, fmt.Sprintf("small %+v", e))
			case gang.ID:
				gangOK = e.EstStart != nil && e.EstStart.Sub(bigEnd).Abs() < 2*time.Second && !e.ExpiresBeforeStart
				seen = append(seen, fmt.Sprintf("gang %+v (est_start %v; want the big run's declared end %s)", e,
					e.EstStart, bigEnd.Format(time.RFC3339Nano)))
			}
		}
		return smallOK && gangOK, strings.Join(seen, "; ")
	})
	waitFor(t, 30*time.Second, "mvp list and mvp queue to say so", func() (bool, string) {
		list, errs, code := s.cli("list")
		if code != 0 || !strings.Contains(list, small.ID) || !strings.Contains(list, "(after its max_queued_s)") {
			return false, fmt.Sprintf("mvp list (exit %d, %s):\n%s", code, errs, list)
		}
		queue, errs, code := s.cli("queue")
		return code == 0 && strings.Contains(queue, "would already have ended MAX_QUEUED_EXCEEDED"),
			fmt.Sprintf("mvp queue (exit %d, %s):\n%s", code, errs, queue)
	})
	for _, id := range []string{gang.ID, small.ID, big.ID} {
		if _, _, err := s.c.Cancel(ctxT(t), id); err != nil {
			t.Errorf("cancel %s: %v", id, err)
		}
	}
	s.waitState(big.ID, mvp.StateCanceled, 60*time.Second)
}

// TestAGangWaitingForPlacementIsNotJudgedByMaxRuntime: a run whose gang cannot be placed (the cluster fragmented
// behind mvp's back after admission) has not begun to train; the gang wait judges it (INSUFFICIENT_RESOURCES,
// requeued), not max_runtime_s. It ended FAILED MAX_RUNTIME_EXCEEDED for good before (walk-through 11).
func TestAGangWaitingForPlacementIsNotJudgedByMaxRuntime(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1, gangWaitS: 60})
	task, frag := fragmentRunningGang(t, s, 600, "max_runtime_s: 45\n")
	got := s.waitJudged(task.ID, 150*time.Second)
	if a := got.Attempts[0]; a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(a.Message, "could not be placed") {
		t.Errorf("attempt 1, whose gang was never placed: %s %q; want INSUFFICIENT_RESOURCES from the gang wait", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended %s (%q); want it requeued", got.State, got.ErrorSummary)
	}
	if err := rayc.StopJob(context.Background(), frag); err != nil {
		t.Fatal(err)
	}
	if done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second); len(done.Attempts) != 2 {
		t.Errorf("%d attempts, want 2", len(done.Attempts))
	}
}

// TestARunThatIgnoresSIGTERMIsKilledAfterTheGrace: a run past its max_runtime_s that does not stop on Ray's SIGTERM
// is killed runtime_grace_s later (Ray's job supervisor reads RAY_JOB_STOP_WAIT_TIME_S from the runtime_env mvp
// sends; Ray's own default is 3 s). Meanwhile its GPUs are not promised to the task behind it: the queue estimates
// that task's start after the grace, and it starts only once the run is gone.
func TestARunThatIgnoresSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	const grace = 15 * time.Second
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", runtime_grace_s: 15"})
	// max_runtime_s counts from when mvp sees the job RUNNING, before the driver has imported Ray and set its
	// handler: 30 s leaves a loaded machine time for that, or SIGTERM would end the run at once.
	big := s.submit(spec("ppo", 2, 4, 300, "mvp_test.ignore_sigterm=1") + "max_runtime_s: 30\n")
	s.waitState(big.ID, mvp.StateRunning, 90*time.Second)
	waitFor(t, 90*time.Second, "the big gang to hold every GPU", func() (bool, string) {
		g := freeGPUs(t)
		return len(g) == 2 && g[0] == 0 && g[1] == 0, fmt.Sprint(g)
	})
	small := s.submit(spec("ppo", 1, 1, 1))
	var stopAt time.Time
	waitFor(t, 90*time.Second, "mvp to ask Ray to stop the overstaying run", func() (bool, string) {
		for _, e := range s.events(big.ID) {
			if e.Type == mvp.EventStopRequested {
				stopAt = e.TS
				return true, ""
			}
		}
		return false, string(s.get(big.ID).State)
	})
	// While Ray waits out the grace, the run still holds every GPU: the small task is not estimated to start before
	// the grace is over (it was estimated "now" on every look, so its max_queued_s ran out unannounced).
	v, _, err := s.c.Queue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, e := range v.Queue {
		if e.TaskID == small.ID {
			seen = true
			if e.EstStart == nil || e.EstStart.Before(stopAt.Add(grace-3*time.Second)) {
				t.Errorf("the task behind a run being stopped is estimated to start at %v; the stop was asked at %v with a grace of %v", e.EstStart, stopAt, grace)
			}
		}
	}
	if !seen && s.get(big.ID).State == mvp.StateRunning {
		t.Errorf("the small task is not in the queue while the big run holds every GPU: %+v", v.Queue)
	}
	done := s.waitState(big.ID, mvp.StateFailed, 90*time.Second)
	a := done.Attempts[0]
	if len(done.Attempts) != 1 || a.FailureKind != mvp.FailureMaxRuntimeExceeded || a.RayStatus != mvp.RayStopped {
		t.Fatalf("attempts %+v: want one, MAX_RUNTIME_EXCEEDED, STOPPED", done.Attempts)
	}
	if a.EndTime == nil {
		t.Fatalf("no end time on %+v", a)
	}
	if took := a.EndTime.Sub(stopAt); took < grace-time.Second || took > grace+30*time.Second {
		t.Errorf("Ray ended the run %v after mvp asked it to stop; want about runtime_grace_s (%v), not Ray's default of 3 s", took, grace)
	}
	if log := s.logs(big.ID, 1); !strings.Contains(log, "SIGTERM ignored") {
		t.Errorf("the driver's log does not show the SIGTERM it ignored:\n%s", tail(log, 20))
	}
	ok := s.waitState(small.ID, mvp.StateSucceeded, 120*time.Second)
	// Ray stamps end_time as it records the stop, after the kill: a second's slack for the two clocks' steps.
	if sa := ok.Attempts[0]; sa.CreatedAt.Before(a.EndTime.Add(-time.Second)) {
		t.Errorf("the small task was submitted at %v, before the run holding the GPUs ended at %v", sa.CreatedAt, *a.EndTime)
	}
}

// TestARunCanceledWhileStoppedForItsTimeLimitSaysBoth: a user cancels a run that mvp is already stopping for its
// max_runtime_s (Ray's stop wait, runtime_grace_s, under way). The task is CANCELED; its attempt keeps mvp's
// judgement, MAX_RUNTIME_EXCEEDED, and its message says both. Before, the message was only "canceled by user" beside
// MAX_RUNTIME_EXCEEDED: the judgement's reason was lost.
func TestARunCanceledWhileStoppedForItsTimeLimitSaysBoth(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", runtime_grace_s: 30"})
	// max_runtime_s: 20 leaves the driver time to set its SIGTERM handler (see the test above).
	task := s.submit(spec("ppo", 1, 1, 300, "mvp_test.ignore_sigterm=1") + "max_runtime_s: 20\n")
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	judged := s.waitJudged(task.ID, 90*time.Second)
	if a := judged.Attempts[0]; a.FailureKind != mvp.FailureMaxRuntimeExceeded || judged.State != mvp.StateRunning {
		t.Fatalf("%s, attempt %s %q: want RUNNING and judged MAX_RUNTIME_EXCEEDED, still in Ray's stop wait",
			judged.State, a.FailureKind, a.Message)
	}
	if _, _, err := s.c.Cancel(ctxT(t), task.ID); err != nil {
		t.Fatalf("cancel during the stop wait: %v", err)
	}
	done := s.waitCanceled(task.ID, 90*time.Second)
	a := done.Attempts[0]
	if len(done.Attempts) != 1 || a.RayStatus != mvp.RayStopped || a.FailureKind != mvp.FailureMaxRuntimeExceeded ||
		!strings.Contains(a.Message, "max_runtime_s") || !strings.HasSuffix(a.Message, "; then canceled by user") {
		t.Errorf("%d attempts, attempt 1 %s %s %q: want one, STOPPED, MAX_RUNTIME_EXCEEDED, its reason then "+
			"\"; then canceled by user\"", len(done.Attempts), a.RayStatus, a.FailureKind, a.Message)
	}
}

// TestACanceledRunIsEstimatedToEndWithinItsGrace: a canceled run goes on through Ray's stop wait (SIGTERM, then
// SIGKILL after runtime_grace_s) and then frees its GPUs; the task waiting for them was planned and estimated at
// the canceled run's declared end (an hour here) until 6995811. The queue now estimates it at most the grace after
// the cancel, and it starts once the canceled job has stopped, not before.
func TestACanceledRunIsEstimatedToEndWithinItsGrace(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", runtime_grace_s: 15"})
	big := s.submit(spec("ppo", 2, 4, 600, "mvp_test.ignore_sigterm=1") + "max_runtime_s: 3600\n")
	s.waitState(big.ID, mvp.StateRunning, 90*time.Second)
	waitFor(t, 90*time.Second, "the big gang to hold every GPU and its placement recorded", func() (bool, string) {
		g := freeGPUs(t)
		a := s.get(big.ID).Latest()
		return len(g) == 2 && g[0] == 0 && g[1] == 0 && a != nil && a.PlacedAt != nil, fmt.Sprint(g)
	})
	next := s.submit(spec("ppo", 2, 4, 1) + "max_runtime_s: 60\n")
	estimate := func() (*time.Time, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return nil, err.Error()
		}
		for _, e := range v.Queue {
			if e.TaskID == next.ID {
				return e.EstStart, fmt.Sprintf("%+v", e)
			}
		}
		return nil, fmt.Sprintf("%s not in the queue", next.ID)
	}
	waitFor(t, 30*time.Second, "the waiting gang estimated at the big run's declared end", func() (bool, string) {
		est, seen := estimate()
		return est != nil && time.Until(*est) > 50*time.Minute, seen
	})
	canceledAt := time.Now()
	if _, _, err := s.c.Cancel(ctxT(t), big.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the waiting gang estimated within the canceled run's grace", func() (bool, string) {
		est, seen := estimate()
		if est == nil {
			// Started already: then the canceled job has stopped (checked below).
			return s.get(next.ID).LatestAttemptNo > 0, seen
		}
		return est.Before(canceledAt.Add(15*time.Second + 5*time.Second)), seen
	})
	done := s.waitState(next.ID, mvp.StateSucceeded, 120*time.Second)
	prev := s.get(big.ID).Latest()
	if prev.EndTime == nil || done.Attempts[0].CreatedAt.Before(*prev.EndTime) {
		t.Errorf("the waiting gang was submitted at %v, before the canceled run's job ended (%v)", done.Attempts[0].CreatedAt, prev.EndTime)
	}
}

// TestARunThatRanWhileMvpWasDownIsNotExpiredAsNeverStarted: a task's job ran, and failed as on a lost node, while
// mvp was down (it stopped right after Ray took the submission: crash point submitting_after_ray), ending after
// the task's max_queued_s. mvp never saw it RUNNING; Ray's report of its driver's exit code says it ran, so the
// restarted mvp requeues it as INFRA (a task that has run is no longer bound by max_queued_s) instead of ending it
// MAX_QUEUED_EXCEEDED "without starting", which it did before (found by a review; the unit test of the same name
// failed then).
func TestARunThatRanWhileMvpWasDownIsNotExpiredAsNeverStarted(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1, env: []string{"MVP_CRASH_POINT=submitting_after_ray"}})
	const maxQueuedS = 20
	task := s.submit(spec("ppo", 1, 1, maxQueuedS+10, "mvp_test.exit_code=1",
		"mvp_test.last_words=ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 1234") +
		fmt.Sprintf("max_queued_s: %d\n", maxQueuedS))
	if code := s.waitExit(120 * time.Second); code != 86 {
		t.Fatalf("exit code %d, want 86 from crash point submitting_after_ray", code)
	}
	sid := mvp.SubmissionID(task.ID, 1)
	var ended *mvp.JobInfo
	waitFor(t, 300*time.Second, "the job to run and fail in Ray while mvp is down", func() (bool, string) {
		info, err := rayc.GetJob(ctxT(t), sid)
		if err != nil {
			return false, err.Error()
		}
		ended = info
		return info.Status.Terminal(), string(info.Status)
	})
	if ended.Status != mvp.RayFailed || ended.DriverExitCode == nil {
		t.Fatalf("the job ended %s, driver exit code %v: want FAILED with the driver's exit code", ended.Status, ended.DriverExitCode)
	}
	if since := time.Since(task.CreatedAt); since < maxQueuedS*time.Second {
		t.Fatalf("the job ended %v after the task was created, within its max_queued_s: the test shows nothing", since)
	}
	s.extraEnv = nil
	s.start()
	var got *mvp.Task
	waitFor(t, 120*time.Second, "the restarted mvp to conclude attempt 1", func() (bool, string) {
		got = s.get(task.ID)
		return len(got.Attempts) > 0 && got.Attempts[0].RayStatus.Terminal(), string(got.State)
	})
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInfra || a.RunningAt == nil {
		t.Errorf("attempt 1: %s, running_at %v; want INFRA, with the time Ray says it began", a.FailureKind, a.RunningAt)
	}
	if strings.Contains(got.ErrorSummary, string(mvp.FailureMaxQueuedExceeded)) || got.State == mvp.StateFailed && len(got.Attempts) == 1 {
		t.Errorf("a run that ran while mvp was down was ended as never started: %s %q", got.State, got.ErrorSummary)
	}
	if _, _, err := s.c.Cancel(ctxT(t), task.ID); err != nil {
		t.Errorf("cancel: %v", err)
	}
	s.waitState(task.ID, mvp.StateCanceled, 60*time.Second)
}
