//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/scheduler"
)

// TestAHungGCSDoesNotHoldTheQueueView: Ray's GCS stops answering (SIGSTOPped: hung, not down, so connections
// open and no answer comes). The queue view, the dry runs, the users' view and the web page read the cluster, and
// each waited for its own reading in line behind the others' (about 30 s a call, found by a fault drill). The
// queue view answers without the reading it could not get, saying so, /healthz says the pass waits on the cluster's
// reading, and the queue view shows the cluster again once the GCS answers.
func TestAHungGCSDoesNotHoldTheQueueView(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	waitFor(t, 60*time.Second, "the queue view to show the cluster", func() (bool, string) {
		_, raw, err := s.c.Queue(ctxT(t))
		return err == nil && bytes.Contains(raw, []byte(`"cluster_known":true`)), fmt.Sprint(err)
	})
	gcs := gcsPID(t)
	if err := syscall.Kill(gcs, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the GCS (pid %d): %v", gcs, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(gcs, syscall.SIGCONT); err != nil {
				t.Errorf("let the GCS (pid %d) go on: %v", gcs, err)
			}
		}
	}
	t.Cleanup(resume) // Ray's raylets give up on a GCS silent for a minute: never leave it stopped

	// The reading the call asks for cannot come (the probe waits 5 s for the GCS, then the dashboard's view, which
	// reads the GCS too): the answer says that none came, rather than the reading's own failure once it ends.
	_, raw, err := s.c.Queue(ctxT(t))
	// /healthz says what the scheduler's pass waits on: the cluster's reading (it said "see ray_error", a field it
	// did not have then).
	waitFor(t, 30*time.Second, "/healthz to say the pass waits on the cluster's reading", func() (bool, string) {
		resp, herr := http.Get(s.c.Addr + "/healthz")
		if herr != nil {
			return false, herr.Error()
		}
		defer resp.Body.Close()
		var h struct {
			Ray scheduler.Health `json:"ray"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return h.Ray.WaitingOn == scheduler.StepCluster, h.Ray.WaitingOn
	})
	resume()
	if err != nil {
		t.Fatalf("queue while the GCS is stopped: %v", err)
	}
	var v struct {
		ClusterKnown bool   `json:"cluster_known"`
		ClusterError string `json:"cluster_error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.ClusterKnown || !strings.Contains(v.ClusterError, "no reading of the cluster came within") {
		t.Errorf("queue while the GCS is stopped: cluster_known %v, cluster_error %q; want the cluster unknown, "+
			"saying no reading came", v.ClusterKnown, v.ClusterError)
	}
	waitFor(t, 90*time.Second, "the queue view to show the cluster once the GCS answers", func() (bool, string) {
		_, raw, err := s.c.Queue(ctxT(t))
		return err == nil && bytes.Contains(raw, []byte(`"cluster_known":true`)), string(raw) + fmt.Sprint(err)
	})
}

// gcsPID is the process of the test cluster's GCS (gcs_server with --gcs_server_port of its address).
func gcsPID(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(env.gcs)
	if err != nil {
		t.Skipf("the test cluster's GCS address %q names no port", env.gcs)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		if filepath.Base(args[0]) != "gcs_server" {
			continue
		}
		for _, a := range args {
			if a == "--gcs_server_port="+port {
				var pid int
				fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
				return pid
			}
		}
	}
	t.Skipf("no gcs_server with --gcs_server_port=%s on this machine (the test cluster runs elsewhere?)", port)
	return 0
}
