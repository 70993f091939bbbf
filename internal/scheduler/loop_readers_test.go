package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
)

// stateAPILogs is Ray whose driver logs are copied by mvp's own client from a state API.
type stateAPILogs struct {
	*fakeRay
	rc *ray.Client
}

func (r stateAPILogs) CopyJobLog(ctx context.Context, id, node string, w io.Writer) (int64, error) {
	return r.rc.CopyJobLog(ctx, id, node, w)
}

// TestReadersOfLogsDoNotHoldUpThePass: the Ray client copies at most ray.MaxLogCopies driver logs at once, and
// every reader of a log through the API (a follower copies at every poll) took one of those places as the loop
// did. With readers of a long log holding them all, the pass that kept an ended job's log (and the one that reads
// a failed run's last lines to judge it) waited behind them, and with it every admission. The loop's own copies now
// have places of their own.
func TestReadersOfLogsDoNotHoldUpThePass(t *testing.T) {
	var readers atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("filename"), "long-job") {
			readers.Add(1)
			io.WriteString(w, "step 1\n")
			w.(http.Flusher).Flush()
			select { // a log of gigabytes, copied for a reader
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		if id, ok := strings.CutPrefix(r.URL.Path, "/api/jobs/"); ok { // where its driver ran
			fmt.Fprintf(w, `{"submission_id": %q, "status": "SUCCEEDED", "driver_node_id": "node-1"}`, id)
			return
		}
		io.WriteString(w, "the run's log\n")
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	rc := ray.New(ray.Options{DashboardURL: srv.URL})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer free()
	for range ray.MaxLogCopies + 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc.CopyJobLog(context.Background(), "long-job", "node-1", io.Discard) // as the API reads for a follower
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for readers.Load() < ray.MaxLogCopies {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers' copies in flight, want %d", readers.Load(), ray.MaxLogCopies)
		}
		time.Sleep(5 * time.Millisecond)
	}

	h := newHarness(t) // KeepFinishedJobs 1
	h.loop.Ray = stateAPILogs{h.ray, rc}
	done := h.task()
	h.tick()
	h.ray.set(done.ID+"--a01", mvp.RaySucceeded, "", 0)
	passed := make(chan error, 1) // the pass that concludes it keeps its log
	go func() {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // as Run bounds a pass
		defer cancel()
		passed <- h.loop.RunOnce(ctx)
	}()
	select {
	case err := <-passed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the pass that keeps an ended job's log still waits after 10 s behind %d readers' copies", readers.Load())
		free()
		if err := <-passed; err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := h.get(done.ID); got.State != mvp.StateSucceeded || !got.Attempts[0].LogKept {
		t.Errorf("the ended job: %s, log kept %v; want SUCCEEDED, its log kept while readers copy another",
			got.State, got.Attempts[0].LogKept)
	}
}
