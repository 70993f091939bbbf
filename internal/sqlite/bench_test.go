package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// BenchmarkCreateTaskParallel measures durable task inserts through the group-committing writer with about 64
// concurrent callers.
func BenchmarkCreateTaskParallel(b *testing.B) {
	db, _ := open(b)
	ctx := context.Background()
	b.SetParallelism(32) // × GOMAXPROCS (2 here) ≈ 64 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.CreateTask(ctx, newTask(t0)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRawInsertFsync is the baseline: one row per transaction, synchronous=FULL, WAL, same kind of file.
func BenchmarkRawInsertFsync(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raw.sqlite3")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO t (payload) VALUES (?)`, "workload: ppo\n"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
