package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOperatorsResubmitSaysWhoseSecretIsMissing: the operator's rerun of alice's task is hers and uses her
// secrets; when she has deleted the one it names, the refusal must say that alice has none (and how the operator
// stores hers: owner=alice), not "you have none" - the operator, who asked, has a wandb of its own, and the
// hint without owner= would store the operator's, which the rerun never uses.
func TestOperatorsResubmitSaysWhoseSecretIsMissing(t *testing.T) {
	base := usersServer(t)
	for _, hdr := range []map[string]string{as(aliceToken), nil} {
		if resp, b := do(t, base, "PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "v-123456"}`, hdr); resp.StatusCode != 201 {
			t.Fatalf("put wandb: %d %s", resp.StatusCode, b)
		}
	}
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"secrets: {WANDB_API_KEY: wandb}\n", as(aliceToken))
	if resp.StatusCode != 201 {
		t.Fatalf("alice's task: %d %s", resp.StatusCode, b)
	}
	var task struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal(b, &task); err != nil || task.ID == "" {
		t.Fatalf("alice's task: %s %v", b, err)
	}
	if resp, b := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", as(aliceToken)); resp.StatusCode != 204 {
		t.Fatalf("alice deletes her wandb: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, base, "POST", "/api/v2/tasks/"+task.ID+"/resubmit?dry_run=true", "application/json", "", nil)
	msg := string(b)
	if resp.StatusCode != 400 || strings.Contains(msg, "you have none") || !strings.Contains(msg, "alice has none") ||
		!strings.Contains(msg, "owner alice") {
		t.Errorf("the operator resubmits alice's task naming the wandb she deleted: %d %s; want 400 saying alice has "+
			"none and to store hers with --owner alice", resp.StatusCode, msg)
	}
	// Alice's own resubmit is told about her own.
	resp, b = do(t, base, "POST", "/api/v2/tasks/"+task.ID+"/resubmit?dry_run=true", "application/json", "", as(aliceToken))
	if msg := string(b); resp.StatusCode != 400 || !strings.Contains(msg, "you have none") || strings.Contains(msg, "owner") {
		t.Errorf("alice resubmits: %d %s; want 400 saying she has none", resp.StatusCode, msg)
	}
}
