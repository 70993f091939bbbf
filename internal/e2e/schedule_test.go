//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
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
