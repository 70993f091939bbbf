package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Columns, in the order scanTask and scanAttempt read them.
const (
	taskCols = taskColsHead + `t.jobspec_yaml, t.spec_json,` + taskColsTail
	// queueCols are taskCols with the jobspec and the effective spec read as empty: the queue kept in memory
	// (queueCache) holds neither, since specs can be large and the scheduler needs them only to submit
	// (DB.TaskSpec).
	queueCols    = taskColsHead + `'', '',` + taskColsTail
	taskColsHead = `t.task_id, t.workload, t.name, t.state, t.nnodes, t.n_gpus_per_node, `
	taskColsTail = `
		t.created_at, t.updated_at, t.next_run_at, t.pending_reason, t.error_summary, t.latest_attempt_no,
		t.max_runtime_s, t.max_queued_s, t.progress_json, t.heartbeat_timeout_s,
		t.after_ok, t.after_any, t.origin_id, t.resume_from, t.owner, t.priority, t.submission_id, t.door_deleted,
		t.driver_json, ` + ranCol
	// ranCol is mvp.Task.Ran, read from the attempts of a waiting task that has any: one of them ran (mvp saw it
	// RUNNING: running_at; migration 0015 gave attempts from before that column Ray's start_time) and was not a
	// lost race (INSUFFICIENT_RESOURCES from verl's fail-fast check, scheduler.InsufficientPattern, whose words
	// Conclude keeps as the attempt's message). 0 for the other tasks, without reading their attempts.
	ranCol = `CASE WHEN t.latest_attempt_no = 0 OR t.state NOT IN ('QUEUED', 'PENDING_RESOURCES') THEN 0
		ELSE EXISTS (SELECT 1 FROM attempts r WHERE r.task_id = t.task_id AND r.running_at IS NOT NULL
			AND NOT (r.failure_kind = 'INSUFFICIENT_RESOURCES'
				AND r.message LIKE 'Total available GPUs % is less than total desired GPUs %')) END`
	attemptCols = `a.task_id, a.attempt_no, a.ray_submission_id, a.ray_job_id, a.ray_status, a.failure_kind,
		a.message, a.driver_node_id, a.created_at, a.start_time, a.end_time, a.exit_code, a.log_kept, a.log_tries,
		a.running_at, a.placed_at`
)

// Page sizes of ListTasks and Events: the default when the caller gives none, and the cap.
const (
	DefaultListLimit   = 50
	MaxListLimit       = 500
	DefaultEventsLimit = 100
	MaxEventsLimit     = 1000
)

// Times are stored as unix nanoseconds, UTC, so that ordering is exact.
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

// orNow stands in for a zero time, which has no unix-nanosecond value.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

type scanner interface{ Scan(...any) error }

// taskRow and attemptRow are the scan targets of one task and one (possibly absent, LEFT JOINed) attempt.
type taskRow struct {
	t                 mvp.Task
	spec              string
	created, updated  int64
	next              sql.NullInt64
	progress          string
	afterOK, afterAny string
	submission        sql.NullString
	driver            string
}

func (r *taskRow) dest() []any {
	t := &r.t
	return []any{&t.ID, &t.Workload, &t.Name, &t.State, &t.NNodes, &t.GPUsPerNode, &t.JobSpecYAML, &r.spec,
		&r.created, &r.updated, &r.next, &t.PendingReason, &t.ErrorSummary, &t.LatestAttemptNo, &t.MaxRuntimeS,
		&t.MaxQueuedS, &r.progress, &t.HeartbeatTimeoutS,
		&r.afterOK, &r.afterAny, &t.OriginID, &t.ResumeFrom, &t.Owner, &t.Priority, &r.submission, &t.DoorDeleted,
		&r.driver, &t.Ran}
}

func (r *taskRow) task() *mvp.Task {
	t := r.t
	t.SpecJSON = json.RawMessage(r.spec)
	t.CreatedAt, t.UpdatedAt, t.NextRunAt = fromNanos(r.created), fromNanos(r.updated), fromNull(r.next)
	t.AfterOK, t.AfterAny = idList(r.afterOK), idList(r.afterAny)
	if r.progress != "" {
		var p mvp.Progress
		if json.Unmarshal([]byte(r.progress), &p) == nil {
			t.Progress = &p
		}
	}
	t.SubmissionID = r.submission.String
	if r.driver != "" {
		// Written by CreateTask from a map; a row that does not decode keeps the configured default (nil).
		_ = json.Unmarshal([]byte(r.driver), &t.Driver)
	}
	return &t
}

type attemptRow struct {
	taskID, sid, jobID, status, kind, msg, node sql.NullString
	no, created, start, end, exit, kept, tries  sql.NullInt64
	running, placed                             sql.NullInt64
}

func (r *attemptRow) dest() []any {
	return []any{&r.taskID, &r.no, &r.sid, &r.jobID, &r.status, &r.kind, &r.msg, &r.node, &r.created, &r.start,
		&r.end, &r.exit, &r.kept, &r.tries, &r.running, &r.placed}
}

// attempt returns nil when the LEFT JOIN found no attempt.
func (r *attemptRow) attempt() *mvp.Attempt {
	if !r.no.Valid {
		return nil
	}
	a := &mvp.Attempt{TaskID: r.taskID.String, No: int(r.no.Int64), RaySubmissionID: r.sid.String,
		RayJobID: r.jobID.String, RayStatus: mvp.RayStatus(r.status.String), FailureKind: mvp.FailureKind(r.kind.String),
		Message: r.msg.String, DriverNodeID: r.node.String, CreatedAt: fromNanos(r.created.Int64),
		StartTime: fromNull(r.start), EndTime: fromNull(r.end), LogKept: r.kept.Int64 != 0, LogTries: int(r.tries.Int64),
		RunningAt: fromNull(r.running), PlacedAt: fromNull(r.placed)}
	if r.exit.Valid {
		c := int(r.exit.Int64)
		a.ExitCode = &c
	}
	return a
}

func scanTask(s scanner) (*mvp.Task, error) {
	var r taskRow
	if err := s.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.task(), nil
}

func scanAttempt(s scanner) (*mvp.Attempt, error) {
	var r attemptRow
	if err := s.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.attempt(), nil
}

// scanTaskAttempt reads a row of taskCols followed by attemptCols (the attempt may be all NULL).
func scanTaskAttempt(s scanner) (*mvp.Task, *mvp.Attempt, error) {
	var tr taskRow
	var ar attemptRow
	if err := s.Scan(append(tr.dest(), ar.dest()...)...); err != nil {
		return nil, nil, err
	}
	return tr.task(), ar.attempt(), nil
}

const insertEventSQL = `INSERT INTO events (task_id, ts, event_type, payload_json) VALUES (?, ?, ?, ?)`

const insertTaskSQL = `INSERT INTO tasks (task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml,
	spec_json, created_at, updated_at, next_run_at, pending_reason, error_summary, latest_attempt_no,
	max_runtime_s, max_queued_s, heartbeat_timeout_s, after_ok, after_any, origin_id, resume_from, owner, priority,
	submission_id, driver_json)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertTaskArgs are the arguments of insertTaskSQL for t: the one place that lists a new task's columns.
func insertTaskArgs(t *mvp.Task, spec string, created, updated time.Time) []any {
	var submission any
	if t.SubmissionID != "" {
		submission = t.SubmissionID
	}
	return []any{t.ID, t.Workload, t.Name, t.State, t.NNodes, t.GPUsPerNode, t.JobSpecYAML, spec,
		nanos(created), nanos(updated), nullNanos(t.NextRunAt), t.PendingReason, t.ErrorSummary, t.MaxRuntimeS,
		t.MaxQueuedS, t.HeartbeatTimeoutS, idListText(t.AfterOK), idListText(t.AfterAny), t.OriginID, t.ResumeFrom,
		ownerOf(t), t.Priority, submission, driverText(t.Driver)}
}

// storedTask is t as a read of the row insertTaskArgs(t, spec, created, updated) through queueCols gives it back
// (scanTask: without its specs), for the queue kept in memory: TestRunnableFollowsEveryWrite checks that the two
// agree.
func storedTask(t *mvp.Task, created, updated time.Time) *mvp.Task {
	r := taskRow{created: nanos(created), updated: nanos(updated), afterOK: idListText(t.AfterOK),
		afterAny: idListText(t.AfterAny), driver: driverText(t.Driver)}
	r.t = mvp.Task{ID: t.ID, Workload: t.Workload, Name: t.Name, State: t.State, NNodes: t.NNodes,
		GPUsPerNode: t.GPUsPerNode, PendingReason: t.PendingReason,
		ErrorSummary: t.ErrorSummary, MaxRuntimeS: t.MaxRuntimeS, MaxQueuedS: t.MaxQueuedS,
		HeartbeatTimeoutS: t.HeartbeatTimeoutS, OriginID: t.OriginID, ResumeFrom: t.ResumeFrom, Owner: ownerOf(t),
		Priority: t.Priority}
	if next, ok := nullNanos(t.NextRunAt).(int64); ok {
		r.next = sql.NullInt64{Int64: next, Valid: true}
	}
	if t.SubmissionID != "" {
		r.submission = sql.NullString{String: t.SubmissionID, Valid: true}
	}
	return r.task()
}

// ownerOf is the task's owner, mvp.Operator when it names none.
func ownerOf(t *mvp.Task) string { return mvp.OwnerName(t.Owner) }

// driverText is a task's own driver resources as stored (empty for none: the configured default). They come from
// decoded JSON, so they always encode.
func driverText(d map[string]float64) string {
	if d == nil {
		return ""
	}
	b, err := json.Marshal(d)
	if err != nil {
		return ""
	}
	return string(b)
}

// submissionTakenSQL finds a task the Ray door would answer to for a submission id: by its submission id, else
// by an mvp task id; neither may be taken again. A job deleted through the door frees its submission id (as Ray
// does), never its mvp task id, which still names that task in mvp's API. Two lookups, each on its index (an OR of the two scanned tasks).
const submissionTakenSQL = `SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE submission_id = ? AND door_deleted = 0)
	OR EXISTS (SELECT 1 FROM tasks WHERE task_id = ?)`

// CreateTask inserts a QUEUED task (without attempts) and its CREATED event in one transaction. A task id that
// exists already is mvp.ErrConflict. A zero CreatedAt is taken as now, a zero UpdatedAt as CreatedAt.
func (db *DB) CreateTask(ctx context.Context, t *mvp.Task) error {
	if t == nil || t.ID == "" {
		return mvp.Errorf(mvp.CodeInvalid, "task_id", "create task: the task has no id")
	}
	if t.State != mvp.StateQueued {
		return fmt.Errorf("create task %s: %w", t.ID,
			mvp.Errorf(mvp.CodeInvalid, "state", "a new task must be %s, not %q", mvp.StateQueued, t.State))
	}
	created := orNow(t.CreatedAt)
	updated := t.UpdatedAt
	if updated.IsZero() {
		updated = created
	}
	spec := string(t.SpecJSON)
	if spec == "" {
		spec = "{}"
	}
	ev := map[string]any{"state": t.State, "workload": t.Workload, "name": t.Name,
		"nnodes": t.NNodes, "n_gpus_per_node": t.GPUsPerNode}
	var submission any
	if t.SubmissionID != "" {
		submission, ev["submission_id"] = t.SubmissionID, t.SubmissionID
	}
	payload, err := encodePayload(ev)
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	taskArgs := insertTaskArgs(t, spec, created, updated)
	eventArgs := []any{t.ID, nanos(created), mvp.EventCreated, payload}
	stored := storedTask(t, created, updated)
	err = db.exec(ctx, func(w *wtx) error {
		if submission != nil {
			taken, err := w.exists(submissionTakenSQL, submission, submission)
			if err != nil {
				return fmt.Errorf("look up submission id: %w", err)
			}
			if taken && t.SubmissionID == t.ID {
				return idTaken(t.ID) // the submission id is the task's own id (the user gave none): a fresh id will do
			}
			if taken {
				return conflict("Job with submission_id %s already exists. Please use a different submission_id.", t.SubmissionID)
			}
		}
		if err := w.withinMaxWaiting(t); err != nil {
			return err
		}
		if err := w.soleCheckpointWriter(t); err != nil {
			return err
		}
		w.touch(t.ID)
		if _, err := w.exec(insertTaskSQL, taskArgs...); err != nil {
			if isUnique(err) {
				return idTaken(t.ID)
			}
			return fmt.Errorf("insert task: %w", err)
		}
		if _, err := w.exec(insertEventSQL, eventArgs...); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		w.wrote(stored, nil)
		return nil
	})
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

const insertAttemptSQL = `INSERT INTO attempts (task_id, attempt_no, ray_submission_id, ray_job_id, ray_status,
	failure_kind, message, driver_node_id, created_at, start_time, end_time, exit_code, log_kept, log_tries, running_at,
	placed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const updateAttemptSQL = `UPDATE attempts SET ray_job_id = ?, ray_status = ?, failure_kind = ?, message = ?,
	driver_node_id = ?, start_time = ?, end_time = ?, exit_code = ?, log_kept = ?, log_tries = ?, running_at = ?,
	placed_at = ? WHERE task_id = ? AND attempt_no = ?`

func attemptUpdateArgs(taskID string, a *mvp.Attempt) []any {
	return []any{a.RayJobID, a.RayStatus, a.FailureKind, a.Message, a.DriverNodeID, nullNanos(a.StartTime),
		nullNanos(a.EndTime), nullInt(a.ExitCode), a.LogKept, a.LogTries, nullNanos(a.RunningAt), nullNanos(a.PlacedAt), taskID, a.No}
}

// updateAttempt overwrites the Ray-side fields of attempt (taskID, no); an unknown attempt is mvp.ErrNotFound.
func updateAttempt(w *wtx, taskID string, no int, args []any) error {
	res, err := w.exec(updateAttemptSQL, args...)
	if err != nil {
		return fmt.Errorf("update attempt %d: %w", no, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update attempt %d: %w", no, err)
	} else if n == 0 {
		return notFound("task %s has no attempt %d", taskID, no)
	}
	return nil
}

// Apply writes c as one compare-and-set: the task's row changes only if its state is still c.From, and then the
// new attempt, the attempt update and the event are written in the same transaction. A transition the table
// refuses returns mvp.CheckTransition's error and touches nothing; a task that is no longer in c.From gives
// mvp.ErrConflict, an unknown task mvp.ErrNotFound, and in every error case nothing is written. The event's
// type defaults to mvp.EventStateTransition; its payload is c.EventPayload plus "from", "to" and, when an
// attempt is written, "attempt_no". A zero c.At is taken as now.
func (db *DB) Apply(ctx context.Context, c mvp.Change) error {
	p, err := prepareChange(c)
	if err != nil {
		return err
	}
	if err := db.exec(ctx, p.write); err != nil {
		return fmt.Errorf("apply %s → %s to %s: %w", c.From, c.To, c.TaskID, err)
	}
	return nil
}

// ApplyAll writes independent changes (each to its own task) together: one request to the writer, so one commit
// for all, each as Apply writes it. errs[i] is what Apply would have returned for cs[i] (nil: written); a change
// refused or whose compare-and-set is lost writes nothing and does not hold back the others. A failure of the
// database itself writes none of them and is err. The scheduler's Waits for a pass go this way: one request each
// cost more in the writer and the loop than the rows themselves.
func (db *DB) ApplyAll(ctx context.Context, cs []mvp.Change) (errs []error, err error) {
	errs = make([]error, len(cs))
	ps := make([]*change, len(cs))
	for i, c := range cs {
		ps[i], errs[i] = prepareChange(c)
	}
	err = db.exec(ctx, func(w *wtx) error {
		for i, p := range ps {
			if p == nil {
				continue
			}
			if !p.attempts() {
				// Without attempt rows, a change that fails has written nothing (its UPDATE matched no row), unless
				// the database failed, which fails them all.
				err := p.write(w)
				if err != nil && !errors.Is(err, mvp.ErrConflict) && !errors.Is(err, mvp.ErrNotFound) {
					return err
				}
				errs[i] = err
				continue
			}
			if _, err := w.exec(`SAVEPOINT change`); err != nil {
				return err
			}
			if errs[i] = p.write(w); errs[i] != nil {
				if _, err := w.exec(`ROLLBACK TO change`); err != nil {
					return err
				}
			}
			if _, err := w.exec(`RELEASE change`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply %d changes: %w", len(cs), err)
	}
	for i, c := range cs {
		if errs[i] != nil && ps[i] != nil {
			errs[i] = fmt.Errorf("apply %s → %s to %s: %w", c.From, c.To, c.TaskID, errs[i])
		}
	}
	return errs, nil
}

// change is a Change made ready to write: its compare-and-set UPDATE with arguments, the attempt rows and the
// event.
type change struct {
	c               mvp.Change
	queued          mvp.Change // what the queue kept in memory is told (written); its At is the time written
	update          string
	args            []any
	newArgs, upArgs []any
	typ, body       string
}

// attempts reports whether the change writes attempt rows besides the task's.
func (p *change) attempts() bool { return p.newArgs != nil || p.upArgs != nil }

// prepareChange checks c and builds what writes it, without the database.
func prepareChange(c mvp.Change) (*change, error) {
	if err := mvp.CheckTransition(c.From, c.To); err != nil {
		return nil, err
	}
	at := orNow(c.At)
	set := []string{"state = ?", "updated_at = ?"}
	args := []any{c.To, nanos(at)}
	if c.NextRunAt != nil {
		set = append(set, "next_run_at = ?")
		args = append(args, nullNanos(*c.NextRunAt))
	}
	switch {
	case c.PendingReason != nil:
		set = append(set, "pending_reason = ?")
		args = append(args, *c.PendingReason)
	case c.To != mvp.StateQueued && c.To != mvp.StatePendingResources:
		set = append(set, "pending_reason = ''") // a task that no longer waits has no reason to wait
	}
	if c.ErrorSummary != nil {
		set = append(set, "error_summary = ?")
		args = append(args, *c.ErrorSummary)
	}
	payload := make(map[string]any, len(c.EventPayload)+3)
	for k, v := range c.EventPayload {
		payload[k] = v
	}
	payload["from"], payload["to"] = c.From, c.To
	var newArgs, upArgs []any
	if a := c.NewAttempt; a != nil {
		if a.No < 1 || a.RaySubmissionID == "" {
			return nil, fmt.Errorf("apply %s → %s to %s: %w", c.From, c.To, c.TaskID, mvp.Errorf(mvp.CodeInvalid,
				"attempt", "a new attempt needs a number ≥ 1 and a submission id (got %d, %q)", a.No, a.RaySubmissionID))
		}
		set = append(set, "latest_attempt_no = ?", "progress_json = ''") // a new attempt has said nothing yet
		args = append(args, a.No)
		newArgs = []any{c.TaskID, a.No, a.RaySubmissionID, a.RayJobID, a.RayStatus, a.FailureKind, a.Message,
			a.DriverNodeID, nanos(orNow(a.CreatedAt)), nullNanos(a.StartTime), nullNanos(a.EndTime), nullInt(a.ExitCode),
			a.LogKept, a.LogTries, nullNanos(a.RunningAt), nullNanos(a.PlacedAt)}
	}
	if a := c.AttemptUpdate; a != nil {
		upArgs = attemptUpdateArgs(c.TaskID, a)
		payload["attempt_no"] = a.No
	}
	if a := c.NewAttempt; a != nil {
		payload["attempt_no"] = a.No
	}
	typ := c.EventType
	if typ == "" {
		typ = mvp.EventStateTransition
	}
	body, err := encodePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("apply %s → %s to %s: %w", c.From, c.To, c.TaskID, err)
	}
	args = append(args, c.TaskID, c.From)
	update := `UPDATE tasks SET ` + strings.Join(set, ", ") + ` WHERE task_id = ? AND state = ?`

	return &change{c: c, queued: written(c, at), update: update, args: args, newArgs: newArgs, upArgs: upArgs,
		typ: typ, body: body}, nil
}

// written is what the queue kept in memory needs of c, as written at at: values, not the caller's variables (a
// caller may reuse them once Apply returned), and without the event's payload and the attempts.
func written(c mvp.Change, at time.Time) mvp.Change {
	w := mvp.Change{TaskID: c.TaskID, From: c.From, To: c.To, At: at}
	if c.PendingReason != nil {
		v := *c.PendingReason
		w.PendingReason = &v
	}
	if c.ErrorSummary != nil {
		v := *c.ErrorSummary
		w.ErrorSummary = &v
	}
	if c.NextRunAt != nil {
		var next *time.Time
		if *c.NextRunAt != nil {
			v := **c.NextRunAt
			next = &v
		}
		w.NextRunAt = &next
	}
	if c.NewAttempt != nil {
		w.NewAttempt = &mvp.Attempt{No: c.NewAttempt.No}
	}
	return w
}

// write writes the change in the writer's transaction.
func (p *change) write(w *wtx) error {
	c := &p.c
	w.touch(c.TaskID)
	res, err := w.exec(p.update, p.args...)
	if err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	if n == 0 {
		var now string
		st, err := w.stmt(`SELECT state FROM tasks WHERE task_id = ?`)
		if err != nil {
			return err
		}
		switch err := st.QueryRowContext(context.Background(), c.TaskID).Scan(&now); {
		case errors.Is(err, sql.ErrNoRows):
			return notFound("no task %q", c.TaskID)
		case err != nil:
			return fmt.Errorf("read task state: %w", err)
		}
		return conflict("task %s is %s, not %s: it changed meanwhile", c.TaskID, now, c.From)
	}
	if p.newArgs != nil {
		if _, err := w.exec(insertAttemptSQL, p.newArgs...); err != nil {
			if isUnique(err) {
				return conflict("attempt %d of task %s or submission id %q exists already",
					c.NewAttempt.No, c.TaskID, c.NewAttempt.RaySubmissionID)
			}
			return fmt.Errorf("insert attempt %d: %w", c.NewAttempt.No, err)
		}
	}
	if p.upArgs != nil {
		if err := updateAttempt(w, c.TaskID, c.AttemptUpdate.No, p.upArgs); err != nil {
			return err
		}
	}
	if !c.Unrecorded {
		if _, err := w.exec(insertEventSQL, c.TaskID, nanos(p.queued.At), p.typ, p.body); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
	}
	w.wrote(nil, &p.queued)
	return nil
}

// UpdateAttempt overwrites the Ray-side fields (job id, status, failure kind, message, driver node, start and
// end times, exit code) of attempt (a.TaskID, a.No) and records an event of eventType (default
// mvp.EventRayStatusSync) whose payload gains "attempt_no"; the task's state is unchanged. It is a compare-and-set
// on the attempt's Ray status: an attempt whose status is no longer from is mvp.ErrConflict, an unknown attempt
// mvp.ErrNotFound, and then nothing is written. The event is stamped with the wall clock: the interface carries
// no time.
func (db *DB) UpdateAttempt(ctx context.Context, from mvp.RayStatus, a *mvp.Attempt, eventType string, payload map[string]any) error {
	return db.updateAttempt(ctx, "", from, a, eventType, payload)
}

// JudgeAttempt is UpdateAttempt that also requires the attempt's task to be in taskState: a task whose state
// changed since it was read (canceled) is mvp.ErrConflict, and nothing is written.
func (db *DB) JudgeAttempt(ctx context.Context, taskState mvp.State, from mvp.RayStatus, a *mvp.Attempt, eventType string, payload map[string]any) error {
	if taskState == "" {
		return mvp.Errorf(mvp.CodeInvalid, "state", "judge attempt: no task state given")
	}
	return db.updateAttempt(ctx, taskState, from, a, eventType, payload)
}

// updateAttempt is UpdateAttempt, and JudgeAttempt when taskState is not empty.
func (db *DB) updateAttempt(ctx context.Context, taskState mvp.State, from mvp.RayStatus, a *mvp.Attempt, eventType string, payload map[string]any) error {
	if a == nil {
		return mvp.Errorf(mvp.CodeInvalid, "attempt", "update attempt: no attempt given")
	}
	if eventType == "" {
		eventType = mvp.EventRayStatusSync
	}
	p := make(map[string]any, len(payload)+1)
	for k, v := range payload {
		p[k] = v
	}
	p["attempt_no"] = a.No
	body, err := encodePayload(p)
	if err != nil {
		return fmt.Errorf("update attempt %d of %s: %w", a.No, a.TaskID, err)
	}
	args := attemptUpdateArgs(a.TaskID, a)
	ts := nanos(time.Now())
	err = db.exec(ctx, func(w *wtx) error {
		q, qargs := updateAttemptSQL+` AND ray_status = ?`, append(args, from)
		if taskState != "" {
			q, qargs = q+` AND EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = ? AND t.state = ?)`, append(qargs, a.TaskID, taskState)
		}
		res, err := w.exec(q, qargs...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			st, err := w.stmt(`SELECT a.ray_status, t.state FROM attempts a JOIN tasks t ON t.task_id = a.task_id
				WHERE a.task_id = ? AND a.attempt_no = ?`)
			if err != nil {
				return err
			}
			var now mvp.RayStatus
			var state mvp.State
			if err := st.QueryRowContext(context.Background(), a.TaskID, a.No).Scan(&now, &state); errors.Is(err, sql.ErrNoRows) {
				return notFound("task %s has no attempt %d", a.TaskID, a.No)
			} else if err != nil {
				return err
			}
			if now == from {
				return conflict("its task is %s, not %s as read", state, taskState)
			}
			return conflict("its Ray status is %q, not %q as read", now, from)
		}
		if _, err := w.exec(insertEventSQL, a.TaskID, ts, eventType, body); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update attempt %d of %s: %w", a.No, a.TaskID, err)
	}
	return nil
}

// AddEvent appends an event to a task's history. The payload must be JSON (empty means {}); a zero TS is taken
// as now. On success e.ID and e.TS are set. An unknown task is mvp.ErrNotFound.
func (db *DB) AddEvent(ctx context.Context, e *mvp.Event) error {
	if e == nil || e.TaskID == "" || e.Type == "" {
		return mvp.Errorf(mvp.CodeInvalid, "event", "add event: an event needs a task id and a type")
	}
	body := "{}"
	if len(e.Payload) > 0 {
		if !json.Valid(e.Payload) {
			return fmt.Errorf("add %s event to %s: %w", e.Type, e.TaskID,
				mvp.Errorf(mvp.CodeInvalid, "payload", "event payload is not JSON"))
		}
		body = string(e.Payload)
	}
	ts := orNow(e.TS)
	var id int64
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(insertEventSQL, e.TaskID, nanos(ts), e.Type, body)
		if err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return fmt.Errorf("add %s event to %s: %w", e.Type, e.TaskID, err)
	}
	e.ID, e.TS = id, ts
	return nil
}

// idList decodes a JSON list of task ids (” is none).
func idList(s string) []string {
	if s == "" {
		return nil
	}
	var ids []string
	if json.Unmarshal([]byte(s), &ids) != nil || len(ids) == 0 {
		return nil
	}
	return ids
}

// idListText encodes a list of task ids as JSON (” for none).
func idListText(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// UnendedSpecs returns the spec_json of every task of workload w whose state is not terminal.
func (db *DB) UnendedSpecs(ctx context.Context, w mvp.Workload) ([]json.RawMessage, error) {
	rows, err := db.queryRead(ctx, `SELECT spec_json FROM tasks
		WHERE workload = ? AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')`, string(w))
	if err != nil {
		return nil, fmt.Errorf("read the specs of %s tasks still to run: %w", w, db.mapErr(err))
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("read the specs of %s tasks still to run: %w", w, db.mapErr(err))
		}
		out = append(out, json.RawMessage(s))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the specs of %s tasks still to run: %w", w, db.mapErr(err))
	}
	return out, nil
}

// TaskSpec returns task id's jobspec as submitted and its effective spec, which the tasks of Runnable do not hold.
func (db *DB) TaskSpec(ctx context.Context, id string) (jobspecYAML string, spec json.RawMessage, err error) {
	var s string
	err = db.queryRowRead(ctx, `SELECT jobspec_yaml, spec_json FROM tasks WHERE task_id = ?`, id).
		Scan(&jobspecYAML, &s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, notFound("no task %q", id)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the spec of task %s: %w", id, db.mapErr(err))
	}
	return jobspecYAML, json.RawMessage(s), nil
}

// TaskStates returns the state of each named task that exists, in one read.
func (db *DB) TaskStates(ctx context.Context, ids []string) (map[string]mvp.State, error) {
	out := make(map[string]mvp.State, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := db.read.QueryContext(ctx, `SELECT task_id, state FROM tasks WHERE task_id IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("task states: %w", db.mapErr(err))
		}
		for rows.Next() {
			var id string
			var st mvp.State
			if err := rows.Scan(&id, &st); err != nil {
				rows.Close()
				return nil, fmt.Errorf("task states: %w", err)
			}
			out[id] = st
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("task states: %w", db.mapErr(err))
		}
	}
	return out, nil
}

// NoteProgress records p as the task's progress when p.AttemptNo is still the task's latest attempt; otherwise it
// writes nothing. An unknown task is mvp.ErrNotFound. No event is written: progress changes too often for the
// history.
func (db *DB) NoteProgress(ctx context.Context, taskID string, p *mvp.Progress) error {
	if p == nil {
		return mvp.Errorf(mvp.CodeInvalid, "progress", "note progress: no progress given")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("note progress of %s: %w", taskID, err)
	}
	err = db.exec(ctx, func(w *wtx) error {
		w.touch(taskID)
		res, err := w.exec(`UPDATE tasks SET progress_json = ? WHERE task_id = ? AND latest_attempt_no = ?`,
			string(b), taskID, p.AttemptNo)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			st, err := w.stmt(`SELECT 1 FROM tasks WHERE task_id = ?`)
			if err != nil {
				return err
			}
			var one int
			if err := st.QueryRowContext(context.Background(), taskID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return notFound("no task %q", taskID)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("note progress of attempt %d of %s: %w", p.AttemptNo, taskID, err)
	}
	return nil
}

// MarkRayDeleted records that an attempt's Ray job was deleted from Ray's job server. An unknown attempt is
// mvp.ErrNotFound.
func (db *DB) MarkRayDeleted(ctx context.Context, taskID string, attemptNo int) error {
	return db.setAttemptFlag(ctx, `ray_deleted = 1`, taskID, attemptNo, "mark attempt %d of %s deleted from Ray")
}

// NoteLog records a fetch of an ended attempt's driver log: kept sets log_kept, otherwise log_tries grows by
// one. An unknown attempt is mvp.ErrNotFound.
func (db *DB) NoteLog(ctx context.Context, taskID string, attemptNo int, kept bool) error {
	set := `log_tries = log_tries + 1`
	if kept {
		set = `log_kept = 1`
	}
	return db.setAttemptFlag(ctx, set, taskID, attemptNo, "note log of attempt %d of %s")
}

// setAttemptFlag runs UPDATE attempts SET <set> on one attempt; what names the write in errors (attempt number,
// task id).
func (db *DB) setAttemptFlag(ctx context.Context, set, taskID string, attemptNo int, what string) error {
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(`UPDATE attempts SET `+set+` WHERE task_id = ? AND attempt_no = ?`, taskID, attemptNo)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("task %s has no attempt %d", taskID, attemptNo)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf(what+": %w", attemptNo, taskID, err)
	}
	return nil
}

// UnkeptLogs returns the ended attempts still in Ray whose driver log is not kept yet and that were tried fewer
// than maxTries times, oldest end first, at most limit.
func (db *DB) UnkeptLogs(ctx context.Context, maxTries, limit int) ([]*mvp.Attempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	return db.attempts(ctx, "unkept logs", `SELECT `+attemptCols+` FROM attempts a
		WHERE a.log_kept = 0 AND a.ray_deleted = 0 AND a.log_tries < ?
		AND a.ray_status IN ('SUCCEEDED', 'FAILED', 'STOPPED')
		ORDER BY a.end_time, a.task_id, a.attempt_no LIMIT ?`, maxTries, limit)
}

// attempts runs a query of attemptCols.
func (db *DB) attempts(ctx context.Context, what, q string, args ...any) ([]*mvp.Attempt, error) {
	rows, err := db.queryRead(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, db.mapErr(err))
	}
	defer rows.Close()
	var out []*mvp.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, db.mapErr(err))
	}
	return out, nil
}

// GetTask returns a task with all its attempts ordered by number (an empty, non-nil slice when it has none), or
// mvp.ErrNotFound. One statement reads both, so they come from one snapshot.
func (db *DB) GetTask(ctx context.Context, id string) (*mvp.Task, error) {
	rows, err := db.queryRead(ctx, `SELECT `+taskCols+`, `+attemptCols+`
		FROM tasks t LEFT JOIN attempts a ON a.task_id = t.task_id
		WHERE t.task_id = ? ORDER BY a.attempt_no`, id)
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, db.mapErr(err))
	}
	defer rows.Close()
	var t *mvp.Task
	for rows.Next() {
		rt, a, err := scanTaskAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("get task %s: %w", id, err)
		}
		if t == nil {
			t = rt
			t.Attempts = []*mvp.Attempt{}
		}
		if a != nil {
			t.Attempts = append(t.Attempts, a)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, db.mapErr(err))
	}
	if t == nil {
		return nil, notFound("no task %q", id)
	}
	if t.Resubmits, t.ResubmitOwners, err = db.resubmits(ctx, id); err != nil {
		return nil, err
	}
	return t, nil
}

// resubmitsSQL reads the tasks resubmitted from a task, with their owners. It repeats the condition of the partial
// index tasks_by_origin (origin_id != ”), without which SQLite cannot use it for a bound parameter and scans the
// table.
const resubmitsSQL = `SELECT task_id, owner FROM tasks WHERE origin_id = ? AND origin_id != '' ORDER BY created_at, task_id`

// resubmits returns the ids of the tasks resubmitted from id, oldest first, and their owners.
func (db *DB) resubmits(ctx context.Context, id string) (ids, owners []string, err error) {
	rows, err := db.queryRead(ctx, resubmitsSQL, id)
	if err != nil {
		return nil, nil, fmt.Errorf("resubmits of %s: %w", id, db.mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var r, o string
		if err := rows.Scan(&r, &o); err != nil {
			return nil, nil, fmt.Errorf("resubmits of %s: %w", id, err)
		}
		ids, owners = append(ids, r), append(owners, o)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("resubmits of %s: %w", id, db.mapErr(err))
	}
	return ids, owners, nil
}

// errCursor answers a cursor this store did not give out.
var errCursor = mvp.Errorf(mvp.CodeInvalid, "cursor", "the cursor is not one this server gave out; start again without it")

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// The task cursor is base64url("<created_at ns>:<task_id>") of the last task of the page.
func encodeTaskCursor(t *mvp.Task) string {
	return encodeCursor(strconv.FormatInt(nanos(t.CreatedAt), 10) + ":" + t.ID)
}

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

// ListTasks returns a page of tasks, without attempts, newest first (created_at, then task id, descending),
// filtered by state and workload, and the cursor of the next page ("" at the end). The limit defaults to 50 and
// is capped at 500. A cursor this store did not give out is a CodeInvalid error on field "cursor".
func (db *DB) ListTasks(ctx context.Context, f mvp.TaskFilter) ([]*mvp.Task, string, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	var where []string
	var args []any
	if f.State != "" {
		if !f.State.Valid() {
			return nil, "", mvp.Errorf(mvp.CodeInvalid, "state", "unknown state %q", f.State)
		}
		where = append(where, "t.state = ?")
		args = append(args, f.State)
	}
	if f.Workload != "" {
		if !f.Workload.Valid() {
			return nil, "", mvp.Errorf(mvp.CodeInvalid, "workload", "unknown workload %q", f.Workload)
		}
		where = append(where, "t.workload = ?")
		args = append(args, f.Workload)
	}
	if f.Owner != "" {
		where = append(where, "t.owner = ?")
		args = append(args, f.Owner)
	}
	if f.Cursor != "" {
		at, id, err := decodeTaskCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(t.created_at, t.task_id) < (?, ?)")
		args = append(args, at, id)
	}
	q := `SELECT ` + taskCols + ` FROM tasks t`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY t.created_at DESC, t.task_id DESC LIMIT ?`
	args = append(args, f.Limit+1)
	rows, err := db.queryRead(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", db.mapErr(err))
	}
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", db.mapErr(err))
	}
	next := ""
	if len(out) > f.Limit {
		out = out[:f.Limit]
		next = encodeTaskCursor(out[len(out)-1])
	}
	return out, next, nil
}

// withinMaxWaiting refuses (mvp.CodeTooMany) a new task whose owner has t.MaxWaiting tasks waiting already; it
// runs in the transaction that inserts t, so concurrent submissions are counted one after the other.
func (w *wtx) withinMaxWaiting(t *mvp.Task) error {
	if t.MaxWaiting <= 0 {
		return nil
	}
	st, err := w.stmt(`SELECT count(*) FROM (SELECT 1 FROM tasks
		WHERE owner = ? AND state IN ('QUEUED', 'PENDING_RESOURCES') LIMIT ?)`)
	if err != nil {
		return err
	}
	var n int
	if err := st.QueryRowContext(context.Background(), ownerOf(t), t.MaxWaiting).Scan(&n); err != nil {
		return fmt.Errorf("count waiting tasks of %s: %w", ownerOf(t), err)
	}
	if n >= t.MaxWaiting {
		return mvp.TooManyWaiting(ownerOf(t), n, t.MaxWaiting)
	}
	return nil
}

// checkpointWritersSQL finds the tasks that write, or may still write, the checkpoint folder of task ?1: the task
// itself and those that resume from it (resume_from), while they have not ended or an attempt of theirs has a Ray
// job that has not been seen to end (a canceled run in its stop wait: its latest attempt, as the API's stillStopping
// and Store.Active judge it).
const checkpointWritersSQL = `SELECT task_id, state FROM (
	SELECT task_id, state, latest_attempt_no FROM tasks WHERE task_id = ?1
	UNION ALL
	SELECT task_id, state, latest_attempt_no FROM tasks WHERE resume_from = ?1 AND resume_from != ''
) AS w WHERE w.state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
	OR EXISTS (SELECT 1 FROM attempts a WHERE a.task_id = w.task_id AND a.attempt_no = w.latest_attempt_no
		AND a.end_time IS NULL AND a.ray_status NOT IN ('SUCCEEDED', 'FAILED', 'STOPPED'))`

// CheckpointWriters returns the tasks, with their states, that write or may still write the checkpoint folder of
// task folder: the task itself and those that resume from it, that have not ended or whose Ray job is still
// stopping.
func (db *DB) CheckpointWriters(ctx context.Context, folder string) (map[string]mvp.State, error) {
	rows, err := db.queryRead(ctx, checkpointWritersSQL, folder)
	if err != nil {
		return nil, fmt.Errorf("look up the writers of %s's checkpoints: %w", folder, db.mapErr(err))
	}
	out, err := scanWriters(rows)
	if err != nil {
		return nil, fmt.Errorf("look up the writers of %s's checkpoints: %w", folder, db.mapErr(err))
	}
	return out, nil
}

func scanWriters(rows *sql.Rows) (map[string]mvp.State, error) {
	defer rows.Close()
	out := map[string]mvp.State{}
	for rows.Next() {
		var id string
		var st mvp.State
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// soleCheckpointWriter refuses a new task that resumes from a folder another task writes and that it does not wait
// for (mvp.UnawaitedWriter); it runs in the transaction that inserts t, so two resumes submitted together cannot
// both be taken.
func (w *wtx) soleCheckpointWriter(t *mvp.Task) error {
	if t.ResumeFrom == "" {
		return nil
	}
	st, err := w.stmt(checkpointWritersSQL)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(context.Background(), t.ResumeFrom)
	if err != nil {
		return fmt.Errorf("look up the writers of %s's checkpoints: %w", t.ResumeFrom, err)
	}
	writers, err := scanWriters(rows)
	if err != nil {
		return fmt.Errorf("look up the writers of %s's checkpoints: %w", t.ResumeFrom, err)
	}
	if id, state := mvp.UnawaitedWriter(t, writers); id != "" {
		return mvp.CheckpointsInUse(t.ResumeFrom, id, state)
	}
	return nil
}

// CountWaiting returns how many of owner's tasks are QUEUED or PENDING_RESOURCES.
func (db *DB) CountWaiting(ctx context.Context, owner string) (int, error) {
	var n int
	err := db.queryRowRead(ctx, `SELECT count(*) FROM tasks
		WHERE owner = ? AND state IN ('QUEUED', 'PENDING_RESOURCES')`, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count waiting tasks of %s: %w", owner, db.mapErr(err))
	}
	return n, nil
}

// usageSpansSQL: the attempts that ended at or after since, through attempts_by_end's range, and the live ones,
// through the partial index attempts_live; one OR of the two walked attempts_by_end's NULL range, every attempt Ray
// ever refused (TestUsageSpansSkipsRefusedAttempts). The unary + keeps SQLite off attempts_by_end there.
const usageSpansSQL = `SELECT t.owner, t.nnodes * t.n_gpus_per_node, a.start_time, a.end_time
	FROM attempts a JOIN tasks t ON t.task_id = a.task_id
	WHERE a.end_time >= ? AND a.start_time IS NOT NULL
	UNION ALL
	SELECT t.owner, t.nnodes * t.n_gpus_per_node, a.start_time, a.end_time
	FROM attempts a JOIN tasks t ON t.task_id = a.task_id
	WHERE a.ray_status IN ('', 'PENDING', 'RUNNING') AND +a.end_time IS NULL AND a.start_time IS NOT NULL`

// UsageSpans returns, for fair share, every attempt that started and did not end before since, with its task's
// owner and gang size (nnodes × n_gpus_per_node).
func (db *DB) UsageSpans(ctx context.Context, since time.Time) ([]mvp.UsageSpan, error) {
	rows, err := db.queryRead(ctx, usageSpansSQL, nanos(since))
	if err != nil {
		return nil, fmt.Errorf("load usage: %w", db.mapErr(err))
	}
	defer rows.Close()
	var out []mvp.UsageSpan
	for rows.Next() {
		var u mvp.UsageSpan
		var start int64
		var end sql.NullInt64
		if err := rows.Scan(&u.Owner, &u.GPUs, &start, &end); err != nil {
			return nil, fmt.Errorf("load usage: %w", db.mapErr(err))
		}
		u.Start, u.End = fromNanos(start), fromNull(end)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load usage: %w", db.mapErr(err))
	}
	return out, nil
}

// scanCheckEvery is how many rows a long read steps between two checks of its context.
const scanCheckEvery = 1024

// activeSQL: the tasks in an active state, and the tasks in any other state whose latest attempt's Ray job may
// still be alive: a non-terminal ray_status (empty, PENDING or RUNNING), no end time and not deleted from Ray. A
// CANCELED task whose job is stopping thus stays until a sync writes the job's terminal status. The second
// part walks the partial index attempts_live (the unary + keeps SQLite off attempts_by_end's NULL range, which
// holds every attempt Ray refused: TestActiveWalksTheLiveAttemptsIndex).
const activeSQL = `SELECT ` + taskCols + `, ` + attemptCols + `
	FROM tasks t LEFT JOIN attempts a ON a.task_id = t.task_id AND a.attempt_no = t.latest_attempt_no
	WHERE t.state IN ('SUBMITTING', 'SUBMITTED', 'RUNNING')
	UNION ALL
	SELECT ` + taskCols + `, ` + attemptCols + `
	FROM attempts a JOIN tasks t ON t.task_id = a.task_id AND t.latest_attempt_no = a.attempt_no
	WHERE a.ray_status IN ('', 'PENDING', 'RUNNING') AND +a.end_time IS NULL AND a.ray_deleted = 0
		AND t.state NOT IN ('SUBMITTING', 'SUBMITTED', 'RUNNING')`

// Active returns, oldest first, the tasks in SUBMITTING, SUBMITTED or RUNNING and the tasks of any state whose
// latest attempt's Ray job may still be alive (non-terminal ray_status, no end time, not deleted from Ray), each
// with only its latest attempt in Attempts (empty if it has none).
func (db *DB) Active(ctx context.Context) ([]*mvp.Task, error) {
	rows, err := db.queryRead(ctx, activeSQL)
	if err != nil {
		return nil, fmt.Errorf("load active tasks: %w", db.mapErr(err))
	}
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		t, a, err := scanTaskAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("load active tasks: %w", err)
		}
		t.Attempts = []*mvp.Attempt{}
		if a != nil {
			t.Attempts = append(t.Attempts, a)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load active tasks: %w", db.mapErr(err))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Events returns a page of a task's events in ascending id order and the cursor of the next page ("" at the
// end). The limit defaults to 100 and is capped at 1000. The cursor is base64url of the last event id.
func (db *DB) Events(ctx context.Context, taskID, cursor string, limit int) ([]*mvp.Event, string, error) {
	if limit <= 0 {
		limit = DefaultEventsLimit
	}
	limit = min(limit, MaxEventsLimit)
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
	rows, err := db.queryRead(ctx, `SELECT id, task_id, ts, event_type, payload_json FROM events
		WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?`, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("events of %s: %w", taskID, db.mapErr(err))
	}
	defer rows.Close()
	var out []*mvp.Event
	for rows.Next() {
		var e mvp.Event
		var ts int64
		var payload string
		if err := rows.Scan(&e.ID, &e.TaskID, &ts, &e.Type, &payload); err != nil {
			return nil, "", fmt.Errorf("events of %s: %w", taskID, err)
		}
		e.TS, e.Payload = fromNanos(ts), json.RawMessage(payload)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("events of %s: %w", taskID, db.mapErr(err))
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeCursor(strconv.FormatInt(out[len(out)-1].ID, 10))
	}
	return out, next, nil
}

// TaskBySubmissionID returns the task the Ray-Jobs door knows by submissionID (not deleted through it), with its
// attempts, or mvp.ErrNotFound.
func (db *DB) TaskBySubmissionID(ctx context.Context, submissionID string) (*mvp.Task, error) {
	var id string
	err := db.queryRowRead(ctx, `SELECT task_id FROM tasks WHERE submission_id = ? AND door_deleted = 0`,
		submissionID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no job with submission id %q", submissionID)
	}
	if err != nil {
		return nil, fmt.Errorf("task of submission id %q: %w", submissionID, db.mapErr(err))
	}
	return db.GetTask(ctx, id)
}

// TaskByRayJobID returns the task, not deleted through the Ray-Jobs door, whose latest attempt Ray knows by the job
// id rayJobID, with its attempts; the newest such attempt when Ray's ids repeat (they start again with each head),
// or mvp.ErrNotFound.
func (db *DB) TaskByRayJobID(ctx context.Context, rayJobID string) (*mvp.Task, error) {
	var id string
	err := db.queryRowRead(ctx, `SELECT a.task_id FROM attempts a JOIN tasks t ON t.task_id = a.task_id
		WHERE a.ray_job_id = ? AND a.ray_job_id != '' AND a.attempt_no = t.latest_attempt_no AND t.door_deleted = 0
		ORDER BY a.created_at DESC, a.task_id DESC LIMIT 1`, rayJobID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no job with Ray job id %q", rayJobID)
	}
	if err != nil {
		return nil, fmt.Errorf("task of Ray job id %q: %w", rayJobID, db.mapErr(err))
	}
	return db.GetTask(ctx, id)
}

// DeleteFromDoor marks an ended task deleted through the Ray-Jobs door, with a DOOR_DELETED event, in one
// transaction. A task that has not ended is a conflict and nothing is written.
func (db *DB) DeleteFromDoor(ctx context.Context, taskID string, at time.Time) error {
	err := db.exec(ctx, func(w *wtx) error {
		w.touch(taskID)
		res, err := w.exec(`UPDATE tasks SET door_deleted = 1, updated_at = ? WHERE task_id = ?
			AND state IN ('SUCCEEDED', 'FAILED', 'CANCELED')`, nanos(orNow(at)), taskID)
		if err != nil {
			return fmt.Errorf("update task: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update task: %w", err)
		} else if n == 0 {
			found, err := w.exists(`SELECT 1 FROM tasks WHERE task_id = ?`, taskID)
			if err != nil {
				return fmt.Errorf("read task: %w", err)
			}
			if !found {
				return notFound("no task %q", taskID)
			}
			return conflict("task %s has not ended; only an ended job can be deleted", taskID)
		}
		if _, err := w.exec(insertEventSQL, taskID, nanos(orNow(at)), mvp.EventDoorDeleted, "{}"); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete task %s from the Ray door: %w", taskID, err)
	}
	return nil
}

// CountTasks returns the number of tasks.
func (db *DB) CountTasks(ctx context.Context) (int, error) {
	var n int
	if err := db.queryRowRead(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks: %w", db.mapErr(err))
	}
	return n, nil
}

// FinishedInRay returns the attempts whose Ray job ended (SUCCEEDED, FAILED or STOPPED) and that are not yet
// marked deleted from Ray, newest first (end time, or creation time when Ray gave none), skipping the newest keep
// of them, at most limit.
func (db *DB) FinishedInRay(ctx context.Context, keep, limit int) ([]*mvp.Attempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	keep = max(keep, 0)
	return db.attempts(ctx, "finished attempts", `SELECT `+attemptCols+` FROM attempts a
		WHERE a.ray_deleted = 0 AND a.ray_status IN ('SUCCEEDED', 'FAILED', 'STOPPED')
		ORDER BY coalesce(a.end_time, a.created_at) DESC, a.task_id DESC, a.attempt_no DESC LIMIT ? OFFSET ?`, limit, keep)
}

// Counts reads the tasks by state and workload and the ended attempts by failure kind in one grouped query (so
// both come from the same snapshot of the database).
func (db *DB) Counts(ctx context.Context) (*mvp.Counts, error) {
	rows, err := db.queryRead(ctx, `
		SELECT 't', state, workload, count(*), min(created_at) FROM tasks GROUP BY state, workload
		UNION ALL
		SELECT 'a', failure_kind, '', count(*), 0 FROM attempts
			WHERE ray_status IN ('SUCCEEDED', 'FAILED', 'STOPPED') GROUP BY failure_kind`)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", db.mapErr(err))
	}
	defer rows.Close()
	c := &mvp.Counts{}
	for rows.Next() {
		var kind, a, b string
		var n int
		var oldest int64
		if err := rows.Scan(&kind, &a, &b, &n, &oldest); err != nil {
			return nil, fmt.Errorf("count tasks: %w", db.mapErr(err))
		}
		if kind == "t" {
			c.Tasks = append(c.Tasks, mvp.TaskCount{State: mvp.State(a), Workload: mvp.Workload(b), N: n,
				Oldest: fromNanos(oldest)})
		} else {
			c.EndedAttempts = append(c.EndedAttempts, mvp.AttemptCount{FailureKind: mvp.FailureKind(a), N: n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count tasks: %w", db.mapErr(err))
	}
	return c, nil
}
