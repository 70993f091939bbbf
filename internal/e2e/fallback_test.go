//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// pythonWithoutRay is a v2.ray.python that cannot import ray: the system python3 run isolated (-I: no PYTHONPATH,
// no user site), through a wrapper script.
func pythonWithoutRay(t *testing.T) string {
	t.Helper()
	sys, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	if exec.Command(sys, "-I", "-c", "import ray").Run() == nil {
		t.Skipf("%s -I can import ray: no Python without Ray to point the probe at", sys)
	}
	w := filepath.Join(t.TempDir(), "python-without-ray")
	writeFile(t, w, "#!/bin/sh\nexec "+sys+" -I \"$@\"\n")
	if err := os.Chmod(w, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// rayHealth returns /healthz's view of Ray: where the cluster view came from, and why the probe failed.
func (s *service) rayHealth() (source, probeError string) {
	s.t.Helper()
	h, _ := healthz(s.t, s)
	return h.Ray.ClusterSource, h.Ray.ProbeError
}

// TestFallbackViewReservesOnceAndCatchesStuckGangs: with the probe's Python lacking Ray, mvp serve runs on the
// dashboard's view and says why on /healthz and once in its log; a running gang is not counted twice there (a
// second 1×4 task is admitted beside a running 1×4 one on the 2×4 cluster); and a fragmented gang is still caught
// by the stuck-gang rule, stopped and requeued.
func TestFallbackViewReservesOnceAndCatchesStuckGangs(t *testing.T) {
	waitIdle(t)
	noRay := pythonWithoutRay(t)
	s := startService(t, serviceOpts{retryS: 1, gangWaitS: 4, rayPython: noRay})

	want := noRay + " (v2.ray.python) cannot import ray (ModuleNotFoundError: No module named 'ray'); " +
		"set v2.ray.python to the Python that has Ray"
	waitFor(t, 60*time.Second, "/healthz to show the dashboard's view and why", func() (bool, string) {
		src, why := s.rayHealth()
		return src == "dashboard" && strings.Contains(why, want), src + ": " + why
	})

	// One 1×4 gang running (its group placed) does not hold back a second one: 4 GPUs are still free.
	first := s.submit(spec("ppo", 1, 4, 600))
	s.waitState(first.ID, mvp.StateRunning, 90*time.Second)
	// Wait until the lagging dashboard shows its GPUs used too: before that, the usage itself hides the double count.
	waitFor(t, 60*time.Second, "the dashboard to show the first gang's 4 GPUs used", func() (bool, string) {
		v, err := rayc.ClusterStatus(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		free := 0.0
		for _, n := range v.Nodes {
			if n.Alive && !n.IsHead {
				free += n.Available["GPU"]
			}
		}
		return free == 4, fmt.Sprint(free, " GPUs free")
	})
	second := s.submit(spec("ppo", 1, 4, 1))
	s.waitState(second.ID, mvp.StateSucceeded, 120*time.Second)
	if got := s.get(first.ID); got.State != mvp.StateRunning || len(got.Attempts) != 1 {
		t.Errorf("the first gang: %s, %d attempt(s)", got.State, len(got.Attempts))
	}
	if _, _, err := s.c.Cancel(ctxT(t), first.ID); err != nil {
		t.Fatal(err)
	}
	waitIdle(t)

	// The fragmenting race on the fallback view: the PENDING group is seen there, the gang is stopped after
	// gang_wait_s and requeued; attempt 2 waits for 4 GPUs on one node and then runs.
	task, frag := fragmentRunningGang(t, s, 600)
	w := s.waitState(task.ID, mvp.StatePendingResources, 120*time.Second)
	if a1 := w.Attempts[0]; a1.FailureKind != mvp.FailureInsufficientResources || a1.RayStatus != mvp.RayStopped ||
		!strings.Contains(a1.Message, "could not be placed") {
		t.Errorf("stuck attempt %+v", a1)
	}
	stuck := 0
	for _, e := range s.events(task.ID) {
		if e.Type == mvp.EventGangStuck {
			stuck++
		}
	}
	if stuck == 0 {
		t.Errorf("no GANG_STUCK event")
	}
	if err := rayc.StopJob(ctxT(t), frag); err != nil {
		t.Fatal(err)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second)
	if len(done.Attempts) != 2 || done.Attempts[1].RaySubmissionID != task.ID+"--a02" {
		t.Errorf("attempts %+v", done.Attempts)
	}

	// Still the fallback, and its cause logged once, not every tick.
	if src, why := s.rayHealth(); src != "dashboard" || !strings.Contains(why, want) {
		t.Errorf("/healthz at the end: %s: %s", src, why)
	}
	if n := strings.Count(readFile(t, s.logPath), "the live probe cannot answer"); n != 1 {
		t.Errorf("the probe's failure was logged %d times, want once", n)
	}
}
