package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

var _ mvp.ScheduleStore = (*DB)(nil)

const scheduleCols = `name, cron, timezone, overlap, jobspec_json, paused, created_at, updated_at, last_fire_at,
	last_task_id, last_outcome, missed, owner`

func scanSchedule(s scanner) (*mvp.Schedule, error) {
	var sc mvp.Schedule
	var spec string
	var created, updated, fire int64
	if err := s.Scan(&sc.Name, &sc.Cron, &sc.Timezone, &sc.Overlap, &spec, &sc.Paused, &created, &updated, &fire,
		&sc.LastTaskID, &sc.LastOutcome, &sc.Missed, &sc.Owner); err != nil {
		return nil, err
	}
	sc.JobSpec = json.RawMessage(spec)
	sc.CreatedAt, sc.UpdatedAt, sc.LastFireAt = fromNanos(created), fromNanos(updated), fromNanos(fire)
	return &sc, nil
}

// CreateSchedule inserts s.Owner's schedule s.Name. A zero CreatedAt is taken as now; LastFireAt starts at
// CreatedAt unless set. A name its owner uses already is mvp.ErrConflict (another owner's of that name is not
// looked at: names are each owner's own).
func (db *DB) CreateSchedule(ctx context.Context, s *mvp.Schedule) error {
	created := orNow(s.CreatedAt)
	fire := s.LastFireAt
	if fire.IsZero() {
		fire = created
	}
	owner := mvp.OwnerName(s.Owner)
	err := db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO schedules (`+scheduleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', 0, ?)`,
			s.Name, s.Cron, s.Timezone, s.Overlap, string(s.JobSpec), s.Paused, nanos(created), nanos(created), nanos(fire),
			owner)
		if isUnique(err) {
			return conflict("a schedule named %q exists already; delete it first or choose another name", s.Name)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", s.Name, db.mapErr(err))
	}
	return nil
}

// GetSchedule returns owner's schedule name, or mvp.ErrNotFound.
func (db *DB) GetSchedule(ctx context.Context, owner, name string) (*mvp.Schedule, error) {
	s, err := scanSchedule(db.queryRowRead(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE owner = ? AND name = ?`,
		mvp.OwnerName(owner), name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no schedule %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get schedule %s: %w", name, db.mapErr(err))
	}
	return s, nil
}

// ListSchedules returns every owner's schedules, by name, then owner.
func (db *DB) ListSchedules(ctx context.Context) ([]*mvp.Schedule, error) {
	rows, err := db.queryRead(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY name, owner`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", db.mapErr(err))
	}
	defer rows.Close()
	out := []*mvp.Schedule{}
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list schedules: %w", db.mapErr(err))
	}
	return out, nil
}

// SetSchedulePaused pauses or resumes a schedule; resuming moves last_fire_at to at (runs that fell due while it
// was paused are not made up). Pausing a paused schedule or resuming a running one changes nothing.
func (db *DB) SetSchedulePaused(ctx context.Context, owner, name string, paused bool, at time.Time) error {
	at = orNow(at)
	owner = mvp.OwnerName(owner)
	err := db.exec(ctx, func(w *wtx) error {
		var res sql.Result
		var err error
		if paused {
			res, err = w.exec(`UPDATE schedules SET paused = 1, updated_at = ? WHERE owner = ? AND name = ?`, nanos(at),
				owner, name)
		} else {
			res, err = w.exec(`UPDATE schedules SET paused = 0, updated_at = ?,
				last_fire_at = CASE WHEN paused = 1 THEN max(last_fire_at, ?) ELSE last_fire_at END
				WHERE owner = ? AND name = ?`, nanos(at), nanos(at), owner, name)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("no schedule %q", name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set schedule %s paused=%v: %w", name, paused, db.mapErr(err))
	}
	return nil
}

// DeleteSchedule removes a schedule and its links to the tasks it made (the tasks stay).
func (db *DB) DeleteSchedule(ctx context.Context, owner, name string) error {
	owner = mvp.OwnerName(owner)
	err := db.exec(ctx, func(w *wtx) error {
		if _, err := w.exec(`DELETE FROM schedule_tasks WHERE schedule_owner = ? AND schedule_name = ?`, owner, name); err != nil {
			return err
		}
		res, err := w.exec(`DELETE FROM schedules WHERE owner = ? AND name = ?`, owner, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("no schedule %q", name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", name, db.mapErr(err))
	}
	return nil
}

// RecordScheduleRun writes one run in one transaction: the schedule's last run (only if its last_fire_at is still
// r.PrevFireAt and it is not paused, else mvp.ErrConflict and nothing is written) and, with r.Task, the new
// QUEUED task, its CREATED event (naming the schedule) and its link. A task id in use is mvp.ErrConflict too.
func (db *DB) RecordScheduleRun(ctx context.Context, r mvp.ScheduleRun) error {
	taskID := ""
	var taskArgs, eventArgs []any
	if t := r.Task; t != nil {
		if t.State != mvp.StateQueued || t.ID == "" {
			return mvp.Errorf(mvp.CodeInvalid, "state", "a scheduled task must be new and %s", mvp.StateQueued)
		}
		taskID = t.ID
		created := orNow(t.CreatedAt)
		spec := string(t.SpecJSON)
		if spec == "" {
			spec = "{}"
		}
		payload, err := encodePayload(map[string]any{"state": t.State, "workload": t.Workload, "name": t.Name,
			"nnodes": t.NNodes, "n_gpus_per_node": t.GPUsPerNode, "schedule": r.Name,
			"fire_at": r.FireAt.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			return err
		}
		taskArgs = insertTaskArgs(t, spec, created, created)
		eventArgs = []any{t.ID, nanos(created), mvp.EventCreated, payload}
	}
	var replaced mvp.State // what r.Replace was canceled from, "" for not canceled
	err := db.exec(ctx, func(w *wtx) error {
		replaced = "" // the writer may run this again (a batch rerun with savepoints)
		res, err := w.exec(`UPDATE schedules SET last_fire_at = ?, last_outcome = ?, missed = missed + ?,
			last_task_id = CASE WHEN ? = '' THEN last_task_id ELSE ? END
			WHERE owner = ? AND name = ? AND last_fire_at = ? AND paused = 0`,
			nanos(r.FireAt), r.Outcome, r.Missed, taskID, taskID, mvp.OwnerName(r.Owner), r.Name, nanos(r.PrevFireAt))
		if err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return conflict("schedule %q changed (paused, deleted or already run) since it was read", r.Name)
		}
		if r.Task == nil {
			return nil
		}
		if r.Replace != "" {
			if replaced, err = w.cancelReplaced(r, orNow(r.Task.CreatedAt)); err != nil {
				return err
			}
			if replaced == "" && r.NotReplacedOutcome != "" { // it ended since the run read it
				if _, err := w.exec(`UPDATE schedules SET last_outcome = ? WHERE owner = ? AND name = ?`,
					r.NotReplacedOutcome, mvp.OwnerName(r.Owner), r.Name); err != nil {
					return fmt.Errorf("record run: %w", err)
				}
			}
		}
		if err := w.withinMaxWaiting(r.Task); err != nil {
			return err
		}
		if err := w.soleCheckpointWriter(r.Task); err != nil {
			return err
		}
		w.touch(r.Task.ID)
		if _, err := w.exec(insertTaskSQL, taskArgs...); err != nil {
			if isUnique(err) {
				return conflict("a task with id %q exists already", taskID)
			}
			return fmt.Errorf("insert task: %w", err)
		}
		if _, err := w.exec(insertEventSQL, eventArgs...); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		if _, err := w.exec(`INSERT INTO schedule_tasks (task_id, schedule_owner, schedule_name, fire_at) VALUES (?, ?, ?, ?)`,
			taskID, mvp.OwnerName(r.Owner), r.Name, nanos(r.FireAt)); err != nil {
			return fmt.Errorf("link task: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("schedule %s run at %s: %w", r.Name, r.FireAt.UTC().Format(time.RFC3339), db.mapErr(err))
	}
	if r.Replaced != nil {
		*r.Replaced = replaced
	}
	return nil
}

// cancelReplaced cancels r.Replace (overlap replace) from the state it is in, unless it has ended: read and
// written under the transaction's write lock, so no other write comes between. was is the state it was canceled
// from, "" when it was not (ended, or gone).
func (w *wtx) cancelReplaced(r mvp.ScheduleRun, at time.Time) (was mvp.State, err error) {
	st, err := w.stmt(`SELECT state FROM tasks WHERE task_id = ?`)
	if err != nil {
		return "", err
	}
	var state mvp.State
	switch err := st.QueryRowContext(context.Background(), r.Replace).Scan(&state); {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil // gone (pruned): nothing to replace
	case err != nil:
		return "", fmt.Errorf("read the state of %s, which this run replaces: %w", r.Replace, err)
	}
	if state.Terminal() {
		return "", nil
	}
	// mvp cancels it, not its user: its error_summary says why (and so does its attempt's message once its Ray
	// job has stopped: scheduler.Conclude).
	why := fmt.Sprintf("replaced by %s, the next run of schedule %s (overlap: replace)", r.Task.ID, r.Name)
	p, err := prepareChange(mvp.Change{TaskID: r.Replace, From: state, To: mvp.StateCanceled, At: at, ErrorSummary: &why,
		EventType: mvp.EventCancelRequested, EventPayload: map[string]any{"by": "schedule " + r.Name}})
	if err != nil {
		return "", err
	}
	if err := p.write(w); err != nil {
		return "", fmt.Errorf("cancel %s, which this run replaces: %w", r.Replace, err)
	}
	return state, nil
}

// ScheduleTasks returns the ids of the tasks a schedule made by its run of through (the zero time: all), newest
// first, at most limit.
func (db *DB) ScheduleTasks(ctx context.Context, owner, name string, through time.Time, limit int) ([]string, error) {
	bound := int64(math.MaxInt64) // the zero time: every run's
	if !through.IsZero() {
		bound = nanos(through)
	}
	rows, err := db.queryRead(ctx, `SELECT task_id FROM schedule_tasks WHERE schedule_owner = ? AND schedule_name = ?
		AND fire_at <= ? ORDER BY fire_at DESC, task_id DESC LIMIT ?`, mvp.OwnerName(owner), name, bound, limit)
	if err != nil {
		return nil, fmt.Errorf("tasks of schedule %s: %w", name, db.mapErr(err))
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("tasks of schedule %s: %w", name, err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks of schedule %s: %w", name, db.mapErr(err))
	}
	return out, nil
}
