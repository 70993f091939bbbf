//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// freeCPUs is each worker's free CPUs, fewest first.
func freeCPUs(t testing.TB) []float64 {
	var out []float64
	for _, n := range workers(t) {
		out = append(out, n.Available["CPU"])
	}
	slices.Sort(out)
	return out
}

// TestTheTaskRunnersCPUIsCountedAtAdmission: verl's main_ppo (and the stand-in) runs in a TaskRunner actor of one
// CPU that the driver starts before verl checks or asks for anything. With one worker's CPUs all held and the
// other's all but what a 1×G PPO gang and its driver take (G × 3 + 1), the gang and the driver fit but the
// TaskRunner does not (the head has no CPU): admitted, the run would hang before verl's check, holding nothing mvp
// sees as a stuck gang. mvp keeps it waiting with code cpus_busy and a sentence that says so, and admits it once
// CPUs free up; its TaskRunner then runs.
func TestTheTaskRunnersCPUIsCountedAtAdmission(t *testing.T) {
	ws := workers(t)
	if len(ws) < 2 {
		t.Skip("needs two workers (the first phase of scripts/e2e.sh)")
	}
	gpus, cpus := ws[0].Total["GPU"], ws[0].Total["CPU"]
	if ws[1].Total["GPU"] != gpus || ws[1].Total["CPU"] != cpus {
		t.Skipf("needs two workers of one shape: %v and %v", ws[0].Total, ws[1].Total)
	}
	need := gpus*3 + 1 // a 1×G PPO gang's bundles ({"CPU": 3, "GPU": 1}) and its driver (entrypoint_num_cpus 1)
	waitIdle(t)
	waitFor(t, 60*time.Second, "every worker CPU free", func() (bool, string) {
		free := freeCPUs(t)
		return free[0] == cpus && free[len(free)-1] == cpus, fmt.Sprint(free)
	})
	s := startService(t, serviceOpts{})

	// Hold every CPU of one worker, then all but need on the other (the holders' drivers take no CPU).
	all := uniq("cpu-hold-all")
	direct(t, all, fmt.Sprintf("python3 -m mvp_testkit.hold --bundles 1 --gpus-per-bundle 0 --cpus-per-bundle %g --hold 600", cpus))
	waitFor(t, 60*time.Second, "one worker's CPUs all held", func() (bool, string) {
		free := freeCPUs(t)
		return free[0] == 0, fmt.Sprint(free)
	})
	direct(t, uniq("cpu-hold-part"), fmt.Sprintf("python3 -m mvp_testkit.hold --bundles 1 --gpus-per-bundle 0 --cpus-per-bundle %g --hold 600", cpus-need))
	waitFor(t, 60*time.Second, fmt.Sprintf("CPUs free: 0 and %g", need), func() (bool, string) {
		free := freeCPUs(t)
		return len(free) == 2 && free[0] == 0 && free[1] == need, fmt.Sprint(free)
	})

	task := s.submit(spec("ppo", 1, int(gpus), 1))
	waitFor(t, 60*time.Second, "the task to wait for CPUs", func() (bool, string) {
		got := s.get(task.ID)
		if len(got.Attempts) > 0 {
			t.Fatalf("the task was admitted (%s) with no CPU left for its TaskRunner: %+v", got.State, got.Attempts[0])
		}
		return got.State == mvp.StatePendingResources && strings.Contains(got.PendingReason, "waiting for CPUs"),
			fmt.Sprintf("%s %q", got.State, got.PendingReason)
	})
	if got := s.get(task.ID); !strings.Contains(got.PendingReason, "runner_cpus") {
		t.Errorf("the reason does not name runner_cpus: %q", got.PendingReason)
	}
	v, _, err := s.c.Queue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	code := scheduler.WaitCode("")
	for _, e := range v.Queue {
		if e.TaskID == task.ID {
			code = e.Code
		}
	}
	if code != scheduler.CodeCPUsBusy {
		t.Errorf("the queue gives code %q, want %s", code, scheduler.CodeCPUsBusy)
	}
	if got := s.get(task.ID); len(got.Attempts) > 0 {
		t.Fatalf("admitted while its TaskRunner had no CPU: %+v", got.Attempts[0])
	}

	// One worker's CPUs come back: the run is admitted, its TaskRunner gets its CPU and the run ends.
	if err := rayc.StopJob(ctxT(t), all); err != nil {
		t.Fatalf("stop %s: %v", all, err)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if n := len(done.Attempts); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	if log := s.logs(task.ID, 1); !strings.Contains(log, "TaskRunner on node") {
		t.Errorf("the run's log does not show its TaskRunner:\n%s", tail(log, 20))
	}
}
