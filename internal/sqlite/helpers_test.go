package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

var t0 = time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)

// open opens a fresh database file the way the service does.
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
	must(t, db.CreateTask(context.Background(), task))
	return task
}

// snapshot is everything stored about a task: its row, its attempts and its events.
type snapshot struct {
	Task   *mvp.Task
	Events []*mvp.Event
}

func snap(t testing.TB, db *DB, id string) snapshot {
	t.Helper()
	task, err := db.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var all []*mvp.Event
	cursor := ""
	for {
		evs, next, err := db.Events(context.Background(), id, cursor, MaxEventsLimit)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		if next == "" {
			return snapshot{Task: task, Events: all}
		}
		cursor = next
	}
}

func sameSnapshot(a, b snapshot) bool { return reflect.DeepEqual(a, b) }

// hold makes the writer busy with a request that blocks until the returned function is called, so that the
// requests sent meanwhile wait in the queue and are then taken together.
func hold(t testing.TB, db *DB) (release func()) {
	t.Helper()
	started, unblock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.exec(context.Background(), func(*wtx) error { close(started); <-unblock; return nil })
	}()
	<-started
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(unblock)
			if err := <-done; err != nil {
				t.Errorf("held request: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitQueued waits until n requests wait for the writer.
func waitQueued(t testing.TB, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(db.ops) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", len(db.ops), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
