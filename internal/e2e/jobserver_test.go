//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestWhileRaysJobServerIsStoppedNothingIsAdmitted: the head's dashboard process (Ray's job server) is stopped
// (SIGSTOP: it holds every connection without a word, as a dashboard wedged or overloaded does) while the GCS
// answers, so the live probe reads the cluster fine. mvp admitted the tasks submitted meanwhile, their POSTs timed
// out, and the queue said the tasks behind them were "waiting for GPUs" (gpus_busy). Now: /healthz says Ray's job
// server (the dashboard at its address, `address` in dev.yaml) is not answering, nothing is admitted, and the
// waiting task's queue entry says why; once the dashboard goes on, the running task and the waiting one end
// SUCCEEDED with one attempt each (nothing lost or sent twice).
func TestWhileRaysJobServerIsStoppedNothingIsAdmitted(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	running := s.submit(spec("ppo", 1, 2, 60))
	s.waitState(running.ID, mvp.StateRunning, 120*time.Second)

	stopDashboard(t) // goes on at the test's end whatever happens
	says := func(why string) bool {
		return strings.Contains(why, "Ray's job server") && strings.Contains(why, "not answering") &&
			strings.Contains(why, env.dashboard) && strings.Contains(why, "`address` in dev.yaml")
	}
	waitFor(t, 90*time.Second, "/healthz to say that Ray is not answering", func() (bool, string) {
		h, _ := healthz(t, s)
		return h.Status == "degraded" && !h.Ray.RayOK, h.Status + " " + h.Ray.RayError
	})
	if h, _ := healthz(t, s); !says(h.Ray.RayError) {
		t.Errorf("/healthz's ray_error while the dashboard is stopped: %q; want it to say that Ray's job server (the "+
			"dashboard at %s, `address` in dev.yaml) is not answering", h.Ray.RayError, env.dashboard)
	}
	waiting := s.submit(spec("ppo", 1, 2, 1))
	var entry scheduler.QueueEntry
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			t.Fatalf("queue: %v", err)
		}
		for _, e := range v.Queue {
			if e.TaskID == waiting.ID {
				entry = e
			}
		}
	}
	if entry.Code != scheduler.CodeClusterUnknown || !says(entry.Reason) {
		t.Errorf("the waiting task's queue entry: %s %q; want %s saying Ray's job server is not answering",
			entry.Code, entry.Reason, scheduler.CodeClusterUnknown)
	}
	if got := s.get(waiting.ID); got.LatestAttemptNo != 0 {
		t.Errorf("a task was admitted while Ray's job server did not answer: %s, attempt %d", got.State, got.LatestAttemptNo)
	} else if !strings.Contains(got.PendingReason, "Ray cannot be read") || !strings.Contains(got.PendingReason, "job server") {
		// mvp get: the task's own answer says why nothing is admitted, as the queue does.
		t.Errorf("the waiting task's pending_reason during the outage: %q; want it to say Ray cannot be read, naming "+
			"its job server", got.PendingReason)
	}

	continueDashboard(t)
	waitFor(t, 90*time.Second, "/healthz to say ok once the job server answers", func() (bool, string) {
		h, _ := healthz(t, s)
		return h.Status == "ok" && h.Ray.RayOK, h.Status + " " + h.Ray.RayError
	})
	for _, id := range []string{running.ID, waiting.ID} {
		done := s.waitState(id, mvp.StateSucceeded, 180*time.Second)
		if n := len(done.Attempts); n != 1 {
			t.Errorf("task %s: %d attempts, want 1: the job server's absence is no failure of the task", id, n)
		}
	}
}

// dashboardPID is the process of the test cluster's dashboard (Ray's job server): the one whose command line runs
// Ray's dashboard/dashboard.py with the port of env.dashboard. Only that process is found: not its modules'
// subprocesses, not the GCS or the raylet.
func dashboardPID(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(env.dashboard)
	if err != nil || u.Port() == "" {
		t.Skipf("the test cluster's dashboard %q names no port", env.dashboard)
	}
	want := "--port=" + u.Port()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	pid := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		isDash, port := false, false
		for _, a := range args {
			isDash = isDash || strings.HasSuffix(a, filepath.Join("dashboard", "dashboard.py"))
			port = port || a == want
		}
		if isDash && port {
			if pid != 0 {
				t.Fatalf("two dashboards listen on port %s", u.Port())
			}
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		}
	}
	if pid == 0 {
		t.Skipf("no dashboard.py process with %s on this machine (the test cluster runs elsewhere?)", want)
	}
	return pid
}

var dashboardStopped int

// stopDashboard stops the test cluster's dashboard process with SIGSTOP; it goes on (SIGCONT) at the test's end if
// the test has not let it go on before.
func stopDashboard(t *testing.T) {
	t.Helper()
	pid := dashboardPID(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the dashboard (pid %d): %v", pid, err)
	}
	dashboardStopped = pid
	t.Logf("the dashboard (pid %d) is stopped", pid)
	t.Cleanup(func() { continueDashboard(t) })
}

// continueDashboard lets the dashboard stopped by stopDashboard go on.
func continueDashboard(t *testing.T) {
	if dashboardStopped == 0 {
		return
	}
	if err := syscall.Kill(dashboardStopped, syscall.SIGCONT); err != nil {
		t.Errorf("let the dashboard (pid %d) go on: %v", dashboardStopped, err)
	}
	t.Logf("the dashboard (pid %d) goes on", dashboardStopped)
	dashboardStopped = 0
}
