package hostscripts

import (
	"bufio"
	"context"
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

// TestDockerDaemonUnreachableIsNotAMissingContainer: when `docker inspect` fails because the daemon cannot be
// reached (not running, or the user may not use its socket), the scripts say so with docker's own message; they
// said the container did not exist and to set MVP_CONTAINER, which sends the operator to the wrong setting.
func TestDockerDaemonUnreachableIsNotAMissingContainer(t *testing.T) {
	dir := t.TempDir()
	docker := "#!/usr/bin/env bash\necho 'permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(docker), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"status.sh", "start.sh", "stop.sh", "logs.sh"} {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", s))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "MVP_CONTAINER=mvp-ray-head")
		out, _ := cmd.CombinedOutput()
		if strings.Contains(string(out), "does not exist") || !strings.Contains(string(out), "permission denied") {
			t.Errorf("%s: %s(want docker's own error, not a missing container and MVP_CONTAINER)", s, out)
		}
	}
}

// TestStatusSaysTheDockerDaemonCannotBeReached: with the docker daemon down, status.sh exited 1, the code of "not
// running", with docker's message and a question; a monitor took mvp for stopped. It exits 4, saying that the
// docker daemon cannot be reached and which settings point at it; the other scripts say the same (exit 1).
func TestStatusSaysTheDockerDaemonCannotBeReached(t *testing.T) {
	dir := t.TempDir()
	docker := "#!/usr/bin/env bash\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(docker), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"status.sh", "start.sh", "stop.sh", "logs.sh"} {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", s))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "MVP_CONTAINER=mvp-ray-head",
			"MVP_INTERNAL_TOKEN=t")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		want := 1
		if s == "status.sh" {
			want = 4
		}
		for _, w := range []string{"cannot reach the docker daemon", "Cannot connect to the Docker daemon", "DOCKER_HOST",
			"MVP_CONTAINER", "MVP_LOCAL=1"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s with the docker daemon down says no %q:\n%s", s, w, out)
			}
		}
		if code != want {
			t.Errorf("%s with the docker daemon down: exit %d, want %d:\n%s", s, code, want, out)
		}
	}
}

// TestLogsDashNWithoutValue: `logs.sh -n` (no count) says what it wants; it exited 1 without a word (the loop's
// final shift failed under set -e before the check).
func TestLogsDashNWithoutValue(t *testing.T) {
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "logs.sh"), "-n")
	cmd.Env = append(os.Environ(), "MVP_LOCAL=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-n wants a number") {
		t.Errorf("logs.sh -n: %v %q", err, out)
	}
}

// TestLogsFollowLeavesNoTailBehind: docker exec does not pass a Ctrl-C on to the process it started, so `logs.sh -f`
// left a `tail -F` running in the container after every Ctrl-C. The tail must end with the script.
func TestLogsFollowLeavesNoTailBehind(t *testing.T) {
	for _, mode := range []string{"docker", "local"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t)
			logFile := filepath.Join(r.dir, "home", "logs", "mvp.log")
			if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logFile, []byte("first line of the log\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "logs.sh"), "-f")
			cmd.Env = r.env
			if mode == "local" {
				cmd.Env = append(cmd.Env, "MVP_LOCAL=1")
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground process group
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			seen := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "first line of the log") {
						seen <- true
					}
				}
			}()
			select {
			case <-seen:
			case <-time.After(30 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatal("logs.sh -f showed nothing within 30 s")
			}
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C
			cmd.Wait()
			deadline := time.Now().Add(15 * time.Second)
			for {
				tails := tailsOf(logFile)
				if len(tails) == 0 {
					return
				}
				if time.Now().After(deadline) {
					for _, p := range tails {
						syscall.Kill(p, syscall.SIGKILL)
					}
					t.Fatalf("tail of the log still running 15 s after Ctrl-C: pids %v", tails)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// tailsOf lists the pids of `tail` processes that follow path.
func tailsOf(path string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "tail" && strings.Contains(string(b), path) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestLogsFollowWithoutALog: `logs.sh -f` when there is no log says so and ends (it must not wait on its own
// keep-alive).
func TestLogsFollowWithoutALog(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "v2", "scripts", "logs.sh"), "-f")
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("logs.sh -f without a log did not end: %s", out)
	}
	if err == nil || !strings.Contains(string(out), "no log at") {
		t.Errorf("logs.sh -f without a log: %v %s", err, out)
	}
}

// TestScriptsLeaveTheirStdinAlone: every script ran `docker exec -i`, and docker's client reads its stdin whole,
// so a script called in a loop that reads lines (while read host; do status.sh; done <hosts) ate the rest of the
// lines. Only logs -f, which needs a stdin in the container, gives one.
func TestScriptsLeaveTheirStdinAlone(t *testing.T) {
	r := newRig(t)
	script := fmt.Sprintf("while read -r x; do bash %q >/dev/null 2>&1; echo \"line $x\"; done",
		filepath.Join(repoRoot(t), "v2", "scripts", "status.sh"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = r.env
	cmd.Stdin = strings.NewReader("1\n2\n3\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.Count(string(out), "line "); got != 3 {
		t.Errorf("the loop saw %d of its 3 lines: status.sh read its stdin\n%s", got, out)
	}
}

// TestStopInAContainerThatDoesNotReap: a container's PID 1 that does not reap orphans (a shell, or ray start
// --block) leaves mvp serve a zombie once it has exited; kill -0 still succeeds on a zombie, so stop.sh waited out
// MVP_STOP_TIMEOUT after a graceful exit, then SIGKILLed nothing and said "forced". The test process stands in for
// that PID 1: a child subreaper that never reaps the processes the scripts leave behind.
func TestStopInAContainerThatDoesNotReap(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Skipf("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	defer func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
		for { // reap what was adopted
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				return
			}
		}
	}()
	r := newRig(t)
	if out, code := r.run("start.sh"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	if out, code := r.run("stop.sh", "MVP_STOP_TIMEOUT=20"); code != 0 || !strings.Contains(out, "graceful") {
		t.Errorf("stop of a service that exited on SIGTERM: %d %s", code, out)
	}
}

// TestTheServiceGetsItsOtherVariables: only the API token's variable was handed to the container, so the secrets
// key, Ray's token and the named users' token variables set on the host never reached mvp serve (with users
// configured it would not start; secret storage was silently off). MVP_PASS_ENV names them (by name, never value).
func TestTheServiceGetsItsOtherVariables(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("status.sh", "MVP_SECRETS_KEY=k-0123456789abcdef", "MVP_TOKEN_ALICE=alice-token-0123456789",
		"MVP_PASS_ENV=MVP_SECRETS_KEY RAY_AUTH_TOKEN MVP_TOKEN_ALICE"); code == 9 {
		t.Fatalf("status: %d %s", code, out)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log"))
	calls := string(log)
	for _, want := range []string{"-e MVP_SECRETS_KEY", "-e MVP_TOKEN_ALICE", "-e MVP_INTERNAL_TOKEN"} {
		if !strings.Contains(calls, want) {
			t.Errorf("docker exec lacks %s:\n%s", want, calls)
		}
	}
	if strings.Contains(calls, "RAY_AUTH_TOKEN") || strings.Contains(calls, "k-0123456789abcdef") {
		t.Errorf("an unset variable or a value was passed:\n%s", calls)
	}
	if out, code := r.run("status.sh", "MVP_PASS_ENV=BAD-NAME"); code == 0 || !strings.Contains(out, "MVP_PASS_ENV") {
		t.Errorf("a bad name in MVP_PASS_ENV: %d %s", code, out)
	}
}
