package scheduler_test

import (
	"context"
	"errors"
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
			task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-5701", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
				JobSpecYAML: "{}", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
			if err := h.db.CreateTask(context.Background(), task); err != nil {
				t.Fatal(err)
			}
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
