//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestARunOnAFrozenNodeIsRetriedAndItsDriverEndsOnceTheNodeIsBack: the worker under a run's driver stops answering
// (its raylet and agents stopped, as a node that hangs or is cut off; the run's own processes go on), the fault a
// drill found unwatched. About a minute later Ray marks the node dead and fails the job "because its node has
// died": INFRA, and the retry is sent while the first driver still runs (mvp cannot reach that node: both run
// for as long as it stays frozen). When the node comes back its raylet exits, and the first driver ends with it: a
// Ray driver connected to it, as verl's is, and the child of its job supervisor (mvp's entrypoint execs it; the
// raylet kills its workers' children, not their grandchildren; see specs/reliability.md).
func TestARunOnAFrozenNodeIsRetriedAndItsDriverEndsOnceTheNodeIsBack(t *testing.T) {
	gpus, _ := twoWorkers(t)
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	task := s.submit(spec("ppo", 1, gpus, 900))
	var first *mvp.Attempt
	waitFor(t, 90*time.Second, "attempt 1 running with its driver's node known", func() (bool, string) {
		got := s.get(task.ID)
		if len(got.Attempts) > 0 {
			first = got.Attempts[0]
		}
		return got.State == mvp.StateRunning && first != nil && first.DriverNodeID != "", string(got.State)
	})
	driver := driverProcess(t, jobSupervisorPID(t, first.RaySubmissionID), task.ID)
	t.Cleanup(func() { // an orphan left by a failure (the pid checked to be the driver's still)
		if !gone(driver) && strings.Contains(cmdline(driver), task.ID) {
			_ = syscall.Kill(driver, syscall.SIGKILL)
		}
	})

	heal := healer(t)
	frozen := nodeDaemons(t, first.DriverNodeID)
	raylet := frozen[0]
	// resume lets the node's daemons go on. A raylet Ray has marked dead then exits, within seconds: healing before
	// it has would find it alive ("cluster already running") and leave the cluster a worker short.
	resume := func() {
		for _, p := range frozen {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
		if frozen != nil {
			for deadline := time.Now().Add(30 * time.Second); !gone(raylet) && time.Now().Before(deadline); {
				time.Sleep(200 * time.Millisecond)
			}
		}
		frozen = nil
	}
	t.Cleanup(resume)
	for _, p := range frozen {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatalf("stop process %d of node %s: %v", p, first.DriverNodeID, err)
		}
	}
	waitFor(t, 240*time.Second, "attempt 1 to end and attempt 2 to be sent", func() (bool, string) {
		got := s.get(task.ID)
		a := got.Attempts[0]
		return a.FailureKind != "" && len(got.Attempts) > 1 || got.State.Terminal(),
			fmt.Sprintf("%s, %d attempt(s), attempt 1 %s %q", got.State, len(got.Attempts), a.FailureKind, a.Message)
	})
	got := s.get(task.ID)
	if a := got.Attempts[0]; a.FailureKind != mvp.FailureInfra {
		t.Errorf("attempt 1 whose node stopped answering: %s %q, want INFRA", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q) when its driver's node stopped answering; want it retried", got.State, got.ErrorSummary)
	}
	resume()
	waitFor(t, 60*time.Second, fmt.Sprintf("attempt 1's driver (pid %d) to end once its node is back", driver), func() (bool, string) {
		return gone(driver), "alive: " + cmdline(driver)
	})
	if _, _, err := s.c.Cancel(ctxT(t), task.ID); err != nil {
		t.Errorf("cancel: %v", err)
	}
	s.waitState(task.ID, mvp.StateCanceled, 90*time.Second)
	heal()
	waitFor(t, 120*time.Second, "two alive workers again after ray-up.sh", func() (bool, string) {
		n := len(workers(t))
		return n >= 2, fmt.Sprintf("%d alive worker(s)", n)
	})
}

// driverProcess is the process of a run's driver under Ray's job supervisor: the supervisor's child running the
// task's command, or, when that child is Ray's shell (an entrypoint it does not exec), the shell's child.
func driverProcess(t *testing.T, supervisor int, taskID string) int {
	t.Helper()
	p := childOf(t, supervisor, taskID)
	if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "comm")); strings.TrimSpace(string(comm)) == "sh" {
		return childOf(t, p, taskID)
	}
	return p
}

// nodeDaemons is the raylet of Ray node id and its agents (Ray's own processes of the node, not the workers it
// started): stopping them freezes the node as Ray sees it while the runs' processes go on.
func nodeDaemons(t *testing.T, id string) []int {
	t.Helper()
	raylet := rayletOf(t, id)
	ps := []int{raylet}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		if ppidOf(f) != raylet {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if strings.HasPrefix(string(cmd), "ray::DashboardAgent") || strings.HasPrefix(string(cmd), "ray::RuntimeEnvAgent") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			ps = append(ps, pid)
		}
	}
	if len(ps) < 3 {
		t.Fatalf("node %s: raylet %d and %d agent(s); want both agents", id, raylet, len(ps)-1)
	}
	return ps
}

// gone reports whether process pid has ended (a zombie waiting for its parent has ended too).
func gone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// cmdline is what process pid runs, for a failure's message.
func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	s := strings.ReplaceAll(string(b), "\x00", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
