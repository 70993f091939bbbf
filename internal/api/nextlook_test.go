package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// hangingRay is a Ray whose job server takes submissions and then does not answer them until released, as a
// dashboard that hangs (not one that refuses) does: the scheduler's pass waits on the call.
type hangingRay struct {
	*servicetest.Ray
	entered chan string
	release chan struct{}
}

func (r *hangingRay) SubmitJob(ctx context.Context, s *mvp.JobSubmission) error {
	r.entered <- s.SubmissionID
	select {
	case <-r.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Ray.SubmitJob(ctx, s)
}

// TestAQueuedTaskSaysItWaitsForTheNextLook: while the scheduler's pass waited on a job server that did not answer,
// a task submitted meanwhile showed state QUEUED with no reason at all in mvp get and mvp list (found by a
// user's-eye drill, for the half minute each call waits). It says it waits for the scheduler's next look, as the
// Ray door's message already did; once a pass has looked at it, its own reason.
func TestAQueuedTaskSaysItWaitsForTheNextLook(t *testing.T) {
	ray := &hangingRay{Ray: servicetest.NewRay(), entered: make(chan string, 4), release: make(chan struct{})}
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 0.1
	m := servicetest.Start(t, &service.Main{Config: cfg, Ray: ray})
	released := false
	defer func() {
		if !released {
			close(ray.release)
		}
	}()
	c := &api.Client{Addr: m.URL(), Token: token}
	ctx := context.Background()
	first := submitN(t, c, goodSpec, 1)[0]
	<-ray.entered // the pass waits on the first task's submission
	second := submitN(t, c, goodSpec, 1)[0]
	got, _, err := c.Get(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != mvp.StateQueued || got.PendingReason != scheduler.NextLook {
		t.Errorf("a task submitted while the pass waits: %s %q; want QUEUED %q", got.State, got.PendingReason, scheduler.NextLook)
	}
	page, _, err := c.ListOwned(ctx, "", "", "", 50, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range page.Tasks {
		if tk.ID == second && tk.PendingReason != scheduler.NextLook {
			t.Errorf("the list's reason for the task no pass has looked at: %q", tk.PendingReason)
		}
		if tk.ID == first && tk.PendingReason != "" {
			t.Errorf("the task being submitted is given a reason to wait: %s %q", tk.State, tk.PendingReason)
		}
	}
	close(ray.release)
	released = true
	eventually(t, "the second task's own reason once a pass has looked at it", func() error {
		got, _, err := c.Get(ctx, second)
		if err != nil {
			return err
		}
		if got.State != mvp.StatePendingResources || got.PendingReason == scheduler.NextLook || got.PendingReason == "" {
			return fmt.Errorf("%s %q", got.State, got.PendingReason)
		}
		return nil
	})
	if got, _, err := c.Get(ctx, second); err == nil && strings.Contains(got.PendingReason, "next look") {
		t.Errorf("the reason after the pass: %q", got.PendingReason)
	}
}
