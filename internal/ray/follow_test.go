package ray

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// lockedBuffer is a strings.Builder safe to read while a copy writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFollowJobLogStreamsUntilItsContextEnds: FollowJobLog asks the state API for the driver log file in stream
// mode (the whole file, then what is appended, every interval) and writes each chunk as it comes, until its
// context ends the follow.
func TestFollowJobLogStreamsUntilItsContextEnds(t *testing.T) {
	more := make(chan string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/api/v0/logs/stream" || q.Get("node_id") != "node-1" ||
			q.Get("filename") != "job-driver-job-a01.log" || q.Get("lines") != "-1" || q.Get("interval") != "0.5" {
			t.Errorf("state API asked %s?%s", r.URL.Path, r.URL.RawQuery)
		}
		w.Write([]byte("step 1\n"))
		w.(http.Flusher).Flush()
		for {
			select {
			case s := <-more:
				w.Write([]byte(s))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var b lockedBuffer
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := c.FollowJobLog(ctx, "job-a01", "node-1", 500*time.Millisecond, &b)
		done <- result{n, err}
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for b.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("followed %q, want %q", b.String(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("step 1\n")
	more <- "step 2\n"
	waitFor("step 1\nstep 2\n")
	cancel()
	select {
	case r := <-done:
		if r.n != int64(len("step 1\nstep 2\n")) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("FollowJobLog returned %d, %v; want 14 bytes and context.Canceled", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FollowJobLog did not return when its context ended")
	}
}

// TestFollowJobLogOfAnAbsentFileIsAnError: a node whose agent is gone (HTTP 500 "… doesn't exist"), a file not
// there (200 with nothing), or no driver node yet: an error at once, which the follower answers with a copy.
func TestFollowJobLogOfAnAbsentFileIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		node string
		h    http.HandlerFunc
	}{
		{"agent gone", "node-1", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Agent for node id: node-1 doesn't exist.", http.StatusInternalServerError)
		}},
		{"no file", "node-1", func(w http.ResponseWriter, r *http.Request) {}},
		{"no driver node", "", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/jobs/job-a01" {
				t.Errorf("asked %s?%s without a node", r.URL.Path, r.URL.RawQuery)
			}
			w.Write([]byte(`{"submission_id": "job-a01", "status": "PENDING"}`)) // no driver yet
		}},
	} {
		srv := httptest.NewServer(tc.h)
		c := New(Options{DashboardURL: srv.URL})
		n, err := c.FollowJobLog(context.Background(), "job-a01", tc.node, time.Second, &lockedBuffer{})
		if err == nil || n != 0 {
			t.Errorf("%s: %d bytes, %v; want an error", tc.name, n, err)
		}
		if tc.node != "" && !errors.Is(err, mvp.ErrRayUnavailable) {
			t.Errorf("%s: %v, want mvp.ErrRayUnavailable", tc.name, err)
		}
		srv.Close()
	}
}

// TestACopyWithoutTheDriversNodeAsksRayForIt: a log read before mvp has recorded the driver's node (the loop
// records it at its next pass after the driver starts; `mvp logs` right after a submit) read the job server's copy,
// which Ray decodes whole in memory (500 for a byte that is not UTF-8; a log of 220 MB took mvp serve to 1 GB in
// that window, measured). The node is asked of Ray (the job's driver_node_id) and the file is read from it.
func TestACopyWithoutTheDriversNodeAsksRayForIt(t *testing.T) {
	var jobServer, files, streams int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/jobs/job-a01":
			w.Write([]byte(`{"submission_id": "job-a01", "status": "RUNNING", "driver_node_id": "node-1"}`))
		case "/api/v0/logs/file", "/api/v0/logs/stream":
			if r.URL.Query().Get("node_id") != "node-1" {
				t.Errorf("state API asked %s", r.URL.RawQuery)
			}
			if r.URL.Path == "/api/v0/logs/file" {
				files++
			} else {
				streams++
			}
			w.Write([]byte("from the file\n"))
		case "/api/jobs/job-a01/logs":
			jobServer++
			w.Write([]byte(`{"logs": "from the job server\n"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	var b lockedBuffer
	if _, err := c.CopyJobLog(context.Background(), "job-a01", "", &b); err != nil || b.String() != "from the file\n" {
		t.Errorf("copy without a node: %q, %v; want the file's bytes", b.String(), err)
	}
	b = lockedBuffer{}
	if _, err := c.FollowJobLog(context.Background(), "job-a01", "", time.Second, &b); err != nil || b.String() != "from the file\n" {
		t.Errorf("follow without a node: %q, %v; want the file's bytes", b.String(), err)
	}
	if jobServer != 0 || files != 1 || streams != 1 {
		t.Errorf("%d reads of the job server's copy, %d of the file, %d streams; want 0, 1, 1", jobServer, files, streams)
	}
}

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
