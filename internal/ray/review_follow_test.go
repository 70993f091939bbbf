package ray

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestFollowJobLogOfAQuietLogWaitsForItsFirstByte: Ray 2.60's /api/v0/logs/stream sends no answer (not even its
// headers) until the file has a first chunk to send (state_head.get_logs awaits logs_gen.__anext__() before
// response.prepare). A running driver that has printed nothing yet (imports, CUDA init, a block-buffered stdout)
// has an empty file: the follow must wait for its first byte, not fail after the call timeout (the stream's
// transport has ResponseHeaderTimeout = Options.Timeout) and fall back to copies.
func TestFollowJobLogOfAQuietLogWaitsForItsFirstByte(t *testing.T) {
	const quiet = 600 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the file is empty: Ray holds the answer until its first byte
		case <-time.After(quiet):
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("step 1\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL, Timeout: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var b lockedBuffer
	done := make(chan error, 1)
	go func() {
		_, err := c.FollowJobLog(ctx, "job-a01", "node-1", 100*time.Millisecond, &b)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.String() != "step 1\n" {
		select {
		case err := <-done:
			t.Fatalf("the follow of a log still empty ended after the call timeout: %v (followed %q)", err, b.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("followed %q, want %q", b.String(), "step 1\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowJobLog returned %v, want context.Canceled", err)
	}
}

// TestACopyOfAJobWithoutADriverIsOneCall: a log read of an attempt whose driver has not started (PENDING: a
// follower polls it every second, `mvp logs -f` right after a submit, the Ray door's tail) asks Ray for the
// job's driver node (GetJob) and, told there is none, reads the job server's copy as well, which is empty for a
// job without a driver (job_head.get_logs: JobLogsResponse("") without a driver agent), or 404 like GetJob for a
// job Ray does not hold: two calls per poll where one tells all (before b3e4d67 it was one, JobLogs).
func TestACopyOfAJobWithoutADriverIsOneCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		job     string // GetJob's answer; "" is 404
		wantErr error
	}{
		{"pending", `{"submission_id": "job-a01", "status": "PENDING"}`, nil},
		{"not in Ray", "", mvp.ErrJobNotFound},
	} {
		var mu sync.Mutex
		calls := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls[r.URL.Path]++
			mu.Unlock()
			if tc.job == "" {
				http.Error(w, "Job job-a01 does not exist", http.StatusNotFound)
				return
			}
			switch r.URL.Path {
			case "/api/jobs/job-a01":
				w.Write([]byte(tc.job))
			case "/api/jobs/job-a01/logs":
				w.Write([]byte(`{"logs": ""}`))
			default:
				t.Errorf("%s: asked %s?%s", tc.name, r.URL.Path, r.URL.RawQuery)
				http.NotFound(w, r)
			}
		}))
		c := New(Options{DashboardURL: srv.URL})
		var b lockedBuffer
		n, err := c.CopyJobLog(context.Background(), "job-a01", "", &b)
		if n != 0 || (tc.wantErr == nil) != (err == nil) || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: copy gave %d bytes, %v; want 0 and %v", tc.name, n, err, tc.wantErr)
		}
		total := 0
		for _, k := range calls {
			total += k
		}
		if total != 1 {
			t.Errorf("%s: %d calls to Ray for one read (%v); want 1", tc.name, total, calls)
		}
		srv.Close()
	}
}
