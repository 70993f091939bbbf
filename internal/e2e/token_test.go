//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestTokenAuthCluster runs against a cluster started with RAY_AUTH_MODE=token (scripts/e2e.sh starts one for it
// after the main suite): mvp sends the token on every Ray call and hands it to the probe, and never writes it down.
func TestTokenAuthCluster(t *testing.T) {
	token := os.Getenv("MVP_E2E_RAY_TOKEN")
	if token == "" {
		t.Skip("runs in the token-auth phase of scripts/e2e.sh (MVP_E2E_RAY_TOKEN)")
	}
	resp, err := http.Get(env.dashboard + "/api/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the cluster does not require its token: /api/version without it answered %d", resp.StatusCode)
	}
	waitIdle(t)
	s := startService(t, serviceOpts{rayTokenEnv: "MVP_E2E_RAY_TOKEN"})
	task := s.submit(spec("ppo", 1, 2, 2))
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if done.Attempts[0].DriverNodeID == "" {
		t.Errorf("attempt %+v", done.Attempts[0])
	}
	if log := s.logs(task.ID, 1); !strings.Contains(log, "verl-standin: driver exits with code 0") {
		t.Errorf("log %q", tail(log, 3))
	}
	b, err := http.Get(s.c.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b.Body.Close()
	s.stop()
	// The token appears nowhere mvp writes: its log, its database, the task folder.
	for _, root := range []string{s.logPath, filepath.Dir(s.dbPath), s.sharedRoot} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			if strings.Contains(string(data), token) {
				t.Errorf("Ray's token is written in %s", p)
			}
			return nil
		})
	}
}
