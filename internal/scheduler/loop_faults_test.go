package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// A progress file that cannot be read for one pass (its folder briefly gone: an NFS hiccup, a stale handle) is
// not "no heartbeat since the job started": the last heartbeat mvp recorded stands. A healthy run that had written
// progress a second before was stopped as HEARTBEAT_LOST. Found in review.
func TestLoopKeepsTheLastHeartbeatThroughAnUnreadableProgressFile(t *testing.T) {
	h := newHarness(t)
	task := h.running(t, "mvp2-ppo-20251223-143201-aa01", func(t *mvp.Task) { t.HeartbeatTimeoutS = 60 })
	for i := 0; i < 5; i++ { // healthy: progress every 30 s, 150 s in all
		h.writeProgress(task.ID, 1, `{"step": 1}`)
		h.clock.t = h.clock.t.Add(30 * time.Second)
		h.tick()
	}
	h.writeProgress(task.ID, 1, `{"step": 2}`) // written now
	dir, _ := (taskfs.FS{Root: h.root}).AttemptDir(task.ID, 1)
	if err := os.Rename(dir, dir+".gone"); err != nil { // the folder is unreadable for one pass
		t.Fatal(err)
	}
	h.tick() // 1 s later
	os.Rename(dir+".gone", dir)
	a := h.get(task.ID).Attempts[0]
	if a.FailureKind == mvp.FailureHeartbeatLost {
		t.Errorf("a run that wrote progress 1 s ago was judged HEARTBEAT_LOST: %q (stops %v)", a.Message, h.ray.stopped)
	}
}

// One ended job whose logs endpoint answers 5xx for ever (its driver's node was removed: ray-project/ray#65402)
// held up keeping, and so pruning, every other job's log: it headed the oldest-first list and each pass stopped at
// it without counting a try. Each job's failure counts for that job only. Found in review.
func TestLoopKeepsLogsPastOneJobRayCannotServe(t *testing.T) {
	h := newHarness(t) // KeepFinishedJobs 1
	h.loop.MaxLogTries = 2
	broken := map[string]error{}
	h.ray.logsErr = func(id string) error { return broken[id] }
	dead := h.task()
	h.tick()
	broken[dead.ID+"--a01"] = mvp.ErrRayUnavailable // HTTP 500: driver's node removed (ray#65402)
	h.ray.set(dead.ID+"--a01", mvp.RayFailed, "node died", 1)
	h.tick()
	other := h.task()
	h.tick()
	broken[other.ID+"--a01"] = mvp.ErrRayUnavailable // a hiccup at the moment it ends
	h.ray.set(other.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.tick()
	delete(broken, other.ID+"--a01") // Ray answers its logs again
	for i := 0; i < 3; i++ {
		x := h.task()
		h.tick()
		h.ray.set(x.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.tick()
	}
	for i := 0; i < 30; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	d, o := h.get(dead.ID).Attempts[0], h.get(other.ID).Attempts[0]
	if !o.LogKept || d.LogTries == 0 {
		t.Errorf("a log Ray served for 5 minutes was never kept (tries %d); the job Ray cannot serve: tries %d, kept %v", o.LogTries, d.LogTries, d.LogKept)
	}
}

// max_runtime_s passes while Ray is down, and Ray's head lost the job 10 minutes into a 1 h run: the time limit
// was judged on the stale RUNNING row during the outage (the stop could not reach Ray), and when Ray came back
// without the job that judgement stood, so a 10-minute run failed for good as MAX_RUNTIME_EXCEEDED instead of
// being retried as INFRA. No judgement is made while Ray's jobs cannot be read. Found in review.
func TestLoopJudgesNoTimeLimitWhileRayIsDown(t *testing.T) {
	h := newHarness(t)
	task := h.running(t, "mvp2-ppo-20251223-143201-cc01", func(t *mvp.Task) { t.MaxRuntimeS = 3600 })
	sid := task.ID + "--a01"
	h.clock.t = h.clock.t.Add(10 * time.Minute)
	h.ray.down = true // the head dies and takes the job with it
	delete(h.ray.jobs, sid)
	for i := 0; i < 60; i++ {
		h.clock.t = h.clock.t.Add(time.Minute)
		h.tick()
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	got := h.get(task.ID)
	if got.State == mvp.StateFailed || got.Attempts[0].FailureKind != mvp.FailureInfra {
		t.Errorf("a 10-minute run lost by Ray: task %s, attempt %s %q (%q); want it retried as INFRA", got.State,
			got.Attempts[0].FailureKind, got.Attempts[0].Message, got.ErrorSummary)
	}
}

// A resubmit inside the submit grace refused with a 4xx (a proxy's 429, say) failed the task at once, and the job
// of the earlier POST that landed later was never followed nor stopped. Within the grace the attempt is followed
// (the late job is then followed as any other). Found in review.
func TestLoopDoesNotFailARefusedResubmitWithinTheGrace(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	sid := task.ID + "--a01"
	calls := 0
	h.ray.submitErr = func(id string) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("POST /api/jobs/: %w (timeout)", mvp.ErrRayUnavailable)
		}
		return &mvp.Error{Code: mvp.CodeInvalid, Message: "Ray refused the request (HTTP 429): Too Many Requests"}
	}
	h.tick() // POST lost, job not visible yet: stays SUBMITTING
	h.tick() // resubmit with the same id: 429
	if got := h.get(task.ID); got.State != mvp.StateSubmitting {
		t.Errorf("after the refused resubmit within the grace: %s %q", got.State, got.ErrorSummary)
	}
	h.ray.mu.Lock() // the first POST's job lands
	h.ray.jobs[sid] = &mvp.JobInfo{SubmissionID: sid, Status: mvp.RayRunning, JobID: "01000000"}
	h.ray.mu.Unlock()
	for i := 0; i < 5; i++ {
		h.tick()
	}
	if got := h.get(task.ID); got.State != mvp.StateRunning {
		t.Errorf("the late job is not followed: task %s %q (stops %v)", got.State, got.ErrorSummary, h.ray.stopped)
	}
}

// running makes a 1×2 ppo task with id (set changes it before it is stored), submits it and has Ray run it (its
// job started now), and returns it.
func (h *harness) running(t *testing.T, id string, set func(*mvp.Task)) *mvp.Task {
	t.Helper()
	task := &mvp.Task{ID: id, Workload: mvp.WorkloadPPO, State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 2,
		JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	set(task)
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	h.tick()
	sid := task.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime = h.clock.t.UnixMilli()
	h.ray.mu.Unlock()
	h.tick()
	return task
}

// An attempt written SUBMITTING by a process that stopped before its POST (crash point submitting_before_ray) is
// posted by the next one: that POST, too, has its payload in the task folder and its results folder made before
// the job starts (the job failed opening $MVP_RESULTS_DIR: found by the crash tests end to end).
func TestLoopResubmitAfterARestartMakesTheAttemptsFolders(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	att := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: task.ID + "--a01", CreatedAt: h.clock.t}
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting,
		At: h.clock.t, NewAttempt: att}); err != nil {
		t.Fatal(err)
	}
	h.clock.t = h.clock.t.Add(2 * time.Minute) // past the submit grace: the restarted loop posts it again
	h.tick()
	if _, ok := h.ray.jobs[att.RaySubmissionID]; !ok {
		t.Fatalf("not posted again: %v", h.ray.jobs)
	}
	fs := taskfs.FS{Root: h.root}
	results, _ := fs.AttemptResultsDir(task.ID, 1)
	dir, _ := fs.AttemptDir(task.ID, 1)
	for _, p := range []string{results, dir + "/submission.json"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// The progress file's modification time is written by another machine's clock (the node the driver runs on, or
// the NFS server of shared_root), not mvp's. With that clock 10 minutes behind, a run writing progress every 30 s
// was stopped as HEARTBEAT_LOST (timeout 60 s); with it 10 minutes ahead, a hung run went unjudged for 10 minutes.
// A heartbeat is when mvp saw the file change, on mvp's clock. Found in review.
func TestLoopJudgesHeartbeatsOnItsOwnClock(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newHarness(t)
			task := h.running(t, "mvp2-ppo-20251223-143201-dd01", func(t *mvp.Task) { t.HeartbeatTimeoutS = 60 })
			write := func(body string) {
				h.writeProgress(task.ID, 1, body)
				p := h.progressPath(task.ID, 1)
				if err := os.Chtimes(p, h.clock.t.Add(skew), h.clock.t.Add(skew)); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 6; i++ { // healthy: progress every 30 s, 3 minutes in all
				write(fmt.Sprintf(`{"step": %d}`, i+1))
				h.clock.t = h.clock.t.Add(30 * time.Second)
				h.tick()
			}
			if a := h.get(task.ID).Attempts[0]; a.FailureKind != "" {
				t.Fatalf("a run writing progress every 30 s was judged %s: %q", a.FailureKind, a.Message)
			}
			for i := 0; i < 4; i++ { // then it hangs: 2 minutes without a change
				h.clock.t = h.clock.t.Add(30 * time.Second)
				h.tick()
			}
			if a := h.get(task.ID).Attempts[0]; a.FailureKind != mvp.FailureHeartbeatLost {
				t.Errorf("a run silent for 2 minutes (timeout 60 s) is not judged: %s %q", a.FailureKind, a.Message)
			}
		})
	}
}

// TestTheRunClocksStartWhenTheJobRuns: Ray's start_time is when the job was submitted, not when it began to run
// (job_manager.py stamps it at submit). A job PENDING in Ray for a while (its runtime env being set up, its driver
// waiting for a CPU) was stopped as HEARTBEAT_LOST the moment it turned RUNNING, and max_runtime_s counted its wait.
// Both clocks now start when mvp first sees the job RUNNING (the attempt's running_at). Found in walk-through 7.
func TestTheRunClocksStartWhenTheJobRuns(t *testing.T) {
	h := newHarness(t)
	task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-dd02", Workload: mvp.WorkloadPPO, State: mvp.StateQueued, NNodes: 1,
		GPUsPerNode: 2, JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t,
		HeartbeatTimeoutS: 60, MaxRuntimeS: 600}
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	h.tick()
	sid := task.ID + "--a01"
	submitted := h.clock.t
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime = submitted.UnixMilli() // Ray's: the submission
	h.ray.mu.Unlock()
	for i := 0; i < 10; i++ { // 5 minutes PENDING in Ray
		h.clock.t = h.clock.t.Add(30 * time.Second)
		h.tick()
	}
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime = submitted.UnixMilli()
	h.ray.mu.Unlock()
	h.tick()
	ranAt := h.clock.t
	h.clock.t = h.clock.t.Add(30 * time.Second)
	h.tick()
	got := h.get(task.ID)
	a := got.Attempts[0]
	if a.FailureKind != "" || got.State != mvp.StateRunning {
		t.Fatalf("30 s after it began to run (5 minutes after its submission) the run was judged: %s %s %q",
			got.State, a.FailureKind, a.Message)
	}
	if a.RunningAt == nil || !a.RunningAt.Equal(ranAt) || a.StartTime == nil || !a.StartTime.Equal(submitted) {
		t.Errorf("running_at %v (want %v), start_time %v (want Ray's, %v)", a.RunningAt, ranAt, a.StartTime, submitted)
	}
	if got.FillTimeLeft(h.clock.t); got.RuntimeLeftS == nil || *got.RuntimeLeftS < 569 || *got.RuntimeLeftS > 570 {
		t.Errorf("runtime left %v s, want 570 s (600 less the 30 s it ran)", deref(got.RuntimeLeftS))
	}
	for i := 0; i < 4; i++ { // then silent for 2 minutes: judged by the heartbeat
		h.clock.t = h.clock.t.Add(30 * time.Second)
		h.tick()
	}
	if a := h.get(task.ID).Attempts[0]; a.FailureKind != mvp.FailureHeartbeatLost {
		t.Errorf("a run silent for its first 2.5 minutes (timeout 60 s) is not judged: %s %q", a.FailureKind, a.Message)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// A refused POST restarted the submit grace: the grace covers a POST whose answer was lost (it may still become a
// job), but every POST moved the time it counts from, the refused ones too. A resubmit that Ray refused at every
// pass (after a restart before the first POST, or after a first POST whose answer was lost) was held SUBMITTING
// for ever, posted again at every pass, and its gang's GPUs stayed taken in admission. Found by a review.
func TestARefusedResubmitAfterARestartFailsOnceTheGraceIsOver(t *testing.T) {
	h := newHarness(t) // submit grace 1 min
	task := h.task()
	att := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: task.ID + "--a01", CreatedAt: h.clock.t}
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting,
		At: h.clock.t, NewAttempt: att}); err != nil {
		t.Fatal(err)
	}
	h.ray.submitErr = func(string) error {
		return &mvp.Error{Code: mvp.CodeInvalid, Message: "Ray refused the request (HTTP 400): ValueError: bad entrypoint_resources"}
	}
	h.loop = h.newLoop()      // the restarted mvp: its start opens the grace
	for i := 0; i < 20; i++ { // 3 minutes, a pass every 9 s
		h.clock.t = h.clock.t.Add(9 * time.Second)
		h.tick()
	}
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "bad entrypoint_resources") {
		t.Errorf("3 min after the restart (grace 1 min): %s %q after %d refused POSTs; want FAILED with Ray's refusal",
			got.State, got.ErrorSummary, h.ray.submits)
	}
}

func TestARefusedResubmitAfterALostAnswerFailsOnceTheGraceIsOverAndFreesItsGPUs(t *testing.T) {
	h := newHarness(t)
	first := h.task()
	calls := 0
	h.ray.submitErr = func(id string) error {
		if id != first.ID+"--a01" {
			return nil
		}
		calls++
		if calls == 1 {
			return fmt.Errorf("POST /api/jobs/: %w (timeout)", mvp.ErrRayUnavailable)
		}
		return &mvp.Error{Code: mvp.CodeInvalid, Message: "Ray refused the request (HTTP 400): ValueError: bad"}
	}
	h.tick() // the POST's answer is lost and no job shows: SUBMITTING, in the grace
	big := h.taskOf(8)
	for i := 0; i < 20; i++ {
		h.clock.t = h.clock.t.Add(9 * time.Second)
		h.tick()
	}
	if got := h.get(first.ID); got.State != mvp.StateFailed {
		t.Errorf("3 min after the lost POST (grace 1 min): %s %q after %d POSTs; want FAILED", got.State,
			got.ErrorSummary, calls)
	}
	if got := h.get(big.ID); got.State != mvp.StateSubmitted && got.State != mvp.StateRunning {
		t.Errorf("the 8-GPU task behind it: %s %q; want it submitted once the first has failed", got.State, got.PendingReason)
	}
}

// The loop end of TestConcludeRecordsARunItDidNotSeeRunning: a task with max_queued_s 1 h whose job ran 4 h while
// mvp was down and then lost a node is requeued (INFRA), not expired as never started.
func TestARunThatRanWhileMvpWasDownIsNotExpiredAsNeverStarted(t *testing.T) {
	h := newHarness(t)
	tk := &mvp.Task{ID: "mvp2-ppo-20251223-143201-ee01", Workload: mvp.WorkloadPPO, State: mvp.StateQueued, NNodes: 1,
		GPUsPerNode: 2, JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t, MaxQueuedS: 3600}
	if err := h.db.CreateTask(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	h.tick() // submitted; Ray has it PENDING
	sid := tk.ID + "--a01"
	start := h.clock.t.Add(time.Minute)
	h.clock.t = h.clock.t.Add(5 * time.Hour) // mvp is down; the job runs 4 h and loses a node
	h.ray.set(sid, mvp.RayFailed, "ray.exceptions.ActorDiedError: The actor died because its node has died.", 1)
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime, h.ray.jobs[sid].EndTime = start.UnixMilli(), start.Add(4*time.Hour).UnixMilli()
	h.ray.mu.Unlock()
	h.loop = h.newLoop()
	h.tick()
	h.tick()
	got := h.get(tk.ID)
	if got.Expired() || got.State == mvp.StateFailed {
		t.Errorf("a run of 4 h was ended as never started: %s %q", got.State, got.ErrorSummary)
	}
	if len(got.Attempts) < 2 && got.State != mvp.StatePendingResources {
		t.Errorf("want the INFRA retry (requeued or its second attempt submitted): %s, %d attempts", got.State, len(got.Attempts))
	}
}

// Ray's state API at its limit of requests in progress (RAY_STATE_SERVER_MAX_HTTP_REQUEST: others' log streams,
// or the follows mvp serves) refuses every read of an ended job's log with 429 while Ray is up. Each refusal was
// a failed try, so after MaxLogTries (under a minute) the log was given up for lost and the job pruned from Ray
// without it. A busy Ray is not a try, as a Ray that is down is not: the job stays in Ray, its log is kept once
// Ray has room.
func TestABusyStateAPIIsNotALogTry(t *testing.T) {
	h := newHarness(t) // KeepFinishedJobs 1
	h.loop.MaxLogTries = 2
	busy := true
	h.ray.logsErr = func(string) error {
		if busy {
			return fmt.Errorf("logs: %w: %w (the state API answered HTTP 429: Max number of in-progress requests=100 reached)",
				mvp.ErrRayUnavailable, mvp.ErrRayBusy)
		}
		return nil
	}
	var ended []*mvp.Task
	for range 3 {
		x := h.task()
		h.tick()
		h.ray.set(x.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.tick()
		ended = append(ended, x)
	}
	for range 30 {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	for _, x := range ended {
		a := h.get(x.ID).Attempts[0]
		if a.LogTries != 0 || a.LogKept {
			t.Errorf("%s after 5 minutes of a busy state API: tries %d, kept %v; want no try counted", x.ID, a.LogTries, a.LogKept)
		}
		for _, e := range h.eventsOf(x.ID, mvp.EventLogNotKept) {
			t.Errorf("%s: %s %s while Ray was only busy", x.ID, e.Type, e.Payload)
		}
	}
	// /healthz says so from the first refusal's time on.
	if since := h.loop.Health().RayLogsBusySince; since == nil || h.clock.t.Sub(*since) < 4*time.Minute {
		t.Errorf("after 5 minutes of a busy state API the health says busy since %v (now %v)", since, h.clock.t)
	}
	busy = false
	for range 5 {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	for _, x := range ended {
		if a := h.get(x.ID).Attempts[0]; !a.LogKept {
			t.Errorf("%s: log not kept once Ray had room (tries %d)", x.ID, a.LogTries)
		}
	}
	if since := h.loop.Health().RayLogsBusySince; since != nil {
		t.Errorf("logs kept again, and the health still says the state API is busy since %v", since)
	}
}
