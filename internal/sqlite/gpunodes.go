package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// GPUNodesSeen returns how many GPU nodes were alive at the last healthy look at Ray that was recorded, 0 when
// none was (migration 0018).
func (db *DB) GPUNodesSeen(ctx context.Context) (int, error) {
	var n int
	err := db.read.QueryRowContext(ctx, `SELECT gpu_nodes FROM gpu_nodes_seen WHERE id = 1`).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the GPU nodes last seen: %w", db.mapErr(err))
	}
	return n, nil
}

// RecordGPUNodesSeen records that n GPU nodes were alive at a healthy look at Ray at at.
func (db *DB) RecordGPUNodesSeen(ctx context.Context, n int, at time.Time) error {
	err := db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO gpu_nodes_seen (id, gpu_nodes, seen_at) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET gpu_nodes = excluded.gpu_nodes, seen_at = excluded.seen_at`, n, nanos(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("record the GPU nodes seen: %w", err)
	}
	return nil
}
