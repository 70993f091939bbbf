package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

func (h *harness) progressPath(id string, n int) string {
	dir, err := (taskfs.FS{Root: h.root}).AttemptDir(id, n)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	return filepath.Join(dir, mvp.ProgressFile)
}

// writeProgress writes the attempt's progress file stamped with the harness clock (the loop compares it with
// the same clock).
func (h *harness) writeProgress(id string, n int, body string) {
	h.t.Helper()
	p := h.progressPath(id, n)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chtimes(p, h.clock.t, h.clock.t); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) eventsOf(id, typ string) []*mvp.Event {
	h.t.Helper()
	evs, _, err := h.db.Events(context.Background(), id, "", 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*mvp.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestLoopReadsProgress: a running attempt's progress file is shown on its task, read again only when it changed;
// a malformed or oversized file and a symlink are each recorded once as PROGRESS_INVALID and never crash the loop;
// the last word of an ended attempt is read.
func TestLoopReadsProgress(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	sid := task.ID + "--a01"
	h.tick()
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateRunning || got.Progress != nil {
		t.Fatalf("running without a progress file: %s %+v", got.State, got.Progress)
	}
	h.writeProgress(task.ID, 1, `{"step": 3, "total_steps": 10, "percent_complete": 30, "metrics": {"loss": 1.5}}`)
	h.tick()
	p := h.get(task.ID).Progress
	if p == nil || *p.Step != 3 || p.AttemptNo != 1 || p.Metrics["loss"] != 1.5 || p.UpdatedAt.IsZero() {
		t.Fatalf("progress %+v", p)
	}
	for _, bad := range []string{`{"step": "x"}`, `{"step": 1`} {
		h.writeProgress(task.ID, 1, bad)
		h.tick()
		h.tick() // unchanged: not recorded twice
	}
	if n := len(h.eventsOf(task.ID, mvp.EventProgressInvalid)); n != 2 {
		t.Errorf("%d PROGRESS_INVALID events for two bad versions of the file, want 2", n)
	}
	if got := h.get(task.ID).Progress; got == nil || *got.Step != 3 {
		t.Errorf("a bad file replaced the last good progress: %+v", got)
	}
	// A symlink (to a file that would parse) is refused, once.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(target, []byte(`{"step": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pp := h.progressPath(task.ID, 1)
	os.Remove(pp)
	if err := os.Symlink(target, pp); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.tick()
	if n := len(h.eventsOf(task.ID, mvp.EventProgressInvalid)); n != 3 {
		t.Errorf("%d PROGRESS_INVALID events after a symlink, want 3", n)
	}
	if got := h.get(task.ID).Progress; *got.Step == 99 {
		t.Errorf("the symlink was followed")
	}
	os.Remove(pp)
	h.writeProgress(task.ID, 1, `{"step": 10, "total_steps": 10, "percent_complete": 100}`)
	h.ray.set(sid, mvp.RaySucceeded, "", 0)
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateSucceeded || got.Progress == nil || *got.Progress.PercentComplete != 100 {
		t.Errorf("after the end: %s %+v", got.State, got.Progress)
	}
}

// heartbeatTask queues a 1 × 2 task with heartbeat_timeout_s timeoutS.
func (h *harness) heartbeatTask(timeoutS int) *mvp.Task {
	h.t.Helper()
	n++
	task := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t,
		HeartbeatTimeoutS: timeoutS}
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		h.t.Fatal(err)
	}
	return task
}

// TestLoopStopsAHungRun: with heartbeat_timeout_s, a running attempt whose progress file stops changing is stopped
// through Ray as HEARTBEAT_LOST and retried; when the INFRA retries are used up the task fails.
func TestLoopStopsAHungRun(t *testing.T) {
	h := newHarness(t) // MaxInfraRetries 2
	task := h.heartbeatTask(30)
	for no := 1; no <= 3; no++ {
		sid := mvp.SubmissionID(task.ID, no)
		if h.get(task.ID).LatestAttemptNo < no {
			h.tick()
		}
		if got := h.get(task.ID); got.LatestAttemptNo != no {
			t.Fatalf("attempt %d not made: %s %s", no, got.State, got.PendingReason)
		}
		start := h.clock.t.UnixMilli()
		h.ray.set(sid, mvp.RayRunning, "", 0)
		h.ray.mu.Lock()
		h.ray.jobs[sid].StartTime = start
		h.ray.mu.Unlock()
		h.tick()
		// It writes progress for a while: no stop.
		for i := 0; i < 3; i++ {
			h.writeProgress(task.ID, no, `{"step": 1}`)
			h.clock.t = h.clock.t.Add(20 * time.Second)
			h.tick()
		}
		if got := h.get(task.ID); got.State != mvp.StateRunning {
			t.Fatalf("attempt %d stopped while it wrote progress: %s", no, got.State)
		}
		// Then it hangs.
		h.clock.t = h.clock.t.Add(30 * time.Second)
		h.tick() // judged and stopped (the fake Ray stops it at once)
		h.tick() // concluded (and, for a retry, resubmitted at once)
		got := h.get(task.ID)
		a := got.Attempts[no-1]
		if a.FailureKind != mvp.FailureHeartbeatLost || a.RayStatus != mvp.RayStopped {
			t.Fatalf("attempt %d: %+v", no, a)
		}
		if no < 3 && (got.State.Terminal() || got.LatestAttemptNo != no+1) {
			t.Fatalf("attempt %d: task %s, want a retry", no, got.State)
		}
		if no == 3 && (got.State != mvp.StateFailed || got.ErrorSummary == "") {
			t.Fatalf("after 3 hung attempts: %s %q", got.State, got.ErrorSummary)
		}
	}
	if n := len(h.eventsOf(task.ID, mvp.EventHeartbeatLost)); n != 3 {
		t.Errorf("%d HEARTBEAT_LOST events, want 3", n)
	}
}

// TestProgressIsReadWhileRayIsDown: the progress file is on mvp's own disk, not Ray's: while Ray's dashboard cannot
// be reached (the loop backing off) a running attempt's progress is still shown as it changes. It stopped at the
// last step read before the outage, with that step's time.
func TestProgressIsReadWhileRayIsDown(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.writeProgress(task.ID, 1, `{"step": 3, "total_steps": 120}`)
	h.tick()
	h.ray.down = true
	for i := 0; i < 5; i++ {
		h.tick()
	}
	h.writeProgress(task.ID, 1, `{"step": 49, "total_steps": 120}`)
	for i := 0; i < 40; i++ { // 40 s down: the loop backs off most of it
		h.tick()
	}
	if p := h.get(task.ID).Progress; p == nil || p.Step == nil || *p.Step != 49 {
		t.Fatalf("progress after the file reached step 49 while Ray was down: %+v", p)
	}
}

// shared_root changed in dev.yaml across a restart: mvp looked for a healthy run's progress file under the new
// root, saw none change, and stopped the run as HEARTBEAT_LOST (twice, using up retries). A running attempt whose
// folder mvp cannot see is not judged by its heartbeat (mvp cannot tell); max_runtime_s still bounds it. Found in
// a walk-through.
func TestARunWhoseFolderMvpCannotSeeIsNotJudgedByHeartbeat(t *testing.T) {
	h := newHarness(t)
	task := h.heartbeatTask(30)
	h.tick()
	sid := mvp.SubmissionID(task.ID, 1)
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.ray.mu.Lock()
	h.ray.jobs[sid].StartTime = h.clock.t.UnixMilli()
	h.ray.mu.Unlock()
	h.tick()
	h.writeProgress(task.ID, 1, `{"step": 1}`)
	h.tick()
	// mvp restarted with another shared_root: the task folders are elsewhere.
	h.root = t.TempDir()
	h.loop = h.newLoop()
	for i := 0; i < 4; i++ {
		h.clock.t = h.clock.t.Add(20 * time.Second)
		h.tick()
	}
	if got := h.get(task.ID); got.State != mvp.StateRunning || got.Attempts[0].FailureKind != mvp.FailureNone {
		t.Fatalf("a run whose folder mvp cannot see: %s, attempt %+v; want it left RUNNING", got.State, got.Attempts[0])
	}
}
