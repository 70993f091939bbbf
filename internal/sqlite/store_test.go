// The Store contract is tested by internal/mvp/storetest (run in storetest_test.go); the tests here are about
// this store only: its file, its migrations, its error mapping, its cursors and its page sizes.

package sqlite

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestOpenMakesFolderWALAndReadOnlyReaders(t *testing.T) {
	db, path := open(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	var mode string
	must(t, db.read.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	if mode != "wal" {
		t.Errorf("journal mode %q", mode)
	}
	if _, err := db.read.Exec(`DELETE FROM tasks`); err == nil {
		t.Error("a read connection wrote")
	}
	must(t, db.Ping(context.Background()))
}

func TestRefusesNonFile(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file::memory:?cache=shared", "/tmp/x.db?mode=memory"} {
		if db, err := Open(context.Background(), p, Options{}); err == nil {
			db.Close()
			t.Errorf("%q accepted", p)
		}
	}
}

func TestMigrationsRecordedOnceAcrossReopen(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	type row struct {
		Version int
		Name    string
		At      int64
	}
	read := func(db *DB) []row {
		rows, err := db.read.Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
		must(t, err)
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			must(t, rows.Scan(&r.Version, &r.Name, &r.At))
			out = append(out, r)
		}
		return out
	}
	first := read(db)
	ms, err := loadMigrations()
	must(t, err)
	if len(first) != len(ms) || len(ms) == 0 {
		t.Fatalf("%d migrations recorded for %d files", len(first), len(ms))
	}
	for i, m := range ms {
		if first[i].Version != m.version || first[i].Name != m.name {
			t.Errorf("recorded %+v for %s", first[i], m.name)
		}
	}
	task := create(t, db, t0)
	must(t, db.Close())
	for i := 0; i < 2; i++ {
		db2, err := Open(ctx, path, Options{})
		must(t, err)
		if again := read(db2); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Errorf("re-open changed schema_migrations: %v → %v", first, again)
		}
		if _, err := db2.GetTask(ctx, task.ID); err != nil {
			t.Errorf("task lost across re-open: %v", err)
		}
		must(t, db2.Close())
	}
}

// TestPageLimits checks this store's page sizes: the defaults when the caller gives none and the caps.
func TestPageLimits(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := create(t, db, t0)
	for i := 0; i < MaxEventsLimit+10; i++ {
		must(t, db.AddEvent(ctx, &mvp.Event{TaskID: task.ID, TS: t0, Type: "X"}))
	}
	for _, c := range []struct{ limit, want int }{{0, DefaultEventsLimit}, {-1, DefaultEventsLimit},
		{MaxEventsLimit + 5, MaxEventsLimit}, {3, 3}} {
		evs, next, err := db.Events(ctx, task.ID, "", c.limit)
		must(t, err)
		if len(evs) != c.want || next == "" {
			t.Errorf("events with limit %d: %d (next %q), want %d and a next page", c.limit, len(evs), next, c.want)
		}
	}
	for i := 0; i < MaxListLimit+10; i++ {
		create(t, db, t0)
	}
	for _, c := range []struct{ limit, want int }{{0, DefaultListLimit}, {-1, DefaultListLimit},
		{MaxListLimit + 5, MaxListLimit}, {3, 3}} {
		tasks, next, err := db.ListTasks(ctx, mvp.TaskFilter{Limit: c.limit})
		must(t, err)
		if len(tasks) != c.want || next == "" {
			t.Errorf("tasks with limit %d: %d (next %q), want %d and a next page", c.limit, len(tasks), next, c.want)
		}
	}
	if n, err := db.CountTasks(ctx); err != nil || n != MaxListLimit+11 {
		t.Errorf("count %d %v, want %d", n, err, MaxListLimit+11)
	}
}

// TestCursorsNotGivenOut checks cursors that are well-formed base64url but not this store's encoding.
func TestCursorsNotGivenOut(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := create(t, db, t0)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{b64("garbage"), b64("12:"), b64(":id"), b64("x:id")} {
		_, _, err := db.ListTasks(ctx, mvp.TaskFilter{Cursor: c})
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != "cursor" {
			t.Errorf("task cursor %q: %v", c, err)
		}
	}
	for _, c := range []string{b64("garbage"), b64("-1"), b64("") + "="} {
		_, _, err := db.Events(ctx, task.ID, c, 10)
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != "cursor" {
			t.Errorf("event cursor %q: %v", c, err)
		}
	}
}

func TestDiskFullIsUnavailable(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	create(t, db, t0)
	// Cap the file at its current size on the write connection: the next growth fails with SQLITE_FULL.
	must(t, db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`PRAGMA max_page_count = 1`) // clamps to the current page count
		return err
	}))
	big := newTask(t0)
	big.JobSpecYAML = strings.Repeat("x", 1<<20)
	err := db.CreateTask(ctx, big)
	var e *mvp.Error
	if !errors.As(err, &e) || e.Code != mvp.CodeUnavailable || !strings.Contains(e.Message, "disk is full") ||
		!strings.Contains(e.Message, filepath.Dir(path)) {
		t.Fatalf("disk full: %v", err)
	}
	if _, err := db.GetTask(ctx, big.ID); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("task stored on a full disk: %v", err)
	}

	// ENOSPC reported as an I/O error is disk full too.
	mapped := db.mapErr(fmt.Errorf("commit: %w", sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite,
		SystemErrno: syscall.ENOSPC}))
	if mvp.ErrorCode(mapped) != mvp.CodeUnavailable || !strings.Contains(mapped.Error(), "database disk is full: free space on "+filepath.Dir(path)) {
		t.Errorf("ENOSPC: %v", mapped)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	db, _ := open(t)
	must(t, db.Close())
	must(t, db.Close()) // twice is fine
	if err := db.CreateTask(context.Background(), newTask(t0)); mvp.ErrorCode(err) != mvp.CodeUnavailable {
		t.Errorf("write after Close: %v", err)
	}
	if err := db.Ping(context.Background()); err == nil {
		t.Error("ping after Close")
	}
}

// TestResubmitsUsesTheOriginIndex: reading a task looks up the tasks resubmitted from it; with a bound parameter
// SQLite cannot use the partial index tasks_by_origin (WHERE origin_id != ”) unless the query repeats that
// condition, and then every GET of a task scanned the whole table.
func TestResubmitsUsesTheOriginIndex(t *testing.T) {
	db, _ := open(t)
	if got := queryPlan(t, db, resubmitsSQL, "some-task"); !strings.Contains(got, "tasks_by_origin") {
		t.Fatalf("query plan %q does not use the index tasks_by_origin", got)
	}
}

// TestRunnableHonoursItsContext: the queue is read without handing ctx to the driver (which would start a goroutine
// per row), yet a canceled read stops with ctx's error, before the query and between rows.
func TestRunnableHonoursItsContext(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for i := 0; i < scanCheckEvery+10; i++ {
		task := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", i), Workload: mvp.WorkloadPPO,
			State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 1, JobSpecYAML: "x", SpecJSON: []byte("{}")}
		must(t, db.CreateTask(ctx, task))
	}
	q, err := db.Runnable(ctx)
	must(t, err)
	if len(q) != scanCheckEvery+10 {
		t.Fatalf("%d tasks in the queue", len(q))
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Runnable(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled read: %v", err)
	}
}

// TestATasksResubmitsAreItsOwners: a task lists the tasks resubmitted from it with their owners (an operator's
// resubmit of a user's task, from before a resubmit kept its origin's owner, is the operator's: the API shows it to
// the operator only).
func TestATasksResubmitsAreItsOwners(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	origin := newTask(t0)
	origin.Owner = "alice"
	must(t, db.CreateTask(ctx, origin))
	old := newTask(t0.Add(1e9))
	old.ID, old.OriginID, old.Owner = old.ID+"-op", origin.ID, mvp.Operator
	must(t, db.CreateTask(ctx, old))
	hers := newTask(t0.Add(2e9))
	hers.ID, hers.OriginID, hers.Owner = hers.ID+"-al", origin.ID, "alice"
	must(t, db.CreateTask(ctx, hers))
	got, err := db.GetTask(ctx, origin.ID)
	must(t, err)
	if !slices.Equal(got.Resubmits, []string{old.ID, hers.ID}) || !slices.Equal(got.ResubmitOwners, []string{mvp.Operator, "alice"}) {
		t.Errorf("resubmits %v of %v, want [%s %s] of [operator alice]", got.Resubmits, got.ResubmitOwners, old.ID, hers.ID)
	}
}

// TestAFullDiskIsInTheHealthUntilAWriteSucceeds: with the database's disk full every submit was 503 and every
// scheduler write failed (a run that ended stayed RUNNING in mvp), yet /healthz said "ok": a monitor of it saw
// nothing. CheckHealth, /healthz's database sentence, names the failed write until a write succeeds again.
func TestAFullDiskIsInTheHealthUntilAWriteSucceeds(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	create(t, db, t0)
	if err := db.CheckHealth(); err != nil {
		t.Fatalf("health of a database that takes writes: %v", err)
	}
	must(t, db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`PRAGMA max_page_count = 1`) // clamps to the current page count: the next growth fails
		return err
	}))
	big := newTask(t0)
	big.JobSpecYAML = strings.Repeat("x", 1<<20)
	if err := db.CreateTask(ctx, big); mvp.ErrorCode(err) != mvp.CodeUnavailable {
		t.Fatalf("write on a full disk: %v", err)
	}
	err := db.CheckHealth()
	if err == nil || !strings.Contains(err.Error(), "database disk is full: free space on "+filepath.Dir(path)) {
		t.Fatalf("health after a write failed on a full disk: %v; want the disk-full sentence", err)
	}
	if _, err := db.GetTask(ctx, big.ID); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("a read on the full disk: %v", err) // reads keep working, and do not clear it
	}
	if err := db.CheckHealth(); err == nil {
		t.Error("a read cleared the failed write from the health")
	}
	must(t, db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`PRAGMA max_page_count = 1073741823`) // space again
		return err
	}))
	create(t, db, t0)
	if err := db.CheckHealth(); err != nil {
		t.Errorf("health after a write succeeded again: %v", err)
	}
}
