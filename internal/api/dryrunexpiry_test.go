package api_test

import (
	"strings"
	"testing"
	"time"
)

// TestADryRunSaysATaskWouldExpireBeforeItStarts: a dry run of a task whose max_queued_s ends before its estimated
// start said "waits_for_resources" and the start, and nothing more; submitted, the task ended MAX_QUEUED_EXCEEDED
// (found in a user walk-through). The dry run is when the user can still change it: its admission carries
// queued_until and expires_before_start, as GET /api/v2/queue's entry does, and the reason says so.
func TestADryRunSaysATaskWouldExpireBeforeItStarts(t *testing.T) {
	base, db := newServer(t)
	first := submitGood(t, base) // the one 4-GPU node, for the default max_runtime_s
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := db.GetTask(t.Context(), first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tk.LatestAttemptNo > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first task was not submitted within 10 s: %s", tk.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, body := do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", goodSpec+"max_queued_s: 60\n", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"expires_before_start":true`) ||
		!strings.Contains(string(body), `"queued_until":"`) || !strings.Contains(string(body), "MAX_QUEUED_EXCEEDED") {
		t.Errorf("dry run of a task that would expire first: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", goodSpec, nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), `"expires_before_start"`) {
		t.Errorf("dry run of a task that waits within its max_queued_s: %d %s", resp.StatusCode, body)
	}
}
