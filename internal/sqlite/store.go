package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

const taskCols = `task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json, created_at,
	updated_at, next_run_at, pending_reason, error_summary, latest_attempt_no`

const attemptCols = `task_id, attempt_no, ray_submission_id, ray_job_id, ray_status, failure_kind, message,
	driver_node_id, created_at, start_time, end_time, exit_code`

func nanos(t time.Time) int64 { return t.UTC().UnixNano() }

func nullNanos(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UTC().UnixNano()
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNull(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

type scanner interface{ Scan(...any) error }

func scanTask(s scanner) (*mvp.Task, error) {
	var t mvp.Task
	var spec string
	var created, updated int64
	var next sql.NullInt64
	if err := s.Scan(&t.ID, &t.Workload, &t.Name, &t.State, &t.NNodes, &t.GPUsPerNode, &t.JobSpecYAML, &spec,
		&created, &updated, &next, &t.PendingReason, &t.ErrorSummary, &t.LatestAttemptNo); err != nil {
		return nil, err
	}
	t.SpecJSON = json.RawMessage(spec)
	t.CreatedAt, t.UpdatedAt, t.NextRunAt = fromNanos(created), fromNanos(updated), fromNull(next)
	return &t, nil
}

func scanAttempt(s scanner) (*mvp.Attempt, error) {
	var a mvp.Attempt
	var created int64
	var start, end, exit sql.NullInt64
	if err := s.Scan(&a.TaskID, &a.No, &a.RaySubmissionID, &a.RayJobID, &a.RayStatus, &a.FailureKind, &a.Message,
		&a.DriverNodeID, &created, &start, &end, &exit); err != nil {
		return nil, err
	}
	a.CreatedAt, a.StartTime, a.EndTime = fromNanos(created), fromNull(start), fromNull(end)
	if exit.Valid {
		c := int(exit.Int64)
		a.ExitCode = &c
	}
	return &a, nil
}

func insertEvent(tx *sql.Tx, taskID string, at time.Time, typ string, payload map[string]any) error {
	if payload == nil {
		payload = map[string]any{}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode event payload: %w", err)
	}
	_, err = tx.Exec(`INSERT INTO events (task_id, ts, event_type, payload_json) VALUES (?, ?, ?, ?)`,
		taskID, nanos(at), typ, string(b))
	return err
}

// CreateTask inserts a QUEUED task and its CREATED event. A task id that exists already is mvp.ErrConflict.
func (db *DB) CreateTask(ctx context.Context, t *mvp.Task) error {
	if t.State != mvp.StateQueued {
		return fmt.Errorf("create task %s: state must be QUEUED, not %s", t.ID, t.State)
	}
	spec := string(t.SpecJSON)
	if spec == "" {
		spec = "{}"
	}
	err := db.exec(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO tasks (`+taskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Workload, t.Name, t.State, t.NNodes, t.GPUsPerNode, t.JobSpecYAML, spec, nanos(t.CreatedAt),
			nanos(t.UpdatedAt), nullNanos(t.NextRunAt), t.PendingReason, t.ErrorSummary, t.LatestAttemptNo)
		if isConstraint(err) {
			return mvp.ErrConflict
		}
		if err != nil {
			return err
		}
		return insertEvent(tx, t.ID, t.CreatedAt, mvp.EventCreated, map[string]any{"state": t.State,
			"workload": t.Workload, "nnodes": t.NNodes, "n_gpus_per_node": t.GPUsPerNode})
	})
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

// Apply writes a compare-and-set state change with its attempt write and its event, all or nothing.
func (db *DB) Apply(ctx context.Context, c mvp.Change) error {
	if err := mvp.CheckTransition(c.From, c.To); err != nil {
		return err
	}
	err := db.exec(ctx, func(tx *sql.Tx) error {
		set := []string{"state = ?", "updated_at = ?"}
		args := []any{c.To, nanos(c.At)}
		if c.NextRunAt != nil {
			set = append(set, "next_run_at = ?")
			args = append(args, nullNanos(*c.NextRunAt))
		}
		if c.PendingReason != nil {
			set = append(set, "pending_reason = ?")
			args = append(args, *c.PendingReason)
		}
		if c.ErrorSummary != nil {
			set = append(set, "error_summary = ?")
			args = append(args, *c.ErrorSummary)
		}
		if c.NewAttempt != nil {
			set = append(set, "latest_attempt_no = ?")
			args = append(args, c.NewAttempt.No)
		}
		args = append(args, c.TaskID, c.From)
		res, err := tx.Exec(`UPDATE tasks SET `+strings.Join(set, ", ")+` WHERE task_id = ? AND state = ?`, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			if err := tx.QueryRow(`SELECT 1 FROM tasks WHERE task_id = ?`, c.TaskID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return mvp.ErrNotFound
			}
			return mvp.ErrConflict
		}
		payload := map[string]any{}
		for k, v := range c.EventPayload {
			payload[k] = v
		}
		payload["from"], payload["to"] = c.From, c.To
		if a := c.NewAttempt; a != nil {
			payload["attempt_no"] = a.No
			if err := insertAttempt(tx, c.TaskID, a); err != nil {
				return err
			}
		}
		if a := c.AttemptUpdate; a != nil {
			payload["attempt_no"] = a.No
			if err := updateAttempt(tx, c.TaskID, a); err != nil {
				return err
			}
		}
		typ := c.EventType
		if typ == "" {
			typ = mvp.EventStateTransition
		}
		return insertEvent(tx, c.TaskID, c.At, typ, payload)
	})
	if err != nil {
		return fmt.Errorf("apply %s → %s to %s: %w", c.From, c.To, c.TaskID, err)
	}
	return nil
}

func insertAttempt(tx *sql.Tx, taskID string, a *mvp.Attempt) error {
	_, err := tx.Exec(`INSERT INTO attempts (`+attemptCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		taskID, a.No, a.RaySubmissionID, a.RayJobID, a.RayStatus, a.FailureKind, a.Message, a.DriverNodeID,
		nanos(a.CreatedAt), nullNanos(a.StartTime), nullNanos(a.EndTime), exitCode(a.ExitCode))
	if isConstraint(err) {
		return fmt.Errorf("attempt %s exists already: %w", a.RaySubmissionID, mvp.ErrConflict)
	}
	return err
}

func updateAttempt(tx *sql.Tx, taskID string, a *mvp.Attempt) error {
	res, err := tx.Exec(`UPDATE attempts SET ray_job_id = ?, ray_status = ?, failure_kind = ?, message = ?,
		driver_node_id = ?, start_time = ?, end_time = ?, exit_code = ? WHERE task_id = ? AND attempt_no = ?`,
		a.RayJobID, a.RayStatus, a.FailureKind, a.Message, a.DriverNodeID, nullNanos(a.StartTime),
		nullNanos(a.EndTime), exitCode(a.ExitCode), taskID, a.No)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("attempt %d of %s: %w", a.No, taskID, mvp.ErrNotFound)
	}
	return nil
}

func exitCode(c *int) any {
	if c == nil {
		return nil
	}
	return *c
}

// UpdateAttempt overwrites an attempt's Ray-side fields and records an event; the task's state is unchanged.
func (db *DB) UpdateAttempt(ctx context.Context, a *mvp.Attempt, eventType string, payload map[string]any) error {
	err := db.exec(ctx, func(tx *sql.Tx) error {
		if err := updateAttempt(tx, a.TaskID, a); err != nil {
			return err
		}
		p := map[string]any{"attempt_no": a.No}
		for k, v := range payload {
			p[k] = v
		}
		return insertEvent(tx, a.TaskID, time.Now(), eventType, p)
	})
	if err != nil {
		return fmt.Errorf("update attempt %d of %s: %w", a.No, a.TaskID, err)
	}
	return nil
}

// AddEvent appends an event to a task's history.
func (db *DB) AddEvent(ctx context.Context, e *mvp.Event) error {
	var payload map[string]any
	if len(e.Payload) > 0 {
		if err := json.Unmarshal(e.Payload, &payload); err != nil {
			return fmt.Errorf("event payload: %w", err)
		}
	}
	return db.exec(ctx, func(tx *sql.Tx) error { return insertEvent(tx, e.TaskID, e.TS, e.Type, payload) })
}

// GetTask returns a task with all its attempts.
func (db *DB) GetTask(ctx context.Context, id string) (*mvp.Task, error) {
	t, err := scanTask(db.read.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE task_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mvp.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	rows, err := db.read.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts WHERE task_id = ? ORDER BY attempt_no`, id)
	if err != nil {
		return nil, fmt.Errorf("get attempts of %s: %w", id, err)
	}
	defer rows.Close()
	t.Attempts = []*mvp.Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		t.Attempts = append(t.Attempts, a)
	}
	return t, rows.Err()
}

// ListTasks returns tasks newest first, a page at a time, with a keyset cursor.
func (db *DB) ListTasks(ctx context.Context, f mvp.TaskFilter) ([]*mvp.Task, string, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	if f.Limit > 500 {
		f.Limit = 500
	}
	where := []string{"1 = 1"}
	var args []any
	if f.State != "" {
		where = append(where, "state = ?")
		args = append(args, f.State)
	}
	if f.Workload != "" {
		where = append(where, "workload = ?")
		args = append(args, f.Workload)
	}
	if f.Cursor != "" {
		at, id, err := decodeTaskCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND task_id < ?))")
		args = append(args, at, at, id)
	}
	args = append(args, f.Limit+1)
	rows, err := db.read.QueryContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, task_id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > f.Limit {
		out = out[:f.Limit]
		last := out[len(out)-1]
		next = encodeCursor(strconv.FormatInt(nanos(last.CreatedAt), 10) + ":" + last.ID)
	}
	return out, next, nil
}

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

var errCursor = &mvp.Error{Code: mvp.CodeInvalid, Field: "cursor", Message: "the cursor is not one this server gave out; start again without it"}

func decodeTaskCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", errCursor
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", errCursor
	}
	return n, id, nil
}

// Runnable returns QUEUED and PENDING_RESOURCES tasks in FIFO order.
func (db *DB) Runnable(ctx context.Context) ([]*mvp.Task, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE state IN ('QUEUED', 'PENDING_RESOURCES')
		ORDER BY created_at, task_id`)
	if err != nil {
		return nil, fmt.Errorf("load queue: %w", err)
	}
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Active returns tasks in SUBMITTING, SUBMITTED or RUNNING, and tasks whose latest attempt's Ray job may still be
// alive (a canceled task whose job is stopping), each with its latest attempt.
func (db *DB) Active(ctx context.Context) ([]*mvp.Task, error) {
	rows, err := db.read.QueryContext(ctx, `
		SELECT `+prefixed("t", taskCols)+`, `+prefixed("a", attemptCols)+`
		FROM tasks t JOIN attempts a ON a.task_id = t.task_id AND a.attempt_no = t.latest_attempt_no
		WHERE t.task_id IN (
			SELECT task_id FROM tasks WHERE state IN ('SUBMITTING', 'SUBMITTED', 'RUNNING')
			UNION SELECT task_id FROM attempts WHERE ray_status IN ('', 'PENDING', 'RUNNING'))
		ORDER BY t.created_at, t.task_id`)
	if err != nil {
		return nil, fmt.Errorf("load active tasks: %w", err)
	}
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		var t mvp.Task
		var a mvp.Attempt
		var spec string
		var created, updated, acreated int64
		var next, start, end, exit sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Workload, &t.Name, &t.State, &t.NNodes, &t.GPUsPerNode, &t.JobSpecYAML, &spec,
			&created, &updated, &next, &t.PendingReason, &t.ErrorSummary, &t.LatestAttemptNo,
			&a.TaskID, &a.No, &a.RaySubmissionID, &a.RayJobID, &a.RayStatus, &a.FailureKind, &a.Message,
			&a.DriverNodeID, &acreated, &start, &end, &exit); err != nil {
			return nil, err
		}
		t.SpecJSON = json.RawMessage(spec)
		t.CreatedAt, t.UpdatedAt, t.NextRunAt = fromNanos(created), fromNanos(updated), fromNull(next)
		a.CreatedAt, a.StartTime, a.EndTime = fromNanos(acreated), fromNull(start), fromNull(end)
		if exit.Valid {
			c := int(exit.Int64)
			a.ExitCode = &c
		}
		t.Attempts = []*mvp.Attempt{&a}
		out = append(out, &t)
	}
	return out, rows.Err()
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// Events returns a task's events in order, a page at a time.
func (db *DB) Events(ctx context.Context, taskID, cursor string, limit int) ([]*mvp.Event, string, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		limit = 1000
	}
	after := int64(0)
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", errCursor
		}
		if after, err = strconv.ParseInt(string(b), 10, 64); err != nil || after < 0 {
			return nil, "", errCursor
		}
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id, task_id, ts, event_type, payload_json FROM events
		WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?`, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("events of %s: %w", taskID, err)
	}
	defer rows.Close()
	var out []*mvp.Event
	for rows.Next() {
		var e mvp.Event
		var ts int64
		var payload string
		if err := rows.Scan(&e.ID, &e.TaskID, &ts, &e.Type, &payload); err != nil {
			return nil, "", err
		}
		e.TS, e.Payload = fromNanos(ts), json.RawMessage(payload)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeCursor(strconv.FormatInt(out[len(out)-1].ID, 10))
	}
	return out, next, nil
}

// CountTasks returns the number of tasks.
func (db *DB) CountTasks(ctx context.Context) (int, error) {
	var n int
	err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&n)
	return n, err
}

// FinishedInRay returns ended attempts still in Ray's job server, newest first, beyond the newest keep.
func (db *DB) FinishedInRay(ctx context.Context, keep, limit int) ([]*mvp.Attempt, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts
		WHERE ray_deleted = 0 AND ray_status IN ('SUCCEEDED', 'FAILED', 'STOPPED')
		ORDER BY end_time DESC, task_id DESC, attempt_no DESC LIMIT ? OFFSET ?`, limit, keep)
	if err != nil {
		return nil, fmt.Errorf("finished attempts: %w", err)
	}
	defer rows.Close()
	var out []*mvp.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// MarkRayDeleted records that an attempt's Ray job was deleted.
func (db *DB) MarkRayDeleted(ctx context.Context, taskID string, no int) error {
	return db.exec(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE attempts SET ray_deleted = 1 WHERE task_id = ? AND attempt_no = ?`, taskID, no)
		return err
	})
}
