package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// queueReasons is the queue's picture as GET /api/v2/queue (and `mvp list`) shows it: each waiting task's code and
// sentence, by task id.
func (h *harness) queueReasons() map[string]scheduler.QueueEntry {
	h.t.Helper()
	snap, err := h.loop.Snapshot(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]scheduler.QueueEntry{}
	for _, e := range scheduler.Explain(h.clock.t, snap, h.loop.Policy).Queue {
		out[e.TaskID] = e
	}
	return out
}

// saysJobServer reports whether s says that Ray's job server (the dashboard) is not answering, and which setting
// names it.
func saysJobServer(s string) bool {
	return strings.Contains(s, "Ray's job server") && strings.Contains(s, "not answering") && strings.Contains(s, "`address` in dev.yaml")
}

// TestNothingIsAdmittedWhileOnlyRaysJobServerIsDown: with Ray's job server (the dashboard's job REST API) down and
// the GCS answering (the live probe reads the cluster), the pass that found the live attempt's lookup refused
// admitted the queued tasks all the same: their POSTs failed, they stayed SUBMITTING, and the tasks behind them
// were shown "waiting for GPUs" (gpus_busy), their GPUs taken by submissions Ray never got. Nothing is admitted
// while the job server does not answer, as during an outage of Ray, and the queue and /healthz say why (found on
// the local cluster with its dashboard killed).
func TestNothingIsAdmittedWhileOnlyRaysJobServerIsDown(t *testing.T) {
	h := newHarness(t)
	run := h.running(t, "mvp2-ppo-20251223-143201-ee01", func(*mvp.Task) {})
	h.ray.jobsDown = true // the dashboard is gone; the GCS answers the probe
	waiting := []*mvp.Task{h.taskOf(2), h.taskOf(2), h.taskOf(2)}
	submits := h.ray.submits
	for i := 0; i < 5; i++ {
		h.clock.t = h.clock.t.Add(time.Minute) // past every backoff
		h.tick()
	}
	for _, w := range waiting {
		if got := h.get(w.ID); got.LatestAttemptNo != 0 {
			t.Errorf("task %s was admitted (%s, %d attempts) while Ray's job server did not answer", w.ID, got.State, got.LatestAttemptNo)
		}
	}
	if n := h.ray.submits - submits; n != 0 {
		t.Errorf("%d submissions were tried while Ray's job server did not answer", n)
	}
	hl := h.loop.Health()
	if hl.RayOK || !saysJobServer(hl.RayError) {
		t.Errorf("/healthz's ray while the job server is down: ok %v, %q; want it to say Ray's job server is not answering and `address`", hl.RayOK, hl.RayError)
	}
	q := h.queueReasons()
	for _, w := range waiting {
		e := q[w.ID]
		if e.Code != scheduler.CodeClusterUnknown || !saysJobServer(e.Reason) {
			t.Errorf("task %s waits with %s %q; want %s saying Ray's job server is not answering", w.ID, e.Code, e.Reason, scheduler.CodeClusterUnknown)
		}
	}
	if got := h.get(run.ID); got.State != mvp.StateRunning {
		t.Errorf("the running task is %s while the job server was down: nothing may change it", got.State)
	}

	h.ray.jobsDown = false // the dashboard is back
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if !h.loop.Health().RayOK {
		t.Errorf("Ray's job server answers again, but /healthz says %q", h.loop.Health().RayError)
	}
	for _, w := range waiting {
		if got := h.get(w.ID); got.State != mvp.StateSubmitted || len(got.Attempts) != 1 {
			t.Errorf("once the job server answers, task %s is %s with %d attempts; want SUBMITTED with 1", w.ID, got.State, len(got.Attempts))
		}
	}
}

// TestAJobServerFoundDownBySubmittingHoldsTheRestOfThePass: with no live attempt, no lookup tells the pass that Ray's
// job server is down (the cluster reads through the GCS): the first submission finds it. The pass sent every task
// it admitted, each POST refused, and later passes went on admitting. After the first submission that could not
// reach the job server, the pass sends no more, the outage begins (/healthz, backoff), and the queue says why.
func TestAJobServerFoundDownBySubmittingHoldsTheRestOfThePass(t *testing.T) {
	h := newHarness(t)
	h.ray.jobsDown = true
	tasks := []*mvp.Task{h.taskOf(2), h.taskOf(2), h.taskOf(2), h.taskOf(2)}
	for i := 0; i < 5; i++ {
		h.clock.t = h.clock.t.Add(time.Minute)
		h.tick()
	}
	if h.ray.submits > 1 {
		t.Errorf("%d submissions were tried while Ray's job server did not answer; want the first one only", h.ray.submits)
	}
	admitted := 0
	for _, x := range tasks {
		if h.get(x.ID).LatestAttemptNo > 0 {
			admitted++
		}
	}
	if admitted > 1 {
		t.Errorf("%d tasks were admitted while Ray's job server did not answer; want at most the one that found it down", admitted)
	}
	if hl := h.loop.Health(); hl.RayOK || !saysJobServer(hl.RayError) {
		t.Errorf("/healthz's ray: ok %v, %q; want it to say Ray's job server is not answering", hl.RayOK, hl.RayError)
	}
	for id, e := range h.queueReasons() {
		if !saysJobServer(e.Reason) {
			t.Errorf("task %s waits with %s %q; want it to say Ray's job server is not answering", id, e.Code, e.Reason)
		}
	}
	h.ray.jobsDown = false
	for i := 0; i < 3; i++ {
		h.clock.t = h.clock.t.Add(time.Minute) // the held submission's grace, then the rest
		h.tick()
	}
	for _, x := range tasks {
		got := h.get(x.ID)
		if got.State != mvp.StateSubmitted || got.LatestAttemptNo != 1 {
			t.Errorf("once the job server answers, task %s is %s with attempt %d; want SUBMITTED, attempt 1", x.ID, got.State, got.LatestAttemptNo)
		}
	}
}
