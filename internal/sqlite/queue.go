package sqlite

import (
	"context"
	"database/sql"
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

// maxJournal bounds the writes the journal holds between two reads of the queue (no pass runs while Ray is
// down, and a new task's note holds its row); past it, the journal is dropped and the next read is a whole one.
const maxJournal = 1 << 16

// queueCache keeps the waiting tasks in memory for Runnable. The scheduler reads the queue at every pass and the
// queue can be tens of thousands deep: reading every row again took most of the loop's CPU under a burst of
// submits. Instead, every committed write of a task's row is noted in a journal (the writer notes its writes
// after its commit and before it answers the callers), and Runnable brings the queue up to date from the journal:
//   - a new task comes with its row as stored (CreateTask, a schedule's run): nothing to read;
//   - a compare-and-set comes with its change (Apply, ApplyAll), applied to the task as the queue holds it (a task
//     that stops waiting just leaves; one that starts to wait and is not in the queue is read);
//   - any other write, or one whose commit is not certain, names the task only: its row is read again.
//
// Why applying the journal gives the stored rows: there is one writer, and it notes a commit's writes before it
// starts the next transaction, so the journal is in commit order and a commit's notes precede every later commit.
// A change sets its fields to absolute values, so applying it again to a row that already holds it changes
// nothing. A row read after the journal was taken may hold commits whose notes come later; those notes, and the
// notes of every commit after them, are in the next journal, in order, and applying them again ends on the stored
// row.
type queueCache struct {
	mu     sync.Mutex           // held by Runnable from the journal's take to the cache's update
	tasks  []*mvp.Task          // QUEUED and PENDING_RESOURCES, in queue order; replaced, never changed in place
	byID   map[string]*mvp.Task // the same tasks by id
	loaded time.Time            // when the whole queue was last read; zero: read it whole next time
	every  time.Duration

	jmu      sync.Mutex
	journal  []queueNote
	overflow bool
}

// queueNote is one committed write of a task's row: with the whole row as stored, or with the change made to
// it, or neither (read the row again).
type queueNote struct {
	id     string
	op     int // the writer's request it belongs to, within its batch
	row    *mvp.Task
	change *mvp.Change
}

// note records, after a commit, the task rows it wrote.
func (q *queueCache) note(ns []queueNote) {
	if len(ns) == 0 {
		return
	}
	q.jmu.Lock()
	defer q.jmu.Unlock()
	if q.overflow || len(q.journal)+len(ns) > maxJournal {
		q.overflow, q.journal = true, nil
		return
	}
	q.journal = append(q.journal, ns...)
}

// take empties the journal and returns what it held.
func (q *queueCache) take() (ns []queueNote, overflow bool) {
	q.jmu.Lock()
	defer q.jmu.Unlock()
	ns, overflow = q.journal, q.overflow
	q.journal, q.overflow = nil, false
	return ns, overflow
}

// Runnable returns the QUEUED and PENDING_RESOURCES tasks, without attempts, oldest first (created_at, then task
// id). The tasks and the slice are shared with later calls: callers must not change them.
//
// It brings the queue kept in memory up to date from the journal (queueCache), and reads the whole queue at its
// first call, after an error and every Options.QueueReload. The journal is emptied before any row is read, so a
// write that commits during the read is applied again next time.
func (db *DB) Runnable(ctx context.Context) ([]*mvp.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load queue: %w", err)
	}
	q := &db.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	ns, overflow := q.take()
	now := time.Now()
	if q.loaded.IsZero() || overflow || now.Sub(q.loaded) >= q.every || now.Before(q.loaded) {
		tasks, err := db.readQueue(ctx)
		if err != nil {
			q.loaded = time.Time{}
			return nil, fmt.Errorf("load queue: %w", err)
		}
		q.set(tasks)
		q.loaded = now
		return q.handout(), nil
	}
	if len(ns) == 0 {
		return q.handout(), nil
	}
	known, reads := q.replay(ns)
	if len(reads) > 0 {
		rows, err := db.readTasks(ctx, reads)
		if err != nil {
			q.loaded = time.Time{} // the journal is gone: read the whole queue next time
			return nil, fmt.Errorf("load queue: %w", err)
		}
		for _, id := range reads {
			known[id] = nil // gone, unless read
		}
		for _, t := range rows {
			known[t.ID] = t
		}
	}
	q.apply(known)
	return q.handout(), nil
}

// handout is the queue as a caller gets it: with no room to grow, so that a caller's append (the API's dry run
// adds its task) copies instead of writing into the array other callers share.
func (q *queueCache) handout() []*mvp.Task { return slices.Clip(q.tasks) }

// set replaces the queue with tasks (in queue order).
func (q *queueCache) set(tasks []*mvp.Task) {
	q.tasks = tasks
	q.byID = make(map[string]*mvp.Task, len(tasks))
	for _, t := range tasks {
		q.byID[t.ID] = t
	}
}

// replay works out from the journal each task's row as it now stands where the journal tells it (known: the row,
// or nil for a task that no longer waits), and which tasks must be read.
func (q *queueCache) replay(ns []queueNote) (known map[string]*mvp.Task, reads []string) {
	known = make(map[string]*mvp.Task, len(ns))
	read := map[string]bool{}
	for i := range ns {
		n := &ns[i]
		if read[n.id] {
			continue // read after all its writes: the entries before and after are in the row read
		}
		switch {
		case n.row != nil:
			known[n.id] = n.row
		case n.change != nil && !n.change.To.Waiting():
			known[n.id] = nil
		case n.change != nil:
			base, ok := known[n.id]
			if !ok {
				base = q.byID[n.id]
			}
			if base == nil {
				read[n.id] = true // starts to wait (a requeue): its row is needed
				reads = append(reads, n.id)
				continue
			}
			known[n.id] = changed(base, n.change)
		default:
			read[n.id] = true
			reads = append(reads, n.id)
		}
	}
	for id := range read {
		delete(known, id)
	}
	return known, reads
}

// changed is t after the compare-and-set c, as the row would be read (Apply writes these fields; times go through
// their stored form).
func changed(t *mvp.Task, c *mvp.Change) *mvp.Task {
	n := *t
	n.State, n.UpdatedAt = c.To, fromNanos(nanos(c.At)) // prepareChange set At
	if c.NextRunAt != nil {
		n.NextRunAt = nil
		if at := *c.NextRunAt; at != nil && !at.IsZero() {
			v := fromNanos(nanos(*at))
			n.NextRunAt = &v
		}
	}
	if c.PendingReason != nil {
		n.PendingReason = *c.PendingReason
	}
	if c.ErrorSummary != nil {
		n.ErrorSummary = *c.ErrorSummary
	}
	if c.NewAttempt != nil {
		n.LatestAttemptNo, n.Progress = c.NewAttempt.No, nil
	}
	return &n
}

// apply puts the rows known into the queue: a waiting task is added or replaced, any other (or nil) leaves.
func (q *queueCache) apply(known map[string]*mvp.Task) {
	for id, t := range known {
		if t != nil && t.State.Waiting() {
			q.byID[id] = t
		} else {
			delete(q.byID, id)
		}
	}
	q.tasks = mergeQueue(q.tasks, known)
}

// readQueue reads the whole queue, in queue order.
//
// The rows are stepped without ctx (with a cancellable context, mattn/go-sqlite3 starts a goroutine for every
// row), and ctx is checked every scanCheckEvery rows instead.
func (db *DB) readQueue(ctx context.Context) ([]*mvp.Task, error) {
	rows, err := db.queryRead(context.WithoutCancel(ctx), `SELECT `+queueCols+` FROM tasks t
		WHERE t.state IN ('QUEUED', 'PENDING_RESOURCES') ORDER BY t.created_at, t.task_id`)
	if err != nil {
		return nil, db.mapErr(err)
	}
	return scanTasks(ctx, rows)
}

// readTasks reads the rows of the tasks named (each once, in any order; an unknown one is left out).
func (db *DB) readTasks(ctx context.Context, ids []string) ([]*mvp.Task, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := db.queryRead(context.WithoutCancel(ctx), `SELECT `+queueCols+` FROM tasks t
		WHERE t.task_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, db.mapErr(err)
	}
	return scanTasks(ctx, rows)
}

// scanTasks reads rows of taskCols and closes them, checking ctx every scanCheckEvery rows.
func scanTasks(ctx context.Context, rows *sql.Rows) ([]*mvp.Task, error) {
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

// mergeQueue is queue (in queue order) once the tasks in known are as known holds them: a task that waits is
// added or replaced (keeping its place: created_at never changes), and a task known as not waiting, or as nil
// (gone), leaves the queue. The new tasks are sorted among themselves and merged in: O(queue + new × log new).
// queue is not changed; known is consumed (the tasks found in queue are deleted from it).
func mergeQueue(queue []*mvp.Task, known map[string]*mvp.Task) []*mvp.Task {
	kept := make([]*mvp.Task, 0, len(queue)+len(known))
	for _, t := range queue {
		if n, ok := known[t.ID]; ok {
			delete(known, t.ID)
			if n == nil || !n.State.Waiting() {
				continue
			}
			t = n
		}
		kept = append(kept, t)
	}
	var added []*mvp.Task
	for _, t := range known {
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
