package config_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/workload"
)

// TestShippedExamplesPrepare keeps every jobspec in configs/examples valid: each is prepared as a submit would
// prepare it, with the settings of configs/dev.yaml (its time caps, user_code_path and shared_root).
func TestShippedExamplesPrepare(t *testing.T) {
	_, f, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(f), "..", "..", "configs")
	cfg, err := config.Load(filepath.Join(root, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.V2.Scheduler
	settings := workload.Settings{SharedRoot: cfg.SharedRoot, EntrypointNumCPUs: cfg.EntrypointNumCPUs,
		EntrypointResources: cfg.EntrypointResources, RuntimeEnv: cfg.RuntimeEnv, UserCodePath: cfg.UserCodePath,
		TimeLimits: jobspec.Defaults{DefaultMaxRuntimeS: s.DefaultMaxRuntimeS, MaxRuntimeCapS: s.MaxRuntimeCapS,
			DefaultMaxQueuedS: s.DefaultMaxQueuedS, MaxQueuedCapS: s.MaxQueuedCapS}}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s (%v)", root, err)
	}
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		task, err := workload.Prepare(body, settings)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(name), err)
			continue
		}
		if task.GPUsPerNode < 1 || task.NNodes < 1 {
			t.Errorf("%s: a gang of %d x %d GPUs", filepath.Base(name), task.NNodes, task.GPUsPerNode)
		}
		// The stand-in's test keys are not in real verl's config, where Hydra refuses a key given without "+"
		// ("Could not override"): an example copied to a real cluster would fail at once (found in a user
		// walk-through: grpo.yaml and sft.yaml gave mvp_test.hold_s=20).
		spec, err := jobspec.Parse(body, jobspec.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range spec.Overrides {
			if strings.HasPrefix(o, "mvp_test.") {
				t.Errorf("%s: override %q: the stand-in's keys are not in verl's config; write +%s", filepath.Base(name), o, o)
			}
		}
	}
}
