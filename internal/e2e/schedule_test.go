//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// TestScheduleRunsOnCluster: a schedule with @every 3s makes a task that runs to SUCCEEDED on the real cluster,
// linked to the schedule; once paused it makes no new task.
func TestScheduleRunsOnCluster(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	js := json.RawMessage(`{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/models/qwen",
		"train_file":"/data/train.parquet","val_file":"/data/test.parquet","overrides":["mvp_test.hold_s=1"]}`)
	sc, _, err := s.c.CreateSchedule(ctxT(t), api.ScheduleRequest{Name: "every-3s", Cron: "@every 3s", Overlap: mvp.OverlapSkip, JobSpec: js})
	if err != nil {
		t.Fatalf("create schedule: %v", err)
	}
	if sc.NextRunAt == nil {
		t.Fatalf("no next_run_at: %+v", sc)
	}
	var first string
	waitFor(t, 30*time.Second, "the schedule's first task", func() (bool, string) {
		got, _, err := s.c.Schedule(ctxT(t), "every-3s")
		if err != nil {
			return false, err.Error()
		}
		if len(got.TaskIDs) > 0 {
			first = got.TaskIDs[len(got.TaskIDs)-1]
		}
		return first != "", got.LastOutcome
	})
	done := s.waitState(first, mvp.StateSucceeded, 120*time.Second)
	if len(done.Attempts) != 1 || done.Attempts[0].RayStatus != mvp.RaySucceeded {
		t.Errorf("the scheduled task's attempts: %+v", done.Attempts)
	}
	created := s.events(first)[0]
	var payload map[string]any
	_ = json.Unmarshal(created.Payload, &payload)
	if created.Type != mvp.EventCreated || payload["schedule"] != "every-3s" {
		t.Errorf("CREATED event %s %s does not name the schedule", created.Type, created.Payload)
	}

	paused, _, err := s.c.SetSchedulePaused(ctxT(t), "every-3s", true)
	if err != nil || !paused.Paused || paused.NextRunAt != nil {
		t.Fatalf("pause: %+v %v", paused, err)
	}
	before, _, err := s.c.Schedule(ctxT(t), "every-3s")
	if err != nil {
		t.Fatal(err)
	}
	// Absence can only be seen over time: three periods (9 s) and a margin pass, then nothing new may exist.
	pausedAt := time.Now()
	waitFor(t, 30*time.Second, "three periods of the paused schedule", func() (bool, string) {
		return time.Since(pausedAt) > 12*time.Second, ""
	})
	after, _, err := s.c.Schedule(ctxT(t), "every-3s")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.TaskIDs) != len(before.TaskIDs) {
		t.Errorf("the paused schedule made tasks: %d before, %d after (%s)", len(before.TaskIDs), len(after.TaskIDs), after.LastOutcome)
	}
	for _, id := range after.TaskIDs {
		if tk := s.get(id); !tk.State.Terminal() {
			if _, _, err := s.c.Cancel(ctxT(t), id); err != nil {
				t.Logf("cancel %s: %v", id, err)
			}
		}
	}
	t.Logf("schedule made %s", fmt.Sprint(after.TaskIDs))
}

// TestScheduleReplaceStopsThePreviousRun: overlap replace cancels the previous task when a run makes a new one, in
// the transaction that stores the new task; the scheduler then stops the previous task's Ray job on the real
// cluster (its attempt ends STOPPED), and the new task runs.
func TestScheduleReplaceStopsThePreviousRun(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	js := json.RawMessage(`{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/models/qwen",
		"train_file":"/data/train.parquet","val_file":"/data/test.parquet","overrides":["mvp_test.hold_s=300"]}`)
	if _, _, err := s.c.CreateSchedule(ctxT(t), api.ScheduleRequest{Name: "replace", Cron: "@every 8s", Overlap: mvp.OverlapReplace, JobSpec: js}); err != nil {
		t.Fatalf("create schedule: %v", err)
	}
	var replaced *mvp.Task
	waitFor(t, 120*time.Second, "a replaced task whose Ray job stopped", func() (bool, string) {
		got, _, err := s.c.Schedule(ctxT(t), "replace")
		if err != nil {
			return false, err.Error()
		}
		for _, id := range got.TaskIDs {
			tk := s.get(id)
			if tk.State == mvp.StateCanceled && len(tk.Attempts) > 0 && tk.Attempts[0].RayStatus == mvp.RayStopped {
				replaced = tk
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d tasks; last outcome %q", len(got.TaskIDs), got.LastOutcome)
	})
	var by string
	for _, e := range s.events(replaced.ID) {
		if e.Type == mvp.EventCancelRequested {
			var p struct{ By string }
			_ = json.Unmarshal(e.Payload, &p)
			by = p.By
		}
	}
	if by != "schedule replace" {
		t.Errorf("%s's CANCEL_REQUESTED names %q, want \"schedule replace\"", replaced.ID, by)
	}
	// mvp canceled it, not a user: the task and its stopped attempt say so.
	if !strings.Contains(replaced.ErrorSummary, "the next run of schedule replace") ||
		!strings.HasPrefix(replaced.Attempts[0].Message, "canceled: replaced by ") {
		t.Errorf("%s: error_summary %q, attempt message %q; want both to say a newer run of the schedule replaced it",
			replaced.ID, replaced.ErrorSummary, replaced.Attempts[0].Message)
	}
	if _, _, err := s.c.SetSchedulePaused(ctxT(t), "replace", true); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.c.Schedule(ctxT(t), "replace")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.LastOutcome, "canceled the previous task") {
		t.Errorf("last outcome %q", got.LastOutcome)
	}
	live := 0
	for _, id := range got.TaskIDs {
		if tk := s.get(id); !tk.State.Terminal() {
			live++
			if _, _, err := s.c.Cancel(ctxT(t), id); err != nil {
				t.Logf("cancel %s: %v", id, err)
			}
		}
	}
	if live != 1 {
		t.Errorf("%d of the schedule's tasks were live, want the newest one only (%v)", live, got.TaskIDs)
	}
}
