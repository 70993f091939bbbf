//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestWorkloadsReceiveTheExactCommand: PPO, GRPO and SFT jobspecs go through the one builder; the stand-in records
// what its process received, hostile values included, and holds its GPUs.
func TestWorkloadsReceiveTheExactCommand(t *testing.T) {
	hostile := `it's "quoted"; $(touch /tmp/mvp-e2e-pwned) ` + "`id`" + ` * $HOME`
	// Ray expands $NAME and ${NAME} in runtime_env env values (os.path.expandvars), so the env value carries no
	// $NAME: everything else in it must arrive verbatim, newline included. WANDB_DIR shows the expansion.
	hostileEnv := `it's "quoted"; $(touch /tmp/mvp-e2e-pwned) ` + "`id` *\nsecond line; | & > <"
	for _, w := range []string{"ppo", "grpo", "sft"} {
		t.Run(w, func(t *testing.T) {
			waitIdle(t)
			s := startService(t, serviceOpts{})
			dump := filepath.Join(t.TempDir(), "args.json")
			doc := spec(w, 1, 2, 1, "mvp_test.dump_args="+dump, "trainer.logger="+hostile) +
				"env:\n  WANDB_NOTES: " + jsonString(hostileEnv) + "\n  WANDB_DIR: \"$HOME/wandb\"\n"
			task := s.submit(doc)
			s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
			var got struct {
				Argv []string          `json:"argv"`
				Env  map[string]string `json:"env"`
			}
			if err := json.Unmarshal([]byte(readFile(t, dump)), &got); err != nil {
				t.Fatal(err)
			}
			argv := strings.Join(got.Argv, "\n")
			want := []string{"trainer.nnodes=1", "trainer.n_gpus_per_node=2", "trainer.experiment_name=" + task.ID,
				"trainer.default_local_dir=" + filepath.Join(s.sharedRoot, "jobs", task.ID, "checkpoints")}
			switch w {
			case "ppo":
				want = append(want, "algorithm.adv_estimator=gae", "critic.model.path=/models/qwen", "data.val_files=/data/test.parquet")
			case "grpo":
				want = append(want, "algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=5", "actor_rollout_ref.actor.use_kl_loss=True")
			case "sft":
				want = append(want, "model.path=/models/qwen", "data.train_files=/data/train.parquet")
			}
			for _, a := range want {
				if !strings.Contains("\n"+argv+"\n", "\n"+a+"\n") {
					t.Errorf("argv lacks %q:\n%s", a, argv)
				}
			}
			if w == "grpo" && strings.Contains(argv, "critic.") {
				t.Errorf("grpo got critic settings")
			}
			if last := got.Argv[len(got.Argv)-1]; last != "trainer.logger="+hostile {
				t.Errorf("the user's override did not arrive intact and last: %q", last)
			}
			if got.Env["WANDB_NOTES"] != hostileEnv {
				t.Errorf("env WANDB_NOTES = %q", got.Env["WANDB_NOTES"])
			}
			if home, _ := os.UserHomeDir(); got.Env["WANDB_DIR"] != home+"/wandb" {
				t.Errorf("Ray's expansion of $HOME in env values: WANDB_DIR = %q", got.Env["WANDB_DIR"])
			}
			attempt := filepath.Join(s.sharedRoot, "jobs", task.ID, "attempts", "a01")
			if got.Env["VERL_FILE_LOGGER_PATH"] != filepath.Join(attempt, "metrics.jsonl") ||
				got.Env["TENSORBOARD_DIR"] != filepath.Join(attempt, "tensorboard") || got.Env["MVP_TASK_ID"] != task.ID {
				t.Errorf("mvp's env: %v", got.Env)
			}
			if _, err := os.Stat("/tmp/mvp-e2e-pwned"); err == nil {
				t.Fatal("a shell ran user text")
			}
		})
	}
}

// TestRunningSFTHoldsItsGPUs: the Ray SFT trainer's placement groups make Ray, and so mvp's admission, count its
// GPUs: a PPO gang that needs them waits until the SFT task ends.
func TestRunningSFTHoldsItsGPUs(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	sft := s.submit(spec("sft", 1, 4, 10))
	s.waitState(sft.ID, mvp.StateRunning, 90*time.Second)
	waitFor(t, 60*time.Second, "the SFT gang's 4 GPUs and 40 CPUs taken", func() (bool, string) {
		for _, n := range workers(t) {
			if n.Available["GPU"] == 0 && n.Total["CPU"]-n.Available["CPU"] >= 40 {
				return true, ""
			}
		}
		return false, ""
	})
	ppo := s.submit(spec("ppo", 2, 4, 1))
	w := s.waitState(ppo.ID, mvp.StatePendingResources, 30*time.Second)
	if w.LatestAttemptNo != 0 {
		t.Errorf("the PPO gang was submitted onto the SFT task's GPUs")
	}
	s.waitState(sft.ID, mvp.StateSucceeded, 120*time.Second)
	s.waitState(ppo.ID, mvp.StateSucceeded, 120*time.Second)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
