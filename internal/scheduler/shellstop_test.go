package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// buildAs is a Builder whose Ray-door tasks are sent with entrypoint door, run by a shell that starts the driver
// as its child when shell (as workload's builder says), and whose other tasks are exec'd.
func buildAs(door string, shell bool) scheduler.Builder {
	return func(t *mvp.Task, n int) (*mvp.JobSubmission, error) {
		sub := &mvp.JobSubmission{Entrypoint: "exec python3 -m x", SubmissionID: mvp.SubmissionID(t.ID, n)}
		if t.Workload == mvp.WorkloadRayJob {
			sub.Entrypoint, sub.ShellStartsDriver = door, shell
		}
		return sub, nil
	}
}

// doorTask queues a Ray-door task with id id.
func (h *harness) doorTask(id string) *mvp.Task {
	h.t.Helper()
	task := &mvp.Task{ID: id, Workload: mvp.WorkloadRayJob, State: mvp.StateQueued, JobSpecYAML: "{}",
		SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		h.t.Fatal(err)
	}
	return task
}

// TestStopTooSoon: only a Ray-door job run by a shell that starts its driver as a child waits, and only until mvp
// has seen it RUNNING for ShellStartWait.
func TestStopTooSoon(t *testing.T) {
	now := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	door := &mvp.Task{ID: "t", Workload: mvp.WorkloadRayJob}
	own := &mvp.Task{ID: "t", Workload: mvp.WorkloadPPO}
	for _, c := range []struct {
		name string
		t    *mvp.Task
		b    scheduler.Builder
		a    *mvp.Attempt
		want bool
	}{
		{"a shell's job, PENDING", door, buildAs("cd /tmp && python3 a.py", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, true},
		{"a shell's job, not yet followed", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1}, true},
		{"a shell's job, RUNNING for 0.5 s", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RunningAt: at(500 * time.Millisecond)}, true},
		{"a shell's job, RUNNING for 1 s", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RunningAt: at(time.Second)}, false},
		{"a shell's job recorded RUNNING with no time", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning}, false},
		{"a shell's job recorded RUNNING, Ray's start 0.5 s ago", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, StartTime: at(500 * time.Millisecond)}, true},
		{"a shell's job that ended", door, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed}, false},
		{"a user's own exec of a shell, PENDING", door, buildAs("exec bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, true},
		{"a door job mvp exec'd, PENDING", door, buildAs("exec python3 a.py", false), &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, false},
		{"mvp's own job, PENDING", own, buildAs("bash run.sh", true), &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, false},
		{"no builder", door, nil, &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, false},
		{"a builder that fails", door, func(*mvp.Task, int) (*mvp.JobSubmission, error) { return nil, errors.New("no") }, &mvp.Attempt{No: 1, RayStatus: mvp.RayPending}, false},
		{"no attempt", door, buildAs("bash run.sh", true), nil, false},
	} {
		if got := scheduler.StopTooSoon(c.b, c.t, c.a, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestACanceledShellJobIsStoppedOnceItHasStartedItsCommand: a Ray-door job whose entrypoint is a shell command
// (`cd /tmp && python3 …`), canceled while Ray has it PENDING, is not asked to stop then (Ray would signal the
// shell before it starts the driver, and miss the driver: StopTooSoon), nor in the first second mvp sees it
// RUNNING; it is at the first pass after that. An exec'd door entrypoint is stopped at once, as before.
func TestACanceledShellJobIsStoppedOnceItHasStartedItsCommand(t *testing.T) {
	for _, c := range []struct {
		entrypoint string
		shell      bool
		stoppedAt  string // "pending": at the pass after the cancel; "after a second": once RUNNING for 1 s
	}{
		{"cd /tmp && python3 a.py", true, "after a second"},
		{"exec python3 a.py", false, "pending"},
	} {
		t.Run(c.entrypoint, func(t *testing.T) {
			h := newHarness(t)
			h.loop.Build = buildAs(c.entrypoint, c.shell)
			task := h.doorTask("mvp2-ray_job-20251223-143201-5701")
			sid := task.ID + "--a01"
			h.tick()
			if s := h.get(task.ID).State; s != mvp.StateSubmitted {
				t.Fatalf("state %s, want SUBMITTED", s)
			}
			if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitted,
				To: mvp.StateCanceled, At: h.clock.t}); err != nil {
				t.Fatal(err)
			}
			h.tick()
			h.tick()
			if c.stoppedAt == "pending" {
				if len(h.ray.stopped) == 0 {
					t.Fatalf("an exec'd job canceled while PENDING was not stopped")
				}
				return
			}
			if len(h.ray.stopped) != 0 {
				t.Fatalf("a shell's job was asked to stop while PENDING: %v", h.ray.stopped)
			}
			h.ray.set(sid, mvp.RayRunning, "", 0)
			h.clock.t = h.clock.t.Add(-500 * time.Millisecond) // tick adds a second: this pass is 0.5 s after the last
			h.tick()
			if len(h.ray.stopped) != 0 {
				t.Fatalf("a shell's job was asked to stop at the pass that first saw it RUNNING: %v", h.ray.stopped)
			}
			h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
			h.tick() // 0.5 s after mvp saw it RUNNING
			if len(h.ray.stopped) != 0 {
				t.Fatalf("a shell's job was asked to stop 0.5 s after mvp saw it RUNNING: %v", h.ray.stopped)
			}
			h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
			h.tick() // 1 s after
			if len(h.ray.stopped) != 1 || h.ray.stopped[0] != sid {
				t.Fatalf("stops once mvp has seen it RUNNING for a second: %v, want [%s]", h.ray.stopped, sid)
			}
			h.tick()
			if got := h.get(task.ID); got.State != mvp.StateCanceled || got.Latest().RayStatus != mvp.RayStopped {
				t.Errorf("state %s, attempt %s; want CANCELED, STOPPED", got.State, got.Latest().RayStatus)
			}
		})
	}
}

// TestALateShellJobOfAClosedAttemptIsStoppedOnceItHasStartedItsCommand: a door job whose submit answer was lost
// reached Ray after mvp had closed its canceled attempt (stopClosed). Its entrypoint is a shell that starts the
// driver as its child, so a stop while Ray has it PENDING, or in its first second RUNNING, could miss the driver.
// Found PENDING at a listing of Ray's jobs, it was left to the next listing, ten minutes on, running what the user
// had canceled meanwhile; found RUNNING, it was stopped at once, however new its run. Now mvp looks at such a job
// at every pass and stops it at the first pass a second after it first saw it RUNNING.
func TestALateShellJobOfAClosedAttemptIsStoppedOnceItHasStartedItsCommand(t *testing.T) {
	for _, c := range []struct {
		found     mvp.RayStatus
		failFirst bool // Ray's first answer to the stop is an error
	}{{mvp.RayPending, false}, {mvp.RayRunning, false}, {mvp.RayRunning, true}} {
		found := c.found
		t.Run(fmt.Sprintf("%s,stop_fails_once=%v", found, c.failFirst), func(t *testing.T) {
			h := newHarness(t) // SubmitGrace: 1 min
			h.loop.Build = buildAs("cd /tmp && python3 a.py", true)
			lr := listingRay{fakeRay: h.ray, meta: map[string]map[string]string{}}
			h.loop.Jobs, h.loop.Instance = lr, "db1"
			task := h.doorTask("mvp2-ray_job-20251223-143201-5702")
			h.closeCanceledLostSubmit(task)
			sid := task.ID + "--a01"
			h.ray.mu.Lock()
			h.ray.jobs[sid] = &mvp.JobInfo{SubmissionID: sid, Status: found, JobID: "02000000"}
			lr.meta[sid] = map[string]string{mvp.MetaInstance: "db1", "task_id": task.ID}
			h.ray.submitErr = nil
			h.ray.mu.Unlock()
			stops := func() []string {
				h.ray.mu.Lock()
				defer h.ray.mu.Unlock()
				return append([]string(nil), h.ray.stopped...)
			}
			h.clock.t = h.clock.t.Add(11 * time.Minute) // the next listing of Ray's jobs
			h.tick()
			if s := stops(); len(s) != 0 {
				t.Fatalf("a late shell job found %s was asked to stop at once: %v", found, s)
			}
			if found == mvp.RayPending {
				h.tick()
				if s := stops(); len(s) != 0 {
					t.Fatalf("a late shell job was asked to stop while PENDING: %v", s)
				}
				h.ray.set(sid, mvp.RayRunning, "", 0)
				h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
				h.tick() // the pass that first sees it RUNNING
				if s := stops(); len(s) != 0 {
					t.Fatalf("a late shell job was asked to stop at the pass that first saw it RUNNING: %v", s)
				}
			}
			h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
			h.tick() // 0.5 s after mvp first saw it RUNNING
			if s := stops(); len(s) != 0 {
				t.Fatalf("a late shell job was asked to stop 0.5 s after mvp first saw it RUNNING: %v", s)
			}
			want := 1
			if c.failFirst {
				h.ray.mu.Lock()
				h.ray.stopErr = errors.New("the dashboard did not answer")
				h.ray.mu.Unlock()
				h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
				h.tick() // 1 s after: asked, and Ray's answer is an error
				if s := stops(); len(s) != 1 {
					t.Fatalf("stops asked a second after mvp first saw it RUNNING: %v, want one", s)
				}
				h.ray.mu.Lock()
				h.ray.stopErr = nil
				h.ray.mu.Unlock()
				want = 2
			}
			h.clock.t = h.clock.t.Add(-500 * time.Millisecond)
			h.tick() // 1 s after (or the pass after a failed ask): long before the next listing
			if s := stops(); len(s) != want || s[want-1] != sid {
				t.Fatalf("stops a second after mvp first saw it RUNNING: %v, want %d ending with %s", s, want, sid)
			}
			if !strings.Contains(fmt.Sprint(h.events(task.ID)), mvp.EventStopRequested) {
				t.Errorf("the task's history does not say its late job was stopped: %v", h.events(task.ID))
			}
			h.tick()
			h.tick()
			if s := stops(); len(s) != want {
				t.Errorf("the stopped job was asked to stop again at the next passes: %v", s)
			}
			if j, _ := h.ray.GetJob(context.Background(), sid); j.Status != mvp.RayStopped {
				t.Errorf("the late job is %s, want STOPPED", j.Status)
			}
		})
	}
}

// failRunningWrites is a store whose writes of attempt sid's Ray status fail (a disk that takes no writes for a
// while): the attempt's row never records that its job runs.
type failRunningWrites struct {
	mvp.Store
	sid string
}

func (s failRunningWrites) UpdateAttempt(ctx context.Context, from mvp.RayStatus, a *mvp.Attempt, typ string, payload map[string]any) error {
	if a.RaySubmissionID == s.sid {
		return errors.New("disk I/O error")
	}
	return s.Store.UpdateAttempt(ctx, from, a, typ, payload)
}

// TestACanceledShellJobIsStoppedThoughItsRunningIsNotWritten: the second a shell's job must have run before its
// stop counts from when this mvp first saw it RUNNING. While the write of that (running_at) fails, every pass
// would see the job RUNNING "for the first time" and hold the stop back for ever; the loop keeps the first sight in
// memory (runningSeen), so the stop comes a second after it all the same.
func TestACanceledShellJobIsStoppedThoughItsRunningIsNotWritten(t *testing.T) {
	h := newHarness(t)
	h.loop.Build = buildAs("cd /tmp && python3 a.py", true)
	task := h.doorTask("mvp2-ray_job-20251223-143201-5703")
	sid := task.ID + "--a01"
	h.tick()
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitted,
		To: mvp.StateCanceled, At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.loop.Store = failRunningWrites{Store: h.db, sid: sid}
	h.ray.set(sid, mvp.RayRunning, "", 0)
	for i := 0; i < 3; i++ { // passes 0.3 s apart: the last 0.6 s after the first
		h.clock.t = h.clock.t.Add(-700 * time.Millisecond)
		h.loop.RunOnce(context.Background()) // its sync fails: the write of running_at
		h.clock.t = h.clock.t.Add(time.Second)
	}
	if a := h.get(task.ID).Latest(); a.RunningAt != nil {
		t.Fatalf("the store wrote running_at %v: the test does not fail the write", a.RunningAt)
	}
	if len(h.ray.stopped) != 0 {
		t.Fatalf("stopped before mvp had seen it RUNNING for a second: %v", h.ray.stopped)
	}
	for i := 0; i < 2; i++ { // 0.9 and 1.2 s after the first
		h.clock.t = h.clock.t.Add(-700 * time.Millisecond)
		h.loop.RunOnce(context.Background())
		h.clock.t = h.clock.t.Add(time.Second)
	}
	if len(h.ray.stopped) != 1 || h.ray.stopped[0] != sid {
		t.Fatalf("a shell's job seen RUNNING for 1.2 s, its running_at never written, was not stopped: %v", h.ray.stopped)
	}
}
