package api_test

import (
	"strings"
	"testing"
)

// TestOperatorWithoutOwnerIsToldWhoseNameItIs: the operator's own requests name its own schedules and secrets;
// before 0016/0017 the operator's `mvp schedule pause nightly` paused alice's nightly (names were global), and
// now it is 404. The operator sees everything, so the 404 says whose it is and what to give (owner=alice). A user
// is never told (bob's 404 says nothing of alice).
func TestOperatorWithoutOwnerIsToldWhoseNameItIs(t *testing.T) {
	base := usersServer(t)
	body := `{"name": "nightly", "cron": "0 2 * * *", "jobspec": ` + scheduleJobspec + `}`
	if resp, b := do(t, base, "POST", "/api/v2/schedules", "application/json", body, as(aliceToken)); resp.StatusCode != 201 {
		t.Fatalf("alice's nightly: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "v-123456"}`, as(aliceToken)); resp.StatusCode != 201 {
		t.Fatalf("alice's wandb: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct{ method, path string }{{"POST", "/api/v2/schedules/nightly/pause"},
		{"GET", "/api/v2/schedules/nightly"}, {"DELETE", "/api/v2/schedules/nightly"}, {"DELETE", "/api/v2/secrets/wandb"}} {
		resp, b := do(t, base, c.method, c.path, "", "", nil)
		if resp.StatusCode != 404 || !strings.Contains(string(b), "owner=alice") {
			t.Errorf("the operator's %s %s (alice has one, the operator none): %d %s; want 404 naming owner=alice",
				c.method, c.path, resp.StatusCode, b)
		}
		resp, b = do(t, base, c.method, c.path, "", "", as(bobToken))
		if resp.StatusCode != 404 || strings.Contains(string(b), "alice") {
			t.Errorf("bob's %s %s: %d %s; want 404 that says nothing of alice", c.method, c.path, resp.StatusCode, b)
		}
	}
}
