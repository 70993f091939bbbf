package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestGroupCommitConcurrentCreatesSurviveReopen(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	const clients, each = 64, 50
	var wg sync.WaitGroup
	ids := make(chan string, clients*each)
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				task := newTask(t0)
				if err := db.CreateTask(ctx, task); err != nil {
					t.Error(err)
					return
				}
				ids <- task.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	st := db.Stats()
	t.Logf("%d writes in %d transactions (largest batch %d)", st.Writes, st.Transactions, st.LargestBatch)
	if st.Writes != clients*each || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
	must(t, db.Close())

	db2, err := Open(ctx, path, Options{})
	must(t, err)
	defer db2.Close()
	n := 0
	for id := range ids {
		n++
		if _, err := db2.GetTask(ctx, id); err != nil {
			t.Fatalf("acknowledged task %s lost: %v", id, err)
		}
	}
	if c, _ := db2.CountTasks(ctx); n != clients*each || c != clients*each {
		t.Errorf("%d acknowledged, %d stored", n, c)
	}
}

// TestBatchWithFailuresCommitsTheOthers queues, behind a held writer, creates of which one reuses an id and an
// Apply that loses its compare-and-set and one whose attempt insert fails after its task update, so that all are taken in one transaction: the two failures are reported
// to their own callers and undone alone, the others commit.
func TestBatchWithFailuresCommitsTheOthers(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	dup := create(t, db, t0)
	moved := create(t, db, t0)
	must(t, db.Apply(ctx, mvp.Change{TaskID: moved.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0}))
	movedBefore := snap(t, db, moved.ID)
	// half's change updates its row, then fails on its attempt (a submission id in use): only its savepoint
	// may be rolled back.
	taken := create(t, db, t0)
	sid := mvp.SubmissionID(taken.ID, 1)
	must(t, db.Apply(ctx, mvp.Change{TaskID: taken.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
		NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid}}))
	half := create(t, db, t0)
	halfBefore := snap(t, db, half.ID)

	release := hold(t, db)
	before := db.Stats()
	const n = 40
	tasks := make([]*mvp.Task, n)
	errs := make([]error, n+2)
	var wg sync.WaitGroup
	for i := range tasks {
		tasks[i] = newTask(t0)
		if i == 20 {
			tasks[i].ID = dup.ID
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = db.CreateTask(ctx, tasks[i]) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[n] = db.Apply(ctx, mvp.Change{TaskID: moved.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[n+1] = db.Apply(ctx, mvp.Change{TaskID: half.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
			NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid}})
	}()
	waitQueued(t, db, n+2)
	release()
	wg.Wait()

	after := db.Stats()
	if got := after.Transactions - before.Transactions; got != 2 { // the held request's and the batch's
		t.Errorf("%d transactions, want 2", got)
	}
	if after.LargestBatch < n+2 {
		t.Errorf("largest batch %d", after.LargestBatch)
	}
	for i, err := range errs[:n] {
		if i == 20 {
			if !errors.Is(err, mvp.ErrConflict) {
				t.Errorf("duplicate id: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("task %d: %v", i, err)
		} else if s := snap(t, db, tasks[i].ID); len(s.Events) != 1 {
			t.Errorf("task %d: %d events", i, len(s.Events))
		}
	}
	if !errors.Is(errs[n], mvp.ErrConflict) {
		t.Errorf("stale apply: %v", errs[n])
	}
	if !errors.Is(errs[n+1], mvp.ErrConflict) {
		t.Errorf("duplicate submission id: %v", errs[n+1])
	}
	if !sameSnapshot(halfBefore, snap(t, db, half.ID)) {
		t.Errorf("the failed change was half written: %+v", snap(t, db, half.ID).Task)
	}
	if !sameSnapshot(movedBefore, snap(t, db, moved.ID)) {
		t.Error("the lost compare-and-set wrote something")
	}
	if s := snap(t, db, dup.ID); s.Task.Name != "t" || len(s.Events) != 1 {
		t.Errorf("the duplicate touched the first task: %+v", s)
	}
}

func TestContextCancellation(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()

	// Done before the call: nothing is queued.
	done, cancel := context.WithCancel(ctx)
	cancel()
	task := newTask(t0)
	if err := db.CreateTask(done, task); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}

	// Done while queued behind a busy writer: the caller returns at once and the request is skipped.
	release := hold(t, db)
	qctx, qcancel := context.WithCancel(ctx)
	queued := newTask(t0)
	errc := make(chan error, 1)
	go func() { errc <- db.CreateTask(qctx, queued) }()
	waitQueued(t, db, 1)
	qcancel()
	if err := <-errc; !errors.Is(err, context.Canceled) { // returns while the writer is still held
		t.Errorf("queued then canceled: %v", err)
	}
	release()
	created := create(t, db, t0) // queued after the skipped request: the writer has passed it
	if _, err := db.GetTask(ctx, queued.ID); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("skipped request was written: %v", err)
	}
	if db.Stats().Skipped != 1 {
		t.Errorf("stats %+v", db.Stats())
	}

	// Done after the writer took it: the commit decides, and the caller is told the truth.
	tctx, tcancel := context.WithCancel(ctx)
	err := db.exec(tctx, func(w *wtx) error {
		tcancel()
		_, err := w.exec(insertEventSQL, created.ID, nanos(t0), "TAKEN", "{}")
		return err
	})
	if err != nil {
		t.Errorf("taken then canceled: %v", err)
	}
	if s := snap(t, db, created.ID); s.Events[len(s.Events)-1].Type != "TAKEN" {
		t.Error("taken request not written")
	}
}

// TestCloseDrainsQueuedWrites: writes queued before Close are committed, not dropped.
func TestCloseDrainsQueuedWrites(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	release := hold(t, db)
	const n = 10
	tasks := make([]*mvp.Task, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range tasks {
		tasks[i] = newTask(t0)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = db.CreateTask(ctx, tasks[i]) }()
	}
	waitQueued(t, db, n)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	release()
	wg.Wait()
	must(t, <-closed)
	db2, err := Open(ctx, path, Options{})
	must(t, err)
	defer db2.Close()
	for i, task := range tasks {
		if errs[i] != nil {
			t.Errorf("task %d: %v", i, errs[i])
		}
		if _, err := db2.GetTask(ctx, task.ID); err != nil {
			t.Errorf("task %d lost: %v", i, err)
		}
	}
}

// TestCloseWhileWriting: Close racing with writers never leaves a caller waiting forever, and every write
// reported committed is there.
func TestCloseWhileWriting(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok []string
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				task := newTask(t0)
				err := db.CreateTask(ctx, task)
				if err != nil {
					if mvp.ErrorCode(err) != mvp.CodeUnavailable {
						t.Errorf("create during Close: %v", err)
					}
					return
				}
				mu.Lock()
				ok = append(ok, task.ID)
				mu.Unlock()
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); db.Stats().Writes < 50 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	must(t, db.Close())
	wg.Wait()
	db2, err := Open(ctx, path, Options{})
	must(t, err)
	defer db2.Close()
	for _, id := range ok {
		if _, err := db2.GetTask(ctx, id); err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
	}
}

// batches records the sizes the writer reports to its Observer.
type batches struct {
	mvp.NopObserver
	mu    sync.Mutex
	sizes []int
}

func (b *batches) WriteBatch(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sizes = append(b.sizes, n)
}

// TestWriterReportsCommittedBatchSizes: the Observer hears one size per commit, counting only the writes that
// were committed (a refused one in the batch is not).
func TestWriterReportsCommittedBatchSizes(t *testing.T) {
	obs := &batches{}
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), Options{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	dup := create(t, db, t0)
	release := hold(t, db)
	const n = 10
	var wg sync.WaitGroup
	for i := 0; i <= n; i++ {
		task := newTask(t0)
		if i == n {
			task.ID = dup.ID // refused: the id is taken
		}
		wg.Add(1)
		go func() { defer wg.Done(); db.CreateTask(ctx, task) }()
	}
	waitQueued(t, db, n+1)
	release()
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := []int{1, 1, n}; !reflect.DeepEqual(obs.sizes, want) { // dup's create, the held request, the batch
		t.Errorf("batch sizes %v, want %v", obs.sizes, want)
	}
}

// TestABatchRunsWithoutSavepointsUnlessAWriteFailsHalfWay: the writer runs a batch's requests one after the other
// in one transaction, without a savepoint each (two statements per request, about 8 µs of a submission's CPU). A
// request that fails having written nothing (a duplicate id, a lost compare-and-set) needs none; one that fails
// after a write of its own makes the writer roll the batch back and run it again with a savepoint per request,
// so that only its part is undone (TestBatchWithFailuresCommitsTheOthers checks the outcome).
func TestABatchRunsWithoutSavepointsUnlessAWriteFailsHalfWay(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	batch := func(fns ...func(*wtx) error) []error {
		t.Helper()
		release := hold(t, db)
		errs := make([]error, len(fns))
		var wg sync.WaitGroup
		for i, fn := range fns {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = db.exec(ctx, fn) }()
			waitQueued(t, db, i+1) // in this order
		}
		release()
		wg.Wait()
		return errs
	}
	insert := func(key string) func(*wtx) error {
		return func(w *wtx) error {
			_, err := w.exec(`INSERT INTO web_logouts (session_key, until) VALUES (?, 1)`, key)
			return err
		}
	}
	clean := func(*wtx) error { return errors.New("refused before writing") }
	halfWay := func(w *wtx) error {
		if err := insert("half")(w); err != nil {
			return err
		}
		return errors.New("refused after a write")
	}
	count := func(key string) (n int) {
		t.Helper()
		must(t, db.read.QueryRowContext(ctx, `SELECT count(*) FROM web_logouts WHERE session_key = ?`, key).Scan(&n))
		return n
	}

	before := db.Stats()
	errs := batch(insert("a"), clean, insert("b"))
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || count("a") != 1 || count("b") != 1 {
		t.Fatalf("a batch with a clean failure: %v; rows a %d, b %d", errs, count("a"), count("b"))
	}
	if got := db.Stats().Reruns - before.Reruns; got != 0 {
		t.Errorf("a clean failure made the batch run again (%d)", got)
	}

	before = db.Stats()
	errs = batch(insert("c"), halfWay, insert("d"))
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || count("c") != 1 || count("d") != 1 || count("half") != 0 {
		t.Fatalf("a batch with a failure half way: %v; rows c %d, d %d, half %d", errs, count("c"), count("d"),
			count("half"))
	}
	if got := db.Stats().Reruns - before.Reruns; got != 1 {
		t.Errorf("the batch with a failure half way ran again %d times, want 1", got)
	}

	// A request whose failure ended the transaction (SQLite rolls it back itself on a full disk or an I/O error;
	// here the request does it) must not leave the requests after it to commit one by one outside any transaction.
	// The rollback goes around w.exec, as SQLite's own does (the failing statement changed no row).
	ended := func(w *wtx) error {
		if _, err := w.db.wconn.ExecContext(ctx, `ROLLBACK`); err != nil {
			return err
		}
		return errors.New("the transaction is gone")
	}
	before = db.Stats()
	errs = batch(insert("e"), ended, insert("f"))
	if errs[0] == nil || errs[1] == nil || errs[2] == nil || count("e") != 0 || count("f") != 0 {
		t.Errorf("a batch whose transaction a failure ended: %v; rows e %d, f %d (want every request failed, "+
			"nothing written)", errs, count("e"), count("f"))
	}
	if got := db.Stats().Reruns - before.Reruns; got != 0 {
		t.Errorf("the batch whose transaction ended ran again (%d)", got)
	}
}

// TestALoneWriteIsNotHeldToGather: the writer yields to gather more writes into a commit only after a commit that
// held several (other writers are about). Writes one at a time, each waiting for its commit, as the loop's own
// writes are while the API is quiet, never yield: a yield puts the writer behind every runnable goroutine, and
// with the processors busy a lone write then waited a scheduler time slice, 40 ms and more (found in review of
// the gather). After a burst of concurrent writes the writer gathers.
func TestALoneWriteIsNotHeldToGather(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if err := db.CreateTask(ctx, newTask(t0)); err != nil {
			t.Fatal(err)
		}
	}
	if st := db.Stats(); st.Yields != 0 || st.Transactions != 50 {
		t.Fatalf("50 writes one at a time: %+v, want 50 commits and no yield", st)
	}

	// A burst: 64 writers at once. Their commits share, and the writer gathers after a shared one.
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 20; i++ {
				if err := db.CreateTask(ctx, newTask(t0)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	st := db.Stats()
	t.Logf("after the burst: %+v", st)
	if st.LargestBatch < 2 {
		t.Skipf("the burst's writes never shared a commit (largest batch %d): nothing to gather after", st.LargestBatch)
	}
	if st.Yields == 0 {
		t.Errorf("the writer never gathered after commits of up to %d writes: %+v", st.LargestBatch, st)
	}
}
