package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// gcsDown is a cluster that cannot be read because Ray's GCS does not answer mvp's probe (nor the dashboard's view,
// which reads the GCS too).
type gcsDown struct{}

func (gcsDown) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	return nil, fmt.Errorf("the live probe could not start: it did not report ready within 5s (it connects to the GCS "+
		"at 127.0.0.1:6379, v2.ray.gcs_address): %w", mvp.ErrRayUnavailable)
}

// TestAnOutageOfTheGCSIsBlamedOnTheGCS: Ray's GCS hung; the dashboard, which reads it, then timed out on the job
// calls too. The pass said Ray is unavailable with the job server's timeout alone ("is Ray's dashboard running
// at …? `address` in dev.yaml"), sending the operator to the wrong setting, while the cluster's reading had said
// the GCS did not answer (found by a fault drill). When both fail in a pass, /healthz's ray_error and the outage
// say the cluster's reading first, and the job server's after it.
func TestAnOutageOfTheGCSIsBlamedOnTheGCS(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.loop.Cluster = gcsDown{}
	h.ray.jobsDown = true
	h.tick()
	got := h.loop.Health()
	if got.RayOK {
		t.Fatalf("health says Ray is ok: %+v", got)
	}
	gcs, js := strings.Index(got.RayError, "GCS at 127.0.0.1:6379"), strings.Index(got.RayError, "connection refused")
	if gcs < 0 || js < 0 || gcs > js {
		t.Errorf("ray_error %q; want the GCS's failure first, then the job server's", got.RayError)
	}
}
