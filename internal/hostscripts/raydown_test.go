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

// sleeper is a process started in a session of its own, as ray-up.sh starts a node (and Ray a job's driver).
type sleeper struct {
	pid  int
	done chan struct{} // closed when it has exited (and been reaped)
}

// startSleeper starts `sleep 120` in its own session with env added to its environment; the test's end kills it.
func startSleeper(t *testing.T, env ...string) sleeper { return startNamed(t, "", env...) }

// startNamed is startSleeper with the process's command name (comm) name, as a node's raylet has "raylet"; "" keeps
// sleep's.
func startNamed(t *testing.T, name string, env ...string) sleeper {
	t.Helper()
	bin := "sleep"
	if name != "" {
		path, err := exec.LookPath("sleep")
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "120")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := sleeper{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
	return p
}

// exited reports whether p exits within 2 s.
func (p sleeper) exited() bool {
	select {
	case <-p.done:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// rayDown runs scripts/ray-down.sh on the cluster folder dir and returns what it said.
func rayDown(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "ray-down.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+dir, "MVP_RAY_STOP_GRACE=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ray-down.sh: %v\n%s", err, out)
	}
	return string(out)
}

// scripts/ray-down.sh (make ray-down) signals the process groups ray-up.sh recorded. A record outlives its cluster
// (a reboot, a cluster killed by hand), and a process group id is handed out again once its group is gone: ray-down
// then killed whatever unrelated group had the id now. It signals only a group with a process of its cluster in it
// (ray-up.sh marks each node's processes with MVP_RAY_NODE in their environment). Found in review.
func TestRayDownSignalsOnlyItsOwnProcessGroups(t *testing.T) {
	dir := t.TempDir()
	stranger := startSleeper(t)                                                     // a group that now has a recorded id
	ours := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir, "worker2"))          // a node of this cluster
	other := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(t.TempDir(), "worker1")) // a node of another cluster
	for name, p := range map[string]sleeper{"worker1": stranger, "worker2": ours, "head": other} {
		if err := os.WriteFile(filepath.Join(dir, name+".pgid"), []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := rayDown(t, dir)
	if !ours.exited() {
		t.Errorf("the cluster's own node was not stopped\n%s", out)
	}
	if stranger.exited() || other.exited() {
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
	node := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir, "worker1"))
	driver := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir, "worker1")) // its own session, the node's mark
	other := startSleeper(t, "MVP_RAY_NODE="+filepath.Join(dir+"-other", "worker1"))
	if err := os.WriteFile(filepath.Join(dir, "worker1.pgid"), []byte(strconv.Itoa(node.pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := rayDown(t, dir)
	if !node.exited() || !driver.exited() {
		t.Errorf("the node or its job's driver outlived ray-down\n%s", out)
	}
	if other.exited() {
		t.Errorf("ray-down stopped a process of another cluster\n%s", out)
	}
}
