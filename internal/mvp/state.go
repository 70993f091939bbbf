// Package mvp holds the domain of mvp: tasks, attempts, events, their states and the interfaces (Store, RayClient,
// Clock) that the outside packages implement. It imports nothing from the project and does no I/O.
package mvp

import (
	"fmt"
	"strconv"
	"strings"
)

// State is the service-side state of a task. The values are a contract: users' scripts match on them.
type State string

// The task states. specs/design.md ("States") gives the transition table in prose.
const (
	// StateQueued: accepted and stored, not yet looked at by the scheduler.
	StateQueued State = "QUEUED"
	// StatePendingResources: waiting in mvp (no Ray job exists) until its gang fits; next_run_at says when it is
	// looked at again and pending_reason says why it waits.
	StatePendingResources State = "PENDING_RESOURCES"
	// StateSubmitting: an attempt row with its submission id is written and the Ray call is being made.
	StateSubmitting State = "SUBMITTING"
	// StateSubmitted: Ray accepted the job; it has not been seen RUNNING yet.
	StateSubmitted State = "SUBMITTED"
	// StateRunning: Ray reports the job RUNNING.
	StateRunning State = "RUNNING"
	// StateSucceeded: terminal; the last attempt's Ray job SUCCEEDED.
	StateSucceeded State = "SUCCEEDED"
	// StateFailed: terminal; the last attempt failed for a reason that is not retried.
	StateFailed State = "FAILED"
	// StateCanceled: terminal; a user canceled the task.
	StateCanceled State = "CANCELED"
)

// States lists every state in lifecycle order.
var States = []State{
	StateQueued, StatePendingResources, StateSubmitting, StateSubmitted, StateRunning,
	StateSucceeded, StateFailed, StateCanceled,
}

// transitions is the whole transition table: from → allowed targets. A state listed as its own target may be
// rewritten in place (for example a PENDING_RESOURCES task whose reason or next_run_at changes).
var transitions = map[State][]State{
	// QUEUED/PENDING_RESOURCES → FAILED: the task can never be submitted (its submission cannot be built, or it
	// waited past max_queued_s).
	StateQueued:           {StatePendingResources, StateSubmitting, StateFailed, StateCanceled},
	StatePendingResources: {StatePendingResources, StateSubmitting, StateFailed, StateCanceled},
	// SUBMITTING → PENDING_RESOURCES: the attempt could not be made for a reason worth retrying (infra).
	// SUBMITTING → FAILED: Ray refused the submission itself (bad payload).
	StateSubmitting: {StateSubmitting, StateSubmitted, StateRunning, StateSucceeded, StateFailed, StatePendingResources, StateCanceled},
	StateSubmitted:  {StateSubmitted, StateRunning, StateSucceeded, StateFailed, StatePendingResources, StateCanceled},
	StateRunning:    {StateRunning, StateSucceeded, StateFailed, StatePendingResources, StateCanceled},
	StateSucceeded:  nil,
	StateFailed:     nil,
	StateCanceled:   nil,
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled
}

// Waiting reports whether a task in s has no Ray job (it waits in mvp's queue).
func (s State) Waiting() bool { return s == StateQueued || s == StatePendingResources }

// Active reports whether a task in s has, or is about to have, a Ray job.
func (s State) Active() bool {
	return s == StateSubmitting || s == StateSubmitted || s == StateRunning
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to State) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// CheckTransition returns an *Error with code CodeConflict when from → to is not allowed.
func CheckTransition(from, to State) error {
	if !from.Valid() || !to.Valid() {
		return Errorf(CodeInvalid, "", "unknown state in transition %q → %q", from, to)
	}
	if !CanTransition(from, to) {
		return Errorf(CodeConflict, "", "task is %s; it cannot become %s", from, to)
	}
	return nil
}

// FailureKind classes why an attempt failed. The rules that assign each are in specs/failure-kinds.md.
type FailureKind string

// The failure kinds.
const (
	FailureNone                  FailureKind = ""
	FailureInsufficientResources FailureKind = "INSUFFICIENT_RESOURCES"
	FailureUserError             FailureKind = "USER_ERROR"
	FailureRuntimeError          FailureKind = "RUNTIME_ERROR"
	FailureInfra                 FailureKind = "INFRA"
	FailureUnknown               FailureKind = "UNKNOWN"
	// FailureMaxRuntimeExceeded: the attempt ran past the task's max_runtime_s and mvp stopped it; not retried.
	FailureMaxRuntimeExceeded FailureKind = "MAX_RUNTIME_EXCEEDED"
	// FailureMaxQueuedExceeded: the task waited in mvp's queue past its max_queued_s; no attempt was made.
	FailureMaxQueuedExceeded FailureKind = "MAX_QUEUED_EXCEEDED"
	// FailureHeartbeatLost: the running attempt's progress file did not change for the task's
	// heartbeat_timeout_s and mvp stopped it; retried like INFRA, within the same bound (max_infra_retries).
	FailureHeartbeatLost FailureKind = "HEARTBEAT_LOST"
)

// FailureKinds lists every failure kind, "" (none) first: the one list the API's documents are checked against.
var FailureKinds = []FailureKind{
	FailureNone, FailureInsufficientResources, FailureUserError, FailureRuntimeError, FailureInfra, FailureUnknown,
	FailureMaxRuntimeExceeded, FailureMaxQueuedExceeded, FailureHeartbeatLost,
}

// RayStatus is a Ray job status as the Job REST API reports it, plus the empty string for "not known yet".
type RayStatus string

// Ray job statuses.
const (
	RayUnknown   RayStatus = ""
	RayPending   RayStatus = "PENDING"
	RayRunning   RayStatus = "RUNNING"
	RayStopped   RayStatus = "STOPPED"
	RaySucceeded RayStatus = "SUCCEEDED"
	RayFailed    RayStatus = "FAILED"
)

// Terminal reports whether Ray will not change this status again.
func (s RayStatus) Terminal() bool {
	return s == RayStopped || s == RaySucceeded || s == RayFailed
}

// SubmissionID is the deterministic Ray submission id of attempt n of a task: "<task_id>--a01".
func SubmissionID(taskID string, n int) string {
	return fmt.Sprintf("%s--a%02d", taskID, n)
}

// ParseSubmissionID reads a Ray submission id as SubmissionID makes it: the task id and the attempt number; ok is
// false for any other id.
func ParseSubmissionID(id string) (taskID string, n int, ok bool) {
	i := strings.LastIndex(id, "--a")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+3:])
	if err != nil || n < 1 || SubmissionID(id[:i], n) != id {
		return "", 0, false
	}
	return id[:i], n, true
}
