package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// stuckCluster is a cluster reading that does not answer (Ray's GCS stopped, a probe waiting on it) until
// released; it counts the readings asked of it.
type stuckCluster struct {
	view    *mvp.ClusterView
	release chan struct{}
	calls   atomic.Int32
}

func (c *stuckCluster) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	c.calls.Add(1)
	select {
	case <-c.release:
		return c.view, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestASnapshotDoesNotWaitForAClusterThatDoesNotAnswer: the queue view, the dry runs, the users' page and the web
// page read the cluster through Snapshot. With Ray's GCS hung, each request waited for its own reading (30 s
// measured): they answer at once with the cluster unknown and why, and the requests of that time share one
// reading instead of queueing a reading each behind the hung one.
func TestASnapshotDoesNotWaitForAClusterThatDoesNotAnswer(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	stuck := &stuckCluster{view: h.view, release: make(chan struct{})}
	h.loop.Cluster = stuck
	h.loop.ReaderWait = 200 * time.Millisecond
	released := false
	defer func() {
		if !released {
			close(stuck.release)
		}
	}()

	type result struct {
		known bool
		err   error
		cerr  error
	}
	results := make(chan result, 5)
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.loop.Snapshot(context.Background())
			r := result{known: s.Cluster != nil, err: err, cerr: s.ClusterErr}
			results <- r
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Snapshot waited for a cluster reading that does not answer")
	}
	close(results)
	for r := range results {
		if r.err != nil {
			t.Fatalf("Snapshot: %v", r.err)
		}
		if r.known {
			t.Errorf("a snapshot taken while the cluster does not answer shows a cluster")
		}
		if r.cerr == nil || !strings.Contains(r.cerr.Error(), "no reading of the cluster came") || !errors.Is(r.cerr, mvp.ErrRayUnavailable) {
			t.Errorf("cluster error %v; want Ray unavailable, saying the reading did not answer", r.cerr)
		}
	}
	if n := stuck.calls.Load(); n != 1 {
		t.Errorf("%d readings asked of a cluster that does not answer, for 5 snapshots at once; want one shared", n)
	}

	close(stuck.release)
	released = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := h.loop.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.Cluster != nil {
			if len(s.Queue) != 1 || s.Queue[0].ID != task.ID {
				t.Errorf("queue %v; want the one task", s.Queue)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster answers again but snapshots still say %v", s.ClusterErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAPassSaysWhatItWaitsOn: a pass waiting on a cluster reading that does not come (Ray's GCS hung) says so in
// the health the service reports (/healthz's scheduler sentence said "on Ray perhaps"), and says nothing once it
// has ended.
func TestAPassSaysWhatItWaitsOn(t *testing.T) {
	h := newHarness(t)
	stuck := &stuckCluster{view: h.view, release: make(chan struct{})}
	h.loop.Cluster = stuck
	ended := make(chan error, 1)
	go func() { ended <- h.loop.RunOnce(context.Background()) }()
	deadline := time.Now().Add(20 * time.Second)
	for stuck.calls.Load() == 0 {
		if time.Now().After(deadline) {
			close(stuck.release)
			t.Fatal("the pass did not read the cluster")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if w := h.loop.Health().WaitingOn; w != scheduler.StepCluster {
		t.Errorf("a pass waiting on the cluster's reading says it waits on %q; want %q", w, scheduler.StepCluster)
	}
	close(stuck.release)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if w := h.loop.Health().WaitingOn; w != "" {
		t.Errorf("after the pass: waiting on %q; want nothing", w)
	}
}
