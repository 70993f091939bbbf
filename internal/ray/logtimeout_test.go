package ray

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestCopyJobLogAsksRayForTheCopysTime: Ray's state API bounds the agent's whole StreamLog call by the request's
// `timeout` query parameter, 30 s when absent (ray/util/state/common.py DEFAULT_RPC_TIMEOUT; state_manager.py
// stream_log(timeout=...)): a file that takes longer to stream is cut (force_close) at every try however long the
// caller's context, so a log of hundreds of MB is never kept. The copy must pass its own bound.
func TestCopyJobLogAsksRayForTheCopysTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := strconv.Atoi(r.URL.Query().Get("timeout"))
		if err != nil || s < 60 {
			t.Errorf("state API query %q: no timeout beyond Ray's 30 s default for a 5-minute copy", r.URL.RawQuery)
		}
		w.Write([]byte("x\n"))
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var b bytes.Buffer
	if _, err := c.CopyJobLog(ctx, "job-a01", "node-1", &b); err != nil {
		t.Fatal(err)
	}
}

// TestACopyCutByRayIsRayUnavailable: the state API answering 200 and then closing the stream (the head going
// down mid-copy, Ray's own deadline) is a failure of Ray, like a refused connection: keepLogs only checks whether
// Ray is up (and does not count the try) for mvp.ErrRayUnavailable.
func TestACopyCutByRayIsRayUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("step 1\n"))
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	var b bytes.Buffer
	_, err := c.CopyJobLog(context.Background(), "job-a01", "node-1", &b)
	if err == nil || !errors.Is(err, mvp.ErrRayUnavailable) {
		t.Errorf("a copy cut by Ray: %v, want mvp.ErrRayUnavailable", err)
	}
}
