package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestQueueView: GET /api/v2/queue shows the nodes, and every waiting task in policy order with its position, code,
// sentence and estimated start; the one task that fits is running, the second waits for its GPUs.
func TestQueueView(t *testing.T) {
	base, _ := newServer(t) // one node of 4 GPUs
	c := &api.Client{Addr: base, Token: token}
	ctx := context.Background()
	spec := goodSpec + "max_runtime_s: 600\n"
	ids := submitN(t, c, spec, 2)
	var q *scheduler.QueueView
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		q, _, err = c.Queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := c.Get(ctx, ids[0])
		second, _, _ := c.Get(ctx, ids[1])
		if first.State.Active() && second.State == mvp.StatePendingResources && len(q.Queue) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue never settled: %+v", q)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !q.ClusterKnown || len(q.Nodes) != 1 || q.Nodes[0].TotalGPUs != 4 || q.Policy != scheduler.DefaultPolicy {
		t.Errorf("view: %+v", q)
	}
	e := q.Queue[0]
	if e.TaskID != ids[1] || e.Position != 1 || e.Code != scheduler.CodeGPUsBusy || e.Reason == "" {
		t.Errorf("entry %+v", e)
	}
	if e.EstStart == nil {
		t.Errorf("no estimated start although the running task declares max_runtime_s: %+v", e)
	}
}

// TestDryRunEstimatesTheStart: a dry run says when the task would start if it were submitted now (the queue's
// forecast with it added): here third in line for the one node, one declared run after the task waiting before
// it. The dry run said only that it would wait.
func TestDryRunEstimatesTheStart(t *testing.T) {
	base, _ := newServer(t) // one node of 4 GPUs
	c := &api.Client{Addr: base, Token: token}
	ctx := context.Background()
	spec := goodSpec + "max_runtime_s: 600\n"
	ids := submitN(t, c, spec, 2)
	var second *time.Time
	deadline := time.Now().Add(20 * time.Second)
	for second == nil {
		q, _, err := c.Queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := c.Get(ctx, ids[0]); first.State.Active() && len(q.Queue) == 1 && q.Queue[0].TaskID == ids[1] {
			second = q.Queue[0].EstStart
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue never settled: %+v", q)
		}
		time.Sleep(50 * time.Millisecond)
	}
	raw, err := c.Submit(ctx, []byte(spec), true)
	if err != nil {
		t.Fatal(err)
	}
	var dry struct {
		Admission struct {
			Verdict  string     `json:"verdict"`
			EstStart *time.Time `json:"est_start"`
		} `json:"admission"`
	}
	if err := json.Unmarshal(raw, &dry); err != nil {
		t.Fatal(err)
	}
	want := second.Add(600 * time.Second)
	if dry.Admission.Verdict != api.VerdictWaits || dry.Admission.EstStart == nil ||
		dry.Admission.EstStart.Sub(want).Abs() > 2*time.Second {
		t.Errorf("dry run: %s; want %s estimated at %s", raw, api.VerdictWaits, want.Format(time.RFC3339))
	}
}

// submitN submits spec n times through c and returns the tasks' ids.
func submitN(t *testing.T, c *api.Client, spec string, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		raw, err := c.Submit(context.Background(), []byte(spec), false)
		if err != nil {
			t.Fatal(err)
		}
		var task mvp.Task
		if err := json.Unmarshal(raw, &task); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}
