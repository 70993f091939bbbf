// Package minimal is the yardstick of P1 (BENCHMARKS.md): a deliberately minimal durable submission server and the
// raw one-row-per-fsync insert rate, on the same disk and with the same SQLite settings as mvp's store (WAL,
// synchronous=FULL). Only `mvp bench` uses it; it is not part of the service. The server takes
// POST /api/v2/tasks, decodes the body with yaml.v3 (no validation), and one goroutine inserts the raw bodies of
// every waiting request in one transaction (one fsync) before answering each 201; GET /api/v2/tasks/{id} reads a
// row back, so that the load generator can verify every acknowledged submit.
package minimal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver of mvp's store
	"gopkg.in/yaml.v3"
)

// maxBatch bounds one transaction, as mvp's writer does.
const maxBatch = 256

const schema = `CREATE TABLE IF NOT EXISTS tasks (id INTEGER PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL)`

// open opens path with the pragmas of mvp's store (internal/sqlite) and one connection.
func open(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create the table in %s: %w", path, err)
	}
	return db, nil
}

// insert is one submit waiting for the writer.
type insert struct {
	body []byte
	done chan result
}

type result struct {
	id  int64
	err error
}

// Server is the minimal durable server.
type Server struct {
	db   *sql.DB
	ops  chan insert
	stop chan struct{}
	wg   sync.WaitGroup
	// batches and inserts count the committed transactions and rows.
	batches, inserts atomic.Int64
}

// Stats returns the committed transactions and rows so far.
func (s *Server) Stats() (batches, inserts int64) { return s.batches.Load(), s.inserts.Load() }

// Open creates (or reuses) the database at path and starts the writer.
func Open(path string) (*Server, error) {
	db, err := open(path)
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, ops: make(chan insert, 4096), stop: make(chan struct{})}
	s.wg.Add(1)
	go s.writer()
	return s, nil
}

// Close stops the writer and closes the database.
func (s *Server) Close() error {
	close(s.stop)
	s.wg.Wait()
	return s.db.Close()
}

func (s *Server) writer() {
	defer s.wg.Done()
	batch := make([]insert, 0, maxBatch)
	for {
		select {
		case <-s.stop:
			return
		case o := <-s.ops:
			batch = append(batch[:0], o)
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		ids, err := s.commit(batch)
		for i, o := range batch {
			if err != nil {
				o.done <- result{err: err}
			} else {
				o.done <- result{id: ids[i]}
			}
		}
	}
}

// commit inserts a batch in one transaction.
func (s *Server) commit(batch []insert) ([]int64, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	now := time.Now().UnixNano()
	ids := make([]int64, len(batch))
	for i, o := range batch {
		r, err := tx.Exec(`INSERT INTO tasks (body, created_at) VALUES (?, ?)`, o.body, now)
		if err != nil {
			return nil, err
		}
		if ids[i], err = r.LastInsertId(); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	s.batches.Add(1)
	s.inserts.Add(int64(len(batch)))
	return ids, nil
}

// Handler serves POST /api/v2/tasks and GET /api/v2/tasks/{id}.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/tasks", s.create)
	mux.HandleFunc("GET /api/v2/tasks/{id}", s.get)
	return mux
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spec map[string]any
	if err := yaml.Unmarshal(body, &spec); err != nil || spec == nil {
		http.Error(w, "the body is not a YAML mapping", http.StatusBadRequest)
		return
	}
	done := make(chan result, 1)
	select {
	case s.ops <- insert{body: body, done: done}:
	case <-r.Context().Done():
		return
	}
	res := <-done
	if res.err != nil {
		http.Error(w, res.err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"task_id":"%d"}`, res.id)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "the id is a number", http.StatusBadRequest)
		return
	}
	var n int
	err = s.db.QueryRowContext(r.Context(), `SELECT length(body) FROM tasks WHERE id = ?`, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		http.Error(w, "no such task", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"task_id":"%d"}`, id)
}

// RawInsertRate inserts n rows of body into a fresh table at path, one row per transaction (one fsync each), and
// returns the rate in rows per second: the disk's raw rate, the yardstick of group commit.
func RawInsertRate(ctx context.Context, path string, body []byte, n int) (float64, error) {
	db, err := open(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ins, err := db.Prepare(`INSERT INTO tasks (body, created_at) VALUES (?, ?)`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Stmt(ins).Exec(body, time.Now().UnixNano()); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
