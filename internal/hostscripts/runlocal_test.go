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

// TestRunLocalSaysWhereTheTokenIsWhenItIsSet: with MVP_INTERNAL_TOKEN set (as specs/deploy.md has operators do,
// and as anyone restarting `make run` with the same token does), mvp serve --dev-generate-token generates and
// prints nothing, but the banner said "(the token is printed below, once)" and "MVP_TOKEN=<token>": the user
// waited for a token that never came. Found in a walk-through. It says the token is that variable's value.
func TestRunLocalSaysWhereTheTokenIsWhenItIsSet(t *testing.T) {
	root, repo := repoRoot(t), t.TempDir()
	for _, f := range []string{"scripts/run-local.sh", "configs/dev.yaml", "configs/examples/ppo.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A stand-in for bin/mvp: the banner is all this test reads.
	if err := os.MkdirAll(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "bin", "mvp"), []byte("#!/bin/sh\necho fake-mvp \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cluster := t.TempDir()
	env := "RAY_GCS_ADDRESS=127.0.0.1:6779\nRAY_DASHBOARD_URL=http://127.0.0.1:8665\nRAY_VENV=" + t.TempDir() + "\n"
	if err := os.WriteFile(filepath.Join(cluster, "cluster.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, tc := range []struct {
		token     string
		want, not []string
	}{
		{"", []string{"the token is printed below, once", "MVP_TOKEN=<token>"}, []string{"$MVP_INTERNAL_TOKEN"}},
		{"a-token-of-sixteen-or-more", []string{"$MVP_INTERNAL_TOKEN"}, []string{"printed below", "<token>", "a-token-of-sixteen"}},
	} {
		cmd := exec.Command("bash", filepath.Join(repo, "scripts", "run-local.sh"))
		cmd.Env = append(os.Environ(), "MVP_CLUSTER_DIR="+cluster, "MVP_API_PORT="+strconv.Itoa(port),
			"MVP_DATA_DIR="+filepath.Join(t.TempDir(), "data"), "MVP_INTERNAL_TOKEN="+tc.token)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "fake-mvp serve") {
			t.Fatalf("run-local.sh with MVP_INTERNAL_TOKEN=%q: %v\n%s", tc.token, err, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("MVP_INTERNAL_TOKEN=%q: the banner lacks %q:\n%s", tc.token, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(string(out), n) {
				t.Errorf("MVP_INTERNAL_TOKEN=%q: the banner says %q:\n%s", tc.token, n, out)
			}
		}
	}
}
