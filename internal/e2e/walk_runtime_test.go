//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestMaxRuntimeCountsFromThePlacementOfTheGang: a walk-through's 1 × 2 task declaring max_runtime_s 30 ran in Ray
// (its driver up) 27 s before its placement group could be placed, and mvp stopped it 2 s into its run as
// MAX_RUNTIME_EXCEEDED, not retried. Here something outside mvp takes 2 GPUs on each worker right after mvp admits
// a 1 × 4 gang, for 25 s: the gang waits (its driver RUNNING), is placed once they are given back, runs its 10 s
// and succeeds, 35 s or more after mvp saw it RUNNING, since its max_runtime_s counts from its placement.
func TestMaxRuntimeCountsFromThePlacementOfTheGang(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 4, 10) + "max_runtime_s: 30\n")
	const grab = `import sys, time, ray
from ray.util.placement_group import placement_group, remove_placement_group
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
pg = placement_group([{"GPU": 2, "CPU": 1}] * 2, strategy="STRICT_SPREAD")
ray.get(pg.ready(), timeout=60)
time.sleep(25)
remove_placement_group(pg)
`
	cmd := exec.Command(env.python, "-c", grab, env.gcs)
	cmd.Env = os.Environ()
	if env.rayToken != "" {
		cmd.Env = append(cmd.Env, "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN="+env.rayToken)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("take 2 GPUs on each worker: %v\n%s", err, tail(string(out), 10))
	}
	got := s.waitState(task.ID, mvp.StateSucceeded, 3*time.Minute)
	if len(got.Attempts) != 1 {
		t.Fatalf("%d attempts, want 1", len(got.Attempts))
	}
	a := got.Attempts[0]
	if a.RunningAt == nil || a.EndTime == nil || a.EndTime.Sub(*a.RunningAt) < 30*time.Second {
		t.Skipf("the gang was not kept waiting (running %v, end %v): the GPUs were taken before mvp admitted it or after Ray placed it", a.RunningAt, a.EndTime)
	}
	// The placement is recorded (placed_at), after the driver began, and the run ended within its max_runtime_s of it.
	if a.PlacedAt == nil || !a.PlacedAt.After(*a.RunningAt) || a.EndTime.Sub(*a.PlacedAt) >= 30*time.Second {
		t.Errorf("placed_at %v; want it after running_at %v and less than 30 s before the end %v", a.PlacedAt,
			a.RunningAt, a.EndTime)
	}
}
