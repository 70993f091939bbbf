package hostscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubServe is a stand-in for `mvp serve` that ignores SIGTERM: it writes the time it started (Unix ns) to the
// file $STUB_STARTED, and the time it got SIGTERM to $STUB_TERM, then lives on until SIGKILL.
const stubServe = `package main

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	now := func() []byte { return []byte(strconv.FormatInt(time.Now().UnixNano(), 10)) }
	os.WriteFile(os.Getenv("STUB_STARTED"), now(), 0o644)
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	for range c {
		os.WriteFile(os.Getenv("STUB_TERM"), now(), 0o644)
	}
}
`

// stubWrapper is MVP_BIN: it waits until the clock is 0.75 s into a second, then becomes stubServe with its own
// name and arguments (as `mvp serve` shows in /proc: start.sh knows it from then on). bash's SECONDS counts whole
// seconds of the clock, so a wait of `SECONDS + 1` begun then ended a quarter of a second later.
const stubWrapper = `#!/usr/bin/env bash
ns="$(date +%N)"
sleep "$(printf '0.%03d' $(( (1750 - 10#${ns:0:3}) % 1000 )))"
exec -a "$0" "$(dirname "$0")/stub-serve" "$@"
`

// buildStub builds stubServe as DIR/home/bin/stub-serve, started by DIR/home/bin/mvp (stubWrapper; MVP_HOME=DIR/home
// puts MVP_BIN there), with a config beside it.
func buildStub(t *testing.T) (dir string, env []string) { return buildStubOf(t, stubServe) }

// buildStubOf is buildStub with the stub's Go source given.
func buildStubOf(t *testing.T, source string) (dir string, env []string) {
	dir = t.TempDir()
	src := filepath.Join(dir, "stub", "main.go")
	bin := filepath.Join(dir, "home", "bin", "stub-serve")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "home", "bin", "mvp"), []byte(stubWrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(src), 0o755)
	os.MkdirAll(filepath.Join(dir, "home", "configs"), 0o755)
	if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "stub", "go.mod"), []byte("module stub\n\ngo 1.21\n"), 0o644)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(src)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stub: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "home", "configs", "dev.yaml"), []byte("{}\n"), 0o644)
	return dir, append(os.Environ(), "MVP_LOCAL=1", "MVP_HOME="+filepath.Join(dir, "home"),
		"MVP_INTERNAL_TOKEN=host-token-0123456789abcdef", "MVP_HEALTH_URL=http://127.0.0.1:1/healthz",
		"STUB_STARTED="+filepath.Join(dir, "started"), "STUB_TERM="+filepath.Join(dir, "term"))
}

func readNanos(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, n)
}

// atSecondsEnd waits until the wall clock is 0.8 s into a second: bash's SECONDS counts whole seconds of the
// clock, so a wait of `SECONDS + 1` begun then ended 0.2 s later.
func atSecondsEnd() {
	now := time.Now()
	d := time.Duration(800e6 - now.Nanosecond())
	if d < 0 {
		d += time.Second
	}
	time.Sleep(d)
}

// TestStopWaitsTheWholeStopTimeout: stop.sh's wait between SIGTERM and SIGKILL ended at `SECONDS + timeout`, and
// SECONDS counts whole seconds of the clock, so MVP_STOP_TIMEOUT=1 gave mvp serve between 0 and 1 s to finish its
// requests. It gets at least MVP_STOP_TIMEOUT.
func TestStopWaitsTheWholeStopTimeout(t *testing.T) {
	dir, env := buildStub(t)
	pidfile := filepath.Join(dir, "home", "run", "mvp.pid")
	os.MkdirAll(filepath.Dir(pidfile), 0o755)
	for i := 0; i < 2; i++ {
		os.Remove(filepath.Join(dir, "term"))
		stub := exec.Command(filepath.Join(dir, "home", "bin", "mvp"), "serve", "--config", "x")
		stub.Env = env
		stub.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := stub.Start(); err != nil {
			t.Fatal(err)
		}
		died := make(chan time.Time, 1)
		go func() { stub.Wait(); died <- time.Now() }()
		os.WriteFile(pidfile, []byte(strconv.Itoa(stub.Process.Pid)), 0o644)
		for _, err := os.Stat(filepath.Join(dir, "started")); err != nil; _, err = os.Stat(filepath.Join(dir, "started")) {
			time.Sleep(10 * time.Millisecond)
		}
		atSecondsEnd()
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "stop.sh"))
		cmd.Env = append(env, "MVP_STOP_TIMEOUT=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "forced") {
			stub.Process.Kill()
			t.Fatalf("stop.sh of a service that ignores SIGTERM: %v %s", err, out)
		}
		if waited := (<-died).Sub(readNanos(t, filepath.Join(dir, "term"))); waited < time.Second {
			t.Errorf("stop.sh sent SIGKILL %s after SIGTERM; MVP_STOP_TIMEOUT=1 wants at least 1s", waited)
		}
	}
}

// TestStartWaitsTheWholeStartTimeout: start.sh's wait for /healthz ended at `SECONDS + timeout`, up to a second
// short of MVP_START_TIMEOUT. It gives up no sooner than MVP_START_TIMEOUT after the service started.
func TestStartWaitsTheWholeStartTimeout(t *testing.T) {
	dir, env := buildStub(t)
	t.Cleanup(func() {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "stop.sh"))
		cmd.Env = append(env, "MVP_STOP_TIMEOUT=0")
		cmd.Run()
	})
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "start.sh"))
	cmd.Env = append(env, "MVP_START_TIMEOUT=1")
	out, err := cmd.CombinedOutput()
	gaveUp := time.Now()
	if err == nil || !strings.Contains(string(out), "did not answer within 1s") {
		t.Fatalf("start.sh of a service that never answers: %v %s", err, out)
	}
	if waited := gaveUp.Sub(readNanos(t, filepath.Join(dir, "started"))); waited < time.Second {
		t.Errorf("start.sh gave up %s after the service started; MVP_START_TIMEOUT=1 wants at least 1s", waited)
	}
}
