package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestScheduleNamesAreEachUsersOwn: alice and bob each make a schedule called nightly (bob was refused alice's
// name, 409 "another user's schedule", and so learned that she had one); each reads, pauses and deletes their own
// only; the operator lists everyone's and acts on a user's with owner=.
func TestScheduleNamesAreEachUsersOwn(t *testing.T) {
	base := usersServer(t)
	body := `{"name": "nightly", "cron": "0 2 * * *", "jobspec": {"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, "model_path": "/m", "train_file": "/t", "val_file": "/v"}}`
	hdr := func(tok string) map[string]string {
		if tok == "" {
			return nil // the operator
		}
		return as(tok)
	}
	call := func(tok, method, path string, want int) map[string]any {
		t.Helper()
		b := ""
		if method == "POST" && path == "/api/v2/schedules" {
			b = body
		}
		resp, out := do(t, base, method, path, "application/json", b, hdr(tok))
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
		}
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		return m
	}
	for _, c := range []struct{ tok, owner string }{{aliceToken, "alice"}, {bobToken, "bob"}} {
		if m := call(c.tok, "POST", "/api/v2/schedules", 201); m["owner"] != c.owner {
			t.Errorf("%s's nightly: %v", c.owner, m)
		}
	}
	count := func(tok, q string) int {
		t.Helper()
		return len(call(tok, "GET", "/api/v2/schedules"+q, 200)["schedules"].([]any))
	}
	if a, b, op, opBob := count(aliceToken, ""), count(bobToken, ""), count("", ""), count("", "?owner=bob"); a != 1 || b != 1 || op != 2 || opBob != 1 {
		t.Errorf("listings: alice %d, bob %d, operator %d, operator's owner=bob %d; want 1, 1, 2, 1", a, b, op, opBob)
	}
	if m := call(bobToken, "POST", "/api/v2/schedules/nightly/pause", 200); m["paused"] != true || m["owner"] != "bob" {
		t.Errorf("bob pauses his nightly: %v", m)
	}
	if m := call(aliceToken, "GET", "/api/v2/schedules/nightly", 200); m["paused"] != false || m["owner"] != "alice" {
		t.Errorf("alice's nightly after bob paused his: %v", m)
	}
	call(bobToken, "GET", "/api/v2/schedules/nightly?owner=alice", 403)
	if m := call("", "GET", "/api/v2/schedules/nightly?owner=bob", 200); m["paused"] != true || m["owner"] != "bob" {
		t.Errorf("the operator reads bob's nightly: %v", m)
	}
	if resp, b := do(t, base, "GET", "/api/v2/schedules/nightly", "", "", nil); resp.StatusCode != 404 {
		t.Errorf("the operator's own nightly (none): %d %s, want 404", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "GET", "/api/v2/schedules/nightly?owner=nobody", "", "", nil); resp.StatusCode != 404 || !strings.Contains(string(b), "nobody has no schedule") {
		t.Errorf("the operator reads nobody's nightly: %d %s, want 404", resp.StatusCode, b)
	}
	call("", "DELETE", "/api/v2/schedules/nightly?owner=alice", 200)
	call(aliceToken, "GET", "/api/v2/schedules/nightly", 404)
	call(bobToken, "GET", "/api/v2/schedules/nightly", 200)
	if again := call(aliceToken, "POST", "/api/v2/schedules", 201); again["owner"] != "alice" {
		t.Errorf("alice's nightly made again: %v", again)
	}
}
