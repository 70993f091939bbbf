package mvp

import (
	"testing"
	"time"
)

func TestFillTimeLeft(t *testing.T) {
	t0 := time.Date(2025, 12, 23, 14, 0, 0, 0, time.UTC)
	start := t0.Add(10 * time.Second)
	waiting := &Task{State: StateQueued, CreatedAt: t0, MaxQueuedS: 60, MaxRuntimeS: 100}
	waiting.FillTimeLeft(t0.Add(15 * time.Second))
	if waiting.QueuedLeftS == nil || *waiting.QueuedLeftS != 45 || waiting.RuntimeLeftS != nil {
		t.Errorf("waiting: %v %v", waiting.QueuedLeftS, waiting.RuntimeLeftS)
	}
	running := &Task{State: StateRunning, CreatedAt: t0, MaxQueuedS: 60, MaxRuntimeS: 100, LatestAttemptNo: 1,
		Attempts: []*Attempt{{No: 1, StartTime: &start, RayStatus: RayRunning}}}
	running.FillTimeLeft(t0.Add(40 * time.Second))
	if running.RuntimeLeftS == nil || *running.RuntimeLeftS != 70 || running.QueuedLeftS != nil {
		t.Errorf("running: %v %v", running.RuntimeLeftS, running.QueuedLeftS)
	}
	// A driver that waited for its gang: the run counts from the gang's placement (placed_at), as mvp judges it.
	placed := start.Add(5 * time.Second)
	running.Attempts[0].PlacedAt = &placed
	running.FillTimeLeft(t0.Add(40 * time.Second))
	if running.RuntimeLeftS == nil || *running.RuntimeLeftS != 75 {
		t.Errorf("running, placed 5 s after it began: %v, want 75", running.RuntimeLeftS)
	}
	early := start.Add(-5 * time.Second) // placed before mvp saw it running: counts from running
	running.Attempts[0].PlacedAt = &early
	running.FillTimeLeft(t0.Add(40 * time.Second))
	if running.RuntimeLeftS == nil || *running.RuntimeLeftS != 70 {
		t.Errorf("running, placed before it began: %v, want 70", running.RuntimeLeftS)
	}
	running.FillTimeLeft(t0.Add(time.Hour))
	if *running.RuntimeLeftS != 0 {
		t.Errorf("overdue: %d, want 0", *running.RuntimeLeftS)
	}
	requeued := &Task{State: StatePendingResources, CreatedAt: t0, MaxQueuedS: 60, LatestAttemptNo: 1, Ran: true}
	requeued.FillTimeLeft(t0)
	if requeued.QueuedLeftS != nil {
		t.Errorf("a task that started once has no queue limit left: %v", *requeued.QueuedLeftS)
	}
	// An attempt that lost the race for its GPUs did not start the task: the bound still counts from its creation.
	lostRace := &Task{State: StatePendingResources, CreatedAt: t0, MaxQueuedS: 60, LatestAttemptNo: 2}
	lostRace.FillTimeLeft(t0.Add(20 * time.Second))
	if lostRace.QueuedLeftS == nil || *lostRace.QueuedLeftS != 40 {
		t.Errorf("a task whose attempts only lost races: %v, want 40 s left", lostRace.QueuedLeftS)
	}
}
