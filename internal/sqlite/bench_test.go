package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// clients is the number of concurrent submitters the group commit is measured with.
const clients = 64

// BenchmarkCreateTaskParallel measures durable task creations (task row + CREATED event, synchronous=FULL)
// through the group-committing writer with about 64 concurrent callers. Compare its ns/op with
// BenchmarkRawInsertFsync's.
func BenchmarkCreateTaskParallel(b *testing.B) {
	db, _ := open(b)
	ctx := context.Background()
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	before := db.Stats()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.CreateTask(ctx, newTask(t0)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	st := db.Stats()
	if txns := st.Transactions - before.Transactions; txns > 0 {
		b.ReportMetric(float64(st.Writes-before.Writes)/float64(txns), "writes/txn")
	}
}

// BenchmarkRawInsertFsync is the baseline: one task row per transaction on one connection, with the same DSN
// (WAL, synchronous=FULL) on the same kind of file and the same schema: the raw fsync-bound rate.
func BenchmarkRawInsertFsync(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raw.sqlite3")
	migrated, err := Open(context.Background(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	migrated.Close()
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", dsn(path, q))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ins, err := db.Prepare(insertTaskSQL)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := newTask(t0)
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(ins).Exec(insertTaskArgs(t, string(t.SpecJSON), t.CreatedAt, t.UpdatedAt)...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// readBench opens a database holding 2,000 tasks for a read benchmark and returns it, the tasks' ids and a context
// that can be canceled, as an HTTP request's is; the benchmark's ~64 readers are set.
func readBench(b *testing.B) (*DB, []string, context.Context) {
	db, _ := open(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = create(b, db, t0).ID
	}
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	return db, ids, ctx
}

// BenchmarkGetTaskParallel measures reads of one task with its attempts (what GET /api/v2/tasks/{id}, `mvp wait`
// and the Ray door's job status read) from a table of 2,000 tasks, by ~64 concurrent readers, each with a
// context that can be canceled, as an HTTP request's is.
func BenchmarkGetTaskParallel(b *testing.B) {
	db, ids, ctx := readBench(b)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[int(next.Add(1))%len(ids)]
			if _, err := db.GetTask(ctx, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkListTasksParallel measures pages of 20 tasks, newest first (GET /api/v2/tasks?limit=20, `mvp list`),
// from a table of 2,000 tasks, by ~64 concurrent readers with contexts that can be canceled.
func BenchmarkListTasksParallel(b *testing.B) {
	db, _, ctx := readBench(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if page, _, err := db.ListTasks(ctx, mvp.TaskFilter{Limit: 20}); err != nil || len(page) != 20 {
				b.Errorf("list: %d tasks, %v", len(page), err)
				return
			}
		}
	})
}
