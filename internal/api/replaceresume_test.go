package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestReplaceTakesThePlaceOfAWaitingResume: a run of an overlap-replace schedule whose jobspec resumes from a
// task's checkpoint folder cancels its previous task, which still waits (it never ran), as it stores the new one,
// in one transaction whose check of the folder's writers comes after that cancel. The check made before it (the
// owner's submission, AdmitScheduled) counted the waiting previous task as a writer of the folder and refused the
// run (409 resume_from: "one checkpoint folder takes one run at a time"), so the stale task was kept at every run
// and replace never replaced, as it did for max_queued before TestReplaceRunsAtMaxQueued.
func TestReplaceTakesThePlaceOfAWaitingResume(t *testing.T) {
	clock := &movableClock{t: time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)}
	m := usersMain(t, servicetest.OneNode(4), clock, 60)
	base := m.URL()
	c := m.Client()
	ctx := context.Background()
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, as(aliceToken))
	if resp.StatusCode != 201 {
		t.Fatalf("alice's submit: %d %s", resp.StatusCode, b)
	}
	var origin mvp.Task
	_ = json.Unmarshal(b, &origin)
	eventually(t, "the origin is sent to Ray", func() error {
		got, _, err := c.Get(ctx, origin.ID)
		if err == nil && got.LatestAttemptNo == 0 {
			err = errors.New("not yet")
		}
		return err
	})
	if _, _, err := c.Cancel(ctx, origin.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the origin's job stopped", func() error {
		got, _, err := c.Get(ctx, origin.ID)
		if err == nil && (got.Latest() == nil || !got.Latest().RayStatus.Terminal()) {
			err = errors.New("not yet")
		}
		return err
	})
	// 8 GPUs on one node of 4: each run's task waits for ever, and writes origin's folder once it starts.
	body := fmt.Sprintf(`{"name": "cont", "cron": "@every 1m", "overlap": "replace", "jobspec": {"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 8, "model_path": "/m", "train_file": "/t", "val_file": "/v", "resume_from": %q}}`, origin.ID)
	if resp, b := scheduleAs(t, base, aliceToken, body); resp.StatusCode != 201 {
		t.Fatalf("schedule: %d %s", resp.StatusCode, b)
	}
	sc := nextRun(t, c, clock, "alice", "cont")
	if len(sc.TaskIDs) != 1 {
		t.Fatalf("the first run: %q, tasks %v", sc.LastOutcome, sc.TaskIDs)
	}
	first := sc.TaskIDs[0]
	sc = nextRun(t, c, clock, "alice", "cont")
	if !strings.Contains(sc.LastOutcome, "canceled the previous task") || len(sc.TaskIDs) != 2 {
		t.Fatalf("the second run, its previous task %s waiting: %q, tasks %v; want it replaced", first, sc.LastOutcome, sc.TaskIDs)
	}
	if prev, err := m.Store().GetTask(ctx, first); err != nil || prev.State != mvp.StateCanceled {
		t.Errorf("the replaced task: %+v %v", prev, err)
	}
	if got, err := m.Store().GetTask(ctx, sc.TaskIDs[0]); err != nil || got.ResumeFrom != origin.ID || !got.State.Waiting() {
		t.Errorf("the new task: %+v %v", got, err)
	}
}
