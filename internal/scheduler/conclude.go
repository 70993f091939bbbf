package scheduler

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// RetryPolicy is what Conclude needs to know of the configuration.
type RetryPolicy struct {
	// RetryInterval is the wait before the next attempt after one failed for lack of resources.
	RetryInterval time.Duration
	// MaxResourceRetries bounds the attempts requeued after INSUFFICIENT_RESOURCES; past it the task fails.
	MaxResourceRetries int
	// MaxInfraRetries bounds the attempts requeued because Ray lost their job (INFRA).
	MaxInfraRetries int
	// SubmitGrace is how long an attempt of a canceled task that Ray does not know is still followed after it was
	// made: a submit whose answer was lost may still create the job, which must then be stopped.
	SubmitGrace time.Duration
	// SharedRoot is dev.yaml's shared_root, where the runs' task folders are: a run that crashed because it filled
	// up or turned read-only there failed on mvp's storage, not on its own (sharedRootFault).
	SharedRoot string
}

// History is what the earlier attempts of a task used up (the attempt being concluded not counted).
type History struct {
	ResourceRetries int
	InfraRetries    int
}

// HistoryOf counts the failure kinds of t's attempts other than number except.
func HistoryOf(t *mvp.Task, except int) History {
	var h History
	for _, a := range t.Attempts {
		if a.No == except {
			continue
		}
		switch a.FailureKind {
		case mvp.FailureInsufficientResources:
			h.ResourceRetries++
		case mvp.FailureInfra, mvp.FailureHeartbeatLost: // one bound for both: max_infra_retries
			h.InfraRetries++
		}
	}
	return h
}

// Report is what one sync learned of a live attempt whose Ray job ended or cannot be found.
type Report struct {
	// Info is Ray's view of the ended job; nil when Ray answered that no job has this submission id.
	Info *mvp.JobInfo
	// Log is the driver log as fetched (empty when the fetch failed); LogKept says it is in the task folder.
	Log     string
	LogKept bool
	// Kind, when set, is the failure kind mvp gave this end before (read back, sealed, from the task folder):
	// it stands, as mvp's own judgement, rather than being classified again from Ray's message.
	Kind mvp.FailureKind
	// LastPost is when this attempt's submission was last sent to Ray as far as this process knows (its start,
	// for a POST an earlier process may have sent); zero when unknown. A canceled attempt Ray does not know yet
	// is followed for RetryPolicy.SubmitGrace after the later of this and the attempt's creation: a POST whose
	// answer was lost can still create the job.
	LastPost time.Time
	// SharedRootUnwritable: mvp could not write the task's folder on shared_root when it concluded the attempt
	// (keeping the driver log failed on the disk: full or read-only).
	SharedRootUnwritable bool
}

// Verdict says what to do with an attempt after a Report.
type Verdict int

// The verdicts.
const (
	// Follow: nothing to write yet; keep following the attempt.
	Follow Verdict = iota
	// Resubmit: the attempt was written but Ray never got it; submit it again with the same submission id.
	Resubmit
	// Close: write Outcome.Attempt (the task keeps its state, e.g. CANCELED).
	Close
	// Transition: write Outcome.Attempt and move the task to Outcome.To.
	Transition
)

// Outcome is the change Conclude decides: the attempt as it must be written, and the task's next state.
type Outcome struct {
	Verdict Verdict
	To      mvp.State
	Attempt mvp.Attempt
	// ErrorSummary is set for FAILED.
	ErrorSummary string
	// NextRunAt and PendingReason are set for a requeue (To PENDING_RESOURCES).
	NextRunAt     *time.Time
	PendingReason string
	EventType     string
	EventPayload  map[string]any
}

// Conclude decides what an ended (or vanished) attempt means for its task: succeed, requeue with a bound on
// retries, fail, or only close the attempt of a canceled task. It is pure: no I/O, no clock; the rules are in
// specs/design.md ("Retry policy") and specs/failure-kinds.md.
func Conclude(now time.Time, t *mvp.Task, a *mvp.Attempt, r Report, h History, p RetryPolicy) Outcome {
	up := *a
	if r.Info == nil {
		return vanished(now, t, up, r, h, p)
	}
	info := r.Info
	up.RayStatus, up.RayJobID, up.DriverNodeID = info.Status, info.JobID, info.DriverNodeID
	up.StartTime, up.EndTime = msTime(info.StartTime), msTime(info.EndTime)
	if info.DriverExitCode != nil {
		up.ExitCode = info.DriverExitCode
	}
	if up.EndTime == nil {
		up.EndTime = &now
	}
	if up.RunningAt == nil && info.Status.Terminal() && (info.DriverExitCode != nil || up.PlacedAt != nil) {
		// It ran (its driver exited, or its gang was seen placed) between two looks of mvp's, or while mvp was
		// down: recorded as never started, its task was still bound by max_queued_s after a run of hours. Ray
		// keeps no time of its RUNNING; its start_time is what RunningSince takes for an ended attempt.
		up.RunningAt = up.StartTime
		if up.RunningAt == nil {
			up.RunningAt = up.EndTime
		}
	}
	up.LogKept = r.LogKept
	up.Message = cut(info.Message)
	payload := map[string]any{"ray_status": info.Status}

	switch {
	case t.State == mvp.StateCanceled:
		up.Message = "canceled by user"
		if t.ErrorSummary != "" { // mvp canceled it (a schedule's newer run replaced it): say why
			up.Message = cut("canceled: " + t.ErrorSummary)
		}
		up.FailureKind = mvp.FailureNone
		if info.Status == mvp.RayStopped && a.FailureKind != mvp.FailureNone {
			// mvp was stopping it (time limit, stuck gang, lost heartbeat) when the task was canceled: a judgement is
			// written only on a task not canceled yet (Store.JudgeAttempt), so it came first, and both stand.
			up.FailureKind = a.FailureKind
			up.Message = cut(a.Message + "; then " + up.Message)
		}
		return Outcome{Verdict: Close, To: t.State, Attempt: up, EventType: mvp.EventRayStatusSync, EventPayload: payload}
	case info.Status == mvp.RaySucceeded:
		up.FailureKind = mvp.FailureNone
		return Outcome{Verdict: Transition, To: mvp.StateSucceeded, Attempt: up, EventPayload: payload}
	}

	kind, summary := Classify(info, r.Log)
	if r.Kind != mvp.FailureNone {
		kind, summary = r.Kind, cut(info.Message) // judged before (kept in the task folder)
	}
	if info.Status == mvp.RayStopped && a.FailureKind != mvp.FailureNone {
		kind, summary = a.FailureKind, a.Message // mvp stopped it (stuck gang, time limit): its own judgement stands
	}
	if kind == mvp.FailureRuntimeError && sharedRootFault(summary, p.SharedRoot, r.SharedRootUnwritable) {
		kind, summary = mvp.FailureInfra, "the run crashed on mvp's shared_root, full or read-only (mvp holds the "+
			"next attempt until it can be written): "+summary
	}
	return failed(now, up, kind, summary, h, p, payload)
}

// storageErrno matches a Python OSError of a full disk (ENOSPC 28), a read-only file system (EROFS 30) or a
// quota (EDQUOT 122), with the path it names, if any.
var storageErrno = regexp.MustCompile(`\[Errno (?:28|30|122)\] [^:'\n]*(?:: '([^'\n]*)')?`)

// sharedRootFault reports whether a crash's line is a full, read-only or over-quota disk under shared_root: the
// path it names is there, or it names none and mvp could not write shared_root itself when it concluded the
// attempt (unwritable).
func sharedRootFault(line, sharedRoot string, unwritable bool) bool {
	m := storageErrno.FindStringSubmatch(line)
	if m == nil || sharedRoot == "" {
		return false
	}
	if m[1] == "" {
		return unwritable
	}
	root := filepath.Clean(sharedRoot)
	path := filepath.Clean(m[1])
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// failed decides for an attempt that ended in failure of the given kind: requeue within the bounds of its kind,
// or fail the task.
func failed(now time.Time, up mvp.Attempt, kind mvp.FailureKind, summary string, h History, p RetryPolicy,
	payload map[string]any) Outcome {
	up.FailureKind = kind
	if kind == mvp.FailureInsufficientResources || kind == mvp.FailureMaxRuntimeExceeded || kind == mvp.FailureHeartbeatLost ||
		kind == mvp.FailureInfra {
		up.Message = summary
	}
	payload["failure_kind"] = kind
	if kind == mvp.FailureInsufficientResources {
		if h.ResourceRetries < p.MaxResourceRetries {
			return requeue(up, now.Add(p.RetryInterval), payload, fmt.Sprintf(
				"attempt %d failed for lack of resources (%s; retry %d of %d)", up.No, summary, h.ResourceRetries+1,
				p.MaxResourceRetries))
		}
		return fail(up, payload, fmt.Sprintf("attempt %d failed for lack of resources (%s) and the resource retries "+
			"(v2.scheduler.max_resource_retries = %d) are used up", up.No, summary, p.MaxResourceRetries))
	}
	if kind == mvp.FailureHeartbeatLost || kind == mvp.FailureInfra {
		return infraRetry(now, up, kind, summary, h, p, payload)
	}
	return fail(up, payload, fmt.Sprintf("attempt %d: %s: %s", up.No, kind, summary))
}

// infraRetry decides for an attempt the infrastructure did not carry: a node died under it (INFRA), or mvp
// stopped it because its progress file went quiet (HEARTBEAT_LOST). It is retried at once, and both count against
// one bound (max_infra_retries).
func infraRetry(now time.Time, up mvp.Attempt, kind mvp.FailureKind, summary string, h History, p RetryPolicy,
	payload map[string]any) Outcome {
	if h.InfraRetries < p.MaxInfraRetries {
		what := "lost its heartbeat (%s; HEARTBEAT_LOST counts as INFRA, retry %d of %d)"
		if kind == mvp.FailureInfra {
			what = "was lost with a node (%s; INFRA, retry %d of %d)"
		}
		return requeue(up, now, payload, fmt.Sprintf("attempt %d "+what, up.No, summary, h.InfraRetries+1,
			p.MaxInfraRetries))
	}
	return fail(up, payload, fmt.Sprintf("attempt %d: %s: %s; the INFRA retries (v2.scheduler.max_infra_retries = %d) "+
		"are used up", up.No, kind, summary, p.MaxInfraRetries))
}

// vanished decides for an attempt that Ray does not know.
func vanished(now time.Time, t *mvp.Task, up mvp.Attempt, r Report, h History, p RetryPolicy) Outcome {
	switch t.State {
	case mvp.StateSubmitting:
		// The previous submit never reached Ray (or mvp stopped before it did): submit again with the same
		// submission id; Ray refuses a duplicate, so this cannot make a second job.
		return Outcome{Verdict: Resubmit, To: t.State, Attempt: up}
	case mvp.StateCanceled:
		if up.RayStatus == mvp.RayUnknown && MayStillAppear(now, &up, r.LastPost, p) {
			// The submit's answer may have been lost: a job can still appear, and must then be stopped.
			return Outcome{Verdict: Follow, To: t.State, Attempt: up}
		}
		why := "canceled before the job reached Ray"
		if up.RayStatus != mvp.RayUnknown {
			why = "the Ray job vanished after the task was canceled (the Ray head was restarted?)"
		}
		up.RayStatus, up.Message, up.EndTime = mvp.RayStopped, why, &now
		return Outcome{Verdict: Close, To: t.State, Attempt: up, EventType: mvp.EventRayStatusSync,
			EventPayload: map[string]any{"ray_status": "NOT_FOUND"}}
	}
	if up.FailureKind != mvp.FailureNone {
		// mvp was stopping it (stuck gang, time limit, lost heartbeat) when Ray lost the job: its judgement stands,
		// as when Ray reports the stop; a run stopped for its time limit is not run again.
		up.RayStatus, up.EndTime = mvp.RayStopped, &now
		return failed(now, up, up.FailureKind, up.Message, h, p, map[string]any{"ray_status": "NOT_FOUND"})
	}
	// SUBMITTED or RUNNING, and Ray forgot the job: the head restarted and took it with it.
	up.RayStatus, up.FailureKind, up.EndTime = mvp.RayFailed, mvp.FailureInfra, &now
	up.Message = "the Ray job vanished (the Ray head was restarted?)"
	finished := finishedByProgress(t, up.No)
	if finished {
		up.Message += "; its progress file last said it was complete: the run may have finished before Ray lost it"
	}
	payload := map[string]any{"failure_kind": mvp.FailureInfra}
	if h.InfraRetries < p.MaxInfraRetries {
		why := fmt.Sprintf("attempt %d was lost by Ray (INFRA, retry %d of %d)", up.No, h.InfraRetries+1, p.MaxInfraRetries)
		if finished {
			why += fmt.Sprintf("; its progress file last said it was complete, so it may have finished (its results, "+
				"if any, are kept under results/a%02d)", up.No)
		}
		return requeue(up, now, payload, why)
	}
	return fail(up, payload, fmt.Sprintf("attempt %d was lost by Ray and the INFRA retries "+
		"(v2.scheduler.max_infra_retries = %d) are used up", up.No, p.MaxInfraRetries))
}

// finishedByProgress says whether attempt n's progress file, as last read, said the run was complete (100 %, or
// its last step reached). mvp cannot tell from it that the run succeeded, only that it may have.
func finishedByProgress(t *mvp.Task, n int) bool {
	p := t.Progress
	if p == nil || p.AttemptNo != n {
		return false
	}
	if p.PercentComplete != nil && *p.PercentComplete >= 100 {
		return true
	}
	return p.Step != nil && p.TotalSteps != nil && *p.TotalSteps > 0 && *p.Step >= *p.TotalSteps
}

// Unprepared decides what becomes of an attempt whose submission failed on mvp's side before it reached Ray
// (mvp.ErrSubmitInfra; why says what failed): Ray has no job, so the attempt ends INFRA and the task is tried again
// after p.RetryInterval as a new attempt, within p.MaxInfraRetries; past them it fails.
func Unprepared(now time.Time, a *mvp.Attempt, why string, h History, p RetryPolicy) Outcome {
	up := *a
	up.RayStatus, up.FailureKind, up.Message, up.EndTime = mvp.RayFailed, mvp.FailureInfra, cut(why), &now
	payload := map[string]any{"failure_kind": mvp.FailureInfra, "error": cut(why)}
	if h.InfraRetries < p.MaxInfraRetries {
		return requeue(up, now.Add(p.RetryInterval), payload, fmt.Sprintf(
			"attempt %d could not be submitted: mvp could not prepare it (INFRA, retry %d of %d)",
			up.No, h.InfraRetries+1, p.MaxInfraRetries))
	}
	return fail(up, payload, fmt.Sprintf("attempt %d could not be submitted (%s) and the INFRA retries "+
		"(v2.scheduler.max_infra_retries = %d) are used up", up.No, cut(why), p.MaxInfraRetries))
}

// MayStillAppear says whether a POST of attempt a whose answer was lost can still become a job in Ray: within
// p.SubmitGrace of the later of the attempt's creation and its last POST (lastPost, zero when unknown).
func MayStillAppear(now time.Time, a *mvp.Attempt, lastPost time.Time, p RetryPolicy) bool {
	return now.Sub(laterOf(a.CreatedAt, lastPost)) < p.SubmitGrace
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func requeue(up mvp.Attempt, next time.Time, payload map[string]any, why string) Outcome {
	payload["reason"], payload["next_run_at"] = why, next
	return Outcome{Verdict: Transition, To: mvp.StatePendingResources, Attempt: up, NextRunAt: &next,
		PendingReason: fmt.Sprintf("%s; next attempt at %s", why, next.UTC().Format(time.RFC3339)),
		EventType:     mvp.EventRetryScheduled, EventPayload: payload}
}

func fail(up mvp.Attempt, payload map[string]any, summary string) Outcome {
	return Outcome{Verdict: Transition, To: mvp.StateFailed, Attempt: up, ErrorSummary: summary, EventPayload: payload}
}
