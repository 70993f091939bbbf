package hostscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// scripts/ray-down.sh (make ray-down) signals the process groups ray-up.sh recorded. A record outlives its cluster
// (a reboot, a cluster killed by hand), and a process group id is handed out again once its group is gone: ray-down
// then killed whatever unrelated group had the id now. It signals only a group with a process of its cluster in it
// (ray-up.sh marks each node's processes with MVP_RAY_NODE in their environment). Found in review.
func TestRayDownSignalsOnlyItsOwnProcessGroups(t *testing.T) {
	dir := t.TempDir()
	type proc struct {
		pid  int
		done chan struct{} // closed when it has exited (and been reaped)
	}
	start := func(env ...string) proc {
		cmd := exec.Command("sleep", "120")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := proc{pid: cmd.Process.Pid, done: make(chan struct{})}
		go func() { cmd.Wait(); close(p.done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
		return p
	}
	stranger := start()                                                     // a group that now has a recorded id
	ours := start("MVP_RAY_NODE=" + filepath.Join(dir, "worker2"))          // a node of this cluster
	other := start("MVP_RAY_NODE=" + filepath.Join(t.TempDir(), "worker1")) // a node of another cluster
	for name, p := range map[string]proc{"worker1": stranger, "worker2": ours, "head": other} {
		if err := os.WriteFile(filepath.Join(dir, name+".pgid"), []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-down.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "MVP_RAY_STOP_GRACE=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ray-down.sh: %v\n%s", err, out)
	}
	exited := func(p proc) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	if !exited(ours) {
		t.Errorf("the cluster's own node was not stopped\n%s", out)
	}
	if exited(stranger) || exited(other) {
		t.Errorf("ray-down signalled a process group that is not its cluster's\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.pgid")); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

// TestRayDownStopsTheNodesJobDrivers: Ray starts each job's driver in a session of its own, so it is in no group
// ray-down.sh records; it carries its node's mark (the raylet's environment) and outlived the cluster, training on
// beside the retry mvp made once the cluster was back. ray-down stops every process with one of its nodes' marks,
// and still no other.
func TestRayDownStopsTheNodesJobDrivers(t *testing.T) {
	dir := t.TempDir()
	start := func(env ...string) (int, chan struct{}) {
		cmd := exec.Command("sleep", "120")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-done })
		return cmd.Process.Pid, done
	}
	node, nodeDone := start("MVP_RAY_NODE=" + filepath.Join(dir, "worker1"))
	_, driverDone := start("MVP_RAY_NODE=" + filepath.Join(dir, "worker1")) // a driver: its own session, the node's mark
	_, otherDone := start("MVP_RAY_NODE=" + filepath.Join(dir+"-other", "worker1"))
	if err := os.WriteFile(filepath.Join(dir, "worker1.pgid"), []byte(strconv.Itoa(node)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-down.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "MVP_RAY_STOP_GRACE=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ray-down.sh: %v\n%s", err, out)
	}
	exited := func(done chan struct{}) bool {
		select {
		case <-done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	if !exited(nodeDone) || !exited(driverDone) {
		t.Errorf("the node or its job's driver outlived ray-down\n%s", out)
	}
	if exited(otherDone) {
		t.Errorf("ray-down stopped a process of another cluster\n%s", out)
	}
}
