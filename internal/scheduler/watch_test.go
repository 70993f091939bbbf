package scheduler_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/sqlite"
)

func view(gpus float64, groups ...mvp.PlacementGroup) *mvp.ClusterView {
	return &mvp.ClusterView{Source: "probe", At: time.Now(), Groups: groups, Nodes: []mvp.Node{
		{ID: "w2", Alive: true, Available: map[string]float64{"GPU": 8, "CPU": 96}},
		{ID: "w1", Alive: true, Available: map[string]float64{"GPU": gpus, "CPU": 96, "worker_node": 100}}}}
}

func TestFreed(t *testing.T) {
	pg := mvp.PlacementGroup{ID: "pg1", State: "CREATED"}
	dead := func(v *mvp.ClusterView) *mvp.ClusterView { v.Nodes[0].Alive = false; return v }
	for _, c := range []struct {
		name      string
		prev, cur *mvp.ClusterView
		want      bool
	}{
		{"nothing changed (other time, other order)", view(4), func() *mvp.ClusterView {
			v := view(4)
			v.At = v.At.Add(time.Hour)
			v.Nodes[0], v.Nodes[1] = v.Nodes[1], v.Nodes[0]
			return v
		}(), false},
		{"GPUs freed: the running gang ended", view(0, pg), view(8), true},
		{"GPUs taken: a job started", view(8), view(0, pg), false},
		{"a placement group placed, nothing freed", view(4), view(4, pg), false},
		{"a node came back", dead(view(4)), view(4), true},
		{"a node died", view(4), dead(view(4)), false},
		{"a new node joined", &mvp.ClusterView{Nodes: view(4).Nodes[1:]}, view(4), true},
		{"a resource shows up", func() *mvp.ClusterView { v := view(4); delete(v.Nodes[1].Available, "worker_node"); return v }(), view(4), true},
	} {
		if got := scheduler.Freed(c.prev, c.cur); got != c.want {
			t.Errorf("%s: Freed = %v, want %v", c.name, got, c.want)
		}
	}
}

// watchRig drives a ClusterWatch one reading at a time: each Read takes the next reading sent on reads, so that
// once a send returns, the watch has acted on every reading before the previous one. armed scripts Armed's answers,
// one per period (true once the script is over).
type watchRig struct {
	reads chan *mvp.ClusterView
	wakes atomic.Int32
	armed []bool
}

func startWatch(t *testing.T, armed ...bool) *watchRig {
	r := &watchRig{reads: make(chan *mvp.ClusterView), armed: armed}
	w := &scheduler.ClusterWatch{Every: time.Millisecond, Wake: func() { r.wakes.Add(1) },
		Armed: func() bool { // called by the watch's goroutine only
			if len(r.armed) == 0 {
				return true
			}
			on := r.armed[0]
			r.armed = r.armed[1:]
			return on
		},
		Read: func(ctx context.Context) (*mvp.ClusterView, error) {
			select {
			case v := <-r.reads:
				if v == nil {
					return nil, errors.New("probe: ray is unavailable")
				}
				return v, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// send hands the watch its next reading, failing the test if the watch does not read within 10 s.
func (r *watchRig) send(t *testing.T, v *mvp.ClusterView) {
	t.Helper()
	select {
	case r.reads <- v:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not read")
	}
}

func TestClusterWatchWakesOnAChange(t *testing.T) {
	r := startWatch(t)
	r.send(t, view(0)) // baseline
	r.send(t, view(0))
	r.send(t, view(0))
	if n := r.wakes.Load(); n != 0 {
		t.Fatalf("%d wakes before any change was read", n)
	}
	r.send(t, view(8)) // the running gang ended: GPUs freed
	r.send(t, view(8))
	if n := r.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes after one change, want 1", n)
	}
	r.send(t, view(0)) // a job started: it took GPUs, which wakes nothing
	r.send(t, view(8)) // and ended
	r.send(t, view(8))
	if n := r.wakes.Load(); n != 2 {
		t.Fatalf("%d wakes after a job started and ended, want 2", n)
	}
	dash := view(0)
	dash.Source = "dashboard"
	r.send(t, nil)  // a failed reading changes nothing,
	r.send(t, dash) // nor does a lagging fallback reading
	r.send(t, view(8))
	r.send(t, view(8))
	if n := r.wakes.Load(); n != 2 {
		t.Fatalf("%d wakes after a failed and a fallback reading, want 2", n)
	}
}

func TestClusterWatchReadsOnlyWhileArmed(t *testing.T) {
	// Armed, armed, then disarmed for one period: the reading after the pause is a new baseline, not a change.
	r := startWatch(t, true, true, false)
	r.send(t, view(0))
	r.send(t, view(0))
	r.send(t, view(8))
	r.send(t, view(8))
	r.send(t, view(8))
	if n := r.wakes.Load(); n != 0 {
		t.Fatalf("%d wakes, want 0: the first reading after a pause is a baseline", n)
	}
	// Disarmed: no reading at all.
	r2 := startWatch(t, make([]bool, 1<<20)...)
	select {
	case r2.reads <- view(8):
		t.Fatal("the watch read while disarmed")
	case <-time.After(50 * time.Millisecond): // 50 periods: it would have read by now
	}
}

// TestLoopArmedWhileATaskWaitsBehindALiveAttempt: the loop arms the watch exactly when a task waits while an
// attempt is live.
func TestLoopArmedWhileATaskWaitsBehindALiveAttempt(t *testing.T) {
	h := newHarness(t)
	h.tick()
	if h.loop.Armed() {
		t.Fatal("armed with nothing queued nor running")
	}
	first := h.task()
	first.GPUsPerNode = 8
	h.tick()
	if h.loop.Armed() {
		t.Fatal("armed with a live attempt and nothing waiting")
	}
	h.view.Nodes[0].Available["GPU"] = 0 // the first task holds every GPU
	h.task()
	h.tick()
	if !h.loop.Armed() {
		t.Fatal("not armed while a task waits behind a live attempt")
	}
	h.ray.set(first.ID+"--a01", mvp.RaySucceeded, "ok", 0)
	h.view.Nodes[0].Available["GPU"] = 8
	h.tick() // the first ends, the second starts: nothing waits
	h.tick()
	if h.loop.Armed() {
		t.Fatal("armed with nothing waiting")
	}
}

// TestLoopArmedAfterAPassThatStartsOneAndLeavesOneWaiting: a pass that starts a whole-node task on an idle
// cluster and leaves a second waiting behind it arms the watch at once (its snapshot had no live attempt), so
// the first one's end is noticed before the next tick.
func TestLoopArmedAfterAPassThatStartsOneAndLeavesOneWaiting(t *testing.T) {
	h := newHarness(t)
	a, b := h.task8(), h.task8()
	h.tick()
	if s := h.get(a.ID).State; s != mvp.StateSubmitted {
		t.Fatalf("the first is %s, want SUBMITTED", s)
	}
	if s := h.get(b.ID).State; s != mvp.StatePendingResources {
		t.Fatalf("the second is %s, want PENDING_RESOURCES", s)
	}
	if !h.loop.Armed() {
		t.Fatal("a task waits behind the attempt this pass submitted, and the watch is not armed")
	}
}

// TestLoopStaysArmedWhileTheEndedJobsGPUsAreNotBackYet: Ray's job server can say a job ended before the live
// probe shows its GPUs free (the raylet's report reaches the GCS later). The pass that concludes it keeps the
// watch armed, so that the GPUs' return wakes the loop for the task waiting for them.
func TestLoopStaysArmedWhileTheEndedJobsGPUsAreNotBackYet(t *testing.T) {
	h := newHarness(t)
	a := h.task8()
	h.tick()
	h.ray.set(a.ID+"--a01", mvp.RayRunning, "", 0)
	h.view.Nodes[0].Available["GPU"] = 0
	h.tick()
	b := h.task8()
	h.tick()
	if !h.loop.Armed() || h.get(b.ID).State != mvp.StatePendingResources {
		t.Fatalf("setup: armed %v, the second %s", h.loop.Armed(), h.get(b.ID).State)
	}
	h.ray.set(a.ID+"--a01", mvp.RaySucceeded, "ok", 0) // the job server says ended; the probe's view still has 0 GPUs
	h.tick()
	if s := h.get(a.ID).State; s != mvp.StateSucceeded {
		t.Fatalf("the first is %s, want SUCCEEDED", s)
	}
	if s := h.get(b.ID).State; s != mvp.StatePendingResources {
		t.Fatalf("the second is %s, want PENDING_RESOURCES (its GPUs are not back)", s)
	}
	if !h.loop.Armed() {
		t.Fatal("the pass that concluded the first disarmed the watch while the second waits for its GPUs")
	}
}

// task8 queues a whole-node (8-GPU) task.
func (h *harness) task8() *mvp.Task { return h.taskOf(8) }

// slowFirstQueue makes the loop's first queue read take a second and records when each pass reads the queue.
type slowFirstQueue struct {
	*sqlite.DB
	mu    sync.Mutex
	reads []time.Time
}

func (s *slowFirstQueue) Runnable(ctx context.Context) ([]*mvp.Task, error) {
	s.mu.Lock()
	s.reads = append(s.reads, time.Now())
	first := len(s.reads) == 1
	s.mu.Unlock()
	if first {
		time.Sleep(time.Second)
	}
	return s.DB.Runnable(ctx)
}

func (s *slowFirstQueue) read(i int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.reads) {
		return s.reads[i], true
	}
	return time.Time{}, false
}

// passCounter counts the loop's passes.
type passCounter struct {
	mvp.NopObserver
	n *atomic.Int32
}

func (p passCounter) SchedulerPass(time.Duration) { p.n.Add(1) }

// TestLoopWakeNeverDelaysAPassPastTheTick: a wake after a slow pass waits for its spacing (3 × the pass), but a
// tick due meanwhile still runs its pass: a wake may hasten a pass, never put it off. Here the first pass takes
// 1 s and the tick is 2 s: a wake just after that pass would wait until 4 s; the tick's pass comes at 2 s.
func TestLoopWakeNeverDelaysAPassPastTheTick(t *testing.T) {
	h := newHarness(t)
	q := &slowFirstQueue{DB: h.db}
	var passes atomic.Int32
	h.loop.Store, h.loop.Observer, h.loop.Tick = q, passCounter{n: &passes}, 2*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); _ = h.loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); passes.Load() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no first pass within 10 s")
		}
	}
	h.loop.Wake() // e.g. a submission, just after the slow pass
	var second time.Time
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if at, ok := q.read(1); ok {
			second = at
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no second pass within 10 s")
		}
	}
	if at := second.Sub(start); at >= 3*time.Second {
		t.Fatalf("the second pass read the queue %v after the loop started: the tick due at 2 s waited for the wake's spacing (4 s)", at.Round(time.Millisecond))
	}
}
