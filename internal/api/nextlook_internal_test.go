package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestAWaitingPassIsSaidOnTheQueueAndOnAQueuedTask: while the scheduler's pass waits on a job server that does not
// answer (each call until its timeout), /healthz said so, but GET /api/v2/queue listed a task as starting with
// nothing that said the start waits for that pass, and a task no pass had looked at had no reason (found by a
// user's-eye drill). Past StaleTick, the queue's scheduler note and the task's reason say the pass waits; before
// it, neither does.
func TestAWaitingPassIsSaidOnTheQueueAndOnAQueuedTask(t *testing.T) {
	now := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	res := map[string]float64{"GPU": 4, "CPU": 48, "worker_node": 100}
	view := &mvp.ClusterView{Source: "probe", Nodes: []mvp.Node{{ID: "w1", Alive: true, Total: res, Available: res}}}
	for _, c := range []struct {
		ago   time.Duration
		stuck bool
	}{{2 * time.Second, false}, {25 * time.Second, true}} {
		newTask := func() *mvp.Task {
			return &mvp.Task{ID: "mvp2-ppo-20261203-065959-7f3a", Workload: "ppo", State: mvp.StateQueued, NNodes: 1,
				GPUsPerNode: 4, CreatedAt: now.Add(-time.Second)}
		}
		s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Health: func() scheduler.Health { return scheduler.Health{RayOK: true, LastTick: now.Add(-c.ago)} },
			Snapshot: func(context.Context) (scheduler.Snapshot, error) {
				return scheduler.Snapshot{Cluster: view, Queue: []*mvp.Task{newTask()}}, nil
			}}
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/v2/queue", nil)
		r = r.WithContext(mvp.WithCaller(r.Context(), mvp.Caller{Operator: true}))
		if err := s.queue(rec, r); err != nil {
			t.Fatal(err)
		}
		var q struct {
			Starting  []string `json:"starting"`
			Scheduler string   `json:"scheduler"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		if len(q.Starting) != 1 {
			t.Fatalf("last pass %s ago: starting %v; want the task that fits", c.ago, q.Starting)
		}
		if said := strings.Contains(q.Scheduler, "last pass began 25s ago"); said != c.stuck {
			t.Errorf("last pass %s ago: the queue's scheduler note %q", c.ago, q.Scheduler)
		}
		task := newTask()
		s.SayWhyWaiting([]*mvp.Task{task})
		if !strings.HasPrefix(task.PendingReason, scheduler.NextLook) || strings.Contains(task.PendingReason, "25s ago") != c.stuck {
			t.Errorf("last pass %s ago: the QUEUED task's reason %q", c.ago, task.PendingReason)
		}
	}
}
