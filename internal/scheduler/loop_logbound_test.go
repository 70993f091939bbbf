package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// slowLog is Ray whose copy of one job's driver log takes longer than anyone waits (a log of gigabytes, a node's
// agent under load): the copy goes on until its context ends, then fails as the client's does.
type slowLog struct {
	*fakeRay
	id string
}

func (r slowLog) CopyJobLog(ctx context.Context, id, node string, w io.Writer) (int64, error) {
	if id != r.id {
		return r.fakeRay.CopyJobLog(ctx, id, node, w)
	}
	<-ctx.Done()
	return 0, fmt.Errorf("logs of job %s: copy of the driver log cut short after 0 bytes: %w", id, ctx.Err())
}

// TestALongLogCopyLeavesThePassItsTime: Run bounds a pass (2 min) and each log copy has its own bound (5 min), so a
// failed run's final log that took longer than the rest of the pass to copy was cut by the pass's own end: the pass
// failed with it before it recorded the run's end or decided anything, and so did every pass after it, the copy
// being tried again first. One ended job with a long log held the whole queue. A copy now ends in time for the pass
// to conclude the attempt without its log (keepLogs tries again, within its tries) and to go on.
func TestALongLogCopyLeavesThePassItsTime(t *testing.T) {
	h := newHarness(t)
	failed := h.task()
	h.tick()
	sid := failed.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.tick()
	h.ray.set(sid, mvp.RayFailed, "Job entrypoint command failed with exit code 1", 1)
	waiting := h.task()
	h.loop.Ray = slowLog{h.ray, sid}
	for pass := 1; pass <= 2; pass++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)                             // past keepLogEvery: the next pass tries the log again
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // as Run bounds a pass, scaled down
		err := h.loop.RunOnce(ctx)
		cancel()
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if got := h.get(failed.ID); got.State != mvp.StateFailed || got.Attempts[0].LogKept {
		t.Errorf("the failed run: %s, attempt %+v; want FAILED, its log not kept", got.State, got.Attempts[0])
	}
	if s := h.get(waiting.ID).State; s != mvp.StateSubmitted {
		t.Errorf("the waiting task: %s; want SUBMITTED", s)
	}
	if a := h.get(failed.ID).Attempts[0]; a.LogTries == 0 {
		t.Errorf("the copies cut short counted no try: %+v", a)
	}
}

// TestALongLogCopyOfASuccessCountsItsTries: a success's log is kept after the pass's decisions (keepLogs). Its copy,
// cut by the pass's own end, left no time to count the try: every pass copied it until the pass's end, for ever,
// and the job was never pruned. A copy cut short is now a try, and the tries are bounded (MaxLogTries).
func TestALongLogCopyOfASuccessCountsItsTries(t *testing.T) {
	h := newHarness(t)
	done := h.task()
	h.tick()
	sid := done.ID + "--a01"
	h.ray.set(sid, mvp.RaySucceeded, "", 0)
	h.loop.Ray = slowLog{h.ray, sid}
	h.clock.t = h.clock.t.Add(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // as Run bounds a pass, scaled down
	defer cancel()
	if err := h.loop.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.get(done.ID)
	if a := got.Attempts[0]; got.State != mvp.StateSucceeded || a.LogKept || a.LogTries != 1 {
		t.Errorf("%s, attempt %+v; want SUCCEEDED, its log not kept, its try counted", got.State, a)
	}
}
