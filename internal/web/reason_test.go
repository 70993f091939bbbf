package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

type downCluster struct{}

func (downCluster) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	return nil, errors.New("connection refused: ray head down")
}

// TestTaskPageSaysWhyItWaitsAsTheAPIDoes: while Ray cannot be read, GET /api/v2/tasks/{id} says so in
// pending_reason (specs/api.md); the task's page shows the stored reason instead.
func TestTaskPageSaysWhyItWaitsAsTheAPIDoes(t *testing.T) {
	m := servicetest.Start(t, &service.Main{Cluster: downCluster{}})
	ctx := context.Background()
	raw, err := m.Client().Submit(ctx, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	var apiReason string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, _, err := m.Client().Get(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(got.PendingReason, "Ray cannot be read") {
			apiReason = got.PendingReason
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API never said Ray cannot be read: %q", got.PendingReason)
		}
	}
	c := login(t, m.URL(), servicetest.Token)
	_, body := get(t, m.URL()+"/ui/tasks/"+task.ID, c)
	if !strings.Contains(html.UnescapeString(body), "Ray cannot be read") {
		i := strings.Index(body, "<dl")
		j := strings.Index(body, "</dl>")
		t.Errorf("API pending_reason %q; the task page's facts:\n%s", apiReason, body[max(i, 0):max(j, 0)])
	}
}
