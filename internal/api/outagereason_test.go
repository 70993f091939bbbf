package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// downCluster is one node of 4 GPUs that can be made unreadable, as Ray's cluster is while the head is down.
type downCluster struct {
	servicetest.Cluster
	down atomic.Bool
}

func (c *downCluster) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	if c.down.Load() {
		return nil, fmt.Errorf("read the cluster: %w: dial tcp 127.0.0.1:8265: connect: connection refused", mvp.ErrRayUnavailable)
	}
	return c.Cluster.ReadCluster(ctx)
}

// TestAWaitingTasksReasonSaysRayCannotBeReadDuringAnOutage: while Ray cannot be read, nothing is admitted and GET
// /api/v2/queue says cluster_unknown, but a task's own answer (mvp get, GET /api/v2/tasks) and the task list kept
// the reason the last pass that could decide wrote ("waiting for GPUs…"), as if it waited for a running task. They
// say that Ray cannot be read, and the stored reason is back once it can.
func TestAWaitingTasksReasonSaysRayCannotBeReadDuringAnOutage(t *testing.T) {
	cl := &downCluster{Cluster: servicetest.OneNode(4)}
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 0.1
	m := servicetest.Start(t, &service.Main{Config: cfg, Cluster: cl})
	c := &api.Client{Addr: m.URL(), Token: token}
	ctx := context.Background()
	ids := submitN(t, c, goodSpec, 2) // the first takes the node's 4 GPUs (its Ray job stays PENDING), the second waits
	stored := ""
	eventually(t, "the second task waiting for GPUs", func() error {
		got, _, err := c.Get(ctx, ids[1])
		if err != nil {
			return err
		}
		if stored = got.PendingReason; got.State != mvp.StatePendingResources || stored == "" {
			return fmt.Errorf("%s %q", got.State, stored)
		}
		return nil
	})
	cl.down.Store(true)
	eventually(t, "the task's reason to say Ray cannot be read", func() error {
		got, _, err := c.Get(ctx, ids[1])
		if err != nil {
			return err
		}
		if !strings.Contains(got.PendingReason, "Ray cannot be read") || !strings.Contains(got.PendingReason, "connection refused") {
			return errors.New(got.PendingReason)
		}
		return nil
	})
	page, _, err := c.ListOwned(ctx, "", "", "", 50, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range page.Tasks {
		if tk.ID == ids[1] && !strings.Contains(tk.PendingReason, "Ray cannot be read") {
			t.Errorf("the list's reason for the waiting task during the outage: %q", tk.PendingReason)
		}
		if tk.ID == ids[0] && tk.PendingReason != "" {
			t.Errorf("the task that holds the GPUs is given a reason to wait: %q", tk.PendingReason)
		}
	}
	cl.down.Store(false)
	eventually(t, "the stored reason back once Ray can be read", func() error {
		got, _, err := c.Get(ctx, ids[1])
		if err != nil {
			return err
		}
		if got.PendingReason != stored {
			return errors.New(got.PendingReason)
		}
		return nil
	})
}
