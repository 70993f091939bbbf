package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestLoopStopsALateJobOfACanceledResubmit: a task whose POSTs failed (Ray down) stays SUBMITTING; minutes later a
// resubmit's POST times out and lands in Ray only after the user canceled. The grace in which a canceled attempt
// that Ray does not know is still followed runs from the last POST, not from the attempt's creation (minutes ago:
// it was closed "canceled before the job reached Ray" at the next 404, and the job that then appeared ran on).
func TestLoopStopsALateJobOfACanceledResubmit(t *testing.T) {
	h := newHarness(t)
	var landing string // a POST Ray has taken but not yet answered/created
	h.ray.submitErr = func(id string) error {
		landing = id
		return errors.Join(mvp.ErrRayUnavailable, errors.New("timeout"))
	}
	task := h.task()
	sid := task.ID + "--a01"
	h.tick()                  // QUEUED → SUBMITTING; POST fails, GET 404
	for i := 0; i < 10; i++ { // Ray stays unreachable for POST for ~5 minutes
		h.clock.t = h.clock.t.Add(31 * time.Second)
		h.tick()
	}
	// Then the tick whose resubmit POST is the last (the loop backs off while Ray is unreachable, with jitter:
	// not every tick makes one).
	landing = ""
	for i := 0; i < 20 && landing == ""; i++ {
		h.clock.t = h.clock.t.Add(31 * time.Second)
		h.tick()
	}
	if s := h.get(task.ID).State; s != mvp.StateSubmitting {
		t.Fatalf("state %s, want SUBMITTING", s)
	}
	if landing != sid {
		t.Fatalf("no resubmit was POSTed (submits %d)", h.ray.submits)
	}
	// The last resubmit's POST timed out on mvp's side; Ray is still creating the job. The user cancels now.
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.ray.submitErr = nil
	h.clock.t = h.clock.t.Add(31 * time.Second) // 31 s after that POST: well inside SubmitGrace (1 min)
	h.tick()                                    // GET 404
	// The POST lands: Ray creates the job.
	h.ray.mu.Lock()
	h.ray.jobs[sid] = &mvp.JobInfo{SubmissionID: sid, Status: mvp.RayRunning, JobID: "02000000"}
	h.ray.mu.Unlock()
	for i := 0; i < 3; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	j, _ := h.ray.GetJob(context.Background(), sid)
	if j.Status != mvp.RayStopped {
		a := h.get(task.ID).Attempts[0]
		t.Fatalf("task CANCELED but its Ray job %s is %s and never stopped (stop calls %v); attempt recorded %s %q",
			sid, j.Status, h.ray.stopped, a.RayStatus, a.Message)
	}
}
