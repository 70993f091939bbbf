package hostscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
