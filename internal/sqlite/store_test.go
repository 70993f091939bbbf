package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

var t0 = time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)

func open(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db", "mvp.sqlite3")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

var idSeq atomic.Int64

func newTask(at time.Time) *mvp.Task {
	n := idSeq.Add(1)
	return &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%08x", n), Workload: mvp.WorkloadPPO, Name: "t",
		State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 4, JobSpecYAML: "workload: ppo\n",
		SpecJSON: []byte(`{"workload":"ppo"}`), CreatedAt: at, UpdatedAt: at}
}

func create(t testing.TB, db *DB, at time.Time) *mvp.Task {
	t.Helper()
	task := newTask(at)
	if err := db.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	return task
}

// force puts a task in any state directly, bypassing the table (test set-up only).
func force(t testing.TB, db *DB, id string, s mvp.State) {
	t.Helper()
	if _, err := db.write.Exec(`UPDATE tasks SET state = ? WHERE task_id = ?`, s, id); err != nil {
		t.Fatal(err)
	}
}

func countEvents(t testing.TB, db *DB, id string) int {
	t.Helper()
	var n int
	if err := db.read.QueryRow(`SELECT count(*) FROM events WHERE task_id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEveryTransition checks all 8×8 pairs: the table's allowed ones are written with their event, every other
// one is refused with a conflict and writes nothing.
func TestEveryTransition(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for _, from := range mvp.States {
		for _, to := range mvp.States {
			task := create(t, db, t0)
			force(t, db, task.ID, from)
			before := countEvents(t, db, task.ID)
			err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: from, To: to, At: t0.Add(time.Second)})
			got, _ := db.GetTask(ctx, task.ID)
			after := countEvents(t, db, task.ID)
			if mvp.CanTransition(from, to) {
				if err != nil || got.State != to || after != before+1 {
					t.Errorf("%s → %s allowed: err %v, state %s, events %d→%d", from, to, err, got.State, before, after)
				}
				continue
			}
			if mvp.ErrorCode(err) != mvp.CodeConflict || got.State != from || after != before {
				t.Errorf("%s → %s must be refused: err %v, state %s, events %d→%d", from, to, err, got.State, before, after)
			}
		}
	}
}

func TestCompareAndSet(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := create(t, db, t0)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, mvp.ErrConflict) {
				t.Errorf("loser: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d winners", wins.Load())
	}
	err := db.Apply(ctx, mvp.Change{TaskID: "mvp2-ppo-20251223-143201-ffff", From: mvp.StateQueued, To: mvp.StateCanceled, At: t0})
	if !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
}

func TestChangeIsAtomic(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := create(t, db, t0)
	b := create(t, db, t0)
	sid := mvp.SubmissionID(a.ID, 1)
	if err := db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	before := countEvents(t, db, b.ID)
	// b's attempt reuses a's submission id: the insert fails, so nothing of the change may stay.
	err := db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}})
	if err == nil {
		t.Fatal("duplicate submission id accepted")
	}
	got, _ := db.GetTask(ctx, b.ID)
	if got.State != mvp.StateQueued || got.LatestAttemptNo != 0 || len(got.Attempts) != 0 || countEvents(t, db, b.ID) != before {
		t.Errorf("half-written change: %+v", got)
	}
	ga, _ := db.GetTask(ctx, a.ID)
	if ga.State != mvp.StateSubmitting || ga.LatestAttemptNo != 1 || len(ga.Attempts) != 1 || ga.Attempts[0].RaySubmissionID != sid {
		t.Errorf("task a: %+v", ga)
	}
}

func TestGroupCommitConcurrentCreatesSurviveReopen(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make(chan string, 64*50)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				task := newTask(t0)
				if err := db.CreateTask(ctx, task); err != nil {
					t.Error(err)
					return
				}
				ids <- task.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	db.Close()
	db2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for id := range ids {
		if _, err := db2.GetTask(ctx, id); err != nil {
			t.Fatalf("acknowledged task %s lost: %v", id, err)
		}
	}
	if n, _ := db2.CountTasks(ctx); n != 64*50 {
		t.Errorf("count %d", n)
	}
	var migs int
	db2.read.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&migs)
	files, _ := migrations.ReadDir("migrations")
	if migs != len(files) {
		t.Errorf("%d migrations recorded for %d files", migs, len(files))
	}
}

func TestBatchWithOneConflictCommitsTheOthers(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	dup := create(t, db, t0)
	var wg sync.WaitGroup
	errs := make([]error, 40)
	tasks := make([]*mvp.Task, 40)
	for i := range tasks {
		tasks[i] = newTask(t0)
		if i == 20 {
			tasks[i].ID = dup.ID
		}
	}
	for i := range tasks {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = db.CreateTask(ctx, tasks[i]) }(i)
	}
	wg.Wait()
	for i, err := range errs {
		if i == 20 {
			if !errors.Is(err, mvp.ErrConflict) {
				t.Errorf("duplicate id: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("task %d: %v", i, err)
		} else if _, err := db.GetTask(ctx, tasks[i].ID); err != nil {
			t.Errorf("task %d lost: %v", i, err)
		}
	}
}

func TestCanceledContextIsNotWritten(t *testing.T) {
	db, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	task := newTask(t0)
	if err := db.CreateTask(ctx, task); err == nil {
		if _, gerr := db.GetTask(context.Background(), task.ID); gerr != nil {
			t.Errorf("reported written but absent: %v", gerr)
		}
	} else if _, gerr := db.GetTask(context.Background(), task.ID); !errors.Is(gerr, mvp.ErrNotFound) {
		t.Errorf("reported failed but present")
	}
}

func TestListPaging(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		task := newTask(t0.Add(time.Duration(i%7) * time.Second)) // equal created_at within groups
		if i%3 == 0 {
			task.Workload = mvp.WorkloadSFT
		}
		if err := db.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []mvp.TaskFilter{{Limit: 7}, {Limit: 50, Workload: mvp.WorkloadSFT}, {Limit: 500}} {
		seen := map[string]bool{}
		var last *mvp.Task
		for {
			page, next, err := db.ListTasks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range page {
				if seen[task.ID] {
					t.Fatalf("duplicate %s", task.ID)
				}
				if last != nil && (task.CreatedAt.After(last.CreatedAt) || (task.CreatedAt.Equal(last.CreatedAt) && task.ID > last.ID)) {
					t.Fatalf("not newest first")
				}
				if f.Workload != "" && task.Workload != f.Workload {
					t.Fatalf("filter")
				}
				seen[task.ID], last = true, task
			}
			if next == "" {
				break
			}
			f.Cursor = next
		}
		want := 120
		if f.Workload == mvp.WorkloadSFT {
			want = 40
		}
		if len(seen) != want {
			t.Errorf("filter %+v: %d tasks, want %d", f, len(seen), want)
		}
	}
	if _, _, err := db.ListTasks(ctx, mvp.TaskFilter{Cursor: "!!"}); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestEventsPagingRunnableAndActive(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := create(t, db, t0.Add(2*time.Second))
	b := create(t, db, t0.Add(1*time.Second))
	c := create(t, db, t0.Add(3*time.Second))
	for i := 0; i < 25; i++ {
		if err := db.AddEvent(ctx, &mvp.Event{TaskID: a.ID, TS: t0, Type: "X", Payload: []byte(`{"i":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	n, cursor := 0, ""
	for {
		evs, next, err := db.Events(ctx, a.ID, cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
		if next == "" {
			break
		}
		cursor = next
	}
	if n != 26 {
		t.Errorf("events %d", n)
	}
	q, _ := db.Runnable(ctx)
	if len(q) != 3 || q[0].ID != b.ID || q[1].ID != a.ID || q[2].ID != c.ID {
		t.Errorf("runnable order wrong")
	}
	// a runs; then it is canceled while its Ray job is still RUNNING: it stays active until the attempt ends.
	sid := mvp.SubmissionID(a.ID, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}}))
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "02000000"}}))
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateRunning, To: mvp.StateCanceled, At: t0}))
	act, _ := db.Active(ctx)
	if len(act) != 1 || act[0].ID != a.ID || act[0].Attempts[0].RayJobID != "02000000" {
		t.Fatalf("active %+v", act)
	}
	must(t, db.UpdateAttempt(ctx, &mvp.Attempt{TaskID: a.ID, No: 1, RayStatus: mvp.RayStopped}, mvp.EventRayStatusSync, nil))
	if act, _ := db.Active(ctx); len(act) != 0 {
		t.Errorf("stopped attempt still active")
	}
	if q, _ := db.Runnable(ctx); len(q) != 2 {
		t.Errorf("runnable %d", len(q))
	}
}

func TestRefusesNonFile(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file::memory:?cache=shared"} {
		if _, err := Open(context.Background(), p, Options{}); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
