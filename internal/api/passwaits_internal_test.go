package api

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/scheduler"
)

// TestAWaitingPassSaysWhatItWaitsOn: /healthz's scheduler sentence for a pass that waits said "see ray_error",
// while it is said only when Ray's last look succeeded, so there was never a ray_error to see (found by a fault
// drill: Ray's GCS hung, /healthz pointed at a field it did not have). It says what the pass waits on, as the
// scheduler reports it.
func TestAWaitingPassSaysWhatItWaitsOn(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
		Health: func() scheduler.Health {
			return scheduler.Health{RayOK: true, LastTick: now.Add(-40 * time.Second), WaitingOn: scheduler.StepCluster}
		}}
	body, degraded := s.health()
	said, _ := body["scheduler"].(string)
	if !degraded["scheduler"] || !strings.Contains(said, "40s ago") {
		t.Fatalf("a pass 40 s old: scheduler %q, degraded %v", said, degraded)
	}
	if strings.Contains(said, "ray_error") {
		t.Errorf("the sentence points at ray_error, which /healthz does not have while ray_ok is true: %q", said)
	}
	if !strings.Contains(said, scheduler.StepCluster) {
		t.Errorf("the sentence %q does not say what the pass waits on (%q)", said, scheduler.StepCluster)
	}
}
