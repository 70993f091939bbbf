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
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// gatedDriver prints a line, then one more each time a gate file of its folder appears ("go1", "go2", "end"),
// saying so by a file of its own ("went1", "went2") once the line is printed.
const gatedDriver = `import os, sys, time
d = sys.argv[1]
deadline = time.time() + 600
def wait(name):
    while not os.path.exists(os.path.join(d, name)) and time.time() < deadline:
        time.sleep(0.1)
print("one: before the restarts", flush=True)
wait("go1")
print("two: printed while mvp was stopped", flush=True)
open(os.path.join(d, "went1"), "w").close()
wait("go2")
print("three: printed while mvp was killed", flush=True)
open(os.path.join(d, "went2"), "w").close()
wait("end")
print("four: the last line", flush=True)
`

// TestLogsFollowOnAcrossRestartsOfMvp: `mvp logs -f` of a running attempt outlives a graceful restart of mvp
// (its stream ends with the server-stopping trailer) and a kill and start (its stream is cut): each time it waits
// for mvp to answer again and follows on from the byte where it stopped, so that it prints the whole log, each line
// once, including the lines the driver printed while mvp was down, and exits 0 at the attempt's end. It gave up at
// the first restart, and running it again printed the log from its start. So does a follow of a task that has no
// attempt yet (the server holds it until the first attempt): it waits out both restarts and prints that log.
func TestLogsFollowOnAcrossRestartsOfMvp(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	dir := t.TempDir()
	script := filepath.Join(dir, "gated.py")
	writeFile(t, script, gatedDriver)
	gate := func(name string) { writeFile(t, filepath.Join(dir, name), "") }
	t.Cleanup(func() { gate("go1"); gate("go2"); gate("end") }) // a failed test leaves no driver waiting
	id := submitThroughDoor(t, s, fmt.Sprintf("python3 %s %s", script, dir))

	follow := exec.Command(env.bin, "logs", "-f", id)
	follow.Env = append(os.Environ(), "MVP_ADDR="+s.c.Addr, "MVP_TOKEN="+s.token)
	out, errb := &servicetest.Buffer{}, &servicetest.Buffer{}
	follow.Stdout, follow.Stderr = out, errb
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- follow.Wait() }()
	t.Cleanup(func() { _ = follow.Process.Kill() })
	printed := func(what string) {
		t.Helper()
		waitFor(t, 3*time.Minute, "mvp logs -f to print "+what, func() (bool, string) {
			select {
			case err := <-exited:
				t.Fatalf("mvp logs -f exited (%v) before it printed %q; stdout %q, stderr %q", err, what, out.String(), errb.String())
			default:
			}
			return strings.Contains(out.String(), what), fmt.Sprintf("stdout %q, stderr %q", out.String(), errb.String())
		})
	}
	made := func(name string) {
		t.Helper()
		waitFor(t, time.Minute, "the driver to make "+name, func() (bool, string) {
			_, err := os.Stat(filepath.Join(dir, name))
			return err == nil, fmt.Sprint(err)
		})
	}
	printed("one: before the restarts")
	// A second follower, of a task that has no attempt yet (it waits for the door task to succeed): the server
	// holds its request until the first attempt, through both restarts.
	next := s.submit(spec("ppo", 1, 1, 1) + "after_ok: [" + id + "]\n")
	follow2 := exec.Command(env.bin, "logs", "-f", next.ID)
	follow2.Env = follow.Env
	out2, errb2 := &servicetest.Buffer{}, &servicetest.Buffer{}
	follow2.Stdout, follow2.Stderr = out2, errb2
	if err := follow2.Start(); err != nil {
		t.Fatal(err)
	}
	exited2 := make(chan error, 1)
	go func() { exited2 <- follow2.Wait() }()
	t.Cleanup(func() { _ = follow2.Process.Kill() })
	waitFor(t, time.Minute, "mvp to hold the second follower's request", func() (bool, string) {
		b, _ := os.ReadFile(s.logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="log follow begins"`) && strings.Contains(line, "task_id="+next.ID) {
				return true, ""
			}
		}
		return false, errb2.String()
	})

	s.stop()
	gate("go1")
	made("went1")
	s.start()
	printed("two: printed while mvp was stopped")

	s.kill()
	gate("go2")
	made("went2")
	s.start()
	printed("three: printed while mvp was killed")

	gate("end")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("mvp logs -f: %v; stdout %q, stderr %q", err, out.String(), errb.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("mvp logs -f did not end with the attempt; stdout %q, stderr %q", out.String(), errb.String())
	}
	s.waitState(id, mvp.StateSucceeded, time.Minute)
	whole, stderr, code := s.cli("logs", id, "--attempt", "1")
	if code != 0 || !strings.Contains(whole, "four: the last line") {
		t.Fatalf("mvp logs: exit %d, %q, %q", code, whole, stderr)
	}
	if out.String() != whole {
		t.Errorf("mvp logs -f printed\n%q\nwhere the log is\n%q", out.String(), whole)
	}
	if n := strings.Count(errb.String(), "following on from where it stopped"); n != 2 {
		t.Errorf("stderr %q: want it to say twice that it follows on", errb.String())
	}

	select {
	case err := <-exited2:
		if err != nil {
			t.Fatalf("mvp logs -f of the task that waited: %v; stdout %q, stderr %q", err, out2.String(), errb2.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("mvp logs -f of the task that waited did not end; stdout %q, stderr %q", out2.String(), errb2.String())
	}
	s.waitState(next.ID, mvp.StateSucceeded, time.Minute)
	if whole, _, _ := s.cli("logs", next.ID, "--attempt", "1"); out2.String() != whole || whole == "" {
		t.Errorf("mvp logs -f of the task that waited printed\n%q\nwhere its log is\n%q", out2.String(), whole)
	}
	if !strings.Contains(errb2.String(), "before the log of "+next.ID+" began") {
		t.Errorf("stderr %q: want it to say it waits for mvp before the log began", errb2.String())
	}
}
