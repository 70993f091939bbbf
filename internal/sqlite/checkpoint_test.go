package sqlite

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"
)

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatalf("stat the WAL: %v", err)
	}
	return fi.Size()
}

func TestCheckpointTruncatesTheWAL(t *testing.T) {
	db, path := open(t)
	// Few enough writes that SQLite's automatic checkpoint (at 1,000 pages) has not run yet.
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, create(t, db, t0).ID)
	}
	if walSize(t, path) == 0 {
		t.Fatal("the WAL is empty after 20 writes; the test proves nothing")
	}
	r, err := db.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Busy || r.WALBytesBefore <= 0 || r.WALBytesAfter != 0 {
		t.Errorf("checkpoint: %+v, want not busy and the WAL truncated from its size to 0", r)
	}
	if n := walSize(t, path); n != 0 {
		t.Errorf("WAL is %d bytes after a TRUNCATE checkpoint, want 0", n)
	}
	for _, id := range ids {
		if _, err := db.GetTask(context.Background(), id); err != nil {
			t.Fatalf("task %s after the checkpoint: %v", id, err)
		}
	}
	create(t, db, t0) // writes go on
}

func TestCheckpointGivesUpWhileAReaderHoldsTheWAL(t *testing.T) {
	db, path := open(t)
	create(t, db, t0)
	// A read transaction pins a snapshot: the WAL frames after it cannot be checkpointed until it ends.
	tx, err := db.read.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		create(t, db, t0)
	}
	r, err := db.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Busy {
		t.Errorf("checkpoint with a reader on an old snapshot: %+v, want busy", r)
	}
	create(t, db, t0) // the writer is not stuck behind the checkpoint that gave up
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r, err = db.Checkpoint(context.Background()); err != nil || r.Busy {
		t.Fatalf("checkpoint after the reader ended: %+v, %v", r, err)
	}
	if size := walSize(t, path); size != 0 {
		t.Errorf("WAL is %d bytes, want 0", size)
	}
}

func TestScheduleCheckpoints(t *testing.T) {
	db, path := open(t)
	if _, err := db.ScheduleCheckpoints("every second", slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a bad schedule was taken")
	}
	for i := 0; i < 100; i++ {
		create(t, db, t0)
	}
	stop, err := db.ScheduleCheckpoints("@every 1s", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.Now().Add(20 * time.Second)
	for walSize(t, path) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled checkpoint truncated the WAL within 20 s (%d bytes)", walSize(t, path))
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	stop() // twice is fine
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Checkpoint(context.Background()); err == nil {
		t.Error("a checkpoint after Close succeeded")
	}
}
