package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestConclude(t *testing.T) {
	rp := RetryPolicy{RetryInterval: time.Minute, MaxResourceRetries: 2, MaxInfraRetries: 1, SubmitGrace: time.Minute}
	exit := func(n int) *int { return &n }
	insufficient := "ValueError: Total available GPUs 4.0 is less than total desired GPUs 8"
	type tc struct {
		name    string
		state   mvp.State
		att     mvp.Attempt
		r       Report
		h       History
		verdict Verdict
		to      mvp.State
		kind    mvp.FailureKind
		summary string // part of ErrorSummary, PendingReason or the attempt's message
		// why mvp canceled the task (its error_summary), when it did
		canceledFor string
	}
	base := mvp.Attempt{TaskID: "t", No: 1, RaySubmissionID: "t--a01", CreatedAt: t0.Add(-10 * time.Second)}
	judged := base
	judged.RayStatus, judged.FailureKind, judged.Message = mvp.RayRunning, mvp.FailureInsufficientResources, "the gang could not be placed"
	overstayed := base
	overstayed.RayStatus, overstayed.FailureKind, overstayed.Message = mvp.RayRunning, mvp.FailureMaxRuntimeExceeded, "ran past max_runtime_s"
	hung := base
	hung.RayStatus, hung.FailureKind, hung.Message = mvp.RayRunning, mvp.FailureHeartbeatLost, "no heartbeat for 10m0s"
	seen := base
	seen.RayStatus = mvp.RayRunning
	old := base
	old.CreatedAt = t0.Add(-2 * time.Minute)
	cases := []tc{
		{name: "succeeded", state: mvp.StateRunning, att: base, r: Report{Info: &mvp.JobInfo{Status: mvp.RaySucceeded}, LogKept: true},
			verdict: Transition, to: mvp.StateSucceeded},
		{name: "insufficient resources is requeued", state: mvp.StateRunning, att: base,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, Message: insufficient, DriverExitCode: exit(1)}},
			verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureInsufficientResources, summary: "retry 1 of 2"},
		{name: "insufficient resources past the bound fails", state: mvp.StateRunning, att: base, h: History{ResourceRetries: 2},
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, Message: insufficient, DriverExitCode: exit(1)}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureInsufficientResources, summary: "max_resource_retries = 2"},
		{name: "a stuck gang stopped by mvp keeps its judgement and is requeued", state: mvp.StateRunning, att: judged,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureInsufficientResources, summary: "could not be placed"},
		{name: "a run stopped for its time limit fails, not retried", state: mvp.StateRunning, att: overstayed,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureMaxRuntimeExceeded, summary: "max_runtime_s"},
		{name: "a run stopped for a lost heartbeat is requeued at once, like INFRA", state: mvp.StateRunning, att: hung,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureHeartbeatLost, summary: "retry 1 of 1"},
		{name: "a lost heartbeat past the INFRA bound fails", state: mvp.StateRunning, att: hung, h: History{InfraRetries: 1},
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureHeartbeatLost, summary: "max_infra_retries = 1"},
		{name: "the user's own failure fails", state: mvp.StateRunning, att: base,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: exit(2), Message: "usage: x"}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureUserError},
		{name: "stopped outside mvp fails as UNKNOWN", state: mvp.StateRunning, att: base,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureUnknown, summary: "outside mvp"},
		{name: "a canceled task's ended job only closes the attempt", state: mvp.StateCanceled, att: seen,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict: Close, to: mvp.StateCanceled, summary: "canceled by user"},
		{name: "a task mvp canceled says why on its attempt, not that a user did", state: mvp.StateCanceled, att: seen,
			canceledFor: "replaced by t2, the next run of schedule nightly (overlap: replace)",
			r:           Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}},
			verdict:     Close, to: mvp.StateCanceled, summary: "canceled: replaced by t2, the next run of schedule nightly"},
		{name: "a node lost under the run: INFRA requeue at once", state: mvp.StateRunning, att: seen,
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: nodeDied}},
			verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureInfra, summary: "retry 1 of 1"},
		{name: "a node lost past the INFRA bound fails", state: mvp.StateRunning, att: seen, h: History{InfraRetries: 1},
			r:       Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: nodeDied}},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureInfra, summary: "max_infra_retries = 1"},
		{name: "lost by Ray: INFRA requeue", state: mvp.StateRunning, att: seen,
			verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureInfra, summary: "retry 1 of 1"},
		{name: "lost by Ray past the bound fails", state: mvp.StateSubmitted, att: seen, h: History{InfraRetries: 1},
			verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureInfra, summary: "max_infra_retries = 1"},
		{name: "SUBMITTING and absent: submit again with the same id", state: mvp.StateSubmitting, att: base,
			verdict: Resubmit, to: mvp.StateSubmitting},
		// Judged before the cancel (its stop waits out Ray's grace while the user cancels): the judgement and the
		// cancel both stand, and the attempt's message says both (it said "canceled by user" beside
		// MAX_RUNTIME_EXCEEDED, the judgement's reason lost).
		{name: "a run being stopped for its time limit when its task is canceled keeps the judgement", state: mvp.StateCanceled,
			att: overstayed, r: Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}}, verdict: Close, to: mvp.StateCanceled,
			kind: mvp.FailureMaxRuntimeExceeded, summary: "ran past max_runtime_s; then canceled by user"},
		{name: "… and says who canceled it when mvp did", state: mvp.StateCanceled, att: overstayed,
			canceledFor: "replaced by t2, the next run of schedule nightly (overlap: replace)",
			r:           Report{Info: &mvp.JobInfo{Status: mvp.RayStopped}}, verdict: Close, to: mvp.StateCanceled,
			kind: mvp.FailureMaxRuntimeExceeded, summary: "ran past max_runtime_s; then canceled: replaced by t2"},
		{name: "a judged run that ended on its own before the stop: canceled, no judgement", state: mvp.StateCanceled,
			att: overstayed, r: Report{Info: &mvp.JobInfo{Status: mvp.RaySucceeded}}, verdict: Close, to: mvp.StateCanceled,
			summary: "canceled by user"},
		{name: "canceled, never seen by Ray, within the grace: keep following", state: mvp.StateCanceled, att: base,
			verdict: Follow, to: mvp.StateCanceled},
		{name: "canceled, never seen by Ray, past the grace: closed", state: mvp.StateCanceled, att: old,
			verdict: Close, to: mvp.StateCanceled, summary: "canceled before the job reached Ray"},
		{name: "canceled, made long ago but POSTed again within the grace: keep following", state: mvp.StateCanceled,
			att: old, r: Report{LastPost: t0.Add(-30 * time.Second)}, verdict: Follow, to: mvp.StateCanceled},
		{name: "canceled, last POSTed past the grace: closed", state: mvp.StateCanceled, att: old,
			r: Report{LastPost: t0.Add(-90 * time.Second)}, verdict: Close, to: mvp.StateCanceled,
			summary: "canceled before the job reached Ray"},
		{name: "canceled, seen by Ray, now gone: closed at once", state: mvp.StateCanceled, att: seen,
			verdict: Close, to: mvp.StateCanceled, summary: "vanished after the task was canceled"},
		// mvp was stopping these when Ray lost the job (a head restart): its judgement stands, as when Ray reports
		// the stop. A run stopped for its time limit must not be run again.
		{name: "a run being stopped for its time limit, lost by Ray: fails, not retried", state: mvp.StateRunning,
			att: overstayed, verdict: Transition, to: mvp.StateFailed, kind: mvp.FailureMaxRuntimeExceeded,
			summary: "max_runtime_s"},
		{name: "a hung run being stopped, lost by Ray: HEARTBEAT_LOST, retried like INFRA", state: mvp.StateRunning,
			att: hung, verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureHeartbeatLost,
			summary: "retry 1 of 1"},
		{name: "a stuck gang being stopped, lost by Ray: requeued for resources", state: mvp.StateRunning,
			att: judged, verdict: Transition, to: mvp.StatePendingResources, kind: mvp.FailureInsufficientResources,
			summary: "could not be placed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &mvp.Task{ID: "t", State: c.state, LatestAttemptNo: 1, ErrorSummary: c.canceledFor}
			att := c.att
			o := Conclude(t0, task, &att, c.r, c.h, rp)
			if o.Verdict != c.verdict || o.To != c.to || o.Attempt.FailureKind != c.kind {
				t.Fatalf("got verdict %d → %s (%s), want %d → %s (%s)", o.Verdict, o.To, o.Attempt.FailureKind, c.verdict, c.to, c.kind)
			}
			text := o.ErrorSummary + "|" + o.PendingReason + "|" + o.Attempt.Message
			if !strings.Contains(text, c.summary) {
				t.Errorf("%q does not say %q", text, c.summary)
			}
			if o.To == mvp.StatePendingResources && (o.NextRunAt == nil || o.EventType != mvp.EventRetryScheduled) {
				t.Errorf("requeue without next_run_at or event: %+v", o)
			}
			if o.Verdict >= Close && o.Attempt.EndTime == nil {
				t.Errorf("closed attempt has no end time")
			}
			if att != c.att {
				t.Errorf("Conclude changed its input attempt")
			}
		})
	}
	// A requeue after lack of resources waits the retry interval; INFRA retries at once.
	o := Conclude(t0, &mvp.Task{State: mvp.StateRunning}, &base, Report{Info: &mvp.JobInfo{Status: mvp.RayFailed,
		Message: insufficient}}, History{}, rp)
	if !o.NextRunAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("next run at %v", o.NextRunAt)
	}
}

// TestHistoryCountsHeartbeatsAsInfra: HEARTBEAT_LOST and INFRA share max_infra_retries.
func TestHistoryCountsHeartbeatsAsInfra(t *testing.T) {
	task := &mvp.Task{Attempts: []*mvp.Attempt{{No: 1, FailureKind: mvp.FailureInfra},
		{No: 2, FailureKind: mvp.FailureHeartbeatLost}, {No: 3, FailureKind: mvp.FailureInsufficientResources},
		{No: 4, FailureKind: mvp.FailureHeartbeatLost}}}
	if h := HistoryOf(task, 4); h.InfraRetries != 2 || h.ResourceRetries != 1 {
		t.Errorf("history %+v, want 2 infra (one of them a lost heartbeat) and 1 resource retry", h)
	}
}

func TestUnprepared(t *testing.T) {
	rp := RetryPolicy{RetryInterval: time.Minute, MaxInfraRetries: 2}
	a := &mvp.Attempt{TaskID: "t", No: 1, RaySubmissionID: "t--a01", CreatedAt: t0}
	for _, tc := range []struct {
		h       History
		to      mvp.State
		summary string
	}{
		{History{}, mvp.StatePendingResources, "retry 1 of 2"},
		{History{InfraRetries: 1}, mvp.StatePendingResources, "retry 2 of 2"},
		{History{InfraRetries: 2}, mvp.StateFailed, "max_infra_retries = 2"},
	} {
		o := Unprepared(t0, a, "read the package kept at /p: is a directory", tc.h, rp)
		if o.Verdict != Transition || o.To != tc.to || o.Attempt.FailureKind != mvp.FailureInfra || o.Attempt.EndTime == nil ||
			o.Attempt.Message != "read the package kept at /p: is a directory" {
			t.Errorf("%+v: %+v", tc.h, o)
		}
		if got := o.PendingReason + o.ErrorSummary; !strings.Contains(got, tc.summary) {
			t.Errorf("%+v: %q lacks %q", tc.h, got, tc.summary)
		}
		if tc.to == mvp.StatePendingResources && !o.NextRunAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("%+v: next run at %v; want a retry interval on", tc.h, o.NextRunAt)
		}
	}
}

// TestConcludeSaysALostRunMayHaveFinished: Ray can lose a job that had finished (its head restarted while mvp could
// not see it). mvp cannot know it succeeded and runs it again (INFRA), but when the attempt's progress file last
// said it was complete, the requeue says the run may have finished, so that nobody reads the retry as the first run.
func TestConcludeSaysALostRunMayHaveFinished(t *testing.T) {
	rp := RetryPolicy{RetryInterval: time.Minute, MaxInfraRetries: 2, SubmitGrace: time.Minute}
	a := mvp.Attempt{TaskID: "t", No: 1, RaySubmissionID: "t--a01", CreatedAt: t0.Add(-time.Hour), RayStatus: mvp.RayRunning}
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name     string
		progress *mvp.Progress
		want     bool
	}{
		{"complete", &mvp.Progress{AttemptNo: 1, Step: n(120), TotalSteps: n(120)}, true},
		{"100 percent", &mvp.Progress{AttemptNo: 1, PercentComplete: func() *float64 { v := 100.0; return &v }()}, true},
		{"halfway", &mvp.Progress{AttemptNo: 1, Step: n(60), TotalSteps: n(120)}, false},
		{"an earlier attempt's", &mvp.Progress{AttemptNo: 0, Step: n(120), TotalSteps: n(120)}, false},
		{"none", nil, false},
	} {
		task := &mvp.Task{ID: "t", State: mvp.StateRunning, LatestAttemptNo: 1, Progress: c.progress}
		o := Conclude(t0, task, &a, Report{}, History{}, rp)
		said := strings.Contains(o.PendingReason, "may have finished")
		if o.To != mvp.StatePendingResources || o.Attempt.FailureKind != mvp.FailureInfra || said != c.want {
			t.Errorf("%s: %s %s %q; want INFRA requeue, saying it may have finished: %v", c.name, o.To,
				o.Attempt.FailureKind, o.PendingReason, c.want)
		}
	}
}

// TestACrashOnAFullSharedRootIsInfra: a run that crashed because mvp's shared_root filled up or turned read-only
// under it (its progress file, its checkpoints, its log there) ended FAILED as the user's RUNTIME_ERROR and was not
// retried, although mvp holds new submissions until shared_root can be written again. It is INFRA now, requeued
// (and so held until there is room), when the crash names a path under shared_root or mvp itself could not write
// the task's folder there when it concluded the attempt; a disk error elsewhere stays the run's own.
func TestACrashOnAFullSharedRootIsInfra(t *testing.T) {
	rp := RetryPolicy{RetryInterval: time.Minute, MaxInfraRetries: 1, SharedRoot: "/shared/"}
	exit1 := 1
	crash := func(line string) string {
		return "Traceback (most recent call last):\n  File \"/x/_standin.py\", line 87, in report\n    os.replace(tmp, path)\n" + line + "\n"
	}
	base := mvp.Attempt{TaskID: "t", No: 1, RaySubmissionID: "t--a01", CreatedAt: t0.Add(-time.Hour), RayStatus: mvp.RayRunning}
	for _, c := range []struct {
		name   string
		line   string
		down   bool
		h      History
		kind   mvp.FailureKind
		to     mvp.State
		saying string
	}{
		{"full, the path under shared_root", "OSError: [Errno 28] No space left on device: '/shared/jobs/t/attempts/a01/progress.json.tmp'",
			false, History{}, mvp.FailureInfra, mvp.StatePendingResources, "shared_root"},
		{"read-only, the path under shared_root", "OSError: [Errno 30] Read-only file system: '/shared/jobs/t/checkpoints/global_step_4'",
			false, History{}, mvp.FailureInfra, mvp.StatePendingResources, "shared_root"},
		{"full, no path, while mvp cannot write shared_root", "OSError: [Errno 28] No space left on device",
			true, History{}, mvp.FailureInfra, mvp.StatePendingResources, "shared_root"},
		{"over quota under shared_root", "OSError: [Errno 122] Disk quota exceeded: '/shared/jobs/t/x'",
			false, History{}, mvp.FailureInfra, mvp.StatePendingResources, "shared_root"},
		{"past max_infra_retries", "OSError: [Errno 28] No space left on device: '/shared/jobs/t/a'",
			false, History{InfraRetries: 1}, mvp.FailureInfra, mvp.StateFailed, "max_infra_retries"},
		{"full, no path, shared_root writable", "OSError: [Errno 28] No space left on device",
			false, History{}, mvp.FailureRuntimeError, mvp.StateFailed, "Errno 28"},
		{"full elsewhere", "OSError: [Errno 28] No space left on device: '/tmp/ray/x'",
			true, History{}, mvp.FailureRuntimeError, mvp.StateFailed, "Errno 28"},
		{"a folder that only starts like shared_root", "OSError: [Errno 28] No space left on device: '/shared2/x'",
			false, History{}, mvp.FailureRuntimeError, mvp.StateFailed, "Errno 28"},
		{"another error under shared_root", "OSError: [Errno 5] Input/output error: '/shared/jobs/t/a'",
			false, History{}, mvp.FailureRuntimeError, mvp.StateFailed, "Errno 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Report{Info: &mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: &exit1, Message: "Job entrypoint command failed with exit code 1"},
				Log: crash(c.line), SharedRootUnwritable: c.down}
			o := Conclude(t0, &mvp.Task{ID: "t", State: mvp.StateRunning}, &base, r, c.h, rp)
			if o.Attempt.FailureKind != c.kind || o.To != c.to {
				t.Fatalf("%s → %s; want %s → %s (%+v)", o.Attempt.FailureKind, o.To, c.kind, c.to, o)
			}
			if text := o.ErrorSummary + "|" + o.PendingReason + "|" + o.Attempt.Message; !strings.Contains(text, c.saying) {
				t.Errorf("%q does not say %q", text, c.saying)
			}
		})
	}
}

// A job whose driver ran and ended between two looks of mvp's (or while mvp was down) was recorded as never
// started: only mvp's own sight of RUNNING set running_at, so its task, requeued (INFRA), was still bound by
// max_queued_s and expired as one that "waited … without starting" after a run of hours. Ray's report of the
// driver's exit code, or the gang seen placed, says the run began; running_at is then Ray's start_time, as
// RunningSince takes it for an ended attempt. Found by a review.
func TestConcludeRecordsARunItDidNotSeeRunning(t *testing.T) {
	rp := RetryPolicy{RetryInterval: time.Minute, MaxInfraRetries: 1, SubmitGrace: time.Minute}
	exit := func(n int) *int { return &n }
	start, end := t0.Add(-5*time.Hour), t0.Add(-time.Hour)
	placed := t0.Add(-4 * time.Hour)
	base := mvp.Attempt{TaskID: "t", No: 1, RaySubmissionID: "t--a01", RayStatus: mvp.RayPending, CreatedAt: start}
	withPlaced := base
	withPlaced.PlacedAt = &placed
	seen := base
	seenAt := t0.Add(-3 * time.Hour)
	seen.RayStatus, seen.RunningAt = mvp.RayRunning, &seenAt
	for _, c := range []struct {
		name string
		att  mvp.Attempt
		info mvp.JobInfo
		want *time.Time
	}{
		{"the driver exited: it ran", base, mvp.JobInfo{Status: mvp.RayFailed, Message: nodeDied, DriverExitCode: exit(1),
			StartTime: start.UnixMilli(), EndTime: end.UnixMilli()}, &start},
		{"the gang was seen placed: it ran", withPlaced, mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED",
			Message: nodeDied, StartTime: start.UnixMilli(), EndTime: end.UnixMilli()}, &start},
		{"no exit code, never placed: not known to have run", base, mvp.JobInfo{Status: mvp.RayFailed,
			ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: nodeDied, StartTime: start.UnixMilli(), EndTime: end.UnixMilli()}, nil},
		{"seen running: mvp's own time stands", seen, mvp.JobInfo{Status: mvp.RayFailed, Message: nodeDied, DriverExitCode: exit(1),
			StartTime: start.UnixMilli(), EndTime: end.UnixMilli()}, &seenAt},
	} {
		info := c.info
		o := Conclude(t0, &mvp.Task{ID: "t", State: mvp.StateSubmitted}, &c.att, Report{Info: &info}, History{}, rp)
		got := o.Attempt.RunningAt
		if (got == nil) != (c.want == nil) || got != nil && !got.Equal(*c.want) {
			t.Errorf("%s: running_at %v, want %v", c.name, got, c.want)
		}
	}
}
