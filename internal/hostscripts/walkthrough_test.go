package hostscripts

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTwoStartsAtOnceStartOneService: two start.sh at once (two operators, or a retry while the first still waits
// for /healthz) both found no service, and each started one. Both said "started", each with its own pid; the
// second mvp serve waited 5 s for the database lock and exited, and the pidfile named whichever start wrote it
// last, so status.sh could say "not running" (and stop.sh stop nothing) while the other mvp served. One start
// must start mvp serve and the other find it running.
func TestTwoStartsAtOnceStartOneService(t *testing.T) {
	r := newRig(t)
	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], _ = r.run("start.sh", "MVP_LOCAL=1")
		}(i)
	}
	wg.Wait()
	pidRE := regexp.MustCompile(`\(pid (\d+)`)
	var pids []string
	for _, out := range outs {
		m := pidRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("start.sh named no pid: %s", out)
		}
		pids = append(pids, m[1])
	}
	joined := strings.Join(outs, "")
	if pids[0] != pids[1] || strings.Count(joined, "started") != 1 || strings.Count(joined, "already running") != 1 {
		t.Errorf("two start.sh at once: want one start and one 'already running' of the same pid, got pids %v:\n%s", pids, joined)
	}
}

// TestStartDoesNotTakeAnotherServersAnswer: start.sh took any answer at the health URL for its new service. With
// the port held by another server (an mvp serve the pidfile does not name: started by hand, with another
// MVP_HOME or MVP_PIDFILE, or an old one not yet stopped), it said "started (pid N); … answers" while its mvp
// serve had failed to listen (or waited on the database lock and exited), and status.sh then said "not
// running". It must refuse, saying that something else answers there.
func TestStartDoesNotTakeAnotherServersAnswer(t *testing.T) {
	r := newRig(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status": "ok"}`)
	})}
	go srv.Serve(l)
	defer srv.Close()
	out, code := r.run("start.sh", "MVP_LOCAL=1", "MVP_HEALTH_URL=")
	if code == 0 || strings.Contains(out, "mvp: started") || !strings.Contains(out, "already answers") {
		t.Errorf("start.sh with another server on its port: %d %s", code, out)
	}
}

// TestTracedScriptsDoNotShowSecrets: an operator who runs a script under `bash -x` to see what it does (or puts
// set -x in it) got the API token and every secret of MVP_PASS_ENV in the trace: the scripts tested each
// variable with [[ -n "${!v:-}" ]], which xtrace prints expanded ("[[ -n host-token-… ]]"). They travel by name
// so that their values are never shown; the trace must not show them either.
func TestTracedScriptsDoNotShowSecrets(t *testing.T) {
	r := newRig(t)
	// The last two run here (MVP_LOCAL=1), where worker.sh takes mvp's secrets out of ray start's environment: by
	// name (env -i NAME=VALUE… put Ray's token on the trace and on a command line any user of the machine reads).
	for _, c := range [][]string{{"start.sh"}, {"status.sh"}, {"worker.sh", "check"},
		{"worker.sh", "start", "MVP_LOCAL=1"}, {"worker.sh", "check", "MVP_LOCAL=1"}} {
		args, env := []string{"-x", filepath.Join(repoRoot(t), "v2", "scripts", c[0])}, []string{}
		for _, a := range c[1:] {
			if strings.Contains(a, "=") {
				env = append(env, a)
			} else {
				args = append(args, a)
			}
		}
		cmd := exec.Command("bash", args...)
		cmd.Env = append(append(append([]string{}, r.env...), "MVP_BIN=/nonexistent/mvp", "MVP_SECRETS_KEY=secrets-key-0123456789",
			"RAY_AUTH_TOKEN=ray-token-0123456789", "RAY_HEAD_ADDRESS=10.0.0.1:6379"), env...)
		out, _ := cmd.CombinedOutput()
		for _, secret := range []string{"host-token-0123456789abcdef", "secrets-key-0123456789", "ray-token-0123456789"} {
			if strings.Contains(string(out), secret) {
				t.Errorf("bash -x %s shows %s:\n%s", strings.Join(c, " "), secret, out)
			}
		}
	}
}

// TestTokenEnvMustBeAName: MVP_TOKEN_ENV names the variable that holds the API token, and start.sh reads it with
// ${!MVP_TOKEN_ENV}, which evaluates an array subscript's text: a[$(cmd)] ran cmd, and a name with a dash ended
// start.sh with bash's "invalid variable name", naming no setting. Like MVP_PASS_ENV's names, it is checked first.
func TestTokenEnvMustBeAName(t *testing.T) {
	r := newRig(t)
	for _, name := range []string{"a[$(touch " + r.dir + "/pwned)]", "MVP-TOKEN"} {
		for _, s := range []string{"start.sh", "status.sh"} {
			out, code := r.run(s, "MVP_LOCAL=1", "MVP_TOKEN_ENV="+name)
			if code == 0 || !strings.Contains(out, "MVP_TOKEN_ENV") {
				t.Errorf("%s with MVP_TOKEN_ENV=%s: %d %s", s, name, code, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "pwned")); err == nil {
		t.Error("MVP_TOKEN_ENV's text ran a command")
	}
}

// TestMissingBinaryOrConfigNamesTheSetting: with no binary or no config where the scripts look (MVP_HOME not set
// to where mvp was copied, say), start.sh said "mvp binary /…/bin/mvp not found or not executable" or "config
// /…/dev.yaml not found", and backup.sh only bash's "No such file or directory": none said which setting to change.
func TestMissingBinaryOrConfigNamesTheSetting(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct{ script, env, want string }{
		{"start.sh", "MVP_BIN=/nonexistent/bin/mvp", "MVP_BIN"},
		{"start.sh", "MVP_CONFIG=/nonexistent/dev.yaml", "MVP_CONFIG"},
		{"backup.sh", "MVP_BIN=/nonexistent/bin/mvp", "MVP_BIN"},
		{"backup.sh", "MVP_CONFIG=/nonexistent/dev.yaml", "MVP_CONFIG"},
	} {
		for _, mode := range []string{"MVP_LOCAL=0", "MVP_LOCAL=1"} {
			args := []string{mode, c.env}
			if c.script == "backup.sh" {
				args = append(args, filepath.Join(r.dir, "backup.sqlite3"))
			}
			out, code := r.run(c.script, args...)
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("%s with %s, %s: %d %s(want the setting %s named)", c.script, c.env, mode, code, out, c.want)
			}
		}
	}
}

// TestARenamedTokenVariableNamesMVP_TOKEN_ENV: with dev.yaml's v2.auth.token_env naming another variable than
// MVP_INTERNAL_TOKEN, start.sh handed MVP_INTERNAL_TOKEN to the container and mvp serve exited with "no API
// token: set $MVP_OPS_TOKEN", which the operator does, on the host, to the same end (the scripts hand over only
// the variables they are told of); with MVP_INTERNAL_TOKEN unset, start.sh said to export the token in
// $MVP_INTERNAL_TOKEN. Both must name MVP_TOKEN_ENV, the setting that hands the variable over.
func TestARenamedTokenVariableNamesMVP_TOKEN_ENV(t *testing.T) {
	r := newRig(t)
	renameTokenVariable(t, r)
	out, code := r.run("start.sh")
	if code == 0 || !strings.Contains(out, "MVP_TOKEN_ENV=MVP_OPS_TOKEN") {
		t.Errorf("start.sh, v2.auth.token_env MVP_OPS_TOKEN: %d %s", code, out)
	}
	out, code = r.run("start.sh", "MVP_INTERNAL_TOKEN=", "MVP_OPS_TOKEN=ops-token-0123456789abcdef")
	if code == 0 || !strings.Contains(out, "MVP_TOKEN_ENV") {
		t.Errorf("start.sh with only MVP_OPS_TOKEN set: %d %s", code, out)
	}
}

// TestUnknownArgumentsAreRefused: start.sh, stop.sh, status.sh and restart.sh took no arguments and ignored any:
// `start.sh /workspace/mvp/v2/configs/prod.yaml` (or --config …) started mvp with the default dev.yaml and said
// "started". They refuse an argument, before doing anything, and say that the settings are variables.
func TestUnknownArgumentsAreRefused(t *testing.T) {
	r := newRig(t)
	for _, s := range []string{"start.sh", "stop.sh", "status.sh", "restart.sh"} {
		os.Remove(filepath.Join(r.dir, "docker.log"))
		out, code := r.run(s, "prod.yaml")
		if code == 0 || !strings.Contains(out, "unknown argument 'prod.yaml'") || !strings.Contains(out, "MVP_CONFIG") {
			t.Errorf("%s prod.yaml: %d %s", s, code, out)
		}
		if log, _ := os.ReadFile(filepath.Join(r.dir, "docker.log")); len(log) != 0 {
			t.Errorf("%s prod.yaml called docker:\n%s", s, log)
		}
	}
}

// TestStatusOfARunningServiceWithAnUnreadableConfig: status.sh reads the health URL from dev.yaml; when it could
// not (the operator is editing dev.yaml for the next restart and left a typo, or set v2.api.port to 0) it exited
// 1, which says "not running", while mvp serve ran and served: a monitor restarting on 1 would restart it (and
// start.sh, reading the same file, would not start it again). It is running, with /healthz not asked: exit 2.
func TestStatusOfARunningServiceWithAnUnreadableConfig(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("start.sh", "MVP_LOCAL=1"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	cfg := filepath.Join(r.dir, "home", "configs", "dev.yaml")
	if err := os.WriteFile(cfg, []byte("v2:\n  api: {port: 8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := r.run("status.sh", "MVP_LOCAL=1", "MVP_HEALTH_URL=")
	if code != 2 || !strings.Contains(out, "running (pid") || !strings.Contains(out, "MVP_HEALTH_URL") {
		t.Errorf("status.sh, running, dev.yaml unreadable: %d %s(want 2: running, /healthz not asked)", code, out)
	}
}

// TestAnImageNameIsNotTakenForAContainer: `docker inspect NAME` looks for any object by that name. With
// MVP_CONTAINER set to the head's image (rayproject/ray:…) instead of its container, docker answered with the
// image, whose .State the template could not read, and the scripts said that inspect failed and asked whether the
// docker daemon was running. They ask for a container (--type container), and say it does not exist and to set
// MVP_CONTAINER. The fake docker here answers as docker does.
func TestAnImageNameIsNotTakenForAContainer(t *testing.T) {
	dir := t.TempDir()
	docker := `#!/usr/bin/env bash
[[ "$1" == inspect ]] || exit 2
if [[ " $* " == *" --type container "* ]]; then echo "Error: No such container: ${@: -1}" >&2; exit 1; fi
echo 'template: :1:8: executing "" at <.State.Running>: map has no entry for key "State"' >&2
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(docker), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"status.sh", "start.sh", "stop.sh", "logs.sh", "backup.sh"} {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", s))
		if s == "backup.sh" {
			cmd.Args = append(cmd.Args, "/backups/mvp.sqlite3")
		}
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "MVP_CONTAINER=rayproject/ray:2.60.0")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "container 'rayproject/ray:2.60.0' does not exist (set MVP_CONTAINER") {
			t.Errorf("%s with an image's name in MVP_CONTAINER: %s", s, out)
		}
	}
}

// TestStopOfAProcessThatSurvivesSIGKILL: a process stuck in the kernel (state D: a write to a hung NFS server,
// where mvp's database lives) does not end on SIGKILL until the kernel lets it go. stop.sh sent SIGKILL, said
// "stopped (pid N, forced)", exited 0 and removed the pidfile, so status.sh said "not running" and start.sh
// started a second mvp serve beside the first (which came back when NFS did). It must say that the process is
// still there, exit non-zero, and keep the pidfile. The cgroup v1 freezer holds the process so here.
func TestStopOfAProcessThatSurvivesSIGKILL(t *testing.T) {
	freezer := "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(filepath.Join(freezer, "cgroup.procs")); err != nil {
		t.Skip("no cgroup v1 freezer here")
	}
	cg := filepath.Join(freezer, fmt.Sprintf("mvp-hostscripts-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot make a freezer cgroup: %v", err)
	}
	r := newRig(t)
	if out, code := r.run("start.sh", "MVP_LOCAL=1"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	pidfile := filepath.Join(r.dir, "home", "run", "mvp.pid")
	pid, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(filepath.Join(cg, "freezer.state"), []byte("THAWED"), 0o644)
		for i := 0; i < 50 && os.Remove(cg) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), pid, 0o644); err != nil {
		t.Skipf("cannot move mvp serve into the freezer cgroup: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cg, "freezer.state"), []byte("FROZEN"), 0o644); err != nil {
		t.Skipf("cannot freeze: %v", err)
	}
	out, code := r.run("stop.sh", "MVP_LOCAL=1", "MVP_STOP_TIMEOUT=1")
	if code == 0 || strings.Contains(out, "stopped") || !strings.Contains(out, "still") {
		t.Errorf("stop.sh of a process that outlives SIGKILL: %d %s", code, out)
	}
	if _, err := os.Stat(pidfile); err != nil {
		t.Errorf("stop.sh removed the pidfile of a live process: %v", err)
	}
	if out, code := r.run("status.sh", "MVP_LOCAL=1"); code == 1 {
		t.Errorf("status.sh after it: %d %s", code, out)
	}
}

// TestRelativePaths: start.sh changes to the folder above the binary's before it runs mvp serve, so a relative
// MVP_CONFIG (MVP_LOCAL=1 MVP_CONFIG=configs/dev.yaml, from where it is) was checked where the operator stood and
// read from the other folder (or not found there), and a relative MVP_HOME put the pidfile and the log nowhere
// ("home/run/mvp.pid: No such file or directory"), then showed an old log as the service's end. In local mode a
// relative path is taken from where the script runs; in the container (docker exec starts in the image's WORKDIR,
// which the operator did not choose) it is refused, naming the setting.
func TestRelativePaths(t *testing.T) {
	r := newRig(t)
	run := func(script string, env ...string) (string, int) {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", script))
		cmd.Env = append(append([]string{}, r.env...), env...)
		cmd.Dir = r.dir
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	for _, env := range [][]string{{"MVP_HOME=home"}, {"MVP_CONFIG=home/configs/dev.yaml"}} {
		env = append(env, "MVP_LOCAL=1")
		if out, code := run("start.sh", env...); code != 0 || !strings.Contains(out, "mvp: started") {
			t.Errorf("start.sh with %s: %d %s", env[0], code, out)
		}
		if out, code := run("status.sh", env...); code != 0 && code != 3 {
			t.Errorf("status.sh with %s: %d %s", env[0], code, out)
		}
		if out, code := run("stop.sh", env...); code != 0 || !strings.Contains(out, "mvp: stopped") {
			t.Errorf("stop.sh with %s: %d %s", env[0], code, out)
		}
	}
	if out, code := run("start.sh", "MVP_CONFIG=configs/dev.yaml"); code == 0 || !strings.Contains(out, "MVP_CONFIG") ||
		!strings.Contains(out, "absolute") {
		t.Errorf("start.sh through docker with a relative MVP_CONFIG: %d %s", code, out)
	}
}

// TestBackupToARelativePathThroughDocker: `backup.sh mvp-2026-12-01.sqlite3`, typed on the host, wrote the copy
// in the container's working folder (the image's WORKDIR, in the container's own layer, gone with the
// container), not where the operator stood. Through docker a backup's FILE must be absolute; with MVP_LOCAL=1 it
// is from where the script runs.
func TestBackupToARelativePathThroughDocker(t *testing.T) {
	r := newRig(t)
	if out, code := r.run("start.sh"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	work := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "backup.sh"), "mvp-backup.sqlite3")
	cmd.Env, cmd.Dir = r.env, work
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "absolute") {
		t.Errorf("backup.sh to a relative path through docker: %v %s", err, out)
	}
	cmd = exec.Command("bash", filepath.Join(repoRoot(t), "v2", "scripts", "backup.sh"), "mvp-backup.sqlite3")
	cmd.Env, cmd.Dir = append(append([]string{}, r.env...), "MVP_LOCAL=1"), work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), filepath.Join(work, "mvp-backup.sqlite3")) {
		t.Errorf("backup.sh to a relative path, MVP_LOCAL=1: %v %s", err, out)
	}
}

// TestTheEndOfTheLogIsThisStartsOwn: when the service start.sh started exits at once, start.sh shows the end of
// its log; the log is appended across starts, so a run that wrote few lines showed the last lines of an earlier
// run too (a crash of last week as if it were today's). Only what this start added is shown.
func TestTheEndOfTheLogIsThisStartsOwn(t *testing.T) {
	r := newRig(t)
	logPath := filepath.Join(r.dir, "home", "logs", "mvp.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte("an earlier run's last line: OLD-RUN-MARKER\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	renameTokenVariable(t, r)
	out, code := r.run("start.sh")
	if code == 0 || !strings.Contains(out, "the end of its log") || !strings.Contains(out, "MVP_OPS_TOKEN") {
		t.Fatalf("start.sh of a service that exits at once: %d %s", code, out)
	}
	if strings.Contains(out, "OLD-RUN-MARKER") {
		t.Errorf("start.sh showed an earlier run's log as this start's:\n%s", out)
	}
}

// renameTokenVariable makes the rig's dev.yaml name MVP_OPS_TOKEN as the API token's variable (v2.auth.token_env),
// which the host scripts do not hand over unless told.
func renameTokenVariable(t *testing.T, r *rig) {
	t.Helper()
	cfg := filepath.Join(r.dir, "home", "configs", "dev.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "  auth: {token_env: MVP_OPS_TOKEN}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
}
