package scheduler_test

import (
	"log/slog"
	"strings"
	"testing"

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
