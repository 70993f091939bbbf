package raycompat

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/sqlite"
)

// TestTailEndsOnShutdown: a tail of a job still waiting is closed with "going away" when the server shuts down
// (the HTTP server does not wait for hijacked connections), not dropped.
func TestTailEndsOnShutdown(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0001", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: "waits", Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		ReadLog: func(context.Context, string, int) (string, bool, error) { return "", false, nil }}
	mux := http.NewServeMux()
	for _, rt := range d.Routes() {
		mux.HandleFunc(rt.Method+" "+rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.Handle(w, r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/jobs/waits/logs/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	d.Shutdown()
	_, _, err = c.Read(dctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("the tail ended with %v, want a going-away close", err)
	}
}

// TestLinesKeepCharactersWhole: a line longer than a frame is cut, but never inside a character: a text frame
// must be valid UTF-8, or Ray's client fails the tail (aiohttp turns it into an error message).
func TestLinesKeepCharactersWhole(t *testing.T) {
	long := "a" + strings.Repeat("€", 100) + "\n" // 1 + 300 bytes
	for max := 1; max < len(long); max++ {
		s := long
		for s != "" {
			chunk := lines(s, max)
			if chunk == "" || !utf8.ValidString(chunk) {
				t.Fatalf("max %d: frame %q", max, chunk)
			}
			s = s[len(chunk):]
		}
	}
}
