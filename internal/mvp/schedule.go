package mvp

import (
	"context"
	"encoding/json"
	"time"
)

// Overlap says what a recurring schedule does when a run is due while the task of its previous run is still live.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip makes no new task while the previous one is not terminal (the run is recorded as skipped).
	OverlapSkip Overlap = "skip"
	// OverlapQueue submits the new task anyway; both wait in the queue as any two tasks do.
	OverlapQueue Overlap = "queue"
	// OverlapReplace cancels the previous task when it is still live, then submits the new one.
	OverlapReplace Overlap = "replace"
)

// Overlaps lists the overlap policies.
var Overlaps = []Overlap{OverlapSkip, OverlapQueue, OverlapReplace}

// Valid reports whether o is one of the overlap policies.
func (o Overlap) Valid() bool { return o == OverlapSkip || o == OverlapQueue || o == OverlapReplace }

// Schedule is a recurring task: a jobspec submitted on a cron schedule. Its owner and name are its identity: each
// user's schedule names are their own.
type Schedule struct {
	Name string `json:"name"`
	// Owner is the user who made it (Operator for the internal token); its tasks are theirs.
	Owner    string  `json:"owner"`
	Cron     string  `json:"cron"`
	Timezone string  `json:"timezone"`
	Overlap  Overlap `json:"overlap"`
	// JobSpec is the jobspec (a JSON object) each run submits; it is validated as a submission when the schedule
	// is made and again at every run.
	JobSpec   json.RawMessage `json:"jobspec"`
	Paused    bool            `json:"paused"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// LastFireAt is the scheduled time of the last run considered (whether it made a task or was skipped); a new
	// schedule, and one resumed, starts from the time it was made or resumed.
	LastFireAt time.Time `json:"last_fire_at"`
	// LastTaskID is the task the last run that submitted made ("" before the first).
	LastTaskID string `json:"last_task_id"`
	// LastOutcome says in words what the last run did ("submitted …", "skipped: …").
	LastOutcome string `json:"last_outcome"`
	// Missed counts scheduled times that passed while mvp was not running and were not run (see the catch-up
	// rule in specs/api.md).
	Missed int `json:"missed"`
	// NextRunAt is shown, not stored: the next scheduled time, nil while paused.
	NextRunAt *time.Time `json:"next_run_at"`
	// TaskIDs is shown on GET of one schedule: the tasks it made, newest first.
	TaskIDs []string `json:"task_ids,omitempty"`
}

// ScheduleRun is one due run of a schedule, written in one transaction: the schedule's record of the run
// (compare-and-set on its LastFireAt) and, when it submits, the new QUEUED task linked to the schedule.
type ScheduleRun struct {
	// Owner and Name are the schedule's (an empty Owner is Operator).
	Owner, Name string
	// PrevFireAt must equal the schedule's stored LastFireAt, or the store returns ErrConflict and writes nothing.
	PrevFireAt time.Time
	// FireAt is the scheduled time this run stands for.
	FireAt time.Time
	// Missed is added to the schedule's count of missed runs.
	Missed  int
	Outcome string
	// Task, when set, is inserted as a QUEUED task (with its CREATED event) and linked to the schedule.
	Task *Task
	// Replace, with Task (overlap replace), names the previous task: it is canceled in the transaction that inserts
	// Task, before the insert, from whatever live state it is in then (one that has ended is left as it is), with
	// a CANCEL_REQUESTED event by "schedule <Name>"; a Task refused there leaves it as it was. The scheduler stops
	// its Ray job, if it has one, as for any canceled task.
	Replace string
	// Replaced, when not nil, is set by the store once the run is written: the state Replace was canceled from,
	// or "" when the run did not cancel it (it had ended, or is gone).
	Replaced *State
	// NotReplacedOutcome, when set, is recorded instead of Outcome when the run canceled nothing because Replace
	// had ended (or is gone) by the time the run was written.
	NotReplacedOutcome string
}

// ScheduleStore keeps recurring schedules and the links from a schedule to the tasks it made.
type ScheduleStore interface {
	// CreateSchedule inserts s.Owner's schedule s.Name; a name its owner uses already is ErrConflict.
	CreateSchedule(ctx context.Context, s *Schedule) error
	// GetSchedule returns owner's schedule name, or ErrNotFound (an empty owner is Operator, in every method).
	GetSchedule(ctx context.Context, owner, name string) (*Schedule, error)
	// ListSchedules returns every owner's schedules, by name, then owner.
	ListSchedules(ctx context.Context) ([]*Schedule, error)
	// SetSchedulePaused pauses or resumes a schedule. Resuming sets LastFireAt to at, so runs that fell due while
	// it was paused are not made up.
	SetSchedulePaused(ctx context.Context, owner, name string, paused bool, at time.Time) error
	// DeleteSchedule removes a schedule and its links (the tasks it made stay).
	DeleteSchedule(ctx context.Context, owner, name string) error
	// RecordScheduleRun writes one run (see ScheduleRun).
	RecordScheduleRun(ctx context.Context, r ScheduleRun) error
	// ScheduleTasks returns the ids of the tasks a schedule made by its run of through (the zero time: all), newest
	// first, at most limit. Given the schedule's last_fire_at as read, the list agrees with it: a run recorded since
	// is not listed while last_task_id does not name it.
	ScheduleTasks(ctx context.Context, owner, name string, through time.Time, limit int) ([]string, error)
}
