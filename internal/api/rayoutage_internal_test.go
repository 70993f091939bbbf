package api

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestALiveTaskSaysRayCannotBeRead: while Ray cannot be read, a waiting task said so (nothing is admitted), but a
// RUNNING one showed RUNNING and nothing else: its state is only what Ray last said, and a run that ended meanwhile
// still reads RUNNING (found by a drill: `mvp get` during an outage). A live task says Ray's outage in ray_outage;
// with Ray read, none does.
func TestALiveTaskSaysRayCannotBeRead(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	since := now.Add(-2 * time.Minute)
	for _, ok := range []bool{false, true} {
		h := scheduler.Health{RayOK: ok, LastTick: now.Add(-time.Second)}
		if !ok {
			h.RayError, h.RayDownSince = "ray is unavailable: dial tcp 127.0.0.1:8265: connect: connection refused", &since
		}
		s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Health: func() scheduler.Health { return h }}
		tasks := []*mvp.Task{{ID: "a", State: mvp.StateRunning}, {ID: "b", State: mvp.StateSubmitted},
			{ID: "c", State: mvp.StateSucceeded}, {ID: "d", State: mvp.StateQueued}, {ID: "e", State: mvp.StateSubmitting}}
		s.SayWhyWaiting(tasks)
		for _, task := range tasks {
			live := task.State.Active()
			said := task.RayOutage
			switch {
			case !ok && live && (!strings.Contains(said, "connection refused") || !strings.Contains(said, since.Format(time.RFC3339))):
				t.Errorf("Ray down: %s task's ray_outage %q; want the outage, its cause and since when", task.State, said)
			case (ok || !live) && said != "":
				t.Errorf("Ray ok %v: %s task's ray_outage %q; want none", ok, task.State, said)
			case !ok && task.State == mvp.StateSubmitting && strings.Contains(said, "what Ray last said"):
				t.Errorf("a SUBMITTING task's state is mvp's own, not Ray's: %q", said)
			}
		}
	}
}
