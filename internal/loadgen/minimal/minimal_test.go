package minimal

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const spec = "workload: ppo\nnnodes: 1\nn_gpus_per_node: 16\nname: load\n"

// TestServerStoresEveryAcknowledgedSubmit: concurrent submits are each answered 201 with an id that reads back,
// and they share transactions.
func TestServerStoresEveryAcknowledgedSubmit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "min.sqlite3")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	const clients, each = 16, 20
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				resp, err := http.Post(ts.URL+"/api/v2/tasks", "application/yaml", strings.NewReader(spec))
				if err != nil {
					t.Error(err)
					return
				}
				var got struct {
					ID string `json:"task_id"`
				}
				err = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				if resp.StatusCode != 201 || err != nil || got.ID == "" {
					t.Errorf("submit: status %d, id %q, err %v", resp.StatusCode, got.ID, err)
					return
				}
				mu.Lock()
				ids = append(ids, got.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(ids) != clients*each {
		t.Fatalf("%d acknowledged, want %d", len(ids), clients*each)
	}
	for _, id := range ids {
		resp, err := http.Get(ts.URL + "/api/v2/tasks/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", id, resp.StatusCode)
		}
	}
	batches, inserts := s.Stats()
	if inserts != clients*each || batches < 1 || batches > inserts {
		t.Fatalf("stats: %d batches, %d inserts", batches, inserts)
	}
	ts.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// On disk after close: the rows are there, body as sent.
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	var body string
	if err := db.QueryRow(`SELECT count(*), max(body) FROM tasks`).Scan(&n, &body); err != nil {
		t.Fatal(err)
	}
	if n != clients*each || body != spec {
		t.Fatalf("on disk: %d rows, body %q", n, body)
	}
}

func TestServerRejectsWhatIsNotYAMLMapping(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "min.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, body := range []string{"", "[1, 2", "just a string"} {
		resp, err := http.Post(ts.URL+"/api/v2/tasks", "application/yaml", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("body %q: status %d, want 400", body, resp.StatusCode)
		}
	}
	resp, err := http.Get(ts.URL + "/api/v2/tasks/12345")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown id: status %d, want 404", resp.StatusCode)
	}
	if _, inserts := s.Stats(); inserts != 0 {
		t.Errorf("%d rows inserted for bad input", inserts)
	}
}

func TestRawInsertRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.sqlite3")
	rate, err := RawInsertRate(context.Background(), path, []byte(spec), 50)
	if err != nil {
		t.Fatal(err)
	}
	if rate <= 0 {
		t.Fatalf("rate %v", rate)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Fatalf("%d rows, want 50", n)
	}
}
