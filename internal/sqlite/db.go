// Package sqlite is mvp's Store on one SQLite file: WAL, one writer connection that commits concurrent writes
// in groups (one fsync for many callers), a small pool of read connections, and embedded migrations.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/mvp2/mvp/internal/mvp"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the store.
type Options struct {
	// MaxBatch bounds how many writes share one transaction. Default 256.
	MaxBatch int
	// Readers is the size of the read pool. Default 4.
	Readers int
}

// DB is the store. It implements mvp.Store.
type DB struct {
	path   string
	write  *sql.DB
	read   *sql.DB
	ops    chan *op
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
	max    int
}

var _ mvp.Store = (*DB)(nil)

// op is one write waiting for the writer.
type op struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error
}

// Open opens (creating if needed) the database at path and applies the migrations that are missing.
func Open(ctx context.Context, path string, o Options) (*DB, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open database: %q must be a file path", path)
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	q.Set("_query_only", "1")
	q.Del("_txlock")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)
	db := &DB{path: path, write: w, read: r, ops: make(chan *op, 4*o.MaxBatch), stop: make(chan struct{}),
		done: make(chan struct{}), max: o.MaxBatch}
	if err := db.migrate(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	go db.writer()
	return db, nil
}

// migrate applies each embedded migration not yet recorded in schema_migrations, one transaction each.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", mapErr(err, db.path))
	}
	names, err := migrations.ReadDir("migrations")
	if err != nil {
		return err
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name() < names[j].Name() })
	for i, e := range names {
		version := i + 1
		var n int
		if err := db.write.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return err
		}
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %s: %w", e.Name(), mapErr(err, db.path))
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", e.Name(), mapErr(err, db.path))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			version, e.Name(), time.Now().UnixNano()); err != nil {
			tx.Rollback()
			return fmt.Errorf("record migration %s: %w", e.Name(), err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", e.Name(), mapErr(err, db.path))
		}
	}
	return nil
}

// Close stops the writer after the writes already queued, and closes the database.
func (db *DB) Close() error {
	var err error
	db.closed.Do(func() {
		close(db.stop)
		<-db.done
		err = errors.Join(db.write.Close(), db.read.Close())
	})
	return err
}

var errClosed = &mvp.Error{Code: mvp.CodeUnavailable, Message: "the database is closed (mvp is shutting down)"}

// exec hands fn to the writer and waits until the transaction holding it is committed (or fn failed alone).
func (db *DB) exec(ctx context.Context, fn func(*sql.Tx) error) error {
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case db.ops <- o:
	case <-db.stop:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the outcome is decided by the writer: wait for it even if ctx ends, so a caller never
	// believes a write failed that was in fact committed.
	return <-o.done
}

// writer runs every write: it takes all that is waiting (up to MaxBatch), runs each in its own savepoint of one
// transaction, commits once, then answers each caller.
func (db *DB) writer() {
	defer close(db.done)
	batch := make([]*op, 0, db.max)
	for {
		var first *op
		select {
		case first = <-db.ops:
		case <-db.stop:
			// Drain what was queued before Close.
			for {
				select {
				case o := <-db.ops:
					db.run([]*op{o})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < db.max {
			select {
			case o := <-db.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		db.run(batch)
	}
}

func (db *DB) run(batch []*op) {
	results := make([]error, len(batch))
	answer := func(err error) {
		for i, o := range batch {
			if results[i] == nil {
				results[i] = err
			}
			o.done <- results[i]
		}
	}
	tx, err := db.write.Begin()
	if err != nil {
		answer(fmt.Errorf("begin: %w", mapErr(err, db.path)))
		return
	}
	ok := 0
	for i, o := range batch {
		if err := o.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if _, err := tx.Exec(`SAVEPOINT op`); err != nil {
			results[i] = mapErr(err, db.path)
			continue
		}
		if err := o.fn(tx); err != nil {
			results[i] = mapErr(err, db.path)
			if _, rerr := tx.Exec(`ROLLBACK TO op`); rerr != nil {
				tx.Rollback()
				answer(fmt.Errorf("rollback to savepoint: %w", mapErr(rerr, db.path)))
				return
			}
		} else {
			ok++
		}
		if _, err := tx.Exec(`RELEASE op`); err != nil {
			tx.Rollback()
			answer(fmt.Errorf("release savepoint: %w", mapErr(err, db.path)))
			return
		}
	}
	if ok == 0 {
		tx.Rollback()
		answer(nil)
		return
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		err = fmt.Errorf("commit: %w", mapErr(err, db.path))
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	}
	answer(nil)
}

// mapErr turns SQLite's disk-full and constraint errors into mvp errors, matched by code, never by text.
func mapErr(err error, path string) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrFull:
		return &mvp.Error{Code: mvp.CodeUnavailable, Message: fmt.Sprintf(
			"the database disk is full: free space on the filesystem of %s", filepath.Dir(path))}
	case sqlite3.ErrIoErr, sqlite3.ErrCantOpen, sqlite3.ErrReadonly:
		return &mvp.Error{Code: mvp.CodeUnavailable, Message: fmt.Sprintf("the database cannot be written (%v)", se.Code)}
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return &mvp.Error{Code: mvp.CodeUnavailable, Message: "the database is busy; try again"}
	}
	return err
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }
