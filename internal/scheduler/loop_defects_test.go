package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Tests of the defects listed in issue 12, each of which failed on the code before its fix.

func (h *harness) events(id string) []string {
	h.t.Helper()
	evs, _, err := h.db.Events(context.Background(), id, "", 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// pendingGroup makes the cluster view show the job's placement group PENDING (unplaceable).
func (h *harness) pendingGroup(jobID string) {
	h.view.Groups = []mvp.PlacementGroup{{ID: "pg-" + jobID, CreatorJobID: jobID, State: "PENDING",
		SchedulingState: "NO_RESOURCES", Strategy: "STRICT_PACK", Bundles: []map[string]float64{{"GPU": 1}}}}
}

// stuckGang is a harness with a 10 s gang wait and a task whose attempt runs with its placement group seen PENDING
// (unplaceable) by the last tick: the gang's wait has started.
func stuckGang(t *testing.T) (*harness, *mvp.Task) {
	h := newHarness(t)
	h.loop.Policy.GangWait = 10 * time.Second
	stuck := h.task()
	h.tick()
	h.ray.set(stuck.ID+"--a01", mvp.RayRunning, "", 0) // job id 01000000
	h.pendingGroup("01000000")
	h.tick() // RUNNING, group seen PENDING: the clock of the gang wait starts
	return h, stuck
}

// Defect 1: a stuck gang whose stop call fails is stopped again on later ticks until Ray ends the job, and it never
// holds the queue meanwhile.
func TestLoopRetriesAFailedStopOfAStuckGang(t *testing.T) {
	h, stuck := stuckGang(t)
	h.ray.stopErr = mvp.ErrRayUnavailable
	h.clock.t = h.clock.t.Add(11 * time.Second)
	h.tick() // judged stuck; the stop call fails
	a := h.get(stuck.ID).Attempts[0]
	if a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(fmt.Sprint(h.events(stuck.ID)), mvp.EventGangStuck) {
		t.Fatalf("not judged stuck: %+v %v", a, h.events(stuck.ID))
	}
	stops := len(h.ray.stopped)
	// A task behind it fits on the free GPUs: the judged gang must not hold the queue.
	next := h.task()
	h.ray.stopErr = nil
	h.tick()
	if len(h.ray.stopped) <= stops {
		t.Fatalf("the failed stop was not retried: stop calls %v", h.ray.stopped)
	}
	if s := h.get(next.ID).State; s != mvp.StateSubmitted {
		t.Errorf("the task behind a judged gang is %s, want SUBMITTED", s)
	}
	h.view.Groups = nil
	h.tick() // Ray reports STOPPED: requeued for lack of resources
	got := h.get(stuck.ID)
	if got.State != mvp.StatePendingResources || got.Attempts[0].FailureKind != mvp.FailureInsufficientResources {
		t.Errorf("after the stop: %s %+v", got.State, got.Attempts[0])
	}
}

// Defect 2: a task whose submission cannot be built ends FAILED with the reason instead of being re-admitted on
// every tick.
func TestLoopFailsATaskWhoseSubmissionCannotBeBuilt(t *testing.T) {
	h := newHarness(t)
	build := h.loop.Build
	bad := h.task()
	h.loop.Build = func(t *mvp.Task, n int) (*mvp.JobSubmission, error) {
		if t.ID == bad.ID {
			return nil, errors.New("attempt folder out of range")
		}
		return build(t, n)
	}
	h.tick()
	got := h.get(bad.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "attempt folder out of range") {
		t.Fatalf("unbuildable task: %s %q", got.State, got.ErrorSummary)
	}
	if h.ray.submits != 0 {
		t.Errorf("%d submits", h.ray.submits)
	}
}

// Defect 2: requeues for lack of resources are bounded; the task says why it ended.
func TestLoopBoundsResourceRetries(t *testing.T) {
	h := newHarness(t) // MaxResourceRetries: 3
	task := h.task()
	for i := 1; i <= 4; i++ {
		h.clock.t = h.clock.t.Add(2 * time.Minute) // past next_run_at
		h.tick()
		sid := mvp.SubmissionID(task.ID, i)
		if _, err := h.ray.GetJob(context.Background(), sid); err != nil {
			t.Fatalf("attempt %d not submitted: %v (%s)", i, err, h.get(task.ID).State)
		}
		h.ray.set(sid, mvp.RayFailed, "ValueError: Total available GPUs 0.0 is less than total desired GPUs 2", 1)
		h.tick()
	}
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || len(got.Attempts) != 4 ||
		!strings.Contains(got.ErrorSummary, "max_resource_retries = 3") {
		t.Fatalf("%s after %d attempts: %q", got.State, len(got.Attempts), got.ErrorSummary)
	}
}

// Defect 5: when the final log fetch fails, the job is not deleted from Ray until its log is kept; after every try
// failed it is deleted with a LOG_NOT_KEPT event.
func TestLoopKeepsTheLogBeforeDeletingTheJob(t *testing.T) {
	h := newHarness(t)     // KeepFinishedJobs: 1
	h.loop.MaxLogTries = 4 // a success's log is fetched by keepLogs after the pass's actions: the first failure is a try
	broken := map[string]error{}
	h.ray.logsErr = func(id string) error { return broken[id] }
	first := h.task()
	h.tick()
	broken[first.ID+"--a01"] = mvp.ErrRayUnavailable
	h.ray.set(first.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.tick()
	if a := h.get(first.ID).Attempts[0]; a.LogKept || h.get(first.ID).State != mvp.StateSucceeded {
		t.Fatalf("attempt %+v", a)
	}
	// A newer job pushes the first one out of the kept window; its log still cannot be fetched.
	second := h.task()
	h.tick()
	h.ray.set(second.ID+"--a01", mvp.RaySucceeded, "", 0)
	broken[first.ID+"--a01"] = errors.New("log file gone")
	for i := 0; i < 2; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	if len(h.ray.deleted) != 0 {
		t.Fatalf("deleted %v before its log was kept", h.ray.deleted)
	}
	delete(broken, first.ID+"--a01")
	h.clock.t = h.clock.t.Add(10 * time.Second)
	h.tick() // the retry keeps the log
	h.tick()
	if a := h.get(first.ID).Attempts[0]; !a.LogKept {
		t.Fatalf("log not kept after the retry: %+v", a)
	}
	if fmt.Sprint(h.ray.deleted) != fmt.Sprintf("[%s--a01]", first.ID) {
		t.Fatalf("deleted %v", h.ray.deleted)
	}
	if strings.Contains(fmt.Sprint(h.events(first.ID)), mvp.EventLogNotKept) {
		t.Errorf("kept log reported lost: %v", h.events(first.ID))
	}

	// A log that can never be fetched: deleted after the tries, with an event.
	third := h.task()
	h.tick()
	broken[third.ID+"--a01"] = errors.New("log file gone")
	h.ray.set(third.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.tick()
	fourth := h.task()
	h.tick()
	h.ray.set(fourth.ID+"--a01", mvp.RaySucceeded, "", 0)
	for i := 0; i < 6; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	if !strings.Contains(fmt.Sprint(h.events(third.ID)), mvp.EventLogNotKept) ||
		!strings.Contains(fmt.Sprint(h.ray.deleted), third.ID) {
		t.Errorf("no %s for %s: %v; deleted %v", mvp.EventLogNotKept, third.ID, h.events(third.ID), h.ray.deleted)
	}
}

// Defect 8: a cancel that lands while a submit's answer was lost keeps following the attempt for the grace period
// and stops the job when it appears late.
func TestLoopStopsAJobThatAppearsAfterACancel(t *testing.T) {
	h := newHarness(t)                                                    // SubmitGrace: 1 min
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable } // the answer is lost; no job yet
	task := h.task()
	h.tick()
	if s := h.get(task.ID).State; s != mvp.StateSubmitting {
		t.Fatalf("state %s", s)
	}
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.tick() // Ray has no job: within the grace period the attempt stays followed
	if a := h.get(task.ID).Attempts[0]; a.RayStatus.Terminal() {
		t.Fatalf("attempt closed within the grace period: %+v", a)
	}
	// The lost submit reaches Ray late.
	h.ray.mu.Lock()
	h.ray.jobs[task.ID+"--a01"] = &mvp.JobInfo{SubmissionID: task.ID + "--a01", Status: mvp.RayRunning, JobID: "02000000"}
	h.ray.mu.Unlock()
	h.tick()
	if fmt.Sprint(h.ray.stopped) != fmt.Sprintf("[%s--a01]", task.ID) {
		t.Fatalf("the late job was not stopped: %v", h.ray.stopped)
	}
	h.tick()
	if a := h.get(task.ID).Attempts[0]; a.RayStatus != mvp.RayStopped {
		t.Errorf("attempt %+v", a)
	}
	// Without a late job, the attempt is closed once the grace period has passed.
	other := h.task()
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable }
	h.tick()
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: other.ID, From: mvp.StateSubmitting,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.clock.t = h.clock.t.Add(2 * time.Minute)
	h.tick()
	if a := h.get(other.ID).Attempts[0]; a.RayStatus != mvp.RayStopped || !strings.Contains(a.Message, "canceled before") {
		t.Errorf("attempt %+v", a)
	}
}

// Defect 6: a canceled task whose gang is unplaceable is never judged stuck.
func TestLoopNeverJudgesACanceledTaskStuck(t *testing.T) {
	h, task := stuckGang(t)
	h.ray.stopErr = errors.New("stop refused") // the job stays alive a while after the cancel
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateRunning,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	a := h.get(task.ID).Attempts[0]
	if a.FailureKind != mvp.FailureNone || strings.Contains(fmt.Sprint(h.events(task.ID)), mvp.EventGangStuck) {
		t.Errorf("canceled task judged stuck: %+v %v", a, h.events(task.ID))
	}
}

// A job that Ray refused never existed (nor does one Ray lost): there is no driver log to keep and no job to
// delete. The log fetch is not retried, the job is not "deleted from Ray", and no LOG_NOT_KEPT event claims so.
func TestLoopKeepsNoLogOfAJobRayDoesNotHave(t *testing.T) {
	h := newHarness(t) // KeepFinishedJobs: 1
	h.loop.MaxLogTries = 2
	fetches := map[string]int{}
	h.ray.logsErr = func(id string) error { // called with the fake's lock held
		fetches[id]++
		if _, ok := h.ray.jobs[id]; !ok {
			return mvp.ErrJobNotFound // as Ray answers for a submission id it does not know
		}
		return nil
	}
	refused := h.task()
	h.ray.submitErr = func(id string) error {
		if strings.HasPrefix(id, refused.ID) {
			return &mvp.Error{Code: mvp.CodeInvalid, Message: "runtime_env is not valid"}
		}
		return nil
	}
	h.tick()
	if got := h.get(refused.ID); got.State != mvp.StateFailed || got.Attempts[0].EndTime == nil {
		t.Fatalf("refused task is %s, its attempt ended at %v", got.State, got.Attempts[0].EndTime)
	}
	other := h.task() // a newer ended job pushes the refused one out of the kept window
	h.tick()
	h.ray.set(other.ID+"--a01", mvp.RaySucceeded, "", 0)
	for i := 0; i < 6; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	id := refused.ID + "--a01"
	if n := fetches[id]; n > 1 {
		t.Errorf("the log of a job Ray never had was fetched %d times", n)
	}
	if strings.Contains(fmt.Sprint(h.ray.deleted), id) {
		t.Errorf("deleted %s from Ray, which never had it: %v", id, h.ray.deleted)
	}
	if strings.Contains(fmt.Sprint(h.events(refused.ID)), mvp.EventLogNotKept) {
		t.Errorf("%s claims a log was lost: %v", mvp.EventLogNotKept, h.events(refused.ID))
	}
}

// The API's dry run and queue view read a Snapshot as a tick does; they must not change what the loop keeps. A
// view taken while the cluster cannot be read restarted every gang's wait (and so did a tick that could not read
// it: not seeing a gang is not seeing it placed), so a stuck gang was judged late or never.
func TestLoopKeepsAGangsWaitThroughAnUnreadCluster(t *testing.T) {
	h, stuck := stuckGang(t)
	h.clock.t = h.clock.t.Add(4 * time.Second)
	h.ray.down = true
	if _, err := h.loop.Snapshot(context.Background()); err != nil { // the queue view, while Ray is down
		t.Fatal(err)
	}
	h.tick() // and a tick while Ray is down
	h.ray.down = false
	h.clock.t = h.clock.t.Add(5 * time.Second)
	h.tick() // 11 s after the wait started
	if a := h.get(stuck.ID).Attempts[0]; a.FailureKind != mvp.FailureInsufficientResources {
		t.Fatalf("not judged stuck 11 s into a 10 s gang wait: %+v %v", a, h.events(stuck.ID))
	}
}

// An attempt left SUBMITTING that Ray does not know is submitted again, built again; when it can no longer be
// built (a workload dropped by an upgrade, say), the task fails as a first submission that cannot be built does,
// instead of the pass failing on it for ever with the task SUBMITTING.
func TestLoopFailsAnAttemptThatCannotBeBuiltAgain(t *testing.T) {
	h := newHarness(t)
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable } // the answer is lost; no job
	task := h.task()
	h.tick()
	if s := h.get(task.ID).State; s != mvp.StateSubmitting {
		t.Fatalf("state %s", s)
	}
	h.ray.submitErr = nil
	h.loop.Build = func(*mvp.Task, int) (*mvp.JobSubmission, error) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "workload", "workload ppo is no longer configured")
	}
	h.clock.t = h.clock.t.Add(time.Minute)
	if err := h.loop.RunOnce(context.Background()); err != nil {
		t.Logf("pass: %v", err)
	}
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "no longer configured") ||
		!got.Attempts[0].RayStatus.Terminal() {
		t.Fatalf("%s %q, attempt %+v", got.State, got.ErrorSummary, got.Attempts[0])
	}
}

// A submission that fails on mvp's side before it reaches Ray (a package the door keeps cannot be read) is not
// "Ray refused the submission" (USER_ERROR, the task failed for good): the attempt ends INFRA with what failed,
// and the task waits a retry interval and is tried again as a new attempt, within max_infra_retries.
func TestLoopRetriesASubmissionMvpCouldNotPrepare(t *testing.T) {
	h := newHarness(t) // MaxInfraRetries 2, RetryInterval 1 min
	task := h.task()
	h.ray.submitErr = func(string) error {
		return fmt.Errorf("read package X kept at /shared/ray_packages/X: is a directory: %w", mvp.ErrSubmitInfra)
	}
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StatePendingResources {
		t.Fatalf("task is %s (%s); want PENDING_RESOURCES, to be retried", got.State, got.ErrorSummary)
	}
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInfra || a.EndTime == nil || !strings.Contains(a.Message, "/shared/ray_packages/X") {
		t.Fatalf("attempt 1 = %+v; want INFRA, ended, naming the file", a)
	}
	if h.ray.submits != 1 || len(h.ray.jobs) != 0 {
		t.Fatalf("submits %d, jobs %v", h.ray.submits, h.ray.jobs)
	}
	h.tick() // before the retry interval: no new attempt
	if n := len(h.get(task.ID).Attempts); n != 1 {
		t.Fatalf("%d attempts before the retry interval", n)
	}
	h.ray.submitErr = nil // the folder is fixed
	h.clock.t = h.clock.t.Add(time.Minute + time.Second)
	h.tick()
	got = h.get(task.ID)
	if len(got.Attempts) != 2 || got.Attempts[1].RaySubmissionID != task.ID+"--a02" {
		t.Fatalf("attempts after the interval: %+v", got.Attempts)
	}
	if _, ok := h.ray.jobs[task.ID+"--a02"]; !ok {
		t.Fatalf("attempt 2 not in Ray: %v", h.ray.jobs)
	}
	// Past max_infra_retries the task fails, saying why.
	other := h.task()
	h.ray.submitErr = func(id string) error {
		if strings.HasPrefix(id, other.ID) {
			return fmt.Errorf("read package: %w", mvp.ErrSubmitInfra)
		}
		return nil
	}
	for i := 0; i < 4 && h.get(other.ID).State != mvp.StateFailed; i++ {
		h.tick()
		h.clock.t = h.clock.t.Add(time.Minute + time.Second)
	}
	got = h.get(other.ID)
	if got.State != mvp.StateFailed || len(got.Attempts) != 3 || !strings.Contains(got.ErrorSummary, "max_infra_retries") {
		t.Fatalf("after the INFRA retries: %s, %d attempts, %q", got.State, len(got.Attempts), got.ErrorSummary)
	}
}

// An attempt left SUBMITTING whose POST's answer was lost may still become a job in Ray for a while (the submit
// grace). If it can no longer be built in that time, the task must not be failed yet: the job could appear after
// mvp stopped following it and run with nobody to stop or record it. It is followed until the grace is over.
func TestLoopWaitsTheSubmitGraceBeforeFailingAnUnbuildableResubmit(t *testing.T) {
	h := newHarness(t)                                                    // SubmitGrace 1 min
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable } // the answer is lost; no job yet
	task := h.task()
	h.tick()
	h.ray.submitErr = nil
	h.loop.Build = func(*mvp.Task, int) (*mvp.JobSubmission, error) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "workload", "workload ppo is no longer configured")
	}
	h.clock.t = h.clock.t.Add(10 * time.Second)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateSubmitting {
		t.Fatalf("failed within the submit grace: %s %q", got.State, got.ErrorSummary)
	}
	// The lost POST lands after all: the job is followed as any other.
	h.ray.mu.Lock()
	h.ray.jobs[task.ID+"--a01"] = &mvp.JobInfo{SubmissionID: task.ID + "--a01", Status: mvp.RayRunning}
	h.ray.mu.Unlock()
	h.clock.t = h.clock.t.Add(10 * time.Second)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateRunning {
		t.Fatalf("the job that appeared is not followed: %s %q", got.State, got.ErrorSummary)
	}
}

// hookedCluster runs hook (once) when the cluster is read, before answering: what changed in Ray just before the
// probe's reading.
type hookedCluster struct {
	view *mvp.ClusterView
	hook *func()
}

func (c hookedCluster) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	if f := *c.hook; f != nil {
		*c.hook = nil
		f()
	}
	return c.view, nil
}

// TestAGangPlacedBeforeTheProbeReadsIsNotCountedTwice (walk-through 14): a pass synced its live attempts, then read
// the cluster. A driver that started and placed its gang in between showed in the reading (its group CREATED, its
// GPUs used), but the attempt did not know its Ray job id yet, so the gang counted as not placed: reserved again on
// a cluster where it no longer fitted, it held the whole queue for that pass ("waiting behind a submitted task whose
// gang is not placed yet and does not fit", stored as the waiting task's reason), and the queue showed no estimate.
// The pass reads the cluster first, so what it knows of its attempts is never older than the reading.
func TestAGangPlacedBeforeTheProbeReadsIsNotCountedTwice(t *testing.T) {
	h := newHarness(t)
	var hook func()
	h.loop.Cluster = hookedCluster{view: h.view, hook: &hook}
	g := h.taskOf(8) // the whole node
	h.tick()
	sub := g.ID + "--a01"
	if got := h.get(g.ID); got.State != mvp.StateSubmitted {
		t.Fatalf("G: %s", got.State)
	}
	q := h.taskOf(1)
	hook = func() { // G's driver starts and places its group
		h.ray.set(sub, mvp.RayRunning, "", 0)
		h.view.Nodes[0].Available["GPU"] = 0
		h.view.Nodes[0].Available["CPU"] = 96 - 24
		h.view.Groups = append(h.view.Groups, mvp.PlacementGroup{CreatorJobID: "01000000", State: "CREATED", Node: "w1",
			Bundles: []map[string]float64{{"GPU": 8, "CPU": 24}}})
	}
	h.tick()
	got := h.get(q.ID)
	if got.State != mvp.StatePendingResources || strings.Contains(got.PendingReason, "not placed yet") {
		t.Errorf("Q: %s %q; want it waiting for GPUs, not behind an unplaced gang", got.State, got.PendingReason)
	}
}

// TestAGangsWaitCountsFromWhenRayMadeItsGroup: the gang wait counted from mvp's first look at a PENDING placement
// group, kept only in memory, so a restart of mvp began it again (seen in the fault walk-through on the real
// cluster: gang_wait_s 20, mvp killed and restarted 12 s into the wait, the gang stopped 37 s after it began, its
// message saying 20 s). Ray says when it took the group's creation request; the wait counts from that (never
// before the attempt was recorded, nor after now).
func TestAGangsWaitCountsFromWhenRayMadeItsGroup(t *testing.T) {
	h := newHarness(t)
	h.loop.Policy.GangWait = 10 * time.Second
	stuck := h.task()
	h.tick()
	h.ray.set(stuck.ID+"--a01", mvp.RayRunning, "", 0) // job id 01000000
	made := h.clock.t.Add(time.Second)
	h.clock.t = h.clock.t.Add(30 * time.Second) // mvp was down meanwhile: this process has not seen the group
	h.pendingGroup("01000000")
	h.view.Groups[0].CreatedNs = made.UnixNano()
	h.tick()
	a := h.get(stuck.ID).Attempts[0]
	if a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(fmt.Sprint(h.events(stuck.ID)), mvp.EventGangStuck) {
		t.Fatalf("a group Ray has held PENDING for 30 s, with a gang wait of 10 s, is not judged stuck at mvp's first "+
			"look: %+v %v", a, h.events(stuck.ID))
	}
	if !strings.Contains(a.Message, "for 30s") {
		t.Errorf("message %q; want the wait counted from the group's creation (30s)", a.Message)
	}

	// The first look after a restart may be the dashboard's fallback view, which does not say when the group was
	// made: the next live reading that does still counts from it.
	h3 := newHarness(t)
	h3.loop.Policy.GangWait = 10 * time.Second
	third := h3.task()
	h3.tick()
	h3.ray.set(third.ID+"--a01", mvp.RayRunning, "", 0)
	made = h3.clock.t.Add(time.Second)
	h3.clock.t = h3.clock.t.Add(30 * time.Second)
	h3.pendingGroup("01000000")
	h3.tick() // no creation time: the wait counts from now
	if a := h3.get(third.ID).Attempts[0]; a.FailureKind != mvp.FailureNone {
		t.Fatalf("judged at the first look without a creation time: %+v", a)
	}
	h3.view.Groups[0].CreatedNs = made.UnixNano()
	h3.tick()
	if a := h3.get(third.ID).Attempts[0]; a.FailureKind != mvp.FailureInsufficientResources {
		t.Errorf("a live reading saying the group has been PENDING for 30 s did not judge it (after a first look "+
			"without a creation time): %+v", a)
	}

	// A creation time from before the attempt was recorded (a clock ahead on mvp's host) counts from the attempt.
	h2 := newHarness(t)
	h2.loop.Policy.GangWait = 10 * time.Second
	other := h2.task()
	h2.tick()
	h2.ray.set(other.ID+"--a01", mvp.RayRunning, "", 0)
	h2.pendingGroup("01000000")
	h2.view.Groups[0].CreatedNs = h2.clock.t.Add(-time.Hour).UnixNano()
	h2.tick()
	if a := h2.get(other.ID).Attempts[0]; a.FailureKind != mvp.FailureNone {
		t.Errorf("a group whose creation time is an hour before its attempt was judged at once: %+v", a)
	}
}

// TestASyncThatLearnsTheJobIDSaysSo: Ray 2.60 first reports a job RUNNING with job_id null, then a moment later with
// its id. On the cluster every task's history read "STATE_TRANSITION … ray_status RUNNING" and, a second later,
// "RAY_STATUS_SYNC {ray_status: RUNNING}": a step that looked repeated, since the event named nothing that changed.
// The sync's event names what it learned.
func TestASyncThatLearnsTheJobIDSaysSo(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	sub := task.ID + "--a01"
	h.ray.mu.Lock()
	j := h.ray.jobs[sub]
	j.Status, j.DriverNodeID = mvp.RayRunning, "w1" // RUNNING, job_id not given yet
	h.ray.mu.Unlock()
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateRunning {
		t.Fatalf("state %s, want RUNNING", got.State)
	}
	h.ray.mu.Lock()
	j.JobID = "35000000"
	h.ray.mu.Unlock()
	h.tick()
	evs, _, err := h.db.Events(context.Background(), task.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != mvp.EventRayStatusSync || !strings.Contains(string(last.Payload), `"ray_job_id":"35000000"`) {
		t.Errorf("last event %s %s: want a RAY_STATUS_SYNC naming the job id it learned", last.Type, last.Payload)
	}
}

// A gang whose node died is RESCHEDULING: not placed, so the queue waits behind it as behind a PENDING gang, and
// the gang wait must bound that too. It counts from mvp's first look at the group rescheduling, not from when Ray
// made the group (hours before, when it was first placed). Before, only PENDING groups were judged: a driver
// that outlived its gang's node held the queue for as long as it ran (found by a review, 2026-11-30).
func TestAReschedulingGangIsJudgedByTheGangWait(t *testing.T) {
	h := newHarness(t)
	h.loop.Policy.GangWait = 10 * time.Second
	gang := h.task()
	h.tick()
	h.ray.set(gang.ID+"--a01", mvp.RayRunning, "", 0) // job id 01000000
	h.view.Groups = []mvp.PlacementGroup{{ID: "pg-1", CreatorJobID: "01000000", State: "RESCHEDULING",
		SchedulingState: "NO_RESOURCES", Strategy: "STRICT_PACK", Bundles: []map[string]float64{{"GPU": 2}},
		CreatedNs: h.clock.t.Add(-time.Hour).UnixNano()}}
	h.tick() // RUNNING, its group seen rescheduling: the gang wait starts now
	if a := h.get(gang.ID).Attempts[0]; a.FailureKind != mvp.FailureNone {
		t.Fatalf("judged at its first look, from the group's creation an hour ago: %+v", a)
	}
	h.clock.t = h.clock.t.Add(11 * time.Second)
	h.tick()
	a := h.get(gang.ID).Attempts[0]
	if a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(fmt.Sprint(h.events(gang.ID)), mvp.EventGangStuck) {
		t.Fatalf("a gang rescheduling past the gang wait was not judged: %+v %v", a, h.events(gang.ID))
	}
	if !strings.Contains(a.Message, "lost a node and could not be placed again") {
		t.Errorf("the judgement does not say the gang lost a node: %q", a.Message)
	}
}

// A cancel landed while a submit's answer was lost; the grace passed with no job in Ray, so mvp closed the attempt
// ("canceled before it reached Ray"). Then the lost POST reached Ray after all (a dashboard that took minutes to
// answer): the job ran what the user had canceled, on GPUs mvp counted free, and mvp only logged that it did not
// follow it. mvp knows the attempt and that it closed it: the job is stopped, and the task's history says so. A
// job of a task the database does not know (a restored older copy) is still only named (found by an audit,
// 2026-11-30).
func TestAJobThatAppearsAfterTheGraceOfACanceledTaskIsStopped(t *testing.T) {
	h := newHarness(t) // SubmitGrace: 1 min
	lr := listingRay{fakeRay: h.ray, meta: map[string]map[string]string{}}
	h.loop.Jobs, h.loop.Instance = lr, "db1"
	task := h.task()
	h.closeCanceledLostSubmit(task)
	sid := task.ID + "--a01"
	h.ray.mu.Lock()
	h.ray.jobs[sid] = &mvp.JobInfo{SubmissionID: sid, Status: mvp.RayRunning, JobID: "02000000"}
	lr.meta[sid] = map[string]string{mvp.MetaInstance: "db1", "task_id": task.ID}
	unknown := "mvp2-ppo-20251223-000000-dead--a01"
	h.ray.jobs[unknown] = &mvp.JobInfo{SubmissionID: unknown, Status: mvp.RayRunning}
	lr.meta[unknown] = map[string]string{mvp.MetaInstance: "db1", "task_id": unknown[:len(unknown)-5]}
	h.ray.submitErr = nil
	h.ray.mu.Unlock()
	h.clock.t = h.clock.t.Add(11 * time.Minute) // the next listing of Ray's jobs
	h.tick()
	h.ray.mu.Lock()
	stopped := fmt.Sprint(h.ray.stopped)
	h.ray.mu.Unlock()
	if !strings.Contains(stopped, sid) {
		t.Fatalf("the late job of the canceled task was not stopped: %v", stopped)
	}
	if strings.Contains(stopped, unknown) {
		t.Errorf("a job of a task the database does not know was stopped: %v", stopped)
	}
	if !strings.Contains(fmt.Sprint(h.events(task.ID)), mvp.EventStopRequested) {
		t.Errorf("the task's history does not say its late job was stopped: %v", h.events(task.ID))
	}
}

// closeCanceledLostSubmit makes task's first attempt one that mvp closed: its submit's answer is lost (no job in
// Ray), the user cancels, and the submit grace passes. Ray's submits fail until the caller clears h.ray.submitErr.
func (h *harness) closeCanceledLostSubmit(task *mvp.Task) {
	h.t.Helper()
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable } // the answer is lost; no job yet
	h.tick()
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		h.t.Fatal(err)
	}
	h.clock.t = h.clock.t.Add(2 * time.Minute)
	h.tick() // past the grace: the attempt is closed
	if a := h.get(task.ID).Attempts[0]; !a.RayStatus.Terminal() {
		h.t.Fatalf("attempt not closed after the grace: %+v", a)
	}
}

// TestThePlacementOfTheGangIsRecorded: max_runtime_s counts from when Ray placed the gang when that is after mvp
// saw the driver running, but that time lived only in the scheduler's pass: the API's runtime_left_s (and a user
// or test reading the task) counted from running_at and said the run ended earlier than mvp would stop it (CI: the
// queue's estimate of a backfill was 2.1 s after the end computed from running_at). The attempt records it as
// placed_at, from which RunStart (runtime_left_s; TestFillTimeLeft) counts.
func TestThePlacementOfTheGangIsRecorded(t *testing.T) {
	h := newHarness(t)
	task := h.taskOf(4)
	h.tick()
	sid := task.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0) // job id 01000000; its driver waits for its gang
	h.tick()
	ran := *h.get(task.ID).Attempts[0].RunningAt
	h.clock.t = h.clock.t.Add(20 * time.Second)
	h.tick()
	if a := h.get(task.ID).Attempts[0]; a.PlacedAt != nil {
		t.Fatalf("placed_at %v before any group was placed", a.PlacedAt)
	}
	placed := h.clock.t.Add(-time.Second)
	h.view.Groups = []mvp.PlacementGroup{{ID: "pg-1", CreatorJobID: "01000000", State: "CREATED", Node: "w1",
		PlacedNs: placed.UnixNano(), Bundles: []map[string]float64{{"GPU": 4, "CPU": 12}}}}
	h.tick()
	h.clock.t = h.clock.t.Add(time.Second)
	h.tick()
	got := h.get(task.ID)
	a := got.Attempts[0]
	if a.PlacedAt == nil || !a.PlacedAt.Equal(placed) {
		t.Fatalf("placed_at %v, want %v (the gang's placement)", a.PlacedAt, placed)
	}
	if a.RunningAt == nil || !a.RunningAt.Equal(ran) {
		t.Errorf("running_at %v changed (want %v)", a.RunningAt, ran)
	}
	if s := a.RunStart(); s == nil || !s.Equal(placed) {
		t.Errorf("RunStart %v, want the placement %v", s, placed)
	}
	named := false
	for _, e := range h.eventsOf(task.ID, mvp.EventRayStatusSync) {
		named = named || strings.Contains(string(e.Payload), "placed_at")
	}
	if !named {
		t.Errorf("no %s event names the placement", mvp.EventRayStatusSync)
	}
	// Once recorded it stays, whatever the view says later (the groups are removed as the run ends).
	h.view.Groups = nil
	h.clock.t = h.clock.t.Add(time.Second)
	h.tick()
	if a := h.get(task.ID).Attempts[0]; a.PlacedAt == nil || !a.PlacedAt.Equal(placed) {
		t.Errorf("placed_at %v after the groups went, want %v", a.PlacedAt, placed)
	}
}

// TestThePlacementOfARunThatEndsAtOnceIsRecorded: the placement read in one pass is written by the next pass's
// sync; a run that ended by then went to Conclude without it, and its attempt kept no placed_at though mvp had
// judged it from its placement (found in review).
func TestThePlacementOfARunThatEndsAtOnceIsRecorded(t *testing.T) {
	h := newHarness(t)
	task := h.taskOf(4)
	h.tick()
	sid := task.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.tick()
	placed := h.clock.t.Add(-time.Second)
	h.view.Groups = []mvp.PlacementGroup{{ID: "pg-1", CreatorJobID: "01000000", State: "CREATED", Node: "w1",
		PlacedNs: placed.UnixNano(), Bundles: []map[string]float64{{"GPU": 4, "CPU": 12}}}}
	h.tick() // read here; written at the next sync
	h.ray.set(sid, mvp.RaySucceeded, "", 0)
	h.clock.t = h.clock.t.Add(time.Second)
	h.tick()
	got := h.get(task.ID)
	if a := got.Attempts[0]; got.State != mvp.StateSucceeded || a.PlacedAt == nil || !a.PlacedAt.Equal(placed) {
		t.Errorf("%s, placed_at %v; want SUCCEEDED with placed_at %v", got.State, a.PlacedAt, placed)
	}
}
