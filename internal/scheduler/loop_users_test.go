package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestLoopFeedsDecayedUsage: with fair share on, the loop's snapshot carries each owner's decayed GPU-seconds,
// computed from the attempts' start and end times in the store.
func TestLoopFeedsDecayedUsage(t *testing.T) {
	h := newHarness(t)
	h.loop.Policy.FairShare, h.loop.Policy.HalfLife = true, time.Hour
	task := h.task() // 1 × 2 GPUs
	h.tick()
	sid := task.ID + "--a01"
	start := h.clock.t.Add(-30 * time.Minute)
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime = start.UnixMilli()
	h.ray.mu.Unlock()
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateRunning || got.Attempts[0].StartTime == nil {
		t.Fatalf("after the sync: %s %+v", got.State, got.Attempts[0])
	}
	// The sums are read again at most every UsageEvery: the ticks above still saw none.
	h.clock.t = h.clock.t.Add(scheduler.UsageEvery)
	snap, err := h.loop.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 2 GPUs for about 31 min, decayed with a 1 h half-life: between 2 × 1800 × 2^(-0.5) and 2 × 1900 GPU-s.
	if u := snap.Usage[mvp.Operator]; u < 2*1800*0.70 || u > 2*1900 {
		t.Errorf("operator's usage %g GPU-s (usage %v), want about 3,000", u, snap.Usage)
	}
	// A task that ends changes the live set: the next snapshot reads the sums again at once.
	before := snap.Usage[mvp.Operator]
	h.ray.mu.Lock()
	h.ray.jobs[sid].EndTime = h.clock.t.UnixMilli()
	h.ray.mu.Unlock()
	h.ray.set(sid, mvp.RaySucceeded, "ok", 0)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateSucceeded {
		t.Fatalf("after the end: %s", got.State)
	}
	h.clock.t = h.clock.t.Add(10 * time.Second)
	snap, _ = h.loop.Snapshot(context.Background())
	if u := snap.Usage[mvp.Operator]; u <= 0 || u == before {
		t.Errorf("usage after the task ended: %g (before %g), want it read again", u, before)
	}
	h.loop.Policy.FairShare = false
	if snap, _ := h.loop.Snapshot(context.Background()); snap.Usage != nil {
		t.Errorf("fair share off: usage %v, want none computed", snap.Usage)
	}
}
