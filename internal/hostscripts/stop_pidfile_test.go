package hostscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// stubHandover is a stand-in for `mvp serve` that, on SIGTERM, writes $STUB_NEWPID (if set) into $STUB_PIDFILE and exits: as
// if another operator's start.sh started a new service in the moment between this one's end and stop.sh noticing
// it (start.sh finds no running service then, and writes its pidfile).
const stubHandover = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
	if p := os.Getenv("STUB_NEWPID"); p != "" {
		os.WriteFile(os.Getenv("STUB_PIDFILE"), []byte(p), 0o644)
	}
}
`

// TestStopLeavesThePidfileOfAServiceStartedMeanwhile: stop.sh removed the pidfile once the service it stopped had
// gone, whatever the file named by then; a service start.sh started in that moment was left running with no
// pidfile, which status.sh, stop.sh and start.sh then could not find (start.sh refused the port it held). stop.sh
// now removes the pidfile, under start.sh's lock, only while it names the process it stopped; and still removes it
// then.
func TestStopLeavesThePidfileOfAServiceStartedMeanwhile(t *testing.T) {
	dir, env := buildStubOf(t, stubHandover)
	home := filepath.Join(dir, "home")
	pidfile := filepath.Join(home, "run", "mvp.pid")
	os.MkdirAll(filepath.Dir(pidfile), 0o755)
	env = append(env, "STUB_PIDFILE="+pidfile)

	stop := func(newPID string) string {
		t.Helper()
		stub := exec.Command(filepath.Join(home, "bin", "mvp"), "serve", "--config", "x")
		stub.Env = append(env, "STUB_NEWPID="+newPID)
		stub.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := stub.Start(); err != nil {
			t.Fatal(err)
		}
		go stub.Wait() // reaped as soon as it exits, as a service's parent (setsid, PID 1) does
		t.Cleanup(func() { stub.Process.Kill() })
		os.WriteFile(pidfile, []byte(strconv.Itoa(stub.Process.Pid)), 0o644)
		// Until the wrapper has exec'd the stub, the process is not yet `mvp serve` to the scripts.
		for i := 0; ; i++ {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(stub.Process.Pid) + "/cmdline")
			if strings.Contains(string(cmd), "serve") && !strings.Contains(string(cmd), "bash") {
				break
			}
			if i > 500 {
				t.Fatalf("the stub did not start: %q", cmd)
			}
			exec.Command("sleep", "0.01").Run()
		}
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "stop.sh"))
		cmd.Env = append(env, "MVP_STOP_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "stopped") {
			t.Fatalf("stop.sh: %v\n%s", err, out)
		}
		return string(out)
	}

	out := stop("")
	if _, err := os.Stat(pidfile); err == nil {
		t.Fatalf("stop.sh left the pidfile of the service it stopped: %s", out)
	}
	// The "new service" is this test process: alive for as long as the test runs.
	newPID := strconv.Itoa(os.Getpid())
	out = stop(newPID)
	got, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("stop.sh removed the pidfile of the service started meanwhile (pid %s): %v\nstop.sh said: %s", newPID, err, out)
	}
	if strings.TrimSpace(string(got)) != newPID {
		t.Fatalf("pidfile holds %q, want the new service's pid %s", got, newPID)
	}
}
