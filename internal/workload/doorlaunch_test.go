package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runAsRay starts entrypoint as Ray's job supervisor does: /bin/sh -c in a session of its own, its output to a
// file, with marker and the door's launcher (as BuildTask sets it) in its environment. It returns the command and its output file's path.
func runAsRay(t *testing.T, entrypoint, marker string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", entrypoint)
	cmd.Env = append(append(os.Environ(), "MVP_LAUNCH_TEST="+marker, DoorLauncherEnv+"="+doorLauncher), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out // a file, not a pipe: Wait does not wait for a process left holding it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // nothing a failure leaves may outlive the test
		for _, pid := range marked(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cmd, out.Name()
}

func output(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// marked lists the live processes whose environment holds MVP_LAUNCH_TEST=marker.
func marked(marker string) []int {
	var out []int
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range envs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append([]byte{0}, b...), []byte("\x00MVP_LAUNCH_TEST="+marker+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] != "Z" {
				out = append(out, pid)
			}
		}
	}
	return out
}

// children lists the processes whose parent is pid, as psutil's children(recursive=True) does, which Ray's
// supervisor signals on a stop.
func children(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		st, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			c, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, c)
			out = append(out, children(c)...)
		}
	}
	return out
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH: the door's launcher runs with the node's python3")
	}
}

// TestTheDoorLauncherRunsTheCommandAsTheShellWould: an entrypoint under the launcher prints, expands and exits as
// /bin/sh -c running it alone does, exit codes and a death by signal (128 + N) included, and where the node has no
// python3 it runs as written.
func TestTheDoorLauncherRunsTheCommandAsTheShellWould(t *testing.T) {
	needPython(t)
	for _, c := range []string{
		`echo "it's" $((1+2)) "$0"; exit 3`,
		`cd / && pwd && A=1 sh -c 'echo $A' && false`,
		`kill -9 $$`,
		"printf '%s\\n' a\\ b \"c  d\" | sort -r",
		"echo done",
	} {
		var want [2]string
		for i, ep := range []string{c, execEntrypoint(c)} {
			if i == 1 && ep == c {
				t.Fatalf("%q is not sent under the launcher", c)
			}
			cmd, out := runAsRay(t, ep, "x")
			err := cmd.Wait()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
				if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			want[i] = fmt.Sprintf("%q exit %d", output(t, out), code)
		}
		if want[0] != want[1] {
			t.Errorf("%q: as written %s, under the launcher %s", c, want[0], want[1])
		}
	}
	// The command does not see the launcher's variable.
	cmd, out := runAsRay(t, execEntrypoint("env | grep -c ^"+DoorLauncherEnv+"= ; true"), "x")
	if err := cmd.Wait(); err != nil || output(t, out) != "0\n" {
		t.Errorf("the command sees %s: %q %v", DoorLauncherEnv, output(t, out), err)
	}
	// No python3 on the node: the command runs as written.
	dir := t.TempDir()
	cmd, out = runAsRay(t, execEntrypoint("echo no launcher; exit 4"), "x", "PATH="+dir)
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 4 || output(t, out) != "no launcher\n" {
		t.Errorf("without python3: %q, %v", output(t, out), err)
	}
}

// TestTheDoorLauncherStopsWhatTheShellStartsAfterTheStop: Ray's supervisor stops a job by listing the entrypoint's
// process and its children, then signalling those. A command the shell starts after that listing was missed: with
// the entrypoint as written, the shell died and its late child ran on with no parent (Ray then said STOPPED).
// Under the launcher, the signal reaches every process of the job's group, the late one included, and the
// launcher ends once they all have.
func TestTheDoorLauncherStopsWhatTheShellStartsAfterTheStop(t *testing.T) {
	needPython(t)
	for i, listDelay := range []time.Duration{0, 30 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		marker := fmt.Sprint("late-", i)
		cmd, out := runAsRay(t, execEntrypoint("sleep 0.5; sleep 60"), marker)
		time.Sleep(listDelay) // the stop comes while the launcher or the shell is starting
		listed := append([]int{cmd.Process.Pid}, children(cmd.Process.Pid)...)
		time.Sleep(700 * time.Millisecond) // the shell starts `sleep 60` after the listing
		for _, pid := range listed {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("stop %d: the entrypoint has not ended 10 s after the stop; output %q", i, output(t, out))
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(marked(marker)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if left := marked(marker); len(left) > 0 {
			t.Errorf("stop %d (listed %v %v after the start): processes %v of the job outlived its entrypoint", i, listed, listDelay, left)
		}
	}
}
