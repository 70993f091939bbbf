package hostscripts

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunLocalSaysWhichSettingFreesATakenPort: `make run` with its API port taken (another mvp serve, or
// anything on 8080) printed the whole banner ("Try it from another shell: export MVP_ADDR=…"), made a new
// database, and only then mvp serve failed with "set v2.api.port, or v2.api.host, in dev.yaml": make run's
// dev.yaml is a copy written from configs/dev.yaml, and editing that file's port breaks run-local.sh (it looks for
// "port: 8080"). run-local.sh now checks the port first and names MVP_API_PORT. Found in a walk-through.
func TestRunLocalSaysWhichSettingFreesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	cluster, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	env := "RAY_GCS_ADDRESS=127.0.0.1:6779\nRAY_DASHBOARD_URL=http://127.0.0.1:8665\nRAY_VENV=" + t.TempDir() + "\n"
	if err := os.WriteFile(filepath.Join(cluster, "cluster.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "run-local.sh"))
	cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+cluster, "MVP_API_PORT="+strconv.Itoa(port), "MVP_DATA_DIR="+data)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("run-local.sh succeeded with its port taken:\n%s", out)
	}
	if !strings.Contains(string(out), "MVP_API_PORT") || strings.Contains(string(out), "Try it from another shell") {
		t.Errorf("run-local.sh with port %d taken: want a refusal naming MVP_API_PORT before the banner, got:\n%s", port, out)
	}
	if _, err := os.Stat(filepath.Join(data, "db", "mvp_v2.sqlite3")); err == nil {
		t.Errorf("a database was made in %s for a service that cannot start", data)
	}
}
