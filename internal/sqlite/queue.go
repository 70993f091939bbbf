package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// DefaultQueueReload is how often Runnable reads the whole queue again although its journal says what changed
// (Options.QueueReload): a safety net for a write that bypassed the journal, such as another process writing the
// same file, which mvp does not do.
const DefaultQueueReload = time.Minute

// maxJournal bounds the task ids the journal holds between two reads of the queue; past it, the next read is a
// whole one.
const maxJournal = 1 << 20

// queueCache keeps the waiting tasks in memory for Runnable. The scheduler reads the queue at every pass and the
// queue can be tens of thousands deep: reading every row again took most of the loop's CPU under a burst of
// submits. Instead, every committed write of a task's row names the task in a journal (the writer calls note
// after its commit and before it answers the callers), and Runnable reads only the rows the journal names since
// its last read. The journal may name a task more often than needed (a write rolled back to its savepoint): the
// row is read again and found as it is.
type queueCache struct {
	mu     sync.Mutex  // held by Runnable from the journal's take to the cache's update
	tasks  []*mvp.Task // QUEUED and PENDING_RESOURCES, in queue order; replaced, never changed in place
	loaded time.Time   // when the whole queue was last read; zero: read it whole next time
	every  time.Duration

	jmu      sync.Mutex
	journal  []string
	overflow bool
}

// note records, after a commit, the tasks whose rows it wrote.
func (q *queueCache) note(ids []string) {
	if len(ids) == 0 {
		return
	}
	q.jmu.Lock()
	defer q.jmu.Unlock()
	if q.overflow || len(q.journal)+len(ids) > maxJournal {
		q.overflow, q.journal = true, nil
		return
	}
	q.journal = append(q.journal, ids...)
}

// take empties the journal and returns what it held.
func (q *queueCache) take() (ids []string, overflow bool) {
	q.jmu.Lock()
	defer q.jmu.Unlock()
	ids, overflow = q.journal, q.overflow
	q.journal, q.overflow = nil, false
	return ids, overflow
}

// Runnable returns the QUEUED and PENDING_RESOURCES tasks, without attempts, oldest first (created_at, then task
// id). The tasks and the slice are shared with later calls: callers must not change them.
//
// It reads only the rows written since its last call (queueCache), and the whole queue at its first call, after
// an error and every Options.QueueReload. The journal is emptied before the rows are read, so a write that commits
// during the read is read again next time.
func (db *DB) Runnable(ctx context.Context) ([]*mvp.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load queue: %w", err)
	}
	q := &db.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	ids, overflow := q.take()
	now := time.Now()
	if q.loaded.IsZero() || overflow || now.Sub(q.loaded) >= q.every || now.Before(q.loaded) {
		tasks, err := db.readQueue(ctx)
		if err != nil {
			q.loaded = time.Time{}
			return nil, fmt.Errorf("load queue: %w", err)
		}
		q.tasks, q.loaded = tasks, now
		return q.tasks, nil
	}
	if len(ids) == 0 {
		return q.tasks, nil
	}
	rows, err := db.readTasks(ctx, ids)
	if err != nil {
		q.loaded = time.Time{} // the journal is gone: read the whole queue next time
		return nil, fmt.Errorf("load queue: %w", err)
	}
	q.tasks = mergeQueue(q.tasks, ids, rows)
	return q.tasks, nil
}

// readQueue reads the whole queue, in queue order.
//
// The rows are stepped without ctx (with a cancellable context, mattn/go-sqlite3 starts a goroutine for every
// row), and ctx is checked every scanCheckEvery rows instead.
func (db *DB) readQueue(ctx context.Context) ([]*mvp.Task, error) {
	rows, err := db.read.QueryContext(context.WithoutCancel(ctx), `SELECT `+taskCols+` FROM tasks t
		WHERE t.state IN ('QUEUED', 'PENDING_RESOURCES') ORDER BY t.created_at, t.task_id`)
	if err != nil {
		return nil, db.mapErr(err)
	}
	return scanTasks(ctx, rows)
}

// readTasks reads the rows of the tasks named (in any order; a name may repeat, an unknown one is left out).
func (db *DB) readTasks(ctx context.Context, ids []string) ([]*mvp.Task, error) {
	seen := make(map[string]bool, len(ids))
	unique := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	list, err := json.Marshal(unique)
	if err != nil {
		return nil, err
	}
	rows, err := db.read.QueryContext(context.WithoutCancel(ctx), `SELECT `+taskCols+` FROM tasks t
		WHERE t.task_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, db.mapErr(err)
	}
	return scanTasks(ctx, rows)
}

// scanTasks reads rows of taskCols and closes them, checking ctx every scanCheckEvery rows.
func scanTasks(ctx context.Context, rows interface {
	scanner
	Next() bool
	Err() error
	Close() error
}) ([]*mvp.Task, error) {
	defer rows.Close()
	var out []*mvp.Task
	for rows.Next() {
		if len(out)%scanCheckEvery == scanCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// mergeQueue is queue (in queue order) after the tasks named by ids were read again as rows: a task that waits
// is added or replaced (keeping its place: created_at never changes), any other task named leaves the queue, as
// does one named and not found. The new tasks are sorted among themselves and merged in: O(queue + new × log new).
// queue is not changed.
func mergeQueue(queue []*mvp.Task, ids []string, rows []*mvp.Task) []*mvp.Task {
	named := make(map[string]*mvp.Task, len(ids))
	for _, id := range ids {
		named[id] = nil
	}
	for _, t := range rows {
		named[t.ID] = t
	}
	kept := make([]*mvp.Task, 0, len(queue)+len(rows))
	for _, t := range queue {
		if n, ok := named[t.ID]; ok {
			delete(named, t.ID)
			if n == nil || !n.State.Waiting() {
				continue
			}
			t = n
		}
		kept = append(kept, t)
	}
	var added []*mvp.Task
	for _, t := range named {
		if t != nil && t.State.Waiting() {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return kept
	}
	slices.SortFunc(added, queueOrder)
	if len(kept) == 0 || queueOrder(kept[len(kept)-1], added[0]) < 0 {
		return append(kept, added...) // the usual case: the new tasks are the newest
	}
	out := make([]*mvp.Task, 0, len(kept)+len(added))
	i, j := 0, 0
	for i < len(kept) && j < len(added) {
		if queueOrder(kept[i], added[j]) <= 0 {
			out = append(out, kept[i])
			i++
		} else {
			out = append(out, added[j])
			j++
		}
	}
	return append(append(out, kept[i:]...), added[j:]...)
}

// queueOrder is the queue's order, readQueue's ORDER BY: created_at, then task id (bytewise, as SQLite's BINARY).
func queueOrder(a, b *mvp.Task) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
