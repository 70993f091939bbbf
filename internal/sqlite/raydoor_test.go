package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// oldDatabase makes at path a database as a build that knew the migrations before version before left it, each
// recorded as applied at appliedAt (unix ns), and returns it with a function that runs a statement on it or fails
// the test.
func oldDatabase(t *testing.T, path string, before int, appliedAt int64) (*sql.DB, func(q string, args ...any)) {
	t.Helper()
	old, err := sql.Open("sqlite3", dsn(path, map[string][]string{"_foreign_keys": {"1"}}))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := old.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	mustExec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
	for _, m := range ms {
		if m.version >= before {
			break
		}
		mustExec(m.body)
		mustExec(`INSERT INTO schema_migrations VALUES (?, ?, ?)`, m.version, m.name, appliedAt)
	}
	return old, mustExec
}

// openOld closes old and opens the database at path as the current code does (its migrations applied), and reads
// task id from it.
func openOld(t *testing.T, old *sql.DB, path, id string) (*DB, *mvp.Task) {
	t.Helper()
	old.Close()
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("open the old database: %v", err)
	}
	got, err := db.GetTask(context.Background(), id)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db, got
}

// TestMigration0009KeepsAnOldDatabase: a database made by migrations 0001–0008 (with a task using every column,
// an attempt, an event and a schedule's link to the task) is opened by the current code: migration 0009 rebuilds
// tasks for ray_job and keeps every row, column value and index, and the foreign keys still hold afterwards.
func TestMigration0009KeepsAnOldDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	old, mustExec := oldDatabase(t, path, 9, 1)
	id := "mvp2-ppo-20251223-143201-0a0b"
	mustExec(`INSERT INTO tasks (task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json,
		created_at, updated_at, next_run_at, pending_reason, error_summary, latest_attempt_no, max_runtime_s, max_queued_s,
		heartbeat_timeout_s, after_ok, after_any, origin_id, resume_from)
		VALUES (?, 'ppo', 'old', 'PENDING_RESOURCES', 2, 4, 'workload: ppo', '{}', 5, 6, 7, 'why', 'err', 1, 100, 200,
		30, '["mvp2-ppo-20251223-143201-0001"]', '["mvp2-ppo-20251223-143201-0002"]', 'mvp2-ppo-20251223-143201-0003',
		'mvp2-ppo-20251223-143201-0004')`, id)
	mustExec(`INSERT INTO schedules (name, cron, timezone, overlap, jobspec_json, created_at, updated_at, last_fire_at)
		VALUES ('nightly', '@daily', 'UTC', 'skip', '{}', 1, 1, 1)`)
	mustExec(`INSERT INTO schedule_tasks (task_id, schedule_name, fire_at) VALUES (?, 'nightly', 1)`, id)
	mustExec(`INSERT INTO attempts (task_id, attempt_no, ray_submission_id, created_at, log_kept, ray_deleted)
		VALUES (?, 1, ?, 5, 0, 0)`, id, id+"--a01")
	mustExec(`INSERT INTO events (task_id, ts, event_type, payload_json) VALUES (?, 5, 'CREATED', '{}')`, id)
	if _, err := old.ExecContext(ctx, `INSERT INTO tasks (task_id, workload, name, state, nnodes, n_gpus_per_node,
		jobspec_yaml, spec_json, created_at, updated_at) VALUES ('x', 'ray_job', '', 'QUEUED', 1, 1, '', '{}', 1, 1)`); err == nil {
		t.Fatal("the old schema took a ray_job task; the test does not test the rebuild")
	}
	db, got := openOld(t, old, path, id)
	defer db.Close()
	next := fromNanos(7)
	// A waiting task (backing off after its attempt): migration 0020 clears the pending reason of one that no
	// longer waits.
	want := &mvp.Task{ID: id, Workload: mvp.WorkloadPPO, Name: "old", State: mvp.StatePendingResources, NNodes: 2, GPUsPerNode: 4,
		JobSpecYAML: "workload: ppo", SpecJSON: []byte("{}"), CreatedAt: fromNanos(5), UpdatedAt: fromNanos(6),
		NextRunAt: &next, PendingReason: "why", ErrorSummary: "err", LatestAttemptNo: 1, MaxRuntimeS: 100, MaxQueuedS: 200,
		HeartbeatTimeoutS: 30, AfterOK: []string{"mvp2-ppo-20251223-143201-0001"}, AfterAny: []string{"mvp2-ppo-20251223-143201-0002"},
		OriginID: "mvp2-ppo-20251223-143201-0003", ResumeFrom: "mvp2-ppo-20251223-143201-0004",
		Owner: mvp.Operator, Priority: 50, // migration 0010's defaults for rows from before users
		Attempts: []*mvp.Attempt{{TaskID: id, No: 1, RaySubmissionID: id + "--a01", CreatedAt: fromNanos(5)}}}
	got.Resubmits = nil // filled from other tasks, none here
	if !reflect.DeepEqual(got, want) {
		t.Errorf("task after the migration:\n got %+v\nwant %+v", got, want)
	}
	if evs, _, err := db.Events(ctx, id, "", 10); err != nil || len(evs) != 1 {
		t.Errorf("events after the migration: %v %v", evs, err)
	}
	var indexes []string
	rows, err := db.read.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks'
		AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		must(t, rows.Scan(&n))
		indexes = append(indexes, n)
	}
	rows.Close()
	if w := []string{"tasks_by_created", "tasks_by_origin", "tasks_by_owner", "tasks_by_resume_from", "tasks_by_state",
		"tasks_by_submission_id", "tasks_by_workload"}; !reflect.DeepEqual(indexes, w) {
		t.Errorf("indexes of tasks: %v, want %v", indexes, w)
	}
	// The foreign keys are enforced again: an attempt of no task is refused.
	err = db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO attempts (task_id, attempt_no, ray_submission_id, created_at) VALUES ('nope', 1, 'nope--a01', 1)`)
		return err
	})
	if err == nil {
		t.Error("an attempt of a task that does not exist was stored: foreign keys are off")
	}
	var links int
	must(t, db.read.QueryRowContext(ctx, `SELECT count(*) FROM schedule_tasks WHERE task_id = ?`, id).Scan(&links))
	if links != 1 {
		t.Errorf("the schedule's link to the task: %d rows", links)
	}
	// And the new workload is stored.
	rt := rayTask("mvp2-ray_job-20251223-143201-0c0d", "my-job")
	must(t, db.CreateTask(ctx, rt))
}

func rayTask(id, sid string) *mvp.Task {
	return &mvp.Task{ID: id, Workload: mvp.WorkloadRayJob, Name: "ray-job", State: mvp.StateQueued, SubmissionID: sid,
		Driver: map[string]float64{"CPU": 1.5, "memory": 1 << 30}, JobSpecYAML: `{"entrypoint":"echo hi"}`,
		SpecJSON: []byte(`{"entrypoint":"echo hi"}`), CreatedAt: t0, UpdatedAt: t0}
}

// TestMigration0015GivesOldAttemptsTheirRun: attempts recorded before migration 0014 (no running_at) that ran get
// Ray's start_time as running_at, so that running_at alone says whether an attempt ran (mvp.Task.Ran); an attempt
// recorded after 0014 that mvp never saw RUNNING keeps none, though Ray stamped its start_time at submission.
func TestMigration0015GivesOldAttemptsTheirRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	old, mustExec := oldDatabase(t, path, 15, 1000)
	id := "mvp2-ppo-20251223-143201-0a0c"
	mustExec(`INSERT INTO tasks (task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json,
		created_at, updated_at, latest_attempt_no) VALUES (?, 'ppo', '', 'PENDING_RESOURCES', 1, 1, '', '{}', 5, 6, 3)`, id)
	for _, a := range []struct {
		no      int
		created int64
		status  string
	}{{1, 500, "FAILED"}, {2, 600, ""}, {3, 2000, "FAILED"}} { // 1 ran before 0014; 2 never reached Ray; 3 after 0014
		mustExec(`INSERT INTO attempts (task_id, attempt_no, ray_submission_id, ray_status, created_at, start_time)
			VALUES (?, ?, ?, ?, ?, ?)`, id, a.no, fmt.Sprintf("%s--a%02d", id, a.no), a.status, a.created, a.created+1)
	}
	db, got := openOld(t, old, path, id)
	defer db.Close()
	ran := fromNanos(501)
	want := []*time.Time{&ran, nil, nil}
	for i, a := range got.Attempts {
		if (a.RunningAt == nil) != (want[i] == nil) || a.RunningAt != nil && !a.RunningAt.Equal(*want[i]) {
			t.Errorf("attempt %d: running_at %v, want %v", a.No, a.RunningAt, want[i])
		}
	}
}

// TestMigration0020ClearsTheReasonOfTasksThatNoLongerWait: since 78a8313 a task that leaves QUEUED or
// PENDING_RESOURCES loses its pending reason, but a task canceled (or ended) under an mvp before it kept it: after
// the walk-through's upgrade from c660345 a task canceled while it waited still said "fragmented: needs 1 node(s)
// with 2 GPU …" in mvp list, GET and the web page, forever. The migration clears those; a waiting task keeps its.
func TestMigration0020ClearsTheReasonOfTasksThatNoLongerWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	old, mustExec := oldDatabase(t, path, 20, 1000)
	canceled, waiting := "mvp2-ppo-20251223-143201-0a0d", "mvp2-ppo-20251223-143201-0a0e"
	for _, r := range []struct{ id, state string }{{canceled, "CANCELED"}, {waiting, "PENDING_RESOURCES"}} {
		mustExec(`INSERT INTO tasks (task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json,
			created_at, updated_at, pending_reason) VALUES (?, 'ppo', '', ?, 1, 2, '', '{}', 5, 6, 'fragmented: needs 1 node(s)')`,
			r.id, r.state)
	}
	db, got := openOld(t, old, path, canceled)
	defer db.Close()
	if got.PendingReason != "" {
		t.Errorf("a task canceled while it waited still has pending reason %q after the upgrade", got.PendingReason)
	}
	w, err := db.GetTask(context.Background(), waiting)
	if err != nil {
		t.Fatal(err)
	}
	if w.PendingReason == "" {
		t.Errorf("the waiting task lost its pending reason")
	}
}
