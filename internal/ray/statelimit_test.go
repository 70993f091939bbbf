package ray

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// stateAPIFullBody is Ray 2.60's answer (HTTP 429) past RAY_STATE_SERVER_MAX_HTTP_REQUEST (state_head.py).
const stateAPIFullBody = `{"result": false, "msg": "Max number of in-progress requests=100 reached. To set a higher limit, ` +
	`set environment variable: export RAY_STATE_SERVER_MAX_HTTP_REQUEST='xxx'. Max allowed = 1000", "data": {"result": null}}`

type outcomes struct {
	mvp.NopObserver
	mu  sync.Mutex
	got map[string]int
}

func (o *outcomes) RayCall(endpoint, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.got == nil {
		o.got = map[string]int{}
	}
	o.got[endpoint+" "+outcome]++
}

// TestAFullStateAPIIsBusyNotDown: Ray's state API at its limit of requests in progress answers 429 (older Rays:
// 500) saying so. Its log copies, follows and node lists fail with ErrRayBusy (and ErrRayUnavailable: no verdict
// on the job) and are counted with the outcome "busy", so that the loop does not count such a refusal as a failed
// try of a log, and an operator sees why reads fail.
func TestAFullStateAPIIsBusyNotDown(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, stateAPIFullBody)
		}))
		obs := &outcomes{}
		c := New(Options{DashboardURL: srv.URL, Observer: obs})
		_, cerr := c.CopyJobLog(context.Background(), "job-a01", "node-1", io.Discard)
		_, ferr := c.FollowJobLog(context.Background(), "job-a01", "node-1", time.Second, io.Discard)
		_, serr := c.ClusterStatus(context.Background())
		for name, err := range map[string]error{"copy": cerr, "follow": ferr, "cluster status": serr} {
			if !errors.Is(err, mvp.ErrRayBusy) || !errors.Is(err, mvp.ErrRayUnavailable) {
				t.Errorf("HTTP %d: %s: %v; want ErrRayBusy and ErrRayUnavailable", code, name, err)
			}
		}
		for _, ep := range []string{"log_file", "log_stream"} {
			if obs.got[ep+" "+mvp.OutcomeBusy] != 1 {
				t.Errorf("HTTP %d: outcomes %v; want one %s busy", code, obs.got, ep)
			}
		}
		srv.Close()
	}
	// Any other 429 or 500 is not the state API's limit.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Agent for node id: node-1 doesn't exist.", http.StatusInternalServerError)
	}))
	defer srv.Close()
	_, err := New(Options{DashboardURL: srv.URL}).CopyJobLog(context.Background(), "job-a01", "node-1", io.Discard)
	if errors.Is(err, mvp.ErrRayBusy) {
		t.Errorf("an agent gone: %v; want no ErrRayBusy", err)
	}
}

// TestLogStreamsPastTheBoundAreRefusedAtOnce: each follow holds one of the requests Ray's state API serves at once
// for as long as it lasts; past MaxLogStreams a follow is refused at once, without asking Ray, with ErrRayBusy
// (the follower copies instead), and a place is free again once a stream ends.
func TestLogStreamsPastTheBoundAreRefusedAtOnce(t *testing.T) {
	var open atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open.Add(1)
		defer open.Add(-1)
		io.WriteString(w, "line\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL, MaxLogStreams: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, firstCancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { _, err := c.FollowJobLog(first, "job-a01", "node-1", time.Second, io.Discard); done <- err }()
	go func() { _, err := c.FollowJobLog(ctx, "job-a02", "node-1", time.Second, io.Discard); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for open.Load() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want 2", open.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := c.FollowJobLog(ctx, "job-a03", "node-1", time.Second, io.Discard)
	if !errors.Is(err, mvp.ErrRayBusy) || !errors.Is(err, mvp.ErrRayUnavailable) {
		t.Fatalf("a third follow: %v; want ErrRayBusy at once", err)
	}
	if n := open.Load(); n != 2 {
		t.Errorf("%d streams open after the refused follow, want 2: it asked Ray", n)
	}
	firstCancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first follow ended with %v", err)
	}
	third := make(chan error, 1)
	go func() { _, err := c.FollowJobLog(ctx, "job-a03", "node-1", time.Second, io.Discard); third <- err }()
	for open.Load() != 2 {
		select {
		case err := <-third:
			t.Fatalf("a follow once a stream ended: %v; want it streaming", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want the third's", open.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLogCopiesPastTheBoundWait: copies of driver logs from the state API are at most MaxLogCopies at once; one
// more waits for a place (it is not refused: a copy is short) or for its context.
func TestLogCopiesPastTheBoundWait(t *testing.T) {
	var open, most atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		io.WriteString(w, "the log\n")
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	var wg sync.WaitGroup
	errs := make(chan error, MaxLogCopies+4)
	for range MaxLogCopies + 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.CopyJobLog(context.Background(), "job-a01", "node-1", io.Discard)
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for open.Load() != MaxLogCopies {
		if time.Now().After(deadline) {
			t.Fatalf("%d copies in flight, want %d", open.Load(), MaxLogCopies)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.CopyJobLog(ctx, "job-a01", "node-1", io.Discard); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a copy past the bound whose context ends while it waits: %v; want its context's error", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a copy: %v", err)
		}
	}
	if m := most.Load(); m != MaxLogCopies {
		t.Errorf("%d copies in flight at most, want %d", m, MaxLogCopies)
	}
}
