package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// GPUNodesSeen returns how many GPU nodes were alive at the last healthy look at Ray that was recorded, 0 when
// none was (migration 0018).
func (db *DB) GPUNodesSeen(ctx context.Context) (int, error) {
	var n int
	err := db.queryRowRead(ctx, `SELECT gpu_nodes FROM gpu_nodes_seen WHERE id = 1`).Scan(&n)
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

// GPUNodesKnown returns the GPU nodes recorded as seen alive (id, address, totals, labels; Alive is false, since
// the record does not say) and the most recorded alive at once (migration 0023); none and 0 when nothing was.
func (db *DB) GPUNodesKnown(ctx context.Context) ([]mvp.Node, int, error) {
	var most int
	err := db.queryRowRead(ctx, `SELECT most_gpu_nodes FROM gpu_nodes_seen WHERE id = 1`).Scan(&most)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("read the GPU nodes known: %w", db.mapErr(err))
	}
	rows, err := db.queryRead(ctx, `SELECT node_id, ip, total, labels FROM gpu_nodes_known ORDER BY node_id`)
	if err != nil {
		return nil, 0, fmt.Errorf("read the GPU nodes known: %w", db.mapErr(err))
	}
	defer rows.Close()
	var nodes []mvp.Node
	for rows.Next() {
		var n mvp.Node
		var total, labels string
		if err := rows.Scan(&n.ID, &n.IP, &total, &labels); err != nil {
			return nil, 0, fmt.Errorf("read the GPU nodes known: %w", db.mapErr(err))
		}
		if err := json.Unmarshal([]byte(total), &n.Total); err != nil {
			return nil, 0, fmt.Errorf("read the GPU nodes known: node %s's totals: %w", n.ID, err)
		}
		if err := json.Unmarshal([]byte(labels), &n.Labels); err != nil {
			return nil, 0, fmt.Errorf("read the GPU nodes known: node %s's labels: %w", n.ID, err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the GPU nodes known: %w", db.mapErr(err))
	}
	return nodes, most, nil
}

// RecordGPUNodesKnown replaces the record of the GPU nodes seen alive with nodes, and the most seen alive at once
// with most, at at.
func (db *DB) RecordGPUNodesKnown(ctx context.Context, nodes []mvp.Node, most int, at time.Time) error {
	type row struct{ id, ip, total, labels string }
	rows := make([]row, 0, len(nodes))
	for _, n := range nodes {
		total, err := json.Marshal(n.Total)
		if err != nil {
			return fmt.Errorf("record the GPU nodes known: node %s's totals: %w", n.ID, err)
		}
		labels, err := json.Marshal(n.Labels)
		if err != nil {
			return fmt.Errorf("record the GPU nodes known: node %s's labels: %w", n.ID, err)
		}
		rows = append(rows, row{n.ID, n.IP, string(total), string(labels)})
	}
	err := db.exec(ctx, func(w *wtx) error {
		if _, err := w.exec(`DELETE FROM gpu_nodes_known`); err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := w.exec(`INSERT INTO gpu_nodes_known (node_id, ip, total, labels, seen_at) VALUES (?, ?, ?, ?, ?)`,
				r.id, r.ip, r.total, r.labels, nanos(at)); err != nil {
				return err
			}
		}
		_, err := w.exec(`INSERT INTO gpu_nodes_seen (id, gpu_nodes, seen_at, most_gpu_nodes) VALUES (1, 0, ?, ?)
			ON CONFLICT (id) DO UPDATE SET most_gpu_nodes = excluded.most_gpu_nodes`, nanos(at), most)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the GPU nodes known: %w", err)
	}
	return nil
}
