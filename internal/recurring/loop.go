package recurring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Loop applies Due to every schedule once per Every (and at once after Wake): it cancels the previous task when
// the overlap policy says so, then records the run and its new task in one transaction.
type Loop struct {
	Tasks     mvp.Store
	Schedules mvp.ScheduleStore
	// Prepare validates a jobspec and returns the task it describes (the service's workload.Prepare).
	Prepare func(body []byte) (*mvp.Task, error)
	// Admit checks a task a run is about to queue as a submission of its owner (t.Owner) would be: the owner's
	// limits and what the task names (api.Server.AdmitScheduled). A task it refuses is not queued: the run is
	// recorded as not submitted, with the reason. replaces is the previous task an overlap-replace run cancels as
	// it stores t (nil for none). May be nil (no check).
	Admit func(ctx context.Context, t, replaces *mvp.Task) error
	// NewID makes a task id (api.NewTaskID); try counts collisions.
	NewID func(w mvp.Workload, now time.Time, try int) string
	// Submitted is called with each task a run made (to count it and wake the scheduler, which also stops the Ray
	// job of a task the run replaced); may be nil.
	Submitted func(t *mvp.Task)
	Clock     mvp.Clock
	Logger    *slog.Logger
	// Every is the period of the loop (default 1 s).
	Every time.Duration
	// Ready, when set, holds Run's first pass until it is closed: the scheduler's first pass after a start has
	// followed every live attempt (scheduler.Loop.Synced), so that overlap sees the tasks' states as they are,
	// not as the previous process left them. May be nil.
	Ready <-chan struct{}

	wake     chan struct{}
	wakeOnce sync.Once
}

// Wake asks for a pass at once (after a schedule was made or resumed).
func (l *Loop) Wake() {
	l.init()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// init makes the wake channel once: the API may Wake the loop while Run starts.
func (l *Loop) init() {
	l.wakeOnce.Do(func() { l.wake = make(chan struct{}, 1) })
}

// Run makes passes until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	l.init()
	every := l.Every
	if every <= 0 {
		every = time.Second
	}
	if l.Ready != nil {
		select {
		case <-l.Ready:
		case <-ctx.Done():
			return nil
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := l.Pass(ctx); err != nil && ctx.Err() == nil {
			l.Logger.Warn("schedules pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-l.wake:
		}
	}
}

// Pass looks at every schedule once and applies what Due decides. A schedule that fails is logged and the others
// go on; the first error is returned.
func (l *Loop) Pass(ctx context.Context) error {
	list, err := l.Schedules.ListSchedules(ctx)
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	var first error
	for _, s := range list {
		if err := l.one(ctx, s); err != nil {
			l.Logger.Warn("schedule run", "schedule", s.Name, "owner", s.Owner, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	return first
}

func (l *Loop) one(ctx context.Context, s *mvp.Schedule) error {
	if s.Paused {
		return nil
	}
	c, err := Parse(s.Cron, s.Timezone)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", s.Name, err)
	}
	var prev *mvp.Task
	if s.LastTaskID != "" {
		prev, err = l.Tasks.GetTask(ctx, s.LastTaskID)
		if errors.Is(err, mvp.ErrNotFound) {
			prev, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("schedule %s: previous task: %w", s.Name, err)
		}
	}
	now := l.Clock.Now().UTC()
	d := Due(Input{Now: now, Schedule: s, Cron: c, Previous: prev})
	if !d.Run {
		return nil
	}
	run := mvp.ScheduleRun{Owner: s.Owner, Name: s.Name, PrevFireAt: s.LastFireAt, FireAt: d.FireAt, Missed: d.Missed, Outcome: d.Outcome}
	if !d.Submit {
		return l.record(ctx, run)
	}
	// The new task is made and admitted before a replaced one is canceled: a run that cannot make its task must
	// not take the previous one away and leave nothing.
	kept := ""
	if d.Cancel != "" {
		kept = fmt.Sprintf("; the previous task %s is kept (overlap: replace cancels it only for a new one)", d.Cancel)
	}
	t, err := l.Prepare(s.JobSpec)
	if err != nil {
		run.Outcome = "not submitted: the jobspec is no longer valid: " + err.Error() + kept
		return l.record(ctx, run)
	}
	t.State, t.CreatedAt, t.UpdatedAt = mvp.StateQueued, now, now
	t.Owner = s.Owner // a schedule's tasks are its owner's
	if l.Admit != nil {
		var replaces *mvp.Task
		if d.Cancel != "" {
			replaces = prev
		}
		if err := l.Admit(ctx, t, replaces); err != nil {
			if mvp.ErrorCode(err) == mvp.CodeInternal {
				return fmt.Errorf("schedule %s: admit its task: %w", s.Name, err) // not the task's fault: try again
			}
			run.Outcome = "not submitted: " + err.Error() + kept
			return l.record(ctx, run)
		}
	}
	// The previous task is canceled in the transaction that stores the new one: a task refused there leaves it.
	var replaced mvp.State
	run.Replace, run.Replaced = d.Cancel, &replaced
	outcome := run.Outcome
	for try := 0; ; try++ {
		t.ID = l.NewID(t.Workload, now, try)
		run.Task = t
		run.Outcome = outcome + " " + t.ID
		if d.EndedOutcome != "" {
			run.NotReplacedOutcome = d.EndedOutcome + " " + t.ID
		}
		err = l.Schedules.RecordScheduleRun(ctx, run)
		if !errors.Is(err, mvp.ErrConflict) || try >= 16 {
			break
		}
		// A conflict is a task id in use, or the schedule changed under us (paused, deleted): read it again.
		cur, gerr := l.Schedules.GetSchedule(ctx, s.Owner, s.Name)
		if gerr != nil || cur.Paused || !cur.LastFireAt.Equal(s.LastFireAt) {
			return nil
		}
	}
	if mvp.ErrorCode(err) == mvp.CodeTooMany || // the owner's max_queued, reached since Admit counted
		mvp.ErrorCode(err) == mvp.CodeConflict && !errors.Is(err, mvp.ErrConflict) { // its checkpoint folder taken since
		run.Task, run.Replace, run.Outcome = nil, "", "not submitted: "+err.Error()+kept
		return l.record(ctx, run)
	}
	if err != nil {
		return err
	}
	if replaced != "" {
		// As the API's cancel says it (specs/deploy.md: a task's life is in the log under its id).
		l.Logger.Info("task canceled", "task_id", d.Cancel, "by", "schedule "+s.Name, "was", replaced, "owner", s.Owner)
	}
	l.Logger.Info("schedule run", "schedule", s.Name, "owner", s.Owner, "task_id", t.ID, "fire_at", d.FireAt, "missed", d.Missed)
	if l.Submitted != nil {
		l.Submitted(t)
	}
	return nil
}

// record writes a run that made no task; a schedule changed meanwhile (paused, deleted) is not an error.
func (l *Loop) record(ctx context.Context, run mvp.ScheduleRun) error {
	err := l.Schedules.RecordScheduleRun(ctx, run)
	if errors.Is(err, mvp.ErrConflict) || errors.Is(err, mvp.ErrNotFound) {
		return nil
	}
	if err == nil {
		l.Logger.Info("schedule run", "schedule", run.Name, "owner", run.Owner, "outcome", run.Outcome, "fire_at", run.FireAt)
	}
	return err
}
