//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestPendingGangKeepsItsReservation (issue 12, defect 3): a gang whose placement group Ray reports PENDING keeps
// its GPUs reserved for the whole gang wait, so a second task is not admitted onto the GPUs the first is about to
// take; once the gang wait has passed, the gang is stopped and requeued and the second task runs.
func TestPendingGangKeepsItsReservation(t *testing.T) {
	waitIdle(t)
	const gangWait = 25 * time.Second
	s := startService(t, serviceOpts{retryS: 1, gangWaitS: gangWait.Seconds()})
	big, frag := fragmentRunningGang(t, s, 600) // a 1×4 gang that can never be placed on 2 + 2 free GPUs
	jobID := s.get(big.ID).Attempts[0].RayJobID
	waitFor(t, 60*time.Second, "the gang's placement group seen PENDING", func() (bool, string) {
		v, err := probe.ReadCluster(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, g := range v.Groups {
			if g.CreatorJobID == jobID && g.State == "PENDING" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d groups", len(v.Groups))
	})
	seen := time.Now()

	// A 1×2 task fits on the free GPUs of the view, but they are the gang's: it must wait while the gang may
	// still be placed.
	small := s.submit(spec("ppo", 1, 2, 1))
	for time.Since(seen) < gangWait-8*time.Second {
		if got := s.get(small.ID); got.LatestAttemptNo != 0 {
			t.Fatalf("a task was admitted onto the GPUs of a gang still within its gang wait (%s after the group was "+
				"seen PENDING): %s, attempt %d", time.Since(seen).Round(time.Second), got.State, got.LatestAttemptNo)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Past the gang wait the gang is judged stuck and no longer holds the queue.
	w := s.waitState(big.ID, mvp.StatePendingResources, 90*time.Second)
	if a := w.Attempts[0]; a.FailureKind != mvp.FailureInsufficientResources || a.RayStatus != mvp.RayStopped {
		t.Errorf("stuck attempt %+v", a)
	}
	s.waitState(small.ID, mvp.StateSucceeded, 120*time.Second)
	if err := rayc.StopJob(context.Background(), frag); err != nil && !errors.Is(err, mvp.ErrJobNotFound) {
		t.Fatal(err)
	}
	s.waitState(big.ID, mvp.StateSucceeded, 180*time.Second)
}
