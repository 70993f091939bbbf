package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestUsersCountTheGPUsAdmissionCounts: mvp users showed the operator holding 9 GPUs on an 8-GPU cluster (found by
// a user's-eye drill): GPUS IN USE summed every live task's gang, where admission (and max_gpus) counts a gang
// whose placement groups Ray has removed (its run ended, its job's end not followed yet) as holding none, and has
// handed its GPUs on. The column is admission's count (scheduler.GPUsHeld).
func TestUsersCountTheGPUsAdmissionCounts(t *testing.T) {
	now := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	res := func() map[string]float64 { return map[string]float64{"GPU": 4, "CPU": 48, "worker_node": 100} }
	bundle := []map[string]float64{{"GPU": 4, "CPU": 12}}
	start := now.Add(-time.Minute)
	ended := &mvp.Task{ID: "mvp2-ppo-20261203-065900-0001", Owner: "bob", Workload: mvp.WorkloadPPO,
		State: mvp.StateRunning, NNodes: 1, GPUsPerNode: 4, CreatedAt: start}
	running := &mvp.Task{ID: "mvp2-ppo-20261203-065900-0002", Owner: "bob", Workload: mvp.WorkloadPPO,
		State: mvp.StateRunning, NNodes: 1, GPUsPerNode: 4, CreatedAt: start}
	snap := scheduler.Snapshot{
		Cluster: &mvp.ClusterView{Nodes: []mvp.Node{{ID: "w1", Alive: true, Total: res(), Available: res()},
			{ID: "w2", Alive: true, Total: res(), Available: map[string]float64{"GPU": 0, "CPU": 36, "worker_node": 99}}},
			Groups: []mvp.PlacementGroup{
				{ID: "g1", CreatorJobID: "01000000", State: "REMOVED", Strategy: "STRICT_PACK", Bundles: bundle, Node: "w1"},
				{ID: "g2", CreatorJobID: "02000000", State: "CREATED", Strategy: "STRICT_PACK", Bundles: bundle, Node: "w2"}}},
		Active: []scheduler.ActiveAttempt{
			{Task: ended, Attempt: &mvp.Attempt{No: 1, RayJobID: "01000000", RayStatus: mvp.RayRunning, StartTime: &start}},
			{Task: running, Attempt: &mvp.Attempt{No: 1, RayJobID: "02000000", RayStatus: mvp.RayRunning, StartTime: &start}}}}
	s := &Server{Clock: fixedClock{now}, Logger: slog.New(slog.DiscardHandler), Users: []mvp.User{{Name: "bob", Share: 1, MaxPriority: 100}},
		Policy:   scheduler.Policy{CPUsPerGPU: map[mvp.Workload]float64{mvp.WorkloadPPO: 3}},
		Snapshot: func(context.Context) (scheduler.Snapshot, error) { return snap, nil }}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v2/users", nil)
	if err := s.users(rec, r.WithContext(mvp.WithCaller(r.Context(), mvp.Caller{Operator: true}))); err != nil {
		t.Fatal(err)
	}
	var l UserList
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	for _, u := range l.Users {
		if u.Name == "bob" && u.GPUsInUse != 4 {
			t.Errorf("bob's GPUs in use: %d, want 4 (his ended gang's groups are removed): %s", u.GPUsInUse, rec.Body.String())
		}
	}
}
