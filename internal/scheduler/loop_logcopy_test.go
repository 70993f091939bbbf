package scheduler_test

import (
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestASlowLogCopyIsMadeLessOften: the running log is copied in the scheduler's pass; a copy that takes long (a
// log of hundreds of MB held the pass 12 s in walk-through 16) is made again only after ten times what it took,
// so that copies take at most a tenth of the loop's time. Here each copy takes 2 s of the clock, with a copy
// due every 5 s: over 60 s of passes, 3 or 4 copies are made, not 10.
func TestASlowLogCopyIsMadeLessOften(t *testing.T) {
	h := newHarness(t)
	h.loop.LogCopyEvery = 5 * time.Second
	task := h.task()
	h.tick()
	id := task.ID + "--a01"
	h.ray.set(id, mvp.RayRunning, "", 0)
	h.tick()
	copies := 0
	h.ray.logsErr = func(string) error {
		copies++
		h.clock.t = h.clock.t.Add(2 * time.Second)
		return nil
	}
	for end := h.clock.t.Add(60 * time.Second); h.clock.t.Before(end); {
		h.tick()
	}
	if copies < 2 || copies > 4 {
		t.Errorf("%d copies of a log taking 2 s each in 60 s, copies due every 5 s: want 3 or 4", copies)
	}
}
