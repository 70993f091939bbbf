// Package sqlite is mvp's Store on one SQLite file: WAL, one writer connection that commits concurrent writes
// in groups (one fsync for many callers; a failed write undone alone), a small pool of read connections, and
// embedded migrations recorded in schema_migrations.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/mvp2/mvp/internal/mvp"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the store. The zero value gives the defaults the service uses.
type Options struct {
	// MaxBatch bounds how many writes share one transaction (one fsync). Default 256.
	MaxBatch int
	// Readers is the size of the read pool. Default 4.
	Readers int
	// Observer is told the size of each committed batch; nil for none.
	Observer mvp.Observer
	// QueueReload is how often Runnable reads the whole queue again; DefaultQueueReload when 0.
	QueueReload time.Duration
}

// DB is the store. It implements mvp.Store. Every write goes through one writer goroutine that owns the only
// write connection; reads use a separate pool of query-only connections.
type DB struct {
	path  string
	write *sql.DB // one connection, owned by the writer goroutine once Open returns
	read  *sql.DB // query_only connections
	max   int
	// lastBatch is how many writes the writer's last transaction held (gather); the writer's goroutine's own.
	lastBatch int

	// mu guards closing against sends on ops: Close takes it exclusively, so once closing is set no sender is
	// half-way through a send and everything queued is in ops for the writer to drain.
	mu      sync.RWMutex
	closing bool
	ops     chan *op
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
	wconn   *sql.Conn
	stmts   map[string]*sql.Stmt
	// rstmts are the reader pool's prepared statements by query text (readStmt), guarded by rmu.
	rmu    sync.RWMutex
	rstmts map[string]*sql.Stmt
	stats  counters
	obs    mvp.Observer
	maint  *sql.DB // checkpoints: at most one connection, held only while one runs
	queue  queueCache

	file                 os.FileInfo                  // the database file as opened: CheckFile compares what is at path now
	writeFault           atomic.Pointer[writeFailure] // the last write failed on the storage (CheckHealth); nil once one commits
	madeFile, madeFolder bool                         // Created
	// migratedFrom, migratedTo and migrated: the schema version before and after this Open and the migrations
	// it applied (Migrated).
	migratedFrom, migratedTo int
	migrated                 []string
}

var _ mvp.Store = (*DB)(nil)

// Open opens (creating the file and its folder if needed) the database at path, applies the migrations that are
// missing and starts the writer. path must be a file: the store is durable or it is nothing.
func Open(ctx context.Context, path string, o Options) (*DB, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open database: %q must be a plain file path", path)
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.QueueReload <= 0 {
		o.QueueReload = DefaultQueueReload
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	_, ferr := os.Stat(filepath.Dir(abs))
	madeFolder := errors.Is(ferr, fs.ErrNotExist)
	// A zero-length file holds no queue either: SQLite makes a new database in it.
	fi, ferr := os.Stat(abs)
	madeFile := errors.Is(ferr, fs.ErrNotExist) || (ferr == nil && fi.Mode().IsRegular() && fi.Size() == 0)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}

	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite3", dsn(abs, q))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	// Readers: no journal-mode change (the writer set WAL, which is persistent), and query_only so that a bug
	// can never write outside the writer.
	rq := url.Values{}
	rq.Set("_busy_timeout", "5000")
	rq.Set("_foreign_keys", "1")
	rq.Set("_query_only", "1")
	r, err := sql.Open("sqlite3", dsn(abs, rq))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)

	// Checkpoints (see Checkpoint): a busy timeout of one second, so one that waits for readers gives up quickly
	// rather than hold up the writer. sql.Open connects on first use only.
	mq := url.Values{}
	mq.Set("_busy_timeout", "1000")
	m, err := sql.Open("sqlite3", dsn(abs, mq))
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	m.SetMaxOpenConns(1)
	m.SetMaxIdleConns(0)

	db := &DB{path: abs, write: w, read: r, maint: m, max: o.MaxBatch, ops: make(chan *op, 4*o.MaxBatch),
		stop: make(chan struct{}), done: make(chan struct{}), stmts: map[string]*sql.Stmt{}, obs: mvp.ObserverOr(o.Observer),
		queue: queueCache{every: o.QueueReload}}
	fail := func(err error) (*DB, error) {
		w.Close()
		r.Close()
		m.Close()
		return nil, err
	}
	var mode string
	if err := w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fail(fmt.Errorf("open database %s: %w", abs, err)) // SQLite's words: the path is said once, here
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("open database %s: journal mode is %q, not WAL (is the file on a network filesystem?)", abs, mode))
	}
	if err := db.migrate(ctx); err != nil {
		return fail(err)
	}
	// A database with every migration applied is opened without a write: try one, so that a file this process
	// may not write (owned by another user, say) is refused now, not at the first submission.
	if _, err := w.ExecContext(ctx, `UPDATE schema_migrations SET applied_at = applied_at
		WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		return fail(fmt.Errorf("open database %s: it cannot be written (%w): check that this user (uid %d) owns the "+
			"file and its folder, or set v2.sqlite.db_path to a file it may write", abs, db.mapErr(err), os.Getuid()))
	}
	if db.wconn, err = w.Conn(ctx); err != nil {
		return fail(fmt.Errorf("open database %s: take the write connection: %w", abs, err))
	}
	if db.file, err = os.Stat(abs); err != nil {
		return fail(fmt.Errorf("open database %s: %w", abs, err))
	}
	db.madeFile, db.madeFolder = madeFile, madeFolder
	go db.writer()
	return db, nil
}

// dsn builds a mattn/go-sqlite3 DSN. SQLite decodes %HH in a URI's path, so '%' is escaped; Open refuses '?' and
// '#' in the path.
func dsn(path string, q url.Values) string {
	return "file:" + strings.ReplaceAll(path, "%", "%25") + "?" + q.Encode()
}

// NotADatabase reports whether err is SQLite's answer for a file that is not an SQLite database (another file at
// the path, or one damaged in its header).
func NotADatabase(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrNotADB
}

// DiskFull reports whether err is the storage's answer that its disk is full: SQLite's SQLITE_FULL, an I/O error
// whose system error is ENOSPC or EDQUOT (how SQLite reports a full disk met while it opens the file, or writes its
// WAL), or such an error from the file system itself (the lock file).
func DiskFull(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrFull ||
			(se.Code == sqlite3.ErrIoErr && (se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT))
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Created reports what Open had to make: the database file (so the queue it serves starts empty) and its folder.
func (db *DB) Created() (file, folder bool) { return db.madeFile, db.madeFolder }

// Migrated returns the schema version the database had before this Open (0 for a new one), the version after it,
// and the names of the migrations Open applied, in order (none when it was up to date), so that a start that
// changed the schema can say so.
func (db *DB) Migrated() (from, to int, applied []string) {
	return db.migratedFrom, db.migratedTo, db.migrated
}

// CheckFile returns an error (mvp.CodeUnavailable) when the file at the database's path is no longer the one
// opened: removed, or replaced, with its folder perhaps. What would be written then is lost at the next start.
func (db *DB) CheckFile() error {
	now, err := os.Stat(db.path)
	if err == nil && os.SameFile(db.file, now) {
		return nil
	}
	what := "replaced by another file"
	if err != nil {
		what = "removed"
	}
	return mvp.Errorf(mvp.CodeUnavailable, "", "the database file %s was %s while mvp runs, so what it writes "+
		"now would be lost: put the file back, or restart mvp to open the one at v2.sqlite.db_path", db.path, what)
}

// CheckHealth is /healthz's word on the database: CheckFile's, else the last write that failed on the storage (a
// full disk, an I/O error, a read-only or corrupt file) while no write has succeeded since. Reads keep working on
// a full disk, so nothing else shows that every submit is refused and nothing the scheduler sees is recorded. It
// clears with the next write that commits (the scheduler's, or a submit).
func (db *DB) CheckHealth() error {
	if err := db.CheckFile(); err != nil {
		return err
	}
	return db.WriteFault()
}

// WriteFault names the last write that failed on the storage while no write has succeeded since, else nil: the
// database takes no writes now (a full disk). It reads no file: the scheduler asks it at every pass.
func (db *DB) WriteFault() error {
	if f := db.writeFault.Load(); f != nil {
		return fmt.Errorf("writes to the database fail (the last at %s, none has succeeded since): %w",
			f.at.UTC().Format(time.RFC3339), f.err)
	}
	return nil
}

// writeFailure is a write that failed on the database's storage: CheckHealth names it.
type writeFailure struct {
	at  time.Time
	err error
}

// noteWrite records the outcome of a write for CheckHealth: raw, the error as SQLite gave it, is a storage fault
// (mapped is what callers were told); nil raw, a commit, clears what was noted.
func (db *DB) noteWrite(raw, mapped error) {
	if raw == nil {
		if db.writeFault.Load() != nil {
			db.writeFault.Store(nil)
		}
		return
	}
	var se sqlite3.Error
	if !errors.As(raw, &se) {
		return
	}
	switch se.Code {
	case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
		db.writeFault.Store(&writeFailure{at: time.Now(), err: mapped})
	}
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// migration is one embedded file migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	body    string
}

func loadMigrations() ([]migration, error) {
	entries, err := migrations.ReadDir("migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), body: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies, in version order and one IMMEDIATE transaction each, every embedded migration not yet
// recorded in schema_migrations. The check is made inside the transaction, so two processes opening the same
// file cannot both apply a migration.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", db.mapErr(err))
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	var newest sql.NullInt64
	if err := db.write.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema_migrations: %w", db.mapErr(err))
	}
	if last := ms[len(ms)-1].version; newest.Valid && int(newest.Int64) > last {
		return fmt.Errorf("the database %s was %w (schema version %d; this binary knows up to %d): "+
			"run that mvp version, or restore the backup taken before the upgrade", db.path, ErrNewerSchema, newest.Int64, last)
	}
	// A migration may rebuild a table that others refer to (SQLite changes a CHECK only that way): as SQLite's
	// documented procedure says, foreign keys are off while migrations run (the pragma is a no-op inside a
	// transaction; the writer pool has exactly one connection, so it stays set), and each migration checks them
	// before it commits. They are on again before the writer starts.
	if _, err := db.write.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return fmt.Errorf("foreign keys off for migrations: %w", db.mapErr(err))
	}
	db.migratedFrom, db.migratedTo = int(newest.Int64), int(newest.Int64)
	for _, m := range ms {
		applied, err := db.applyMigration(ctx, m)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if applied {
			db.migrated, db.migratedTo = append(db.migrated, m.name), m.version
		}
	}
	if _, err := db.write.ExecContext(ctx, `PRAGMA foreign_keys = ON`); err != nil {
		return fmt.Errorf("foreign keys on after migrations: %w", db.mapErr(err))
	}
	var on int
	if err := db.write.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || on != 1 {
		return fmt.Errorf("foreign keys are not on after migrations (%d): %v", on, err)
	}
	return nil
}

// applyMigration applies m in its own transaction unless schema_migrations records it; applied says whether it
// did.
func (db *DB) applyMigration(ctx context.Context, m migration) (applied bool, err error) {
	tx, err := db.write.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return false, db.mapErr(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema_migrations: %w", db.mapErr(err))
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.body); err != nil {
		return false, db.mapErr(err)
	}
	var child string
	switch err := tx.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&child, new(any), new(any), new(any)); {
	case err == nil:
		return false, fmt.Errorf("a row of %s refers to a row that is not there", child)
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("check foreign keys: %w", db.mapErr(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UTC().UnixNano()); err != nil {
		return false, fmt.Errorf("record: %w", db.mapErr(err))
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit: %w", db.mapErr(err))
	}
	return true, nil
}

// Close refuses new writes, lets the writer commit everything already queued, stops it and closes the database.
// It is safe to call more than once.
func (db *DB) Close() error {
	var err error
	db.closed.Do(func() {
		db.mu.Lock()
		db.closing = true
		db.mu.Unlock()
		close(db.stop)
		<-db.done
		var errs []error
		db.rmu.Lock()
		for _, st := range db.rstmts {
			errs = append(errs, st.Close())
		}
		db.rmu.Unlock()
		err = errors.Join(append(errs, db.write.Close(), db.read.Close(), db.maint.Close())...)
	})
	return err
}

// maxReadStmts bounds the reader pool's prepared statements. The queries are the code's own, never built from
// user text: a few vary with a count (a jobspec's secrets, at most 50) or with the filters a list was given, about
// a hundred texts in all, and the one whose text grows with a count without bound (TaskStates' IN list) does not
// go through readStmt. A query past the bound is prepared on each use.
const maxReadStmts = 256

// readStmt is the reader pool's prepared statement for q, prepared once and kept until Close (database/sql
// prepares it again on each connection that runs it, once). Preparing the statement is most of the CPU of a
// point read, such as a task with its attempts: a GET of a task took about 3 times the CPU without it. ok is
// false when the bound is reached or the preparation failed; the caller then runs q unprepared, which reports
// the error, if any, itself.
func (db *DB) readStmt(ctx context.Context, q string) (st *sql.Stmt, ok bool) {
	db.rmu.RLock()
	st, ok = db.rstmts[q]
	full := len(db.rstmts) >= maxReadStmts
	db.rmu.RUnlock()
	if ok || full {
		return st, ok
	}
	st, err := db.read.PrepareContext(ctx, q)
	if err != nil {
		return nil, false
	}
	db.rmu.Lock()
	defer db.rmu.Unlock()
	if kept, ok := db.rstmts[q]; ok || len(db.rstmts) >= maxReadStmts { // prepared meanwhile, or the bound reached
		st.Close()
		return kept, ok
	}
	if db.rstmts == nil {
		db.rstmts = map[string]*sql.Stmt{}
	}
	db.rstmts[q] = st
	return st, true
}

// readCtx is the context a read runs under. go-sqlite3 steps every row of a query whose context can be canceled
// in a goroutine of its own (to interrupt it on cancel), and database/sql watches such a context in one more; on
// mvp serve under a mixed load of gets and lists, dropping both bought about a fifth more requests per second
// (BENCHMARKS.md). Each read is one task, one page or one walk of an index, so a read whose context could only be
// canceled (an HTTP request's, when its client goes away) runs to its end instead; a read given a deadline keeps
// it. A caller that makes many reads (the Ray door's job list) checks its own context between them.
func readCtx(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// queryRead runs the read query q on the reader pool, through its prepared statement.
func (db *DB) queryRead(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = readCtx(ctx)
	if st, ok := db.readStmt(ctx, q); ok {
		return st.QueryContext(ctx, args...)
	}
	return db.read.QueryContext(ctx, q, args...)
}

// queryRowRead runs the read query q, which returns at most one row, on the reader pool, through its prepared
// statement.
func (db *DB) queryRowRead(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = readCtx(ctx)
	if st, ok := db.readStmt(ctx, q); ok {
		return st.QueryRowContext(ctx, args...)
	}
	return db.read.QueryRowContext(ctx, q, args...)
}

// Ping checks that the writer is running and that the database file answers a query.
func (db *DB) Ping(ctx context.Context) error {
	if db.isClosing() {
		return errClosed
	}
	var n int
	if err := db.queryRowRead(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return fmt.Errorf("ping database %s: %w", db.path, db.mapErr(err))
	}
	return nil
}

// isClosing reports whether Close has begun.
func (db *DB) isClosing() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.closing
}

// Stats are the writer's counters since Open.
type Stats struct {
	// Transactions is the number of write transactions committed (one fsync each).
	Transactions int64
	// Writes is the number of write requests committed; Writes/Transactions is the mean group size.
	Writes int64
	// Failed is the number of write requests answered with an error (conflicts included).
	Failed int64
	// Skipped is the number of write requests dropped because their context ended before the writer took them.
	Skipped int64
	// LargestBatch is the largest number of requests taken in one transaction.
	LargestBatch int64
	// Reruns is the number of batches run a second time, with a savepoint per request, because a request failed
	// after writing (a batch runs without savepoints first).
	Reruns int64
	// Yields is the number of times the writer yielded the processor to gather more requests into a batch.
	Yields int64
}

type counters struct {
	transactions, writes, failed, skipped, largest, reruns, yields atomic.Int64
}

// Stats returns the writer's counters.
func (db *DB) Stats() Stats {
	c := &db.stats
	return Stats{Transactions: c.transactions.Load(), Writes: c.writes.Load(), Failed: c.failed.Load(),
		Skipped: c.skipped.Load(), LargestBatch: c.largest.Load(), Reruns: c.reruns.Load(), Yields: c.yields.Load()}
}

// errClosed answers writes made after Close.
var errClosed = &mvp.Error{Code: mvp.CodeUnavailable, Message: "the database is closed (mvp is shutting down)"}

// withMessage is an *mvp.Error with a message of its own that still matches a sentinel (mvp.ErrConflict,
// mvp.ErrNotFound) with errors.Is. errors.As finds the specific error first.
type withMessage struct {
	err       *mvp.Error
	sentinels []error
}

func (e *withMessage) Error() string   { return e.err.Error() }
func (e *withMessage) Unwrap() []error { return append([]error{e.err}, e.sentinels...) }

func conflict(format string, args ...any) error {
	return &withMessage{err: mvp.Errorf(mvp.CodeConflict, "", format, args...), sentinels: []error{mvp.ErrConflict}}
}

// idTaken is the conflict of a new task whose id another task has.
func idTaken(id string) error {
	return &withMessage{err: mvp.Errorf(mvp.CodeConflict, "", "a task with id %q exists already", id),
		sentinels: []error{mvp.ErrConflict, mvp.ErrTaskIDTaken}}
}

func notFound(format string, args ...any) error {
	return &withMessage{err: mvp.Errorf(mvp.CodeNotFound, "", format, args...), sentinels: []error{mvp.ErrNotFound}}
}

// mapErr turns SQLite errors into mvp errors by their codes, never by their text: disk full and I/O errors
// become CodeUnavailable, UNIQUE/PRIMARY KEY violations mvp.ErrConflict, FOREIGN KEY violations
// mvp.ErrNotFound, CHECK/NOT NULL violations CodeInvalid. Other errors are returned as they are.
func (db *DB) mapErr(err error) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	dir := filepath.Dir(db.path)
	if DiskFull(se) {
		return mvp.Errorf(mvp.CodeUnavailable, "", "database disk is full: free space on %s", dir)
	}
	switch se.Code {
	case sqlite3.ErrIoErr:
		return mvp.Errorf(mvp.CodeUnavailable, "", "database I/O error on %s: %v", db.path, se)
	case sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
		return mvp.Errorf(mvp.CodeUnavailable, "", "database %s cannot be used: %v", db.path, se)
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return mvp.Errorf(mvp.CodeUnavailable, "", "database %s is busy (another process holds it?); try again", db.path)
	case sqlite3.ErrConstraint:
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return conflict("already exists (%v)", se)
		case sqlite3.ErrConstraintForeignKey:
			return notFound("refers to a task or attempt that does not exist (%v)", se)
		case sqlite3.ErrConstraintCheck, sqlite3.ErrConstraintNotNull:
			return mvp.Errorf(mvp.CodeInvalid, "", "a value is out of range (%v)", se)
		}
	}
	return err
}

// isUnique reports a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}
