package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReadStatementsArePreparedOnceAndBounded: a read query is prepared once and reused by every later read of
// the same text; past maxReadStmts texts a query still answers, unprepared, and the cache does not grow.
func TestReadStatementsArePreparedOnceAndBounded(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	task := create(t, db, t0)
	for i := 0; i < 3; i++ {
		got, err := db.GetTask(ctx, task.ID)
		if err != nil || got.ID != task.ID {
			t.Fatalf("get task: %v %v", got, err)
		}
	}
	n := keptReadStmts(db)
	if n == 0 {
		t.Fatal("no read statement was kept prepared")
	}
	if _, err := db.GetTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if keptReadStmts(db) != n {
		t.Fatalf("a second read of the same query prepared it again: %d statements, then %d", n, keptReadStmts(db))
	}
	before := keptReadStmts(db)
	if err := db.queryRowRead(ctx, "SELECT * FROM no_such_table").Scan(new(int)); err == nil ||
		!strings.Contains(err.Error(), "no such table") {
		t.Fatalf("a query of a missing table: %v, want SQLite's error", err)
	}
	if keptReadStmts(db) != before {
		t.Fatal("a statement that failed to prepare was kept")
	}
	for i := 0; i < maxReadStmts+20; i++ {
		var v int
		if err := db.queryRowRead(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&v); err != nil || v != i {
			t.Fatalf("query %d: %d %v", i, v, err)
		}
	}
	if got := keptReadStmts(db); got != maxReadStmts {
		t.Fatalf("%d read statements kept, want the bound %d", got, maxReadStmts)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close with prepared read statements: %v", err)
	}
}

// TestAReadKeepsItsDeadlineButRunsToItsEndWhenOnlyCanceled: a read whose context can only be canceled (an HTTP
// request's) runs without it (go-sqlite3 would step each row in a goroutine of its own to watch it), so it still
// answers once its context is canceled; a read with a deadline keeps it, so a passed deadline stops it.
func TestAReadKeepsItsDeadlineButRunsToItsEndWhenOnlyCanceled(t *testing.T) {
	db, _ := open(t)
	task := create(t, db, t0)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := db.GetTask(canceled, task.ID); err != nil || got.ID != task.ID {
		t.Fatalf("a read under a canceled context without a deadline: %v %v, want the task", got, err)
	}
	if readCtx(canceled).Done() != nil {
		t.Fatal("the read's context can still be canceled")
	}
	late, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := db.GetTask(late, task.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := db.Ping(late); err == nil {
		t.Fatal("a ping past its deadline answered")
	}
}

// keptReadStmts is how many read statements db keeps prepared.
func keptReadStmts(db *DB) int {
	db.rmu.RLock()
	defer db.rmu.RUnlock()
	return len(db.rstmts)
}
