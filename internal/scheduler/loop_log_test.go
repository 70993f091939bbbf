package scheduler_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestTheLogSaysWhatHappenedToATask: at every log level, a task that was sent to Ray and ended left no line in
// mvp's log with its id (only a stop by mvp was logged): an operator grepping the service's log for a task id
// during an incident found nothing, and had to know of `mvp events`. The loop now logs, once each, an attempt
// sent to Ray and an attempt's end with its Ray status, failure kind and the task's next state. Found in the SRE
// walk-through.
func TestTheLogSaysWhatHappenedToATask(t *testing.T) {
	h := newHarness(t)
	var log lockedLog
	h.loop.Logger = slog.New(slog.NewTextHandler(&log, nil))
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayFailed, "Job entrypoint command failed with exit code 3", 3)
	h.tick()
	h.tick()
	var lines []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "task_id="+task.ID) {
			lines = append(lines, l)
		}
	}
	want := []string{
		"submission_id=" + task.ID + "--a01",
		"ray_status=FAILED failure_kind=RUNTIME_ERROR state=FAILED",
	}
	if len(lines) != len(want) {
		t.Fatalf("log lines naming the task: %d, want %d (submitted, ended):\n%s", len(lines), len(want), log.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("log line %d %q does not say %q", i, lines[i], w)
		}
	}
}

// TestAnOutageIsLoggedOnceWithItsLength: the log said "Ray is unavailable; backing off" when Ray went away and
// "Ray is available again" when it came back, without how long it was away: the operator had to find and subtract
// the two timestamps (in a log with other lines between) to say how long nothing was admitted. The line of the
// return says since when and for how long.
func TestAnOutageIsLoggedOnceWithItsLength(t *testing.T) {
	h := newHarness(t)
	var log lockedLog
	h.loop.Logger = slog.New(slog.NewTextHandler(&log, nil))
	h.task()
	h.tick()
	h.ray.down = true
	for i := 0; i < 90; i++ {
		h.tick() // one second each
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	out := log.String()
	if n := strings.Count(out, "Ray is unavailable"); n != 1 {
		t.Errorf("%d lines say Ray is unavailable in 90 s of outage, want 1:\n%s", n, out)
	}
	var back string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Ray is available again") {
			back = l
		}
	}
	if !strings.Contains(back, "down_for=2m30s") || !strings.Contains(back, "down_since=") {
		t.Errorf("the line of Ray's return %q does not say since when and for how long (2m30s) it was down", back)
	}
}

// TestAnOutageEndsWhenRayAnswers: the line of Ray's return measured the outage to the start of the pass that found
// Ray back, and that pass can wait long on Ray first (a job server that hangs rather than refuses: each call until
// its timeout), so an outage of about 49 s was logged as down_for=30s (found by a user's-eye drill). The return is
// measured, and its RAY_AVAILABLE event stamped, when Ray answered.
func TestAnOutageEndsWhenRayAnswers(t *testing.T) {
	h := newHarness(t)
	var log lockedLog
	h.loop.Logger = slog.New(slog.NewTextHandler(&log, nil))
	id := h.task()
	h.tick()
	h.ray.down = true
	for i := 0; i < 90; i++ {
		h.tick() // one second each
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute)                                   // past the backoff: the next pass looks
	h.ray.answering = func() { h.clock.t = h.clock.t.Add(20 * time.Second) } // each look at Ray takes 20 s
	h.tick()
	h.ray.answering = nil
	answered := h.clock.t
	var back string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "Ray is available again") {
			back = l
		}
	}
	_, after, _ := strings.Cut(back, "down_for=")
	downFor, err := time.ParseDuration(strings.Fields(after + " ")[0])
	if err != nil || downFor < 2*time.Minute+50*time.Second { // 90 s of ticks, a minute, then a 20 s look at Ray
		t.Errorf("the line of Ray's return %q does not count the time the pass waited for Ray's answer (%v)", back, err)
	}
	evs, _, err := h.db.Events(t.Context(), id.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == mvp.EventRayAvailable && e.TS.Before(answered.Add(-10*time.Second)) {
			t.Errorf("RAY_AVAILABLE stamped %v, before Ray answered (by %v)", e.TS, answered)
		}
	}
}
