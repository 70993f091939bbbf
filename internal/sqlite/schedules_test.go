package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func newSchedule(name string, at time.Time) *mvp.Schedule {
	return &mvp.Schedule{Name: name, Cron: "@every 1m", Timezone: "UTC", Overlap: mvp.OverlapQueue,
		JobSpec: []byte(`{"workload":"ppo"}`), CreatedAt: at}
}

// TestRecordScheduleRunIsCompareAndSet: a run recorded against a stale last_fire_at, on a paused schedule, or
// with a task id in use writes nothing, not even its task; a good run writes the schedule, the task, its event and
// the link together.
func TestRecordScheduleRunIsCompareAndSet(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	must(t, db.CreateSchedule(ctx, newSchedule("nightly", at)))
	if err := db.CreateSchedule(ctx, newSchedule("nightly", at)); !errors.Is(err, mvp.ErrConflict) {
		t.Fatalf("a second schedule of the same name: %v", err)
	}
	task := func() *mvp.Task { tk := newTask(at); tk.ID = "mvp2-ppo-20260101-100000-0001"; return tk }

	stale := mvp.ScheduleRun{Name: "nightly", PrevFireAt: at.Add(-time.Minute), FireAt: at.Add(time.Minute), Task: task()}
	if err := db.RecordScheduleRun(ctx, stale); !errors.Is(err, mvp.ErrConflict) {
		t.Fatalf("stale run: %v", err)
	}
	if _, err := db.GetTask(ctx, stale.Task.ID); !errors.Is(err, mvp.ErrNotFound) {
		t.Fatalf("a refused run left its task: %v", err)
	}
	must(t, db.SetSchedulePaused(ctx, "nightly", true, at))
	paused := mvp.ScheduleRun{Name: "nightly", PrevFireAt: at, FireAt: at.Add(time.Minute), Task: task()}
	if err := db.RecordScheduleRun(ctx, paused); !errors.Is(err, mvp.ErrConflict) {
		t.Fatalf("run of a paused schedule: %v", err)
	}
	must(t, db.SetSchedulePaused(ctx, "nightly", false, at)) // resume at the same time: last_fire_at stays

	existing := create(t, db, at)
	dup := mvp.ScheduleRun{Name: "nightly", PrevFireAt: at, FireAt: at.Add(time.Minute), Task: task()}
	dup.Task.ID = existing.ID
	if err := db.RecordScheduleRun(ctx, dup); !errors.Is(err, mvp.ErrConflict) {
		t.Fatalf("run with a task id in use: %v", err)
	}
	if s, err := db.GetSchedule(ctx, "nightly"); err != nil || !s.LastFireAt.Equal(at) || s.LastTaskID != "" {
		t.Fatalf("a refused run changed the schedule: %+v %v", s, err)
	}
	if ids, err := db.ScheduleTasks(ctx, "nightly", 10); err != nil || len(ids) != 0 {
		t.Fatalf("links after refused runs: %v %v", ids, err)
	}

	good := mvp.ScheduleRun{Name: "nightly", PrevFireAt: at, FireAt: at.Add(time.Minute), Missed: 2, Outcome: "submitted", Task: task()}
	must(t, db.RecordScheduleRun(ctx, good))
	s, err := db.GetSchedule(ctx, "nightly")
	if err != nil || !s.LastFireAt.Equal(good.FireAt) || s.LastTaskID != good.Task.ID || s.Missed != 2 || s.LastOutcome != "submitted" {
		t.Fatalf("after a run: %+v %v", s, err)
	}
	if ids, err := db.ScheduleTasks(ctx, "nightly", 10); err != nil || len(ids) != 1 || ids[0] != good.Task.ID {
		t.Fatalf("links: %v %v", ids, err)
	}
	if evs, _, err := db.Events(ctx, good.Task.ID, "", 10); err != nil || len(evs) != 1 || evs[0].Type != mvp.EventCreated {
		t.Fatalf("events of the task made: %v %v", evs, err)
	}
	// Delete: the schedule and its links go, the task stays.
	must(t, db.DeleteSchedule(ctx, "nightly"))
	if _, err := db.GetSchedule(ctx, "nightly"); !errors.Is(err, mvp.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := db.GetTask(ctx, good.Task.ID); err != nil {
		t.Fatalf("delete took the task: %v", err)
	}
	if err := db.DeleteSchedule(ctx, "nightly"); !errors.Is(err, mvp.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
