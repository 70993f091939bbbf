package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// readPaths are GET endpoints whose path and query a client writes; {id} is a task's id, {x} the fuzzed path value.
var readPaths = []string{
	"/api/v2/tasks", "/api/v2/tasks/{x}", "/api/v2/tasks/{id}/events", "/api/v2/tasks/{id}/logs",
	"/api/v2/tasks/{id}/results", "/api/v2/tasks/{id}/results/{x}", "/api/v2/schedules", "/api/v2/schedules/{x}",
	"/api/v2/secrets", "/api/v2/queue", "/api/v2/tasks/{x}/events",
}

// FuzzReadQuery sends the API's read endpoints a path value and a query string as a client may write them. Every
// answer is a 200 or a 4xx in the one error shape with a message, never a 5xx; a page's next_cursor, sent back,
// is read.
func FuzzReadQuery(f *testing.F) {
	for i, q := range []string{
		"state=QUEUED&limit=5", "limit=1&limit=2", "stat=FAILED", "verbose=1", "limit=0", "limit=99999999999999999999",
		"cursor=MTc2NjUwMDAwMDAwMDAwMDAwMDptdnAyLXBwbw", "cursor=%ZZ", "owner=alice", "attempt=1&offset=5", "attempt=-1",
		"offset=1099511627777", "workload=ppo&state=RUNNING", "cursor=MQ", "a;b", "limit=%00",
	} {
		f.Add(uint8(i), "x/../y", q)
	}
	f.Add(uint8(1), "mvp2-ppo-20251223-143201-7f3a", "")
	f.Add(uint8(5), "ckpt/step_10/model.pt", "")
	f.Add(uint8(5), "../../etc/passwd", "")
	f.Add(uint8(7), "nightly", "owner=alice")
	cfg := servicetest.Config(f)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_SECRETS_KEY" // secret storage on, so that its endpoint reads its query
	f.Setenv("MVP_TEST_SECRETS_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	m := servicetest.Start(f, &service.Main{Config: cfg})
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(t *testing.T, path string) (int, []byte) {
		req, err := http.NewRequest("GET", m.URL()+path, nil)
		if err != nil {
			return 0, nil // not a URL a client could send
		}
		req.Header.Set("Authorization", "Bearer "+servicetest.Token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// One task, so that {id} names one.
	req, _ := http.NewRequest("POST", m.URL()+"/api/v2/tasks", strings.NewReader(
		"workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"))
	req.Header.Set("Authorization", "Bearer "+servicetest.Token)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := hc.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	var made struct {
		TaskID string `json:"task_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&made)
	resp.Body.Close()
	if made.TaskID == "" {
		f.Fatalf("no task made: %d", resp.StatusCode)
	}
	f.Fuzz(func(t *testing.T, which uint8, x, query string) {
		if q, err := url.ParseQuery(query); err == nil && q.Has("follow") {
			return // a followed log waits for the attempt's end
		}
		if strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return // no request line holds it: Go's server answers such a line itself ("400 Bad Request")
		}
		path := strings.NewReplacer("{id}", made.TaskID, "{x}", url.PathEscape(x)).Replace(readPaths[int(which)%len(readPaths)])
		if query != "" {
			path += "?" + query
		}
		code, body := get(t, path)
		if code == 0 {
			return
		}
		if code >= 500 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if code >= 400 {
			var e api.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || strings.TrimSpace(e.Error.Message) == "" {
				t.Fatalf("GET %s: %d %q, not the error shape with a message", path, code, body)
			}
			return
		}
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		if json.Unmarshal(body, &page) == nil && page.NextCursor != nil && *page.NextCursor != "" {
			q, _ := url.ParseQuery(query)
			q.Set("cursor", *page.NextCursor)
			if code, body := get(t, strings.SplitN(path, "?", 2)[0]+"?"+q.Encode()); code != 200 {
				t.Fatalf("GET %s: its next_cursor is refused: %d %s", path, code, body)
			}
		}
	})
}
