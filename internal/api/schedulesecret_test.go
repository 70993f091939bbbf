package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestScheduleRunSaysWhoseSecretIsMissing: a run of alice's schedule whose secret she has deleted makes no task,
// and its last_outcome is read by alice and by the operator (mvp schedule list shows everyone's). It said "you have
// none of that name ... mvp secrets put wandb": the operator, following it, stored its own wandb, which alice's runs
// never use. The outcome must name alice as the one who has none, and say how to store hers (--owner alice, which
// alice may give too).
func TestScheduleRunSaysWhoseSecretIsMissing(t *testing.T) {
	clock := &movableClock{t: time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)}
	m := usersMain(t, servicetest.OneNode(0), clock, 60)
	base := m.URL()
	for _, hdr := range []map[string]string{as(aliceToken), nil} {
		if resp, b := do(t, base, "PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "v-123456"}`, hdr); resp.StatusCode != 201 {
			t.Fatalf("put wandb: %d %s", resp.StatusCode, b)
		}
	}
	body := `{"name": "nightly", "cron": "@every 1m", "jobspec": {"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 1, "model_path": "/m", "train_file": "/t", "val_file": "/v", "secrets": {"WANDB_API_KEY": "wandb"}}}`
	if resp, b := scheduleAs(t, base, aliceToken, body); resp.StatusCode != 201 {
		t.Fatalf("alice's schedule: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", as(aliceToken)); resp.StatusCode != 204 {
		t.Fatalf("alice deletes her wandb: %d %s", resp.StatusCode, b)
	}
	clock.add(time.Minute)
	want := clock.Now().Truncate(time.Minute)
	ctx := context.Background()
	var sc *mvp.Schedule
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if sc, _, err = m.Client().ScheduleOf(ctx, "alice", "nightly"); err != nil {
			t.Fatal(err)
		}
		if !sc.LastFireAt.Before(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run was not made within 10 s: %+v", sc)
		}
	}
	o := sc.LastOutcome
	if !strings.HasPrefix(o, "not submitted") || strings.Contains(o, "you have none") || !strings.Contains(o, "alice has none") ||
		!strings.Contains(o, "mvp secrets put wandb --owner alice") {
		t.Errorf("the run of alice's schedule without her wandb: outcome %q; want not submitted, saying alice has none "+
			"and to store hers with mvp secrets put wandb --owner alice", o)
	}
}
