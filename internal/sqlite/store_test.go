package sqlite

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// TestEveryTransition checks all 8×8 pairs of states: the table's allowed ones are written with their event,
// every other one is refused with a conflict and leaves the task row, its attempts and its events as they were.
func TestEveryTransition(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	if len(mvp.States) != 8 {
		t.Fatalf("%d states", len(mvp.States))
	}
	allowed := 0
	for _, from := range mvp.States {
		for _, to := range mvp.States {
			task := create(t, db, t0)
			force(t, db, task.ID, from)
			before := snap(t, db, task.ID)
			at := t0.Add(time.Minute)
			next := ptr(at.Add(time.Hour))
			err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: from, To: to, At: at, NextRunAt: &next,
				PendingReason: ptr("waiting"), ErrorSummary: ptr("summary"), EventPayload: map[string]any{"k": "v"}})
			after := snap(t, db, task.ID)
			if !mvp.CanTransition(from, to) {
				if mvp.ErrorCode(err) != mvp.CodeConflict {
					t.Errorf("%s → %s: want a conflict, got %v", from, to, err)
				}
				if !sameSnapshot(before, after) {
					t.Errorf("%s → %s refused but something was written", from, to)
				}
				continue
			}
			allowed++
			if err != nil {
				t.Errorf("%s → %s allowed: %v", from, to, err)
				continue
			}
			got := after.Task
			if got.State != to || !got.UpdatedAt.Equal(at) || got.NextRunAt == nil || !got.NextRunAt.Equal(*next) ||
				got.PendingReason != "waiting" || got.ErrorSummary != "summary" {
				t.Errorf("%s → %s: task %+v", from, to, got)
			}
			if len(after.Events) != len(before.Events)+1 {
				t.Fatalf("%s → %s: %d events → %d", from, to, len(before.Events), len(after.Events))
			}
			ev := after.Events[len(after.Events)-1]
			p := payloadOf(t, ev)
			if ev.Type != mvp.EventStateTransition || !ev.TS.Equal(at) || p["from"] != string(from) ||
				p["to"] != string(to) || p["k"] != "v" {
				t.Errorf("%s → %s: event %s %s", from, to, ev.Type, ev.Payload)
			}
		}
	}
	if allowed == 0 {
		t.Fatal("no transition allowed at all")
	}
	task := create(t, db, t0)
	if err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: "BOGUS", To: mvp.StateQueued}); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("unknown state: %v", err)
	}
}

func TestCompareAndSet(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for round := 0; round < 30; round++ {
		task := create(t, db, t0)
		targets := []mvp.State{mvp.StatePendingResources, mvp.StateCanceled}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, to := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: to, At: t0})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: two winners", round)
				}
				winner = i
			case !errors.Is(err, mvp.ErrConflict):
				t.Fatalf("round %d: loser got %v, want ErrConflict", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no winner: %v", round, errs)
		}
		s := snap(t, db, task.ID)
		if s.Task.State != targets[winner] || len(s.Events) != 2 {
			t.Fatalf("round %d: state %s, %d events", round, s.Task.State, len(s.Events))
		}
	}

	// A stale From: the task moved on.
	task := create(t, db, t0)
	must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0}))
	before := snap(t, db, task.ID)
	err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0})
	if !errors.Is(err, mvp.ErrConflict) || mvp.ErrorCode(err) != mvp.CodeConflict {
		t.Errorf("stale From: %v", err)
	}
	if !sameSnapshot(before, snap(t, db, task.ID)) {
		t.Error("stale From wrote something")
	}
	err = db.Apply(ctx, mvp.Change{TaskID: "no-such-task", From: mvp.StateQueued, To: mvp.StateCanceled, At: t0})
	if !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
		t.Errorf("unknown task: %v", err)
	}
}

func TestChangeIsAtomic(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := create(t, db, t0)
	b := create(t, db, t0)
	sid := mvp.SubmissionID(a.ID, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}, EventType: mvp.EventSubmit}))
	ga := snap(t, db, a.ID)
	if ga.Task.LatestAttemptNo != 1 || len(ga.Task.Attempts) != 1 || ga.Task.Attempts[0].RaySubmissionID != sid ||
		payloadOf(t, ga.Events[len(ga.Events)-1])["attempt_no"] != float64(1) || ga.Events[len(ga.Events)-1].Type != mvp.EventSubmit {
		t.Fatalf("task a: %+v", ga)
	}

	// b's attempt reuses a's submission id: the insert fails after the task row was updated, so the whole
	// change must be undone.
	before := snap(t, db, b.ID)
	err := db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0.Add(time.Second),
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}, PendingReason: ptr("x")})
	if !errors.Is(err, mvp.ErrConflict) {
		t.Fatalf("duplicate submission id: %v", err)
	}
	if !sameSnapshot(before, snap(t, db, b.ID)) {
		t.Errorf("half-written change: %+v", snap(t, db, b.ID).Task)
	}
	// An update of an attempt that does not exist: same.
	err = db.Apply(ctx, mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 3, RayStatus: mvp.RayStopped}})
	if !errors.Is(err, mvp.ErrNotFound) {
		t.Fatalf("unknown attempt: %v", err)
	}
	if !sameSnapshot(before, snap(t, db, b.ID)) {
		t.Errorf("half-written change")
	}
	if !sameSnapshot(ga, snap(t, db, a.ID)) {
		t.Errorf("task a changed")
	}
}

func TestCreateTask(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := newTask(t0)
	next := t0.Add(time.Hour)
	task.NextRunAt = &next
	must(t, db.CreateTask(ctx, task))
	s := snap(t, db, task.ID)
	got := s.Task
	if got.ID != task.ID || got.Workload != task.Workload || got.Name != task.Name || got.State != mvp.StateQueued ||
		got.NNodes != 1 || got.GPUsPerNode != 4 || got.JobSpecYAML != task.JobSpecYAML ||
		string(got.SpecJSON) != string(task.SpecJSON) || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) ||
		got.NextRunAt == nil || !got.NextRunAt.Equal(next) || len(got.Attempts) != 0 || got.Attempts == nil {
		t.Errorf("round trip: %+v", got)
	}
	if len(s.Events) != 1 || s.Events[0].Type != mvp.EventCreated || payloadOf(t, s.Events[0])["state"] != "QUEUED" {
		t.Errorf("events %+v", s.Events)
	}

	dup := newTask(t0.Add(time.Second))
	dup.ID = task.ID
	if err := db.CreateTask(ctx, dup); !errors.Is(err, mvp.ErrConflict) || mvp.ErrorCode(err) != mvp.CodeConflict {
		t.Errorf("duplicate id: %v", err)
	}
	if !sameSnapshot(s, snap(t, db, task.ID)) {
		t.Error("duplicate changed the first task")
	}

	bad := newTask(t0)
	bad.State = mvp.StateRunning
	if err := db.CreateTask(ctx, bad); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("non-QUEUED: %v", err)
	}
	bad = newTask(t0)
	bad.Workload = "bogus"
	if err := db.CreateTask(ctx, bad); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("unknown workload (CHECK): %v", err)
	}
	if _, err := db.GetTask(ctx, bad.ID); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("refused task stored: %v", err)
	}
	if n, err := db.CountTasks(ctx); err != nil || n != 1 {
		t.Errorf("count %d %v", n, err)
	}
}

func TestUpdateAttemptAndAddEvent(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := create(t, db, t0)
	sid := mvp.SubmissionID(task.ID, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}}))
	start, end := t0.Add(time.Second), t0.Add(time.Minute)
	code := 3
	must(t, db.UpdateAttempt(ctx, &mvp.Attempt{TaskID: task.ID, No: 1, RayJobID: "02000000", RayStatus: mvp.RayFailed,
		FailureKind: mvp.FailureUserError, Message: "boom", DriverNodeID: "n1", StartTime: &start, EndTime: &end,
		ExitCode: &code, RaySubmissionID: "ignored"}, mvp.EventRayStatusSync, map[string]any{"ray_status": "FAILED"}))
	s := snap(t, db, task.ID)
	a := s.Task.Attempts[0]
	if s.Task.State != mvp.StateSubmitting || a.RaySubmissionID != sid || a.RayJobID != "02000000" ||
		a.RayStatus != mvp.RayFailed || a.FailureKind != mvp.FailureUserError || a.Message != "boom" ||
		a.DriverNodeID != "n1" || !a.StartTime.Equal(start) || !a.EndTime.Equal(end) || *a.ExitCode != 3 ||
		!a.CreatedAt.Equal(t0) {
		t.Errorf("attempt %+v", a)
	}
	last := s.Events[len(s.Events)-1]
	if p := payloadOf(t, last); last.Type != mvp.EventRayStatusSync || p["attempt_no"] != float64(1) || p["ray_status"] != "FAILED" {
		t.Errorf("event %s %s", last.Type, last.Payload)
	}
	err := db.UpdateAttempt(ctx, &mvp.Attempt{TaskID: task.ID, No: 2}, mvp.EventRayStatusSync, nil)
	if !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("unknown attempt: %v", err)
	}
	if !sameSnapshot(s, snap(t, db, task.ID)) {
		t.Error("refused update wrote something")
	}

	e := &mvp.Event{TaskID: task.ID, TS: t0, Type: mvp.EventLogsFetched, Payload: []byte(`{"bytes": 12}`)}
	must(t, db.AddEvent(ctx, e))
	s2 := snap(t, db, task.ID)
	if got := s2.Events[len(s2.Events)-1]; e.ID == 0 || got.ID != e.ID || string(got.Payload) != `{"bytes": 12}` {
		t.Errorf("added event %+v (id %d)", got, e.ID)
	}
	if err := db.AddEvent(ctx, &mvp.Event{TaskID: "no-such-task", TS: t0, Type: "X"}); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("event of unknown task: %v", err)
	}
	if err := db.AddEvent(ctx, &mvp.Event{TaskID: task.ID, Type: "X", Payload: []byte(`{`)}); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("bad payload: %v", err)
	}
}

func TestListTasksPaging(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	var all []*mvp.Task
	for i := 0; i < 120; i++ {
		task := newTask(t0.Add(time.Duration(i%7) * time.Second)) // many equal created_at: the id breaks ties
		if i%3 == 0 {
			task.Workload = mvp.WorkloadSFT
		}
		must(t, db.CreateTask(ctx, task))
		if i%4 == 0 {
			must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0}))
			task.State = mvp.StatePendingResources
		}
		all = append(all, task)
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	filters := []mvp.TaskFilter{
		{Limit: 7}, {}, {Limit: 500}, {Limit: 10000},
		{Limit: 9, Workload: mvp.WorkloadSFT},
		{Limit: 4, State: mvp.StatePendingResources},
		{Limit: 3, State: mvp.StatePendingResources, Workload: mvp.WorkloadSFT},
		{Limit: 5, State: mvp.StateRunning},
	}
	for _, f := range filters {
		var want []string
		for _, task := range all {
			if (f.State == "" || task.State == f.State) && (f.Workload == "" || task.Workload == f.Workload) {
				want = append(want, task.ID)
			}
		}
		limit := f.Limit
		if limit <= 0 {
			limit = DefaultListLimit
		}
		var got []string
		pages := 0
		for {
			page, next, err := db.ListTasks(ctx, f)
			must(t, err)
			pages++
			if len(page) > limit || (next != "" && len(page) != limit) {
				t.Fatalf("filter %+v: page of %d", f, len(page))
			}
			for _, task := range page {
				got = append(got, task.ID)
			}
			if next == "" {
				break
			}
			f.Cursor = next
			if pages > 200 {
				t.Fatal("paging does not end")
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("filter %+v: got %d tasks %v\nwant %d %v", f, len(got), got, len(want), want)
		}
	}
	for _, c := range []string{"!!", base64.RawURLEncoding.EncodeToString([]byte("garbage")),
		base64.RawURLEncoding.EncodeToString([]byte("12:"))} {
		_, _, err := db.ListTasks(ctx, mvp.TaskFilter{Cursor: c})
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != "cursor" {
			t.Errorf("bad cursor %q: %v", c, err)
		}
	}
}

func TestEventsPaging(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := create(t, db, t0)
	other := create(t, db, t0)
	for i := 0; i < 250; i++ {
		must(t, db.AddEvent(ctx, &mvp.Event{TaskID: a.ID, TS: t0, Type: "X", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))}))
		if i%50 == 0 {
			must(t, db.AddEvent(ctx, &mvp.Event{TaskID: other.ID, TS: t0, Type: "Y"}))
		}
	}
	for _, limit := range []int{0, 7, 1000, 5000} {
		var got []*mvp.Event
		cursor := ""
		for {
			evs, next, err := db.Events(ctx, a.ID, cursor, limit)
			must(t, err)
			got = append(got, evs...)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(got) != 251 || got[0].Type != mvp.EventCreated {
			t.Fatalf("limit %d: %d events", limit, len(got))
		}
		for i, e := range got {
			if e.TaskID != a.ID || (i > 0 && e.ID <= got[i-1].ID) {
				t.Fatalf("limit %d: event %d out of order or of another task", limit, i)
			}
			if i > 0 && payloadOf(t, e)["i"] != float64(i-1) {
				t.Fatalf("limit %d: event %d payload %s", limit, i, e.Payload)
			}
		}
	}
	if evs, _, _ := db.Events(ctx, a.ID, "", 0); len(evs) != DefaultEventsLimit {
		t.Errorf("default limit: %d", len(evs))
	}
	if _, _, err := db.Events(ctx, a.ID, "%%%", 10); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestRunnableOrder(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	b := create(t, db, t0.Add(1*time.Second))
	a := create(t, db, t0.Add(2*time.Second))
	c := create(t, db, t0.Add(3*time.Second))
	a2 := create(t, db, t0.Add(2*time.Second)) // same time as a, larger id
	gone := create(t, db, t0)
	must(t, db.Apply(ctx, mvp.Change{TaskID: c.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0}))
	must(t, db.Apply(ctx, mvp.Change{TaskID: gone.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0}))
	run := create(t, db, t0)
	must(t, db.Apply(ctx, mvp.Change{TaskID: run.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(run.ID, 1)}}))
	q, err := db.Runnable(ctx)
	must(t, err)
	var ids []string
	for _, task := range q {
		ids = append(ids, task.ID)
	}
	if want := []string{b.ID, a.ID, a2.ID, c.ID}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("runnable %v, want %v", ids, want)
	}
	if q[3].State != mvp.StatePendingResources {
		t.Errorf("state %s", q[3].State)
	}
}

func TestActive(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	submit := func(task *mvp.Task, from mvp.State, no int) {
		t.Helper()
		must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: from, To: mvp.StateSubmitting, At: t0,
			NewAttempt: &mvp.Attempt{No: no, RaySubmissionID: mvp.SubmissionID(task.ID, no), CreatedAt: t0}}))
	}
	now := t0.Add(time.Hour)

	submitting := create(t, db, t0.Add(1*time.Second))
	submit(submitting, mvp.StateQueued, 1)

	running := create(t, db, t0.Add(2*time.Second))
	submit(running, mvp.StateQueued, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: running.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "01000000"}}))

	// Canceled while its Ray job runs: stays active until the attempt gets a terminal Ray status.
	canceled := create(t, db, t0.Add(3*time.Second))
	submit(canceled, mvp.StateQueued, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: canceled.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "02000000"}}))
	must(t, db.Apply(ctx, mvp.Change{TaskID: canceled.ID, From: mvp.StateRunning, To: mvp.StateCanceled, At: t0}))

	// Requeued after attempt 1 ended, then retried: only attempt 2 counts.
	retried := create(t, db, t0.Add(4*time.Second))
	submit(retried, mvp.StateQueued, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: retried.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources,
		At: t0, AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed, EndTime: &now}}))
	submit(retried, mvp.StatePendingResources, 2)

	// Ended in mvp's eyes (end time written) though Ray's status stayed empty: not followed.
	refused := create(t, db, t0.Add(5*time.Second))
	submit(refused, mvp.StateQueued, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: refused.ID, From: mvp.StateSubmitting, To: mvp.StateFailed, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, FailureKind: mvp.FailureUserError, EndTime: &now}}))

	// Waiting tasks without attempts are not active.
	create(t, db, t0)

	ids := func() []string {
		act, err := db.Active(ctx)
		must(t, err)
		var out []string
		for _, task := range act {
			if len(task.Attempts) != 1 || task.Attempts[0].No != task.LatestAttemptNo {
				t.Errorf("%s: attempts %+v", task.ID, task.Attempts)
			}
			out = append(out, fmt.Sprintf("%s/%d", task.ID, task.LatestAttemptNo))
		}
		return out
	}
	want := []string{submitting.ID + "/1", running.ID + "/1", canceled.ID + "/1", retried.ID + "/2"}
	if got := ids(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("active %v\nwant %v", got, want)
	}
	act, _ := db.Active(ctx)
	if act[2].State != mvp.StateCanceled || act[2].Attempts[0].RayJobID != "02000000" || act[2].Attempts[0].RayStatus != mvp.RayRunning {
		t.Errorf("canceled task %+v %+v", act[2], act[2].Attempts[0])
	}

	// The canceled task's job stops: it leaves.
	must(t, db.UpdateAttempt(ctx, &mvp.Attempt{TaskID: canceled.ID, No: 1, RayStatus: mvp.RayStopped,
		RayJobID: "02000000", EndTime: &now}, mvp.EventRayStatusSync, nil))
	want = []string{submitting.ID + "/1", running.ID + "/1", retried.ID + "/2"}
	if got := ids(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("active after stop %v\nwant %v", got, want)
	}
}

func TestFinishedInRayAndMarkRayDeleted(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	var tasks []*mvp.Task
	for i := 0; i < 4; i++ {
		task := create(t, db, t0)
		tasks = append(tasks, task)
		must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
			NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(task.ID, 1), CreatedAt: t0}}))
		end := t0.Add(time.Duration(i) * time.Minute)
		must(t, db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: end,
			AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RaySucceeded, EndTime: &end}}))
	}
	still := create(t, db, t0) // running: never listed
	must(t, db.Apply(ctx, mvp.Change{TaskID: still.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(still.ID, 1), CreatedAt: t0}}))
	got, err := db.FinishedInRay(ctx, 1, 2)
	must(t, err)
	if len(got) != 2 || got[0].TaskID != tasks[2].ID || got[1].TaskID != tasks[1].ID {
		t.Fatalf("finished %+v", got)
	}
	must(t, db.MarkRayDeleted(ctx, tasks[2].ID, 1))
	got, _ = db.FinishedInRay(ctx, 0, 10)
	if len(got) != 3 || got[0].TaskID != tasks[3].ID || got[1].TaskID != tasks[1].ID || got[2].TaskID != tasks[0].ID {
		t.Fatalf("after delete %+v", got)
	}
	if err := db.MarkRayDeleted(ctx, tasks[0].ID, 9); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("unknown attempt: %v", err)
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
