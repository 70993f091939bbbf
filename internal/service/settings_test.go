package service_test

import (
	"testing"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/workload"
)

// TestARuntimeGraceOfZeroIsSentAsZero: v2.scheduler.runtime_grace_s is kept as given, 0 included (specs/config.md),
// and the scheduler plans a stopped job's GPUs free after it (PolicyOf's StopGrace): so every job is sent
// RAY_JOB_STOP_WAIT_TIME_S of that value, "0" too, not left to Ray's own default (3 s). Left out, it is 30.
func TestARuntimeGraceOfZeroIsSentAsZero(t *testing.T) {
	body := []byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /d/t.parquet\n")
	for _, c := range []struct{ yaml, want string }{
		{"v2: {scheduler: {runtime_grace_s: 0}}\n", "0"},
		{"v2: {scheduler: {runtime_grace_s: 0.5}}\n", "1"},
		{"", "30"},
	} {
		cfg, err := config.Parse([]byte("shared_root: /tmp\n" + c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		s := service.SettingsOf(cfg)
		task, err := workload.Prepare(body, s)
		if err != nil {
			t.Fatal(err)
		}
		task.ID = "mvp2-sft-20251223-143201-7f3a"
		sub, err := workload.BuildTask(task, 1, s)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := sub.RuntimeEnv["env_vars"].(map[string]any)
		if got, ok := env["RAY_JOB_STOP_WAIT_TIME_S"]; !ok || got != c.want {
			t.Errorf("%q: RAY_JOB_STOP_WAIT_TIME_S %v (set: %v), want %q", c.yaml, got, ok, c.want)
		}
	}
}
