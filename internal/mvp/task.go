package mvp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Task is what a user submitted, with its service-side state.
type Task struct {
	ID              string     `json:"task_id"`
	Workload        Workload   `json:"workload"`
	Name            string     `json:"name"`
	State           State      `json:"state"`
	NNodes          int        `json:"nnodes"`
	GPUsPerNode     int        `json:"n_gpus_per_node"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	NextRunAt       *time.Time `json:"next_run_at"`
	PendingReason   string     `json:"pending_reason"`
	LatestAttemptNo int        `json:"latest_attempt_no"`
	// Owner is the user whose token submitted the task (Operator for the internal token): only they and the
	// operator may see, cancel or read it.
	Owner string `json:"owner"`
	// Priority 0..100 (jobspec priority; DefaultPriority when it names none, capped by the owner's max_priority)
	// orders the queue within the scheduling policy, higher first.
	Priority int `json:"priority"`
	// MaxRuntimeS is the declared upper bound of one attempt's run, in seconds (the configured default when the
	// jobspec names none). The scheduler plans with it (a running task's declared end is its start plus this) and
	// the loop stops an attempt that overstays it. 0 means unbounded (only in tests and old rows).
	MaxRuntimeS int `json:"max_runtime_s"`
	// MaxQueuedS bounds how long the task may wait in mvp's queue before it ends MAX_QUEUED_EXCEEDED; 0 = no bound.
	MaxQueuedS int `json:"max_queued_s"`
	// Driver is what the task's Ray driver itself takes (a ray_job's entrypoint_num_cpus/gpus/memory/resources);
	// nil means the configured default for every task (the scheduler's Policy.Driver).
	Driver map[string]float64 `json:"driver,omitempty"`
	// AfterOK and AfterAny are the tasks this one waits for (jobspec after_ok / after_any): every AfterOK task must
	// end SUCCEEDED (one that ends FAILED or CANCELED cancels this task), every AfterAny task must end.
	AfterOK  []string `json:"after_ok,omitempty"`
	AfterAny []string `json:"after_any,omitempty"`
	// Ran is true for a waiting task that has run before: one of its attempts ran (mvp saw it RUNNING) and was not
	// a lost race for its GPUs (verl's fail-fast check). max_queued_s bounds the wait of a task that has not run,
	// however many attempts it had (QueuedUntil). Read by the store, not stored; false for a task that does not
	// wait.
	Ran bool `json:"-"`
	// ErrorSummary says in a line why the task failed, or why mvp canceled it (a failed after_ok dependency, a
	// schedule's newer run replacing it).
	ErrorSummary string `json:"error_summary"`
	// HeartbeatTimeoutS: a running attempt whose progress file has not changed for this long is stopped
	// (HEARTBEAT_LOST); 0 = no heartbeat is required.
	HeartbeatTimeoutS int `json:"heartbeat_timeout_s"`
	// ResumeFrom is the task whose checkpoint folder this task's run continues from ("" for none): one that ended,
	// or one this task starts after (AfterOK, AfterAny).
	ResumeFrom string `json:"resume_from,omitempty"`
	// OriginID is the task this one was resubmitted from; Resubmits are the tasks resubmitted from this one,
	// oldest first (GetTask fills it).
	OriginID  string   `json:"resubmitted_from,omitempty"`
	Resubmits []string `json:"resubmits,omitempty"`
	// ResubmitOwners are the owners of Resubmits, one each (a resubmit is its origin's owner's, but one made by
	// the operator before that rule is the operator's): the API shows a user only their own.
	ResubmitOwners []string `json:"-"`
	// Progress is what the latest attempt last wrote in its progress file; nil until it wrote one.
	Progress *Progress `json:"progress"`
	// SubmissionID is the Ray submission id of a task made through the Ray-Jobs door (the user's, or the task id
	// when none was given); the door finds the task by it. Empty for tasks made from a jobspec.
	SubmissionID string `json:"submission_id,omitempty"`
	// DoorDeleted is true once the task was deleted through the Ray-Jobs door: it is gone from the door's answers
	// and its submission id may be used again, but it stays an mvp task with its history.
	DoorDeleted bool `json:"door_deleted,omitempty"`
	// RuntimeLeftS and QueuedLeftS are shown, not stored: the seconds left before the running attempt reaches
	// max_runtime_s, and before a task never started reaches max_queued_s (see FillTimeLeft).
	RuntimeLeftS *int `json:"runtime_left_s,omitempty"`
	QueuedLeftS  *int `json:"queued_left_s,omitempty"`
	// RayOutage says, of a task with a Ray job (SUBMITTING, SUBMITTED, RUNNING), that Ray cannot be read now, since
	// when and why: its state is what Ray last said (a SUBMITTING attempt's waits to be sent or looked up). Filled by
	// the API from the scheduler's health (SayWhyWaiting); not stored. Kept out of the first bytes Decide reads.
	RayOutage string     `json:"ray_outage,omitempty"`
	Attempts  []*Attempt `json:"attempts"`
	// JobSpecYAML is the body exactly as submitted. It and SpecJSON are empty on the tasks of Store.Runnable.
	JobSpecYAML string `json:"-"`
	// SpecJSON is the effective spec: defaults applied, as JSON.
	SpecJSON json.RawMessage `json:"-"`
	// MaxWaiting, when above 0, is how many tasks its owner may have waiting (QUEUED or PENDING_RESOURCES) when
	// it is created (their max_queued): the store counts them in the transaction that inserts it, so that
	// submissions arriving together cannot all pass one count, and refuses it with CodeTooMany at the limit. Not
	// stored.
	MaxWaiting int `json:"-"`
	// PriorityDefaulted is true for a task just prepared from a jobspec that names no priority: Priority (and the
	// effective spec's) is then the default, which the API lowers to the owner's max_priority instead of refusing
	// it. Not stored.
	PriorityDefaulted bool `json:"-"`
}

// Gang is the task's gang as people read it: "2 × 8 GPU", or "none (the Ray driver alone)" for a Ray door job
// that declared none (its driver alone takes resources), with the driver's GPUs when it asks for some.
func (t *Task) Gang() string {
	if t.NNodes == 0 {
		if g := t.Driver["GPU"]; g > 0 {
			return fmt.Sprintf("none (the Ray driver alone, with %g GPU)", g)
		}
		return "none (the Ray driver alone)"
	}
	return fmt.Sprintf("%d × %d GPU", t.NNodes, t.GPUsPerNode)
}

// FillTimeLeft sets RuntimeLeftS for a running task whose attempt has started and QueuedLeftS for a waiting task
// that has not run (Ran), from its limits and now; both are nil otherwise. Neither is below 0.
func (t *Task) FillTimeLeft(now time.Time) {
	t.RuntimeLeftS, t.QueuedLeftS = nil, nil
	left := func(limit int, since time.Time) *int {
		n := max(limit-int(now.Sub(since)/time.Second), 0)
		return &n
	}
	if _, bound := t.QueuedUntil(); bound && t.State.Waiting() {
		t.QueuedLeftS = left(t.MaxQueuedS, t.CreatedAt)
	}
	if t.MaxRuntimeS > 0 && t.State == StateRunning {
		if a := t.Latest(); a != nil && a.RunStart() != nil {
			t.RuntimeLeftS = left(t.MaxRuntimeS, *a.RunStart())
		}
	}
}

// QueuedUntil is when max_queued_s ends the task if it is still waiting then; bound is false when no
// max_queued_s applies (none is set, or the task has run). Ran is read only for a task with attempts: it lies
// outside the fields the scheduler reads for every task (TestTaskSchedulingFieldsComeFirst).
func (t *Task) QueuedUntil() (until time.Time, bound bool) {
	d, bound := t.QueuedBound()
	if !bound {
		return time.Time{}, false
	}
	return t.CreatedAt.Add(d), true
}

// QueuedBound is how long after its creation max_queued_s ends the task, and whether it applies (QueuedUntil's
// rule; the scheduler adds it to the creation time in nanoseconds).
func (t *Task) QueuedBound() (time.Duration, bool) {
	if t.MaxQueuedS <= 0 || t.LatestAttemptNo > 0 && t.Ran {
		return 0, false
	}
	return time.Duration(t.MaxQueuedS) * time.Second, true
}

// ExpirySummary is the error_summary of a task that waited past its max_queued_s (MAX_QUEUED_EXCEEDED): waited is
// how long, why what its attempts were (or ""). It begins with the kind, as no attempt's end does ("attempt N:"):
// Expired tells it by that.
func ExpirySummary(waited time.Duration, maxQueuedS int, why string) string {
	return fmt.Sprintf("%s: waited %s in the queue, longer than its max_queued_s (%d s), without starting%s",
		FailureMaxQueuedExceeded, waited.Round(time.Second), maxQueuedS, why)
}

// Expired reports whether a FAILED task ended because it waited past its max_queued_s rather than by an attempt's
// end (ExpirySummary).
func (t *Task) Expired() bool {
	return t.State == StateFailed && strings.HasPrefix(t.ErrorSummary, string(FailureMaxQueuedExceeded)+": waited ")
}

// Latest is the task's latest attempt (number LatestAttemptNo), nil when it has none.
func (t *Task) Latest() *Attempt { return t.Attempt(t.LatestAttemptNo) }

// Attempt is the task's attempt number n, nil when it has none of that number.
func (t *Task) Attempt(n int) *Attempt {
	for _, a := range t.Attempts {
		if a.No == n {
			return a
		}
	}
	return nil
}

// GPUs is the task's whole gang size.
func (t *Task) GPUs() int { return t.NNodes * t.GPUsPerNode }

// Attempt is one Ray job made for a task.
type Attempt struct {
	TaskID          string      `json:"-"`
	No              int         `json:"attempt_no"`
	RaySubmissionID string      `json:"ray_submission_id"`
	RayJobID        string      `json:"ray_job_id"`
	RayStatus       RayStatus   `json:"ray_status"`
	FailureKind     FailureKind `json:"failure_kind"`
	Message         string      `json:"message"`
	DriverNodeID    string      `json:"driver_node_id"`
	CreatedAt       time.Time   `json:"created_at"`
	// StartTime is Ray's start_time: when Ray took the submission (its job manager stamps it then), not when the
	// job began to run.
	StartTime *time.Time `json:"start_time"`
	// RunningAt is when mvp first saw Ray report the job RUNNING: the heartbeat counts from it, and max_runtime_s
	// unless PlacedAt is later (RunStart).
	RunningAt *time.Time `json:"running_at,omitempty"`
	// PlacedAt is when Ray placed the last of the attempt's gang of placement groups, as mvp's live probe read it;
	// nil until mvp saw the whole gang placed, and for a run that makes no groups. See RunStart.
	PlacedAt *time.Time `json:"placed_at,omitempty"`
	EndTime  *time.Time `json:"end_time"`
	ExitCode *int       `json:"exit_code"`
	// LogKept is true once the ended job's driver log is in the task folder; until then mvp keeps retrying the
	// fetch and does not delete the job from Ray (see Store.NoteLog).
	LogKept bool `json:"log_kept"`
	// LogTries counts failed fetches of the ended job's log.
	LogTries int `json:"-"`
}

// RunningSince is when the attempt's job began to run as far as mvp knows: RunningAt, or Ray's start_time for an
// attempt recorded before mvp kept RunningAt; nil while it has not run.
func (a *Attempt) RunningSince() *time.Time {
	if a.RunningAt != nil {
		return a.RunningAt
	}
	if a.RayStatus == RayRunning || a.RayStatus.Terminal() {
		return a.StartTime
	}
	return nil
}

// RunStart is when the attempt's max_runtime_s began: RunningSince, or PlacedAt when Ray placed the gang later
// (a driver that waits for its gang has not begun its run); nil while it has not run.
func (a *Attempt) RunStart() *time.Time {
	since := a.RunningSince()
	if since == nil || a.PlacedAt == nil || !a.PlacedAt.After(*since) {
		return since
	}
	return a.PlacedAt
}

// Event is one line of a task's history.
type Event struct {
	ID      int64           `json:"id"`
	TaskID  string          `json:"task_id"`
	TS      time.Time       `json:"ts"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Event types.
const (
	EventCreated         = "CREATED"
	EventStateTransition = "STATE_TRANSITION"
	EventSubmit          = "SUBMIT"
	EventRayStatusSync   = "RAY_STATUS_SYNC"
	EventRetryScheduled  = "RETRY_SCHEDULED"
	EventCancelRequested = "CANCEL_REQUESTED"
	EventGangStuck       = "GANG_STUCK"
	EventRayUnavailable  = "RAY_UNAVAILABLE"
	EventRayAvailable    = "RAY_AVAILABLE"
	// EventLogNotKept: the ended job's driver log could not be fetched after every try; its Ray job is deleted
	// anyway so that Ray's job server does not fill up.
	EventLogNotKept = "LOG_NOT_KEPT"
	// EventStopRequested: mvp judged a live attempt (stuck gang, time limit) and asks Ray to stop it.
	EventStopRequested = "STOP_REQUESTED"
	// EventProgressInvalid: the attempt's progress file could not be read (too large, not the expected JSON);
	// it is ignored until it changes.
	EventProgressInvalid = "PROGRESS_INVALID"
	// EventHeartbeatLost: the attempt's progress file did not change for heartbeat_timeout_s; mvp stops it.
	EventHeartbeatLost = "HEARTBEAT_LOST"
	// EventDependencyFailed: an after_ok dependency ended FAILED or CANCELED; the task is CANCELED.
	EventDependencyFailed = "DEPENDENCY_FAILED"
	// EventDoorDeleted: the ended task was deleted through the Ray-Jobs door (DELETE /ray/api/jobs/{id}).
	EventDoorDeleted = "DOOR_DELETED"
)

// Change is one compare-and-set write of a task, applied in a single transaction together with its attempt write
// and its event. The write happens only when the task's state is From; otherwise the store returns ErrConflict
// and writes nothing.
type Change struct {
	TaskID string
	From   State
	To     State
	At     time.Time
	// Task fields to set; nil leaves the column as it is. A pointer to the zero value clears it. A change to a
	// state that does not wait (not QUEUED or PENDING_RESOURCES) clears PendingReason when it gives none.
	NextRunAt     **time.Time
	PendingReason *string
	ErrorSummary  *string
	// NewAttempt, when set, is inserted and becomes the task's latest attempt.
	NewAttempt *Attempt
	// AttemptUpdate, when set, overwrites the attempt row (TaskID, No) with its fields.
	AttemptUpdate *Attempt
	// EventType and EventPayload describe the change in the task's history; EventType defaults to
	// EventStateTransition. The payload gains "from" and "to".
	EventType    string
	EventPayload map[string]any
	// Unrecorded writes no event: a renewal of what the task's history says already (a hold looked at again and
	// kept, with the same reason), which would otherwise add one each time.
	Unrecorded bool
}

// UsageSpan is one attempt's run as fair share counts it: GPUs held by Owner from Start to End (nil: still
// running).
type UsageSpan struct {
	Owner string
	GPUs  int
	Start time.Time
	End   *time.Time
}

// Operator is the owner recorded for what the internal token does: the operator sees and may cancel everything.
const Operator = "operator"

// DefaultPriority is the priority of a task whose jobspec names none; MaxPriority the highest there is.
const (
	DefaultPriority = 50
	MaxPriority     = 100
)

// TaskFilter selects tasks for a listing, newest first.
type TaskFilter struct {
	// Owner, when set, keeps only that user's tasks.
	Owner    string
	State    State
	Workload Workload
	Limit    int
	// Cursor is opaque to callers: the next_cursor of the previous page.
	Cursor string
}

// Store keeps tasks, attempts and events. Every write of a task's state is a compare-and-set.
type Store interface {
	// CreateTask inserts a QUEUED task and its CREATED event. It refuses (CheckpointsInUse) a task that resumes from
	// a checkpoint folder another task writes and that it does not wait for (CheckpointWriters).
	CreateTask(ctx context.Context, t *Task) error
	// GetTask returns a task with all its attempts, or ErrNotFound.
	GetTask(ctx context.Context, id string) (*Task, error)
	// ListTasks returns a page of tasks (without attempts) and the cursor of the next page ("" at the end).
	ListTasks(ctx context.Context, f TaskFilter) ([]*Task, string, error)
	// Apply writes a Change or returns ErrConflict.
	Apply(ctx context.Context, c Change) error
	// ApplyAll writes independent Changes (each to its own task) in one commit: errs[i] is what Apply would return
	// for cs[i], and a change that fails writes nothing without holding back the others; err (with nil errs) is a
	// failure of the store itself, and then none is written.
	ApplyAll(ctx context.Context, cs []Change) (errs []error, err error)
	// UpdateAttempt overwrites an attempt's Ray-side fields without a task state change, and records an event,
	// as a compare-and-set on the attempt's Ray status: only if it is still from (what the caller read), else
	// ErrConflict and nothing is written.
	UpdateAttempt(ctx context.Context, from RayStatus, a *Attempt, eventType string, payload map[string]any) error
	// JudgeAttempt records mvp's judgement of a live attempt (its failure kind and message, with the rest of a as
	// UpdateAttempt writes it) before mvp stops its job: a compare-and-set on the attempt's Ray status and on its
	// task's state (taskState, as read), so that a cancel recorded meanwhile wins (ErrConflict, nothing written):
	// a canceled task is never judged.
	JudgeAttempt(ctx context.Context, taskState State, from RayStatus, a *Attempt, eventType string, payload map[string]any) error
	// CountWaiting returns how many of owner's tasks wait (QUEUED or PENDING_RESOURCES): max_queued.
	CountWaiting(ctx context.Context, owner string) (int, error)
	// CheckpointWriters returns the tasks, with their states, that write or may still write the checkpoint folder
	// of task folder: the task itself and those that resume from it (resume_from), while they have not ended or
	// their Ray job is still stopping. CreateTask refuses, in the same transaction, a task that resumes from a
	// folder one of them writes unless it waits for each (UnawaitedWriter, CheckpointsInUse).
	CheckpointWriters(ctx context.Context, folder string) (map[string]State, error)
	// UsageSpans returns the attempts that ran at some time after since (started, and not ended before since),
	// with their owner and gang size: fair share's decayed usage is computed from them.
	UsageSpans(ctx context.Context, since time.Time) ([]UsageSpan, error)
	// Runnable returns QUEUED tasks and PENDING_RESOURCES tasks, in FIFO order (created_at, then id), without
	// their JobSpecYAML and SpecJSON (TaskSpec reads them: specs can be large, and a queue can be deep). The
	// scheduler filters by next_run_at itself so that Decide sees the whole queue. The tasks may be shared with
	// other callers: a caller must not change them (appending to the slice is fine).
	Runnable(ctx context.Context) ([]*Task, error)
	// TaskSpec returns a task's jobspec as submitted and its effective spec, or ErrNotFound.
	TaskSpec(ctx context.Context, id string) (jobspecYAML string, spec json.RawMessage, err error)
	// UnendedSpecs returns the effective specs of workload w's tasks that have not ended (waiting, being
	// submitted, or in flight), read in one statement, so that no task moving between states is missed.
	UnendedSpecs(ctx context.Context, w Workload) ([]json.RawMessage, error)
	// Active returns the tasks in SUBMITTING, SUBMITTED or RUNNING with their latest attempt, and the tasks of
	// any state whose latest attempt's Ray status is not terminal (for example a CANCELED task whose job is still
	// stopping).
	Active(ctx context.Context) ([]*Task, error)
	// Events returns a page of a task's events in order and the cursor of the next page.
	Events(ctx context.Context, taskID string, cursor string, limit int) ([]*Event, string, error)
	// FinishedInRay returns, newest first, the attempts whose Ray job ended and is still in Ray's job server,
	// skipping the newest keep of them, at most limit.
	FinishedInRay(ctx context.Context, keep, limit int) ([]*Attempt, error)
	// MarkRayDeleted records that an attempt's job was removed from Ray's job server.
	MarkRayDeleted(ctx context.Context, taskID string, attemptNo int) error
	// NoteLog records a fetch of an ended attempt's driver log: kept (it is in the task folder) or one more
	// failed try.
	NoteLog(ctx context.Context, taskID string, attemptNo int, kept bool) error
	// UnkeptLogs returns ended attempts still in Ray whose driver log is not in the task folder yet and that
	// have been tried fewer than maxTries times, oldest first, at most limit.
	UnkeptLogs(ctx context.Context, maxTries, limit int) ([]*Attempt, error)
	// TaskBySubmissionID returns the task (with its attempts) that the Ray-Jobs door knows by submissionID and that
	// was not deleted through it, or ErrNotFound.
	TaskBySubmissionID(ctx context.Context, submissionID string) (*Task, error)
	// TaskByRayJobID returns the task (with its attempts), not deleted through the Ray-Jobs door, whose latest
	// attempt Ray knows by the job id rayJobID (the newest such when Ray's ids repeat), or ErrNotFound.
	TaskByRayJobID(ctx context.Context, rayJobID string) (*Task, error)
	// DeleteFromDoor marks an ended task as deleted through the Ray-Jobs door (DoorDeleted) and records a
	// DOOR_DELETED event; a task that has not ended is ErrConflict's code, an unknown one ErrNotFound.
	DeleteFromDoor(ctx context.Context, taskID string, at time.Time) error
	// AddEvent appends an event to a task's history.
	AddEvent(ctx context.Context, e *Event) error
	// Counts returns the tasks by state and workload (with the oldest creation time of each group) and the ended
	// attempts by failure kind, from one consistent reading.
	Counts(ctx context.Context) (*Counts, error)
	// NoteProgress records what attempt p.AttemptNo of a task last wrote in its progress file; it is kept only
	// while that attempt is the task's latest (a late read of an older attempt changes nothing). An unknown task
	// is ErrNotFound.
	NoteProgress(ctx context.Context, taskID string, p *Progress) error
	// TaskStates returns the state of each of the tasks named that exists (an unknown id is absent from the map).
	TaskStates(ctx context.Context, ids []string) (map[string]State, error)
	SecretStore
	Close() error
}

// NodeMemory keeps across restarts of mvp how many GPU nodes were alive at the last healthy look at Ray, so that a
// restarted mvp holds admissions until as many have joined, as after an outage it lived through; and the GPU nodes
// it saw alive, so that it knows the shapes of those that are down.
type NodeMemory interface {
	// GPUNodesSeen returns the count last recorded, 0 when none was.
	GPUNodesSeen(ctx context.Context) (int, error)
	// RecordGPUNodesSeen records that n GPU nodes were alive at a healthy look at Ray at at.
	RecordGPUNodesSeen(ctx context.Context, n int, at time.Time) error
	// GPUNodesKnown returns the GPU nodes recorded as seen alive (their ids, addresses, totals and labels) and the
	// most recorded alive at once: Ray lists a dead node with no resources, and a restarted mvp tells a gang that
	// waits for a node that is down from one that can never fit by them.
	GPUNodesKnown(ctx context.Context) ([]Node, int, error)
	// RecordGPUNodesKnown replaces that record with nodes and most, at at.
	RecordGPUNodesKnown(ctx context.Context, nodes []Node, most int, at time.Time) error
}

// LogoutStore keeps the web page's logged-out sessions, so that a logout outlives a restart of mvp.
type LogoutStore interface {
	// AddLogout records that the session with this key was logged out; the store may forget it after until
	// (when the session would have expired anyway).
	AddLogout(ctx context.Context, key string, until time.Time) error
	// Logouts returns the recorded logouts that still matter at now: session key → until.
	Logouts(ctx context.Context, now time.Time) (map[string]time.Time, error)
}

// Clock tells the time. Tests use a fixed one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ResultFile is one file under a task's results folder.
type ResultFile struct {
	// Path is relative to the results folder, with "/" separators: "a01/summary.json".
	Path string `json:"path"`
	// AttemptNo is the attempt whose folder (aNN/) holds the file; 0 for a file outside the attempt folders.
	AttemptNo int       `json:"attempt_no"`
	Size      int64     `json:"size"`
	ModTime   time.Time `json:"mtime"`
}
