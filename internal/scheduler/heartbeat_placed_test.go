package scheduler_test

import (
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAGangPlacedAfterItsHeartbeatTimeoutIsNotStoppedAtPlacement: heartbeats are not judged while a gang waits
// to be placed ("which gang_wait_s covers"), but once it is placed the silence is counted from running_at, i.e.
// including the whole placement wait; max_runtime_s counts from the placement (RunStart) for this very reason. A
// run whose gang waited 90 s (gang_wait_s 120) with heartbeat_timeout_s 60 is stopped as HEARTBEAT_LOST in the
// pass that sees it placed, before it could write its first progress.
func TestAGangPlacedAfterItsHeartbeatTimeoutIsNotStoppedAtPlacement(t *testing.T) {
	h := newHarness(t)
	h.loop.Policy.GangWait = 120 * time.Second
	task := h.heartbeatTask(60)
	h.tick()
	sid := task.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0) // job id 01000000
	h.pendingGroup("01000000")
	h.view.Groups[0].CreatedNs = h.clock.t.UnixNano()
	h.tick()
	for i := 0; i < 9; i++ { // 90 s waiting for its gang: no heartbeat judged meanwhile
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	if a := h.get(task.ID).Attempts[0]; a.FailureKind != mvp.FailureNone {
		t.Fatalf("judged while its gang waited: %+v", a)
	}
	g := &h.view.Groups[0]
	g.State, g.SchedulingState, g.Node, g.PlacedNs = "CREATED", "FINISHED", "w1", h.clock.t.UnixNano()
	h.tick() // the gang is placed now; the run has had 1 s to write progress
	got := h.get(task.ID)
	if a := got.Attempts[0]; a.FailureKind == mvp.FailureHeartbeatLost {
		t.Fatalf("stopped as HEARTBEAT_LOST in the pass that saw its gang placed (task %s): %q", got.State, a.Message)
	}
	// Silent for heartbeat_timeout_s from its placement on: judged then.
	h.clock.t = h.clock.t.Add(61 * time.Second)
	h.tick()
	if a := h.get(task.ID).Attempts[0]; a.FailureKind != mvp.FailureHeartbeatLost {
		t.Errorf("silent for 61 s after its gang was placed (heartbeat_timeout_s 60): %+v; want HEARTBEAT_LOST", a)
	}
}
