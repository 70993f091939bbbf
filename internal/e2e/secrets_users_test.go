//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// TestEachUserHasTheirOwnSecrets (issue 15), on the real cluster: alice and bob each store a secret called wandb
// (bob was refused the name alice held, 403, and so learned she had one) and each make a schedule called nightly
// (refused likewise, 409) whose jobspec names wandb; each schedule's first task is its owner's, and each job's
// environment holds its owner's value, never the other's. Once the operator deletes bob's secret (owner=bob), bob's
// next task naming wandb is refused though alice still has one.
func TestEachUserHasTheirOwnSecrets(t *testing.T) {
	waitIdle(t)
	const (
		aliceTok = "e2e-alice-0123456789abcdef"
		bobTok   = "e2e-bob-0123456789abcdef00"
	)
	s := startService(t, serviceOpts{
		authExtra: ", users: [{name: alice, token_env: MVP_E2E_ALICE}, {name: bob, token_env: MVP_E2E_BOB}]",
		env: []string{"MVP_E2E_ALICE=" + aliceTok, "MVP_E2E_BOB=" + bobTok,
			"MVP_SECRETS_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}})
	alice := &api.Client{Addr: s.c.Addr, Token: aliceTok}
	bob := &api.Client{Addr: s.c.Addr, Token: bobTok}
	values := map[*api.Client]string{alice: uniq("alice-wandb"), bob: uniq("bob-wandb")}
	for _, c := range []*api.Client{alice, bob} {
		info, _, err := c.PutSecret(ctxT(t), "wandb", values[c])
		if err != nil {
			t.Fatalf("store wandb: %v", err)
		}
		if info.Owner == mvp.Operator || info.Name != "wandb" {
			t.Errorf("stored: %+v", info)
		}
	}
	type run struct{ id, dump string }
	runs := map[*api.Client]run{}
	for _, c := range []*api.Client{alice, bob} {
		dump := filepath.Join(t.TempDir(), "args.json")
		js := json.RawMessage(`{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/models/qwen",
			"train_file":"/data/train.parquet","val_file":"/data/test.parquet","overrides":["mvp_test.hold_s=1",
			"mvp_test.dump_args=` + dump + `"],"secrets":{"WANDB_API_KEY":"wandb"}}`)
		if _, _, err := c.CreateSchedule(ctxT(t), api.ScheduleRequest{Name: "nightly", Cron: "@every 3s",
			Overlap: mvp.OverlapSkip, JobSpec: js}); err != nil {
			t.Fatalf("create nightly: %v", err)
		}
		var first string
		waitFor(t, 30*time.Second, "the schedule's first task", func() (bool, string) {
			got, _, err := c.Schedule(ctxT(t), "nightly")
			if err != nil {
				return false, err.Error()
			}
			if len(got.TaskIDs) > 0 {
				first = got.TaskIDs[len(got.TaskIDs)-1]
			}
			return first != "", got.LastOutcome
		})
		if _, _, err := c.SetSchedulePaused(ctxT(t), "nightly", true); err != nil {
			t.Fatalf("pause nightly: %v", err)
		}
		runs[c] = run{first, dump}
	}
	for c, r := range runs {
		if done := s.waitState(r.id, mvp.StateSucceeded, 120*time.Second); (c == alice) != (done.Owner == "alice") {
			t.Errorf("task %s of a schedule is %s's", r.id, done.Owner)
		}
		got := readFile(t, r.dump)
		other := values[alice]
		if c == alice {
			other = values[bob]
		}
		if !strings.Contains(got, `"WANDB_API_KEY": "`+values[c]+`"`) || strings.Contains(got, other) {
			t.Errorf("task %s's job environment: want its owner's wandb %q only:\n%s", r.id, values[c], got)
		}
	}
	if err := s.c.DeleteSecretOf(ctxT(t), "bob", "wandb"); err != nil {
		t.Fatalf("the operator deletes bob's wandb: %v", err)
	}
	_, err := bob.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)+"secrets: {WANDB_API_KEY: wandb}\n"), false)
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "no secret named wandb") {
		t.Errorf("bob's task naming wandb after his was deleted: %v, want 400", err)
	}
	if l, _, err := alice.Secrets(ctxT(t)); err != nil || len(l.Secrets) != 1 || l.Secrets[0].Owner != "alice" {
		t.Errorf("alice's secrets: %+v %v; want her wandb", l, err)
	}
}
