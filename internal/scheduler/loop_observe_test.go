package scheduler_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// observed records what the loop tells its Observer.
type observed struct {
	mvp.NopObserver
	mu       sync.Mutex
	passes   int
	admitted []mvp.Workload
	views    []*mvp.ClusterView
}

func (o *observed) SchedulerPass(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d > 0 {
		o.passes++
	}
}

func (o *observed) TaskAdmitted(w mvp.Workload) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.admitted = append(o.admitted, w)
}

func (o *observed) ClusterRead(v *mvp.ClusterView) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.views = append(o.views, v)
}

// TestLoopObserves: every pass is timed, every admission counted once (not the ticks that follow it), and the
// view the loop decides on is handed over; passes skipped while backing off from a Ray outage are not passes, and
// a failed cluster reading hands nothing over.
func TestLoopObserves(t *testing.T) {
	h := newHarness(t)
	obs := &observed{}
	h.loop.Observer = obs
	h.task()
	h.task()
	h.tick()
	h.tick()
	if obs.passes != 2 || len(obs.admitted) != 2 || obs.admitted[0] != mvp.WorkloadPPO || len(obs.views) != 2 || obs.views[1] != h.view {
		t.Fatalf("after 2 ticks: %d passes, admitted %v, %d views", obs.passes, obs.admitted, len(obs.views))
	}
	h.ray.down = true
	for i := 0; i < 10; i++ {
		h.tick()
	}
	if obs.passes >= 12 || obs.passes < 3 {
		t.Errorf("%d passes in 12 ticks, 10 of them with Ray down: backed-off ticks must not count, real passes must", obs.passes)
	}
	if len(obs.views) != 2 {
		t.Errorf("%d views handed over; a failed reading must hand none", len(obs.views))
	}
}
