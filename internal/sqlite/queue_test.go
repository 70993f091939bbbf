package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// queueIDs is the ids of tasks, in order.
func queueIDs(ts []*mvp.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// openReloading opens a fresh database the way the service does, with Runnable reading the whole queue again
// every reload.
func openReloading(t *testing.T, reload time.Duration) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), Options{QueueReload: reload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sameAsStored fails the test unless Runnable (from its journal) returns exactly what a whole read of the queue
// returns now, field for field and in the same order.
func sameAsStored(t *testing.T, db *DB, step string) {
	t.Helper()
	ctx := context.Background()
	got, err := db.Runnable(ctx)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	want, err := db.readQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Runnable from its journal %v, the stored queue %v", step, queueIDs(got), queueIDs(want))
	}
}

// TestRunnableFollowsEveryWrite: with no whole reads in between (QueueReload of an hour), the queue Runnable keeps
// in memory stays equal to a fresh read of the stored queue through every kind of write to a task's row: a new
// task (also one older than the newest), a wait with a reason, a backoff, a submit, a requeue from a live state,
// progress, a cancel, a scheduled task, a lost compare-and-set and a Ray-door delete.
func TestRunnableFollowsEveryWrite(t *testing.T) {
	db := openReloading(t, time.Hour)
	ctx := context.Background()
	sameAsStored(t, db, "empty")

	a, b := create(t, db, t0), create(t, db, t0.Add(time.Second))
	sameAsStored(t, db, "two new tasks")
	// Every column a new task can set, so that the row the writer hands the queue is the row a read gives.
	full := newTask(t0.Add(1500 * time.Millisecond).Add(123 * time.Nanosecond).In(time.FixedZone("x", 3600)))
	next := t0.Add(time.Hour)
	full.Name, full.Owner, full.Priority, full.MaxRuntimeS, full.MaxQueuedS = "full", "alice", 70, 3600, 7200
	full.HeartbeatTimeoutS, full.AfterOK, full.AfterAny = 600, []string{a.ID}, []string{b.ID, a.ID}
	// resume_from names a task the store does not have: one it has, waiting, would write that folder itself.
	full.ResumeFrom, full.OriginID, full.SubmissionID = "mvp2-ppo-20251223-143201-dead", b.ID, "raysubmit_full"
	full.Driver, full.NextRunAt, full.PendingReason, full.MaxWaiting = map[string]float64{"CPU": 2}, &next, "r", 5
	full.UpdatedAt = full.CreatedAt.Add(time.Second)
	must(t, db.CreateTask(ctx, full))
	sameAsStored(t, db, "a new task with every column set")
	older := create(t, db, t0.Add(-time.Hour)) // created before the others (a clock step back): first in line
	sameAsStored(t, db, "a task older than the queue's newest")
	if q, _ := db.Runnable(ctx); q[0].ID != older.ID {
		t.Fatalf("queue order %v, want %s first", queueIDs(q), older.ID)
	}

	reason := "gpus_busy: 4 of 8 GPUs free"
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
		At: t0.Add(2 * time.Second), PendingReason: &reason}))
	sameAsStored(t, db, "a wait")
	later := t0.Add(time.Minute)
	laterP := &later
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StatePendingResources, To: mvp.StatePendingResources,
		At: t0.Add(3 * time.Second), NextRunAt: &laterP}))
	sameAsStored(t, db, "a backoff")
	var none *time.Time
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StatePendingResources, To: mvp.StatePendingResources,
		NextRunAt: &none, PendingReason: &reason, ErrorSummary: &reason})) // no At: the store's now
	sameAsStored(t, db, "a backoff cleared, at the store's now")

	att := &mvp.Attempt{TaskID: b.ID, No: 1, RaySubmissionID: b.ID + "--a01", CreatedAt: t0.Add(4 * time.Second)}
	must(t, db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: att.CreatedAt,
		NewAttempt: att}))
	sameAsStored(t, db, "a submit")
	up := *att
	up.RayStatus = mvp.RayRunning
	must(t, db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateSubmitting, To: mvp.StateRunning,
		At: t0.Add(5 * time.Second), AttemptUpdate: &up}))
	must(t, db.NoteProgress(ctx, b.ID, &mvp.Progress{AttemptNo: 1, Name: "step 3"}))
	sameAsStored(t, db, "running, with progress")
	up.RayStatus, up.FailureKind = mvp.RayFailed, mvp.FailureInsufficientResources
	must(t, db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateRunning, To: mvp.StatePendingResources,
		At: t0.Add(6 * time.Second), AttemptUpdate: &up, PendingReason: &reason}))
	sameAsStored(t, db, "a requeue from RUNNING")

	if err := db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateCanceled,
		At: t0.Add(7 * time.Second)}); err == nil {
		t.Fatal("a compare-and-set from the wrong state was applied")
	}
	sameAsStored(t, db, "a lost compare-and-set")
	must(t, db.Apply(ctx, mvp.Change{TaskID: older.ID, From: mvp.StateQueued, To: mvp.StateCanceled,
		At: t0.Add(8 * time.Second)}))
	sameAsStored(t, db, "a cancel")

	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	must(t, db.CreateSchedule(ctx, newSchedule("nightly", at)))
	st := newTask(at)
	must(t, db.RecordScheduleRun(ctx, mvp.ScheduleRun{Name: "nightly", PrevFireAt: at, FireAt: at.Add(time.Hour),
		Task: st}))
	sameAsStored(t, db, "a scheduled task")

	must(t, db.DeleteFromDoor(ctx, older.ID, t0.Add(9*time.Second)))
	sameAsStored(t, db, "a Ray-door delete of an ended task")

	if q, _ := db.Runnable(ctx); !reflect.DeepEqual(queueIDs(q), []string{a.ID, b.ID, full.ID, st.ID}) {
		t.Fatalf("queue %v, want %v", queueIDs(q), []string{a.ID, b.ID, full.ID, st.ID})
	}
}

// TestRunnableSlicesStayAsHandedOut: a queue Runnable returned is not changed by later writes (the scheduler and
// the API may hold one while the loop writes).
func TestRunnableSlicesStayAsHandedOut(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := create(t, db, t0)
	create(t, db, t0.Add(time.Second))
	first, err := db.Runnable(ctx)
	must(t, err)
	before := append([]*mvp.Task(nil), first...)
	reason := "gpus_busy"
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
		PendingReason: &reason}))
	create(t, db, t0.Add(-time.Second))
	if _, err := db.Runnable(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, before) || first[0].State != mvp.StateQueued {
		t.Fatalf("a queue handed out changed: %v", queueIDs(first))
	}
}

// TestRunnableReadsWholeAgainAfterQueueReload: a write that bypassed the journal (here, a row changed on another
// connection, as another process would) is seen once QueueReload has passed.
func TestRunnableReadsWholeAgainAfterQueueReload(t *testing.T) {
	db := openReloading(t, 50*time.Millisecond)
	ctx := context.Background()
	a := create(t, db, t0)
	if q, err := db.Runnable(ctx); err != nil || len(q) != 1 {
		t.Fatalf("queue %v, %v", q, err)
	}
	if _, err := db.maint.ExecContext(ctx, `UPDATE tasks SET state = 'CANCELED' WHERE task_id = ?`, a.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := db.Runnable(ctx)
		must(t, err)
		if len(q) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a change made on another connection is not seen after QueueReload: %v", queueIDs(q))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// knownOf is what Runnable hands mergeQueue after reading the tasks named by ids: each one's row, nil if not found.
func knownOf(ids []string, rows []*mvp.Task) map[string]*mvp.Task {
	known := map[string]*mvp.Task{}
	for _, id := range ids {
		known[id] = nil
	}
	for _, t := range rows {
		known[t.ID] = t
	}
	return known
}

// TestMergeQueue: rows read again replace their task in place, leave the queue when they no longer wait or are
// gone, and new waiting tasks are merged in queue order (created_at, then id).
func TestMergeQueue(t *testing.T) {
	task := func(id string, sec int, s mvp.State) *mvp.Task {
		return &mvp.Task{ID: id, CreatedAt: t0.Add(time.Duration(sec) * time.Second), State: s}
	}
	q := []*mvp.Task{task("a", 1, mvp.StateQueued), task("c", 3, mvp.StateQueued), task("e", 5, mvp.StateQueued)}
	for _, c := range []struct {
		name string
		ids  []string
		rows []*mvp.Task
		want []string
	}{
		{"nothing named", nil, nil, []string{"a", "c", "e"}},
		{"new tasks at the end", []string{"g", "f"}, []*mvp.Task{task("g", 7, mvp.StateQueued),
			task("f", 6, mvp.StateQueued)}, []string{"a", "c", "e", "f", "g"}},
		{"new tasks in between", []string{"d", "b", "0"}, []*mvp.Task{task("d", 4, mvp.StateQueued),
			task("b", 2, mvp.StateQueued), task("0", 0, mvp.StateQueued)}, []string{"0", "a", "b", "c", "d", "e"}},
		{"same second: by id", []string{"bb"}, []*mvp.Task{task("bb", 3, mvp.StateQueued)},
			[]string{"a", "bb", "c", "e"}},
		{"a wait keeps its place", []string{"c"}, []*mvp.Task{task("c", 3, mvp.StatePendingResources)},
			[]string{"a", "c", "e"}},
		{"submitted, canceled, gone", []string{"a", "e", "c"}, []*mvp.Task{task("a", 1, mvp.StateSubmitting),
			task("e", 5, mvp.StateCanceled)}, nil},
		{"a new task that no longer waits", []string{"z"}, []*mvp.Task{task("z", 9, mvp.StateRunning)},
			[]string{"a", "c", "e"}},
	} {
		got := queueIDs(mergeQueue(q, knownOf(c.ids, c.rows)))
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := mergeQueue(q, knownOf([]string{"c"}, []*mvp.Task{task("c", 3, mvp.StatePendingResources)})); got[1].State !=
		mvp.StatePendingResources || q[1].State != mvp.StateQueued {
		t.Error("a task read again did not replace the old one, or the old slice changed")
	}
}

// TestRunnableUnderConcurrentWrites: tasks created, waited, backed off and canceled from many goroutines while
// Runnable is called over and over; once the writes are done, the queue in memory equals the stored one.
func TestRunnableUnderConcurrentWrites(t *testing.T) {
	db := openReloading(t, time.Hour)
	ctx := context.Background()
	stop := make(chan struct{})
	reader := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				reader <- nil
				return
			default:
			}
			if _, err := db.Runnable(ctx); err != nil {
				reader <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				task := newTask(t0.Add(time.Duration(i%7) * time.Second))
				if err := db.CreateTask(ctx, task); err != nil {
					t.Error(err)
					return
				}
				reason := fmt.Sprintf("reason %d", i)
				cs := []mvp.Change{{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
					PendingReason: &reason}}
				switch i % 4 {
				case 1:
					cs = append(cs, mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: mvp.StateCanceled})
				case 2:
					cs = append(cs, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateCanceled}) // lost
				}
				for _, c := range cs {
					if _, err := db.ApplyAll(ctx, []mvp.Change{c}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-reader; err != nil {
		t.Fatal(err)
	}
	sameAsStored(t, db, "after concurrent writes")
	if q, _ := db.Runnable(ctx); len(q) != 8*30 {
		t.Fatalf("%d tasks wait, want %d", len(q), 8*30)
	}
}

// TestRunnableSlicesTakeNoAppend: two callers that append their own task to the queue Runnable handed each of them
// (the API's dry run does) must not write into the same array: the slices handed out have no room to grow into
// (found in review: a dry run could plan with another request's task).
func TestRunnableSlicesTakeNoAppend(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	var first *mvp.Task
	for i := 0; i < 5; i++ {
		if tk := create(t, db, t0.Add(time.Duration(i)*time.Second)); first == nil {
			first = tk
		}
	}
	for _, step := range []string{"a whole read", "a journal applied"} {
		if step == "a journal applied" {
			reason := "gpus_busy"
			must(t, db.Apply(ctx, mvp.Change{TaskID: first.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
				PendingReason: &reason}))
		}
		q1, err := db.Runnable(ctx)
		must(t, err)
		q2, err := db.Runnable(ctx)
		must(t, err)
		mine, theirs := &mvp.Task{ID: "dry-run-A"}, &mvp.Task{ID: "dry-run-B"}
		a := append(q1, mine)
		_ = append(q2, theirs)
		if a[len(a)-1] != mine {
			t.Fatalf("after %s: one caller's appended queue ends with %s, not its own task", step, a[len(a)-1].ID)
		}
		sameAsStored(t, db, step+", then appends by callers")
	}
}

// TestRunnableKeepsNoCallersVariables: the queue in memory keeps the values a change wrote, not the caller's
// variables it pointed at: a caller that reuses its reason variable after Apply returned must not change the queue
// (found in review: the journal kept &reason and read it at the next Runnable).
func TestRunnableKeepsNoCallersVariables(t *testing.T) {
	db := openReloading(t, time.Hour)
	ctx := context.Background()
	a := create(t, db, t0)
	_, err := db.Runnable(ctx)
	must(t, err)
	reason, summary := "first", "s1"
	next := t0.Add(time.Hour)
	nextP := &next
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
		At: t0, PendingReason: &reason, ErrorSummary: &summary, NextRunAt: &nextP}))
	reason, summary, next, nextP = "changed after Apply returned", "s2", t0.Add(2*time.Hour), nil
	sameAsStored(t, db, "a change whose caller reused its variables")
}

// TestTheQueueInMemoryHoldsNoSpecs: the queue Runnable keeps holds no task's jobspec or effective spec (a few
// thousand waiting tasks of 100 KB specs held half a GB), whether the task came through the journal or a whole read;
// TaskSpec gives them back as stored.
func TestTheQueueInMemoryHoldsNoSpecs(t *testing.T) {
	ctx := context.Background()
	db := openReloading(t, time.Hour)
	big := newTask(t0)
	pad := strings.Repeat("x", 100<<10)
	big.JobSpecYAML = "workload: ppo\nnote: " + pad + "\n"
	big.SpecJSON = json.RawMessage(`{"workload":"ppo","note":"` + pad + `"}`)
	must(t, db.CreateTask(ctx, big))
	check := func(how string) {
		t.Helper()
		q, err := db.Runnable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) != 1 || q[0].ID != big.ID {
			t.Fatalf("%s: queue %v, want [%s]", how, queueIDs(q), big.ID)
		}
		if len(q[0].JobSpecYAML) != 0 || len(q[0].SpecJSON) != 0 {
			t.Fatalf("%s: the queue holds a spec of %d + %d bytes, want none", how, len(q[0].JobSpecYAML),
				len(q[0].SpecJSON))
		}
	}
	check("from the journal")
	db.queue.mu.Lock()
	db.queue.loaded = time.Time{}
	db.queue.mu.Unlock()
	check("from a whole read")
	reason := "gpus_busy"
	must(t, db.Apply(ctx, mvp.Change{TaskID: big.ID, From: mvp.StateQueued, To: mvp.StatePendingResources,
		At: t0.Add(time.Second), PendingReason: &reason}))
	check("after a wait")

	yml, spec, err := db.TaskSpec(ctx, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	if yml != big.JobSpecYAML || string(spec) != string(big.SpecJSON) {
		t.Fatalf("TaskSpec gave %d + %d bytes, want the %d + %d stored", len(yml), len(spec), len(big.JobSpecYAML),
			len(big.SpecJSON))
	}
	if _, _, err := db.TaskSpec(ctx, "mvp2-nope"); !errors.Is(err, mvp.ErrNotFound) {
		t.Fatalf("TaskSpec of an unknown task: %v, want ErrNotFound", err)
	}
}
