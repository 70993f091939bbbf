package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"

	"github.com/mvp2/mvp/internal/mvp"
)

// The life of a write request: queued by its caller, then either taken by the writer (its outcome is then
// decided by the commit) or abandoned by its caller whose context ended first (the writer then skips it).
const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

// op is one write request waiting for the writer.
type op struct {
	ctx   context.Context
	fn    func(*wtx) error
	state atomic.Int32
	done  chan error // buffered: the writer never blocks on a caller
}

// wtx runs statements in the writer's open transaction. Statements are prepared once on the write connection
// and kept for the life of the DB; they run with a background context because once the writer took a request,
// its caller's context no longer decides anything (and mattn/go-sqlite3 starts a goroutine per call otherwise).
type wtx struct {
	db    *DB
	op    int         // the batch's request being run
	notes []queueNote // the task rows this transaction writes, for the queue kept in memory (queueCache)
	// written counts the statements that changed rows: a request that fails without changing it wrote nothing.
	written int
}

// touch records that the transaction writes task id's row: once it commits, Runnable reads that row again
// (queueCache). Every write of a task's row calls it, before it writes.
func (w *wtx) touch(id string) { w.notes = append(w.notes, queueNote{id: id, op: w.op}) }

// wrote says what the write that last called touch left in the row: the whole row (row), or the change it made
// to the row as it was (change). Runnable then needs no read when that request commits.
func (w *wtx) wrote(row *mvp.Task, change *mvp.Change) {
	n := &w.notes[len(w.notes)-1]
	n.row, n.change = row, change
}

func (w *wtx) stmt(query string) (*sql.Stmt, error) {
	if st := w.db.stmts[query]; st != nil {
		return st, nil
	}
	st, err := w.db.wconn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", query, err)
	}
	w.db.stmts[query] = st
	return st, nil
}

func (w *wtx) exec(query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(context.Background(), args...)
	if err == nil {
		// Rows changed by this transaction's statements (a statement that is not an INSERT, UPDATE or DELETE
		// may add the last one's count again: too many is safe, see runEach).
		if n, nerr := res.RowsAffected(); nerr != nil || n != 0 {
			w.written++
		}
	}
	return res, err
}

// exists reports whether query returns a row.
func (w *wtx) exists(query string, args ...any) (bool, error) {
	st, err := w.stmt(query)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(context.Background(), args...).Scan(&one); err {
	case nil:
		return true, nil
	case sql.ErrNoRows:
		return false, nil
	default:
		return false, err
	}
}

// exec hands fn to the writer and waits for its outcome: nil once the transaction holding it is committed (and
// synced), or fn's own error (its writes undone, the other requests of the batch unaffected), or the
// error that made the whole transaction fail. If ctx ends before the writer takes the request, the request is
// dropped and ctx's error returned; once taken, the caller waits for the commit, so that it never believes
// failed a write that was in fact committed.
func (db *DB) exec(ctx context.Context, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	db.mu.RLock()
	if db.closing {
		db.mu.RUnlock()
		return errClosed
	}
	select {
	case db.ops <- o:
		db.mu.RUnlock()
	case <-ctx.Done():
		db.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		return <-o.done
	}
}

// writer runs every write. It takes all the requests waiting (up to MaxBatch), runs them in one transaction
// (runEach), commits once, then answers each caller. fn may run twice (see run): it must read and write the
// database only. After Close it drains what was queued, then stops.
func (db *DB) writer() {
	defer close(db.done)
	defer db.closeWriter()
	batch := make([]*op, 0, db.max)
	for {
		select {
		case o := <-db.ops:
			db.run(db.gather(db.fill(append(batch[:0], o))))
		case <-db.stop:
			for {
				b := db.fill(batch[:0])
				if len(b) == 0 {
					return
				}
				db.run(b)
			}
		}
	}
}

// fill adds to batch the requests waiting, without blocking, up to MaxBatch.
func (db *DB) fill(batch []*op) []*op {
	for len(batch) < db.max {
		select {
		case o := <-db.ops:
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

// gatherRounds bounds how many times the writer yields for more requests before it commits a batch (gather).
const gatherRounds = 2

// gather lets the goroutines that are about to hand in a write do so before the writer commits batch, and adds
// what they handed in: it yields the processor (runtime.Gosched) and takes what came, until a yield brought
// nothing or gatherRounds yields have passed. Under load many callers are a few microseconds short of their
// write when the writer wakes (their answers to the last commit are still being sent), and a commit of one write
// costs nearly as much as one of fifty (the pages of every B-tree touched, the WAL frames and the fsync): what
// PostgreSQL's commit_delay and commit_siblings buy, without a sleep.
//
// It yields only when the writer's last commit held more than one write: other writers are about. A lone write
// (an idle service, or the loop's own writes while the API is quiet) is committed at once: a yield puts the
// writer behind every runnable goroutine, and with the processors busy (a deep queue's pass) that cost a lone
// write a scheduler time slice, 40 ms and more (found in review).
func (db *DB) gather(batch []*op) []*op {
	if db.lastBatch < 2 {
		return batch
	}
	for i := 0; i < gatherRounds && len(batch) < db.max; i++ {
		db.stats.yields.Add(1)
		runtime.Gosched()
		n := len(batch)
		if batch = db.fill(batch); len(batch) == n {
			break
		}
	}
	return batch
}

func (db *DB) closeWriter() {
	for _, st := range db.stmts {
		st.Close()
	}
	db.wconn.Close()
}

// run writes one batch in one transaction.
func (db *DB) run(batch []*op) {
	live := make([]*op, 0, len(batch))
	for _, o := range batch {
		if !o.state.CompareAndSwap(opQueued, opTaken) {
			db.stats.skipped.Add(1) // abandoned by its caller
			continue
		}
		if err := o.ctx.Err(); err != nil {
			db.stats.skipped.Add(1)
			o.done <- err
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	db.lastBatch = len(live) // read by gather, in the writer's goroutine only
	for n := int64(len(live)); ; {
		cur := db.stats.largest.Load()
		if n <= cur || db.stats.largest.CompareAndSwap(cur, n) {
			break
		}
	}

	results := make([]error, len(live))
	w := &wtx{db: db}
	// answer tells every caller its outcome, after the counters are updated (so a caller sees them) and the tasks
	// written are in the queue's journal (so a caller that wakes the scheduler has its write seen). On a failed
	// commit the journal names tasks that did not change, which costs a read and nothing else.
	answer := func(all error) {
		for i := range w.notes {
			if n := &w.notes[i]; all != nil || results[n.op] != nil {
				n.row, n.change = nil, nil // not written, or not for sure: read the row again
			}
		}
		db.queue.note(w.notes)
		failed := 0
		for i := range live {
			if results[i] == nil {
				results[i] = all
			}
			if results[i] != nil {
				failed++
			}
		}
		db.stats.failed.Add(int64(failed))
		db.stats.writes.Add(int64(len(live) - failed))
		for i, o := range live {
			o.done <- results[i]
		}
	}
	abort := func(what string, err error) {
		db.rollback(w)
		mapped := db.mapErr(err)
		db.noteWrite(err, mapped)
		answer(fmt.Errorf("%s: %w", what, mapped))
	}

	// A file no longer at its path (removed or replaced under mvp) takes writes that no later start will see:
	// refused, not acknowledged. One stat per batch.
	if err := db.CheckFile(); err != nil {
		answer(err)
		return
	}
	if _, err := w.exec(`BEGIN IMMEDIATE`); err != nil {
		abort("begin", err)
		return
	}
	ok, rerun, err := db.runEach(w, live, results, false)
	if rerun {
		// A request failed after writing: only a savepoint can undo its part and keep the others'. Run the batch
		// again, a savepoint per request (each request's fn is a pure function of the database it reads).
		db.stats.reruns.Add(1)
		db.rollback(w)
		clear(results)
		w.notes, w.written = w.notes[:0], 0
		if _, err := w.exec(`BEGIN IMMEDIATE`); err != nil {
			abort("begin", err)
			return
		}
		ok, _, err = db.runEach(w, live, results, true)
	}
	if err != nil {
		abort("write", err)
		return
	}
	if ok == 0 {
		db.rollback(w)
		answer(nil)
		return
	}
	if _, err := w.exec(`COMMIT`); err != nil {
		abort("commit", err)
		return
	}
	db.noteWrite(nil, nil)
	db.stats.transactions.Add(1)
	db.obs.WriteBatch(ok)
	answer(nil)
}

// runEach runs the batch's requests in the open transaction, one after the other. Without savepoints (the first
// run: a savepoint and its release are two statements per request) a request that fails having written nothing
// leaves nothing to undo, and one that fails after writing makes runEach stop and say rerun. With savepoints, a
// failed request's part is rolled back to its savepoint. err is a failure of the transaction itself (SQLite
// ends it on a full disk or an I/O error): every request of the batch fails then.
func (db *DB) runEach(w *wtx, live []*op, results []error, savepoints bool) (ok int, rerun bool, err error) {
	for i, o := range live {
		w.op = i
		if savepoints {
			if _, err := w.exec(`SAVEPOINT op`); err != nil {
				return 0, false, fmt.Errorf("savepoint: %w", err)
			}
		}
		written := w.written
		if err := o.fn(w); err == nil {
			ok++
		} else {
			results[i] = db.mapErr(err)
			db.noteWrite(err, results[i])
			switch {
			case savepoints:
				// If SQLite already rolled the whole transaction back, this fails, and so does the batch.
				if _, err := w.exec(`ROLLBACK TO op`); err != nil {
					return 0, false, fmt.Errorf("roll back to savepoint: %w", err)
				}
			case w.written != written && len(live) > 1:
				return 0, true, nil
			case !db.inTransaction():
				return 0, false, fmt.Errorf("the transaction ended: %w", results[i])
			}
		}
		if savepoints {
			if _, err := w.exec(`RELEASE op`); err != nil {
				return 0, false, fmt.Errorf("release savepoint: %w", err)
			}
		}
	}
	return ok, false, nil
}

// inTransaction reports whether the writer's connection has a transaction open (SQLite rolls one back by itself
// on some errors, and a statement run after that would commit on its own).
func (db *DB) inTransaction() bool {
	in := false
	_ = db.wconn.Raw(func(c any) error {
		if sc, ok := c.(*sqlite3.SQLiteConn); ok {
			in = !sc.AutoCommit()
		}
		return nil
	})
	return in
}

// rollback ends the open transaction, if SQLite has not already done so.
func (db *DB) rollback(w *wtx) {
	_, _ = w.exec(`ROLLBACK`) // "no transaction is active" when SQLite rolled back by itself
}
