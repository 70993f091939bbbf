package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// TestADryRunFlagWithoutAValueStoresNothing: `curl -X POST '…/api/v2/tasks?dry_run' --data-binary @job.yaml` (the
// flag written as a bare word, as many APIs take it) answered 201 and queued the task: an empty dry_run read as
// false. A boolean parameter given without a value is now a 400 that says to write dry_run=true, and nothing is
// stored (as an integer parameter given empty already was).
func TestADryRunFlagWithoutAValueStoresNothing(t *testing.T) {
	base, db := newServer(t)
	for _, p := range []string{"/api/v2/tasks?dry_run", "/api/v2/tasks?dry_run="} {
		resp, b := do(t, base, "POST", p, "application/yaml", goodSpec, nil)
		var eb api.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != 400 || eb.Error.Field != "dry_run" || !strings.Contains(eb.Error.Message, "dry_run=true") {
			t.Errorf("POST %s: %d %s; want 400 naming dry_run=true", p, resp.StatusCode, b)
		}
	}
	if tasks, _, err := db.ListTasks(context.Background(), mvp.TaskFilter{}); err != nil || len(tasks) != 0 {
		t.Errorf("a dry run without a value stored %d task(s) (%v)", len(tasks), err)
	}
	if resp, b := do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", goodSpec, nil); resp.StatusCode != 200 {
		t.Errorf("dry_run=true: %d %s", resp.StatusCode, b)
	}
}
