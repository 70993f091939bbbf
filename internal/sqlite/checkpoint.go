package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mvp2/mvp/internal/recurring"
)

// CheckpointResult is what one PRAGMA wal_checkpoint(TRUNCATE) reported.
type CheckpointResult struct {
	// Busy is true when a reader or the writer kept the checkpoint from finishing; the next one tries again.
	Busy bool
	// WALBytesBefore and WALBytesAfter are the WAL file's sizes around the checkpoint (-1 if unknown). SQLite's
	// own frame counts are not reported: a TRUNCATE checkpoint that succeeds resets them to 0.
	WALBytesBefore, WALBytesAfter int64
}

// Checkpoint copies the WAL into the database file and truncates the WAL to zero bytes. SQLite's automatic
// checkpoints (every 1,000 pages) never shrink the WAL file, and one long reader can keep them from reaching its
// end, so a long-lived service checkpoints on a schedule too (see ScheduleCheckpoints).
//
// It runs on a connection of its own (db.maint) with a busy timeout of one second: a TRUNCATE checkpoint makes new writers
// wait while it waits for readers, so it gives up quickly (Busy) rather than stall submissions.
func (db *DB) Checkpoint(ctx context.Context) (CheckpointResult, error) {
	var r CheckpointResult
	if db.isClosing() {
		return r, errClosed
	}
	var busy, logFrames, checkpointed int
	r.WALBytesBefore = fileSize(db.path + "-wal")
	if err := db.maint.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames,
		&checkpointed); err != nil {
		return r, fmt.Errorf("checkpoint %s: %w", db.path, db.mapErr(err))
	}
	r.Busy = busy != 0
	r.WALBytesAfter = fileSize(db.path + "-wal")
	return r, nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// ScheduleCheckpoints runs Checkpoint on a cron schedule (standard 5-field cron or a descriptor such as
// "@every 10m" or "@hourly") until stop is called; stop waits for a checkpoint under way. Each run is logged.
func (db *DB) ScheduleCheckpoints(spec string, logger *slog.Logger) (stop func(), err error) {
	sched, err := recurring.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("checkpoint schedule %q: %w", spec, err)
	}
	c := cron.New(cron.WithLogger(cron.DiscardLogger)) // its only messages are about jobs, logged below
	c.Schedule(sched, cron.FuncJob(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		r, err := db.Checkpoint(ctx)
		if err != nil {
			logger.Warn("wal checkpoint", "err", err)
			return
		}
		logger.Info("wal checkpoint", "busy", r.Busy, "wal_bytes_before", r.WALBytesBefore,
			"wal_bytes_after", r.WALBytesAfter, "took_ms", time.Since(start).Milliseconds())
	}))
	c.Start()
	var once sync.Once
	return func() { once.Do(func() { <-c.Stop().Done() }) }, nil
}
