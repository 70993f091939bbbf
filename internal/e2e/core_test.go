//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestTaskRunsToSucceeded: a task that fits runs to SUCCEEDED with a complete history and task folder.
func TestTaskRunsToSucceeded(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 2, 2))
	if !strings.HasPrefix(task.ID, "mvp2-ppo-") || task.State != mvp.StateQueued {
		t.Fatalf("submitted task %+v", task)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if len(done.Attempts) != 1 {
		t.Fatalf("attempts: %d", len(done.Attempts))
	}
	a := done.Attempts[0]
	if a.RaySubmissionID != task.ID+"--a01" || a.RayStatus != mvp.RaySucceeded || a.StartTime == nil ||
		a.EndTime == nil || a.ExitCode == nil || *a.ExitCode != 0 || a.DriverNodeID == "" || a.FailureKind != "" {
		t.Errorf("attempt %+v", a)
	}
	// The driver log is kept in the folder after the pass that concluded the run: log_kept says when.
	waitFor(t, 30*time.Second, "the driver log to be kept", func() (bool, string) {
		a := s.get(task.ID).Attempts[0]
		return a.LogKept, fmt.Sprintf("log_kept %v", a.LogKept)
	})
	dir := filepath.Join(s.sharedRoot, "jobs", task.ID)
	for _, f := range []string{"jobspec.yaml", "spec.json", "attempts/a01/submission.json", "attempts/a01/submission_id",
		"attempts/a01/status.json", "attempts/a01/driver.log",
		// Hydra's record of the run (verl writes it under the worker's working folder unless hydra.run.dir says).
		"attempts/a01/hydra/.hydra/overrides.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("task folder: %v", err)
		}
	}
	if got := readFile(t, filepath.Join(dir, "attempts/a01/submission_id")); got != task.ID+"--a01\n" {
		t.Errorf("submission_id file %q", got)
	}
	if log := readFile(t, filepath.Join(dir, "attempts/a01/driver.log")); !strings.Contains(log, "verl-standin") {
		t.Errorf("driver.log: %q", tail(log, 5))
	}
	if log := s.logs(task.ID, 1); !strings.Contains(log, "verl-standin") {
		t.Errorf("logs API: %q", tail(log, 5))
	}
	var types []string
	for _, e := range s.events(task.ID) {
		types = append(types, e.Type)
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{mvp.EventCreated, mvp.EventSubmit, mvp.EventStateTransition} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
}

// TestWaitsWhileGPUsBusy: with the GPUs busy a task waits in mvp, with no Ray job, and runs by itself later.
func TestWaitsWhileGPUsBusy(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	first := s.submit(spec("ppo", 2, 4, 12))
	s.waitState(first.ID, mvp.StateRunning, 90*time.Second)
	second := s.submit(spec("grpo", 1, 4, 1))
	w := s.waitState(second.ID, mvp.StatePendingResources, 30*time.Second)
	if w.PendingReason == "" || w.LatestAttemptNo != 0 {
		t.Errorf("waiting task: reason %q, attempts %d", w.PendingReason, w.LatestAttemptNo)
	}
	if _, err := rayc.GetJob(ctxT(t), second.ID+"--a01"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("a Ray job exists for the waiting task: %v", err)
	}
	s.waitState(first.ID, mvp.StateSucceeded, 120*time.Second)
	done := s.waitState(second.ID, mvp.StateSucceeded, 120*time.Second)
	if len(done.Attempts) != 1 {
		t.Errorf("second task took %d attempts", len(done.Attempts))
	}
}

// TestRaceFailsFastThenRetries: GPUs taken behind mvp's back between admission and verl's check make the attempt
// fail with verl's message; it is classed INSUFFICIENT_RESOURCES, requeued, and attempt 2 succeeds.
func TestRaceFailsFastThenRetries(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 2})
	task := raceBehindMVPsBack(t, s, 15)
	// mvp logs -f follows the task through its requeue: attempt 1's traceback, then attempt 2 to its end.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, env.bin, "logs", "-f", task.ID)
	follow.Env = append(os.Environ(), "MVP_ADDR="+s.c.Addr, "MVP_TOKEN="+s.token)
	var followOut, followErr strings.Builder
	follow.Stdout, follow.Stderr = &followOut, &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	w := s.waitState(task.ID, mvp.StatePendingResources, 90*time.Second)
	if w.Attempts[0].FailureKind != mvp.FailureInsufficientResources || w.NextRunAt == nil {
		t.Fatalf("after the race: %+v attempt %+v", w, w.Attempts[0])
	}
	if !strings.Contains(w.Attempts[0].Message, "Total available GPUs 6.0 is less than total desired GPUs 8") {
		t.Errorf("attempt message %q", w.Attempts[0].Message)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second)
	if len(done.Attempts) != 2 || done.Attempts[1].RaySubmissionID != task.ID+"--a02" {
		t.Errorf("attempts %+v", done.Attempts)
	}
	if err := follow.Wait(); err != nil {
		t.Errorf("logs -f: %v\n%s", err, followErr.String())
	}
	// What was followed is the two attempts' logs as mvp kept them, whole: attempt 1's traceback, then attempt 2 to
	// its end. (Not "verl-standin: done" itself: the stand-in prints it in its TaskRunner actor, as verl prints its
	// last lines, and Ray forwards an actor's output to the driver's log asynchronously, so on a loaded machine the
	// driver can exit before its last lines reach the log: then no copy of the log holds them.)
	first, _, code1 := s.cli("logs", task.ID, "--attempt", "1")
	second, _, code2 := s.cli("logs", task.ID, "--attempt", "2")
	o := followOut.String()
	if code1 != 0 || code2 != 0 || o != first+second || !strings.Contains(first, "is less than total desired GPUs") ||
		!strings.Contains(second, "verl-standin: step") || !strings.Contains(followErr.String(), "following attempt 2") {
		t.Errorf("logs -f across the requeue: stdout %q (%d bytes; the kept logs %d + %d bytes), stderr %q; want attempt "+
			"1's traceback, then attempt 2 to its end, as kept", tail(o, 5), len(o), len(first), len(second), followErr.String())
	}
}

// TestFragmentedGangWaitsAndStuckGangIsCaught: 2 + 2 free GPUs never admit a 1×4 task; and a fragmenting race
// after admission leaves verl waiting for a placement group forever, which the stuck-gang rule catches.
func TestFragmentedGangWaitsAndStuckGangIsCaught(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1, gangWaitS: 4})
	task, frag := fragmentRunningGang(t, s, 600)
	// verl's total check passes (4 ≥ 4); its placement group cannot be placed; mvp stops it after gang_wait_s.
	w := s.waitState(task.ID, mvp.StatePendingResources, 120*time.Second)
	a1 := w.Attempts[0]
	if a1.FailureKind != mvp.FailureInsufficientResources || a1.RayStatus != mvp.RayStopped ||
		!strings.Contains(a1.Message, "could not be placed") {
		t.Errorf("stuck attempt %+v", a1)
	}

	// While 2 + 2 are free, the task waits in mvp and attempt 2 never reaches Ray.
	other := s.submit(spec("ppo", 1, 4, 1))
	ow := s.waitState(other.ID, mvp.StatePendingResources, 30*time.Second)
	if ow.LatestAttemptNo != 0 {
		t.Errorf("a 1×4 task was submitted on 2 + 2 free GPUs: %+v", ow)
	}
	if _, err := rayc.GetJob(ctxT(t), task.ID+"--a02"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("attempt 2 reached Ray while the cluster was fragmented: %v", err)
	}
	if _, err := rayc.GetJob(ctxT(t), other.ID+"--a01"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("the 1×4 task reached Ray on 2 + 2 free GPUs: %v", err)
	}

	if err := rayc.StopJob(context.Background(), frag); err != nil {
		t.Fatal(err)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second)
	if len(done.Attempts) != 2 {
		t.Errorf("attempts %d", len(done.Attempts))
	}
	s.waitState(other.ID, mvp.StateSucceeded, 180*time.Second)
}

// TestOwnFailureIsNotRetried: a workload that exits non-zero for its own reasons ends FAILED after one attempt.
// Its command line, which Ray logs first, names words that mean other failures (verl's resource check, a missing
// module): they are the user's, not what happened (found in walk-through 7: such a crash was a USER_ERROR, and
// verl's words would have been retried as INSUFFICIENT_RESOURCES).
func TestOwnFailureIsNotRetried(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	task := s.submit(spec("ppo", 1, 1, 1, "mvp_test.exit_code=3",
		"+mvp_note=ModuleNotFoundError Total available GPUs 1 is less than total desired GPUs 2"))
	done := s.waitState(task.ID, mvp.StateFailed, 120*time.Second)
	if len(done.Attempts) != 1 || done.Attempts[0].FailureKind != mvp.FailureRuntimeError || done.ErrorSummary == "" {
		t.Errorf("failed task %+v attempts %+v", done, done.Attempts)
	}
	if _, err := rayc.GetJob(ctxT(t), task.ID+"--a02"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("a failed task was retried: %v", err)
	}
}

// TestCancelRunningStopsRayJob: cancel while RUNNING stops the Ray job; the attempt ends STOPPED.
func TestCancelRunningStopsRayJob(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 2, 300))
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	c, _, err := s.c.Cancel(ctxT(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != mvp.StateCanceled {
		t.Errorf("after cancel: %s", c.State)
	}
	waitJob(t, task.ID+"--a01", 60*time.Second, func(i *mvp.JobInfo) bool { return i.Status == mvp.RayStopped })
	waitFor(t, 60*time.Second, "the attempt to end STOPPED", func() (bool, string) {
		a := s.get(task.ID).Attempts[0]
		return a.RayStatus == mvp.RayStopped, string(a.RayStatus)
	})
	if _, _, err := s.c.Cancel(ctxT(t), task.ID); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("second cancel: %v", err)
	}
	waitIdle(t)
}

// TestKillDuringSubmittingAndRunning: SIGKILL of mvp serve at the riskiest moments, then a start: exactly one Ray
// job per attempt and the right final state.
func TestKillDuringSubmittingAndRunning(t *testing.T) {
	for _, point := range []string{"submitting_before_ray", "submitting_after_ray"} {
		t.Run(point, func(t *testing.T) {
			waitIdle(t)
			s := startService(t, serviceOpts{env: []string{"MVP_CRASH_POINT=" + point}})
			task := s.submit(spec("ppo", 1, 1, 1))
			if code := s.waitExit(60 * time.Second); code != 86 {
				t.Fatalf("exit code %d, want the crash point's 86", code)
			}
			s.extraEnv = nil
			s.start()
			done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
			if len(done.Attempts) != 1 {
				t.Errorf("attempts %d", len(done.Attempts))
			}
			if _, err := rayc.GetJob(ctxT(t), task.ID+"--a02"); !errors.Is(err, mvp.ErrJobNotFound) {
				t.Errorf("a second Ray job: %v", err)
			}
		})
	}
	t.Run("running", func(t *testing.T) {
		waitIdle(t)
		s := startService(t, serviceOpts{})
		task := s.submit(spec("ppo", 1, 2, 6))
		s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
		s.kill()
		s.start()
		done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
		if len(done.Attempts) != 1 || done.Attempts[0].RayStatus != mvp.RaySucceeded {
			t.Errorf("attempts %+v", done.Attempts)
		}
		if _, err := rayc.GetJob(ctxT(t), task.ID+"--a02"); !errors.Is(err, mvp.ErrJobNotFound) {
			t.Errorf("a second Ray job: %v", err)
		}
	})
}

// TestScheduledCheckpointWhileTasksRun: mvp serve with v2.sqlite.checkpoint_schedule "@every 1s" truncates the WAL
// while a task runs on the real cluster, and the task still runs to SUCCEEDED with its history intact.
func TestScheduledCheckpointWhileTasksRun(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{checkpoint: "@every 1s"})
	id := s.submit(spec("ppo", 1, 2, 3)).ID
	final := s.waitState(id, mvp.StateSucceeded, 120*time.Second)
	if len(final.Attempts) != 1 {
		t.Errorf("attempts: %d, want 1", len(final.Attempts))
	}
	waitFor(t, 30*time.Second, "a scheduled checkpoint that truncated the WAL in mvp's log", func() (bool, string) {
		b, _ := os.ReadFile(s.logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="wal checkpoint"`) && strings.Contains(line, "busy=false") &&
				strings.Contains(line, "wal_bytes_after=0") {
				return true, ""
			}
		}
		return false, ""
	})
	if len(s.events(id)) == 0 {
		t.Error("no events after the checkpoints")
	}
}

// TestCodePathKeepsTheNodesPythonPath: on a cluster whose dev.yaml sets no PYTHONPATH (verl is on the nodes' own
// path), a task with code_path failed with "No module named 'verl'": code_path replaced the nodes' PYTHONPATH
// instead of going first on it.
func TestCodePathKeepsTheNodesPythonPath(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{nodePythonPath: true})
	code := t.TempDir()
	task := s.submit(spec("ppo", 1, 1, 0) + "code_path: " + code + "\n")
	var done *mvp.Task
	waitFor(t, 120*time.Second, task.ID+" to end", func() (bool, string) {
		done = s.get(task.ID)
		return done.State.Terminal(), string(done.State)
	})
	if done.State != mvp.StateSucceeded {
		t.Fatalf("a task with code_path on a cluster with verl on the nodes' PYTHONPATH: %s %s\n%s", done.State,
			done.ErrorSummary, s.logs(task.ID, 1))
	}
}

// TestARestartOfMvpDoesNotBeginAStuckGangsWaitAgain: the gang wait was kept in mvp's memory only, so mvp killed and
// started again while a gang was stuck began it again (seen in the fault walk-through: gang_wait_s 20, restart
// 12 s into it, stopped 37 s after it began). It counts from when Ray took the group's creation request.
func TestARestartOfMvpDoesNotBeginAStuckGangsWaitAgain(t *testing.T) {
	const gangWait = 30 * time.Second
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 600, gangWaitS: gangWait.Seconds()})
	task, _ := fragmentRunningGang(t, s, 600)
	var made int64
	waitFor(t, 60*time.Second, "the gang's placement group PENDING in Ray", func() (bool, string) {
		made = 0
		for _, g := range probeGroups(t) {
			if g.State == "PENDING" && g.CreatedNs > 0 {
				made = g.CreatedNs
			}
		}
		return made > 0, fmt.Sprint(probeGroups(t))
	})
	half := time.Unix(0, made).Add(gangWait / 2)
	waitFor(t, gangWait, "half the gang wait", func() (bool, string) { return time.Now().After(half), "" })
	s.kill()
	s.start()
	restarted := time.Now()
	w := s.waitState(task.ID, mvp.StatePendingResources, 2*gangWait)
	if a := w.Attempts[0]; a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(a.Message, "could not be placed") {
		t.Fatalf("attempt %+v; want it stopped as a stuck gang", a)
	}
	var judged time.Time
	for _, e := range s.events(task.ID) {
		if e.Type == mvp.EventGangStuck {
			judged = e.TS
		}
	}
	if judged.IsZero() {
		t.Fatalf("no %s event", mvp.EventGangStuck)
	}
	// Begun again, the wait ends gangWait after the restart; counted from the group, about gangWait/2 after it.
	if d := judged.Sub(restarted); d > gangWait*5/6 {
		t.Errorf("judged stuck %s after the restart (the group was made %s before it): the gang wait began again",
			d.Round(time.Second), restarted.Sub(time.Unix(0, made)).Round(time.Second))
	}
}

// probeGroups returns the placement groups of a live reading of the cluster.
func probeGroups(t testing.TB) []mvp.PlacementGroup {
	t.Helper()
	v, err := probe.ReadCluster(ctxT(t))
	if err != nil {
		return nil
	}
	return v.Groups
}
