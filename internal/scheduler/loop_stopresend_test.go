package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestAStopIsNotSentEveryPass: while Ray's stop wait runs (SIGTERM, then SIGKILL after runtime_grace_s) the job is
// still RUNNING, and mvp asked Ray to stop it again at every pass: an SRE counted 18 stop_job requests for 2 stops
// with a 1 s tick (more with the cluster watch's passes). The ask is repeated, in case one was lost, at most once
// per scheduler.StopResend.
func TestAStopIsNotSentEveryPass(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(h *harness, task *mvp.Task)
	}{
		{"canceled", func(h *harness, task *mvp.Task) {
			if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateRunning,
				To: mvp.StateCanceled, At: h.clock.t}); err != nil {
				h.t.Fatal(err)
			}
		}},
		{"past max_runtime_s", func(h *harness, task *mvp.Task) {
			h.clock.t = h.clock.t.Add(2 * time.Minute)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.ray.stopSlow = true
			task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-5700", Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
				NNodes: 1, GPUsPerNode: 2, MaxRuntimeS: 60, JobSpecYAML: "x", SpecJSON: []byte("{}"),
				CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
			if err := h.db.CreateTask(context.Background(), task); err != nil {
				t.Fatal(err)
			}
			h.tick()
			h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
			h.tick()
			if s := h.get(task.ID).State; s != mvp.StateRunning {
				t.Fatalf("state %s, want RUNNING", s)
			}
			c.stop(h, task)
			for range 5 {
				h.tick()
			}
			if n := len(h.ray.stopped); n != 1 {
				t.Fatalf("%d stop requests in 5 passes of 1 s, want 1: %v", n, h.ray.stopped)
			}
			h.clock.t = h.clock.t.Add(scheduler.StopResend)
			h.tick()
			if n := len(h.ray.stopped); n != 2 {
				t.Errorf("%d stop requests once StopResend has passed, want 2", n)
			}
		})
	}
}

// TestAStopRayDidNotKnowIsAskedAgain: a stop Ray answers "no such job" (a POST that has not landed yet) is not
// held back for StopResend: the job may appear at the next pass and must be stopped then.
func TestAStopRayDidNotKnowIsAskedAgain(t *testing.T) {
	h := newHarness(t)
	h.ray.stopSlow = true
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateRunning,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.ray.stopErr = mvp.ErrJobNotFound
	h.tick()
	h.tick()
	if n := len(h.ray.stopped); n != 2 {
		t.Errorf("%d stop requests in 2 passes after Ray said it had no such job, want 2: %v", n, h.ray.stopped)
	}
}
