package hostscripts

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeDocker records its arguments and runs `docker exec … CONTAINER cmd…` locally, in a session of its own; `docker inspect` answers from
// FAKE_DOCKER_STATE (running, stopped or missing).
const fakeDocker = `#!/usr/bin/env bash
printf '%s\n' "$*" >> "$FAKE_DOCKER_LOG"
case "$1" in
  inspect)
    case "${FAKE_DOCKER_STATE:-running}" in
      running) echo true ;;
      stopped) echo false ;;
      *) echo "Error: No such object: ${@: -1}" >&2; exit 1 ;;
    esac ;;
  exec)
    shift
    interactive=0
    while [[ "$1" == -* ]]; do
      case "$1" in
        -e) [[ -n "${!2:-}" ]] || { echo "fake docker: -e $2 is not set" >&2; exit 9; }; shift 2 ;;
        -i) interactive=1; shift ;;
        *) shift ;;
      esac
    done
    shift # the container
    # As docker: the process runs in the container, not in this client's process group (a Ctrl-C that ends the
    # client does not reach it); with -i the client reads its own stdin as fast as it comes and forwards it (so
    # the process's stdin ends when the client's does), without -i the process's stdin is empty; its stdout is a
    # pipe to a relay that outlives the client (docker's shim), so it never sees its reader go.
    if [[ "$interactive" == 1 ]]; then
      cat | setsid bash -c 'set -o pipefail; "$@" | { cat || cat >/dev/null; }' shim "$@" &
    else
      setsid bash -c 'set -o pipefail; "$@" | { cat || cat >/dev/null; }' shim "$@" </dev/null &
    fi
    wait $! ;;
  *) echo "fake docker: unexpected $1" >&2; exit 2 ;;
esac
`

type rig struct {
	t    *testing.T
	dir  string
	env  []string
	port int
}

func repoRoot(t *testing.T) string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(f), "..", "..")
}

func newRig(t *testing.T) *rig {
	dir := t.TempDir()
	root := repoRoot(t)
	bin := filepath.Join(dir, "home", "bin", "mvp")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "mvp")).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fakebin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fakebin", "docker"), []byte(fakeDocker), 0o755); err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := filepath.Join(dir, "home", "configs", "dev.yaml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	// Ray is not running: mvp serves its API anyway and reports Ray as down on /healthz.
	os.WriteFile(cfg, []byte(fmt.Sprintf("address: http://127.0.0.1:1\nshared_root: %s/shared\nv2:\n  api: {port: %d}\n"+
		"  sqlite: {db_path: %s/db/mvp.sqlite3}\n  ray: {python: /bin/false}\n", dir, port, dir)), 0o644)
	r := &rig{t: t, dir: dir, port: port, env: append(os.Environ(),
		"PATH="+filepath.Join(dir, "fakebin")+":"+os.Getenv("PATH"),
		"FAKE_DOCKER_LOG="+filepath.Join(dir, "docker.log"),
		"MVP_HOME="+filepath.Join(dir, "home"),
		"MVP_DB_PATH="+filepath.Join(dir, "db", "override.sqlite3"),
		fmt.Sprintf("MVP_HEALTH_URL=http://127.0.0.1:%d/healthz", port),
		"MVP_CONTAINER=ray-head-test",
		"MVP_INTERNAL_TOKEN=host-token-0123456789abcdef",
		"MVP_STOP_TIMEOUT=10",
	)}
	t.Cleanup(func() { r.run("stop.sh"); r.run("stop.sh", "MVP_LOCAL=1") })
	return r
}

func (r *rig) run(script string, extra ...string) (string, int) {
	r.t.Helper()
	args := []string{filepath.Join(repoRoot(r.t), "v2", "scripts", script)}
	env := append([]string{}, r.env...)
	for _, e := range extra {
		if strings.HasPrefix(e, "-") || !strings.Contains(e, "=") { // a flag or a verb: the script's argument
			args = append(args, e)
		} else {
			env = append(env, e)
		}
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return string(out), code
}

func TestLifecycleThroughDocker(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("status.sh"); code != 1 || !strings.Contains(out, "not running") {
		t.Errorf("status before start: %d %s", code, out)
	}
	out, code := r.run("start.sh")
	if code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("start: %d %s", code, out)
	}
	if out, code := r.run("start.sh"); code != 0 || !strings.Contains(out, "already running") {
		t.Errorf("second start: %d %s", code, out)
	}
	if out, code := r.run("status.sh"); (code != 0 && code != 3) || !strings.Contains(out, `"status"`) { // 3: Ray is down here
		t.Errorf("status: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "db", "override.sqlite3")); err != nil {
		t.Errorf("MVP_DB_PATH not honoured: %v", err)
	}
	if out, code := r.run("logs.sh", "-n50"); code != 0 || !strings.Contains(out, "mvp serving") {
		t.Errorf("logs: %d %s", code, out)
	}
	if out, code := r.run("restart.sh"); code != 0 || !strings.Contains(out, "stopped") || !strings.Contains(out, "started") {
		t.Errorf("restart: %d %s", code, out)
	}
	if out, code := r.run("stop.sh"); code != 0 || !strings.Contains(out, "graceful") {
		t.Errorf("stop: %d %s", code, out)
	}
	if out, code := r.run("stop.sh"); code != 0 || !strings.Contains(out, "not running") {
		t.Errorf("second stop: %d %s", code, out)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log"))
	calls := string(log)
	if !strings.Contains(calls, "exec -e MVP_INTERNAL_TOKEN ray-head-test bash -c") || strings.Contains(calls, "host-token-0123456789abcdef") {
		t.Errorf("docker calls (the token must travel by name only):\n%s", calls)
	}
}

func TestMissingOrStoppedContainer(t *testing.T) {
	r := newRig(t)
	for _, s := range []string{"start.sh", "stop.sh", "status.sh", "logs.sh", "restart.sh"} {
		out, code := r.run(s, "FAKE_DOCKER_STATE=missing")
		if code == 0 || !strings.Contains(out, "container 'ray-head-test' does not exist") {
			t.Errorf("%s, missing container: %d %s", s, code, out)
		}
		out, code = r.run(s, "FAKE_DOCKER_STATE=stopped")
		if code == 0 || !strings.Contains(out, "is not running") {
			t.Errorf("%s, stopped container: %d %s", s, code, out)
		}
	}
	if out, code := r.run("start.sh", "MVP_INTERNAL_TOKEN="); code == 0 || !strings.Contains(out, "MVP_INTERNAL_TOKEN is empty") {
		t.Errorf("start without a token: %d %s", code, out)
	}
	if out, code := r.run("start.sh", "--help"); code != 0 || !strings.Contains(out, "MVP_CONTAINER") {
		t.Errorf("help: %d %s", code, out)
	}
}

func TestLocalMode(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("start.sh", "MVP_LOCAL=1", "PATH=/usr/local/go/bin:/usr/bin:/bin"); code != 0 {
		t.Fatalf("local start: %d %s", code, out)
	}
	if out, code := r.run("status.sh", "MVP_LOCAL=1"); code != 0 && code != 3 { // 3: degraded, Ray is down here
		t.Errorf("local status: %d %s", code, out)
	}
	if out, code := r.run("stop.sh", "MVP_LOCAL=1"); code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("local stop: %d %s", code, out)
	}
	if log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log")); len(log) != 0 {
		t.Errorf("local mode called docker: %s", log)
	}
}

func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not installed (make test installs it with scripts/ensure-tools.sh)")
	}
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "v2", "scripts", "*.sh"))
	more, _ := filepath.Glob(filepath.Join(root, "scripts", "*.sh"))
	cmd := exec.Command("shellcheck", append([]string{"-x"}, append(files, more...)...)...)
	cmd.Dir = filepath.Join(root, "v2", "scripts")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck:\n%s", out)
	}
}

// fakeRay records `ray start`'s arguments, one per line.
const fakeRay = `#!/usr/bin/env bash
printf '%s\n' "$@" > "$FAKE_RAY_LOG"
`

// TestWorkerStartTakesTheGPUCountFromDoctor: worker.sh asks `mvp doctor --num-gpus` inside the worker container
// (this machine has no NVIDIA library, so the doctor falls back to RAY_GPUS_PER_WORKER, handed over by name) and
// starts Ray with that count and the worker_node resource.
func TestWorkerStartTakesTheGPUCountFromDoctor(t *testing.T) {
	r := newRig(t)
	rayLog := filepath.Join(r.dir, "ray.args")
	if err := os.WriteFile(filepath.Join(r.dir, "fakebin", "ray"), []byte(fakeRay), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"FAKE_RAY_LOG=" + rayLog, "MVP_WORKER_CONTAINER=ray-worker-test", "RAY_HEAD_ADDRESS=10.0.0.1:6379"}
	out, code := r.run("worker.sh", append(env, "start", "RAY_GPUS_PER_WORKER=3", "--", "--node-ip-address=10.0.0.2")...)
	if code != 0 || !strings.Contains(out, "--num-gpus=3") {
		t.Fatalf("start: %d %s", code, out)
	}
	args, _ := os.ReadFile(rayLog)
	want := "start\n--address=10.0.0.1:6379\n--num-gpus=3\n--resources={\"worker_node\": 100}\n--node-ip-address=10.0.0.2\n"
	if string(args) != want {
		t.Errorf("ray was started with\n%s\nwant\n%s", args, want)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log"))
	if !strings.Contains(string(log), "exec -e RAY_GPUS_PER_WORKER ray-worker-test bash -c") {
		t.Errorf("docker calls:\n%s", log)
	}

	os.Remove(rayLog)
	out, code = r.run("worker.sh", append(env, "start", "RAY_GPUS_PER_WORKER=")...)
	if code == 0 || !strings.Contains(out, "not on this machine") || !strings.Contains(out, "RAY_GPUS_PER_WORKER") {
		t.Errorf("start with no NVML and no count: %d %s", code, out)
	}
	if _, err := os.Stat(rayLog); err == nil {
		t.Errorf("ray was started although the GPU count is unknown")
	}
	if out, code := r.run("worker.sh", "start", "RAY_HEAD_ADDRESS="); code == 0 || !strings.Contains(out, "RAY_HEAD_ADDRESS is empty") {
		t.Errorf("start without a head address: %d %s", code, out)
	}
	if out, code := r.run("worker.sh", append(env, "start", "FAKE_DOCKER_STATE=missing")...); code == 0 ||
		!strings.Contains(out, "container 'ray-worker-test' does not exist (set MVP_WORKER_CONTAINER") {
		t.Errorf("missing worker container: %d %s", code, out)
	}
	// check runs the whole doctor in the container: GPUs from configuration, and Ray (not running here) unreachable.
	out, code = r.run("worker.sh", append(env, "check", "RAY_GPUS_PER_WORKER=2")...)
	if code == 0 || !strings.Contains(out, "using the configured count 2 (RAY_GPUS_PER_WORKER)") ||
		!strings.Contains(out, "FAIL  ray") {
		t.Errorf("check: %d %s", code, out)
	}
	if out, code := r.run("worker.sh", "--help"); code != 0 || !strings.Contains(out, "RAY_HEAD_ADDRESS") || !strings.Contains(out, "MVP_CONTAINER") {
		t.Errorf("help: %d %s", code, out)
	}
}

// TestStalePidfileIsNotTrusted: a pidfile that outlived its service (a container restart starts pids again from
// 1) may name another process. It is not mvp: status says not running, start starts mvp, and stop never signals
// that process (it sent it SIGTERM, then SIGKILL to its whole process group).
func TestStalePidfileIsNotTrusted(t *testing.T) {
	r := newRig(t)
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	pidfile := filepath.Join(r.dir, "home", "run", "mvp.pid")
	if err := os.MkdirAll(filepath.Dir(pidfile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidfile, []byte(fmt.Sprint(other.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := r.run("stop.sh", "MVP_LOCAL=1"); code != 0 || !strings.Contains(out, "not running") {
		t.Errorf("stop with a stale pidfile: %d %s", code, out)
	}
	// Killed, it would linger as our zombie (signal 0 still reaches it): its state says.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", other.Process.Pid)); err != nil ||
		strings.Contains(string(stat), ") Z ") {
		t.Fatalf("stop.sh killed pid %d, which is not mvp: %s %v", other.Process.Pid, stat, err)
	}
	if out, code := r.run("status.sh", "MVP_LOCAL=1"); code == 0 {
		t.Errorf("status with a stale pidfile says running: %s", out)
	}
}

// TestTimeoutsMustBeNumbers: the timeouts go into shell arithmetic in the container, which evaluates its text
// (30s aborted stop after SIGTERM, leaving no SIGKILL and a stale pidfile; a[$(cmd)] runs cmd): anything but a
// whole number of seconds is refused on the host, naming the setting.
func TestTimeoutsMustBeNumbers(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct{ script, env string }{
		{"stop.sh", "MVP_STOP_TIMEOUT=30s"}, {"stop.sh", "MVP_STOP_TIMEOUT=a[$(touch " + r.dir + "/pwned)]"},
		{"start.sh", "MVP_START_TIMEOUT=1m"},
	} {
		out, code := r.run(c.script, "MVP_LOCAL=1", c.env)
		name, _, _ := strings.Cut(c.env, "=")
		if code == 0 || !strings.Contains(out, name) {
			t.Errorf("%s with %s: %d %s", c.script, c.env, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "pwned")); err == nil {
		t.Error("a timeout's text ran a command")
	}
}

// TestBackupThroughDocker: backup.sh runs `mvp backup` in the container, on the database the service uses (the
// MVP_DB_PATH override here), while it runs, and will not write over an existing file.
func TestBackupThroughDocker(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("start.sh"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	to := filepath.Join(r.dir, "backup.sqlite3")
	out, code := r.run("backup.sh", to)
	if code != 0 || !strings.Contains(out, "integrity ok") || !strings.Contains(out, "override.sqlite3") {
		t.Fatalf("backup.sh: %d %s", code, out)
	}
	if _, err := os.Stat(to); err != nil {
		t.Fatal(err)
	}
	if out, code := r.run("backup.sh", to); code == 0 || !strings.Contains(out, "exists already") {
		t.Errorf("a second backup over the same file: %d %s", code, out)
	}
	if log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log")); !strings.Contains(string(log), "backup") {
		t.Errorf("backup.sh did not go through docker exec: %s", log)
	}
}

// TestScriptsAskWhereTheConfigListensAndSayDegraded: start.sh and status.sh asked http://127.0.0.1:8080/healthz
// whatever v2.api.port said (start waited 30 s and failed, status said "does not answer"), and status.sh exited 0,
// "healthy", while /healthz said degraded (Ray unreachable). They now ask the config's address (mvp serve
// --print-url) unless MVP_HEALTH_URL is set, and status.sh exits 3 when mvp answers but is degraded.
func TestScriptsAskWhereTheConfigListensAndSayDegraded(t *testing.T) {
	r := newRig(t) // its config: v2.api.port r.port, Ray unreachable
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", r.port)
	out, code := r.run("start.sh", "MVP_LOCAL=1", "MVP_HEALTH_URL=", "MVP_START_TIMEOUT=10")
	if code != 0 || !strings.Contains(out, url+" answers") { // degraded or not: it may not have asked Ray yet
		t.Fatalf("start with the address from the config: %d %s", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; { // until its first pass has found Ray unreachable
		out, code = r.run("status.sh", "MVP_LOCAL=1", "MVP_HEALTH_URL=")
		if code == 3 && strings.Contains(out, "degraded") && strings.Contains(out, `"ray_ok": false`) {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("status with Ray unreachable: %d %s; want exit 3, degraded", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBackupOfARelativeDatabasePath: start.sh runs mvp serve from MVP_HOME, so a relative v2.sqlite.db_path is
// under it; backup.sh ran `mvp backup` in the caller's folder and found no database (or another one).
func TestBackupOfARelativeDatabasePath(t *testing.T) {
	r := newRig(t)
	cfg := filepath.Join(r.dir, "home", "configs", "dev.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("address: http://127.0.0.1:1\nshared_root: %s/shared\nv2:\n  api: {port: %d}\n"+
		"  sqlite: {db_path: db/relative.sqlite3}\n  ray: {python: /bin/false}\n", r.dir, r.port)), 0o644)
	if out, code := r.run("start.sh", "MVP_LOCAL=1", "MVP_DB_PATH="); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "home", "db", "relative.sqlite3")); err != nil {
		t.Fatalf("the database is not under MVP_HOME: %v", err)
	}
	to := filepath.Join(r.dir, "backup.sqlite3")
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "backup.sh"), to)
	cmd.Env = append(append([]string{}, r.env...), "MVP_LOCAL=1", "MVP_DB_PATH=")
	cmd.Dir = t.TempDir() // another folder than MVP_HOME
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "integrity ok") {
		t.Errorf("backup.sh from another folder: %v %s", err, out)
	}
}
