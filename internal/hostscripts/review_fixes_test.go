package hostscripts

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthCheckIgnoresTheContainersProxy: HEALTH asks /healthz with Python's urllib, which sends even
// 127.0.0.1 through $http_proxy when no_proxy does not list it (Go's client, mvp's own, never proxies loopback).
// In a container with a proxy set, the proxy's own answer (here 502) is taken for "something else answers at the
// health URL": start.sh refuses to start mvp at all.
func TestHealthCheckIgnoresTheContainersProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
	}))
	defer proxy.Close()
	r := newRig(t)
	out, code := r.run("start.sh", "MVP_LOCAL=1", "MVP_START_TIMEOUT=10", "http_proxy="+proxy.URL, "no_proxy=", "NO_PROXY=")
	if code != 0 || !strings.Contains(out, "started") {
		t.Errorf("start.sh in a target whose environment has http_proxy: %d %s", code, out)
	}
}

// TestStartSaysStartedOnlyWhenThePidfileIsWritten: START does not check `echo "$pid" >"$pidfile"`. When it
// fails (the container's disk full, as its own growing log can make it: the pidfile is left empty), start.sh says
// "started" and exits 0, and from then on status.sh says "not running" (exit 1) and stop.sh "not running" (exit 0)
// while mvp serve runs. /dev/full stands in for the full disk.
func TestStartSaysStartedOnlyWhenThePidfileIsWritten(t *testing.T) {
	r := newRig(t)
	run := filepath.Join(r.dir, "run")
	os.MkdirAll(run, 0o755)
	pidfile := filepath.Join(run, "mvp.pid")
	if err := os.Symlink("/dev/full", pidfile); err != nil {
		t.Fatal(err)
	}
	env := []string{"MVP_LOCAL=1", "MVP_PIDFILE=" + pidfile, "MVP_START_TIMEOUT=10"}
	out, code := r.run("start.sh", env...)
	if m := regexp.MustCompile(`\(pid (\d+)`).FindStringSubmatch(out); m != nil {
		pid, _ := strconv.Atoi(m[1])
		defer syscall.Kill(pid, syscall.SIGKILL)
		if code != 0 { // refused: the service it started is not left running without a pidfile
			deadline := time.Now().Add(20 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					t.Errorf("start.sh refused but left mvp serve (pid %d) running without its pidfile: %s", pid, out)
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if _, err := os.Lstat(pidfile); code != 0 && err == nil {
		// A full disk leaves the pidfile truncated to nothing: taken away, not left for the next script to read.
		t.Errorf("start.sh refused but left the pidfile it could not write at %s", pidfile)
	}
	if code == 0 {
		st, sc := r.run("status.sh", env...)
		sp, pc := r.run("stop.sh", env...)
		t.Errorf("start.sh could not write its pidfile but exited 0: %s\nthen status.sh: %d %s\nstop.sh: %d %s", out, sc, st, pc, sp)
	}
}

// TestStopFindsTheServiceWhateverTheSpellingOfMVPHome: PID_OF knows mvp serve by the exact text of MVP_BIN at
// the head of its command line. Started with MVP_HOME=/x/ (a trailing slash, as a shell's completion writes it),
// the process is /x//bin/mvp serve …; stop.sh with MVP_HOME=/x reads the same pidfile, says "not running" and
// exits 0 while mvp serve runs on (and start.sh then refuses, naming a server the pidfile does not name).
func TestStopFindsTheServiceWhateverTheSpellingOfMVPHome(t *testing.T) {
	r := newRig(t)
	home := filepath.Join(r.dir, "home")
	out, code := r.run("start.sh", "MVP_LOCAL=1", "MVP_HOME="+home+"/", "MVP_START_TIMEOUT=10")
	if code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	defer r.run("stop.sh", "MVP_LOCAL=1", "MVP_HOME="+home+"/")
	if out, code := r.run("stop.sh", "MVP_LOCAL=1", "MVP_HOME="+home); code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("stop.sh with MVP_HOME=%s after start.sh with MVP_HOME=%s/: %d %s", home, home, code, out)
	}
}
