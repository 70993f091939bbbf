package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSecretNamesAreEachUsersOwn: two users each keep a secret called wandb (bob was refused alice's name, 403
// "belongs to another user", and so learned that she had one); each lists, replaces and deletes their own, and a
// task uses its owner's. The operator lists everyone's and acts on a user's with owner=; a user naming another
// owner is 403, and the operator naming no user is 400.
func TestSecretNamesAreEachUsersOwn(t *testing.T) {
	base := usersServer(t)
	put := func(tok, path, value string, want int) map[string]any {
		t.Helper()
		hdr := as(tok)
		if tok == "" {
			hdr = nil // the operator
		}
		resp, b := do(t, base, "PUT", path, "application/json", `{"value": "`+value+`"}`, hdr)
		if resp.StatusCode != want {
			t.Fatalf("PUT %s: %d %s, want %d", path, resp.StatusCode, b, want)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	if m := put(aliceToken, "/api/v2/secrets/wandb", "alice-value", 201); m["owner"] != "alice" {
		t.Errorf("alice's wandb: %v", m)
	}
	if m := put(bobToken, "/api/v2/secrets/wandb", "bob-value", 201); m["owner"] != "bob" {
		t.Errorf("bob's wandb beside alice's: %v", m)
	}
	put(bobToken, "/api/v2/secrets/wandb", "bob-rotated", 200) // his own, replaced
	list := func(tok, q string) []map[string]any {
		t.Helper()
		hdr := as(tok)
		if tok == "" {
			hdr = nil
		}
		resp, b := do(t, base, "GET", "/api/v2/secrets"+q, "", "", hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /api/v2/secrets%s: %d %s", q, resp.StatusCode, b)
		}
		var l struct {
			Secrets []map[string]any `json:"secrets"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return l.Secrets
	}
	if l := list(aliceToken, ""); len(l) != 1 || l[0]["owner"] != "alice" || l[0]["created_at"] != l[0]["updated_at"] {
		t.Errorf("alice's list: %v; want her wandb only, never replaced", l)
	}
	if l := list(bobToken, ""); len(l) != 1 || l[0]["owner"] != "bob" {
		t.Errorf("bob's list: %v", l)
	}
	if l := list("", ""); len(l) != 2 {
		t.Errorf("the operator's list: %v; want both", l)
	}
	if l := list("", "?owner=alice"); len(l) != 1 || l[0]["owner"] != "alice" {
		t.Errorf("the operator's list of alice's: %v", l)
	}
	// Another owner: 403 for a user, a user of v2.auth.users for the operator's put.
	for _, c := range []struct{ method, path string }{{"PUT", "/api/v2/secrets/wandb?owner=alice"},
		{"DELETE", "/api/v2/secrets/wandb?owner=alice"}, {"GET", "/api/v2/secrets?owner=alice"}} {
		resp, b := do(t, base, c.method, c.path, "application/json", `{"value": "x"}`, as(bobToken))
		if resp.StatusCode != 403 || !strings.Contains(string(b), "owner=alice") {
			t.Errorf("bob %s %s: %d %s, want 403", c.method, c.path, resp.StatusCode, b)
		}
	}
	if resp, b := do(t, base, "PUT", "/api/v2/secrets/wandb?owner=nobody", "application/json", `{"value": "x"}`, nil); resp.StatusCode != 400 ||
		!strings.Contains(string(b), "nobody is not a user") {
		t.Errorf("the operator's put for nobody: %d %s, want 400", resp.StatusCode, b)
	}
	put("", "/api/v2/secrets/wandb?owner=alice", "alice-by-operator", 200)
	// A task uses its owner's: bob's names his wandb; once he deleted it, his task is refused though alice has one.
	spec := goodSpec + "secrets: {WANDB_API_KEY: wandb}\n"
	if resp, b := do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", spec, as(bobToken)); resp.StatusCode != 200 {
		t.Errorf("bob's dry run naming his wandb: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", as(bobToken)); resp.StatusCode != 204 {
		t.Fatalf("bob deletes his wandb: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", as(bobToken)); resp.StatusCode != 404 {
		t.Errorf("bob deletes his wandb again: %d %s, want 404 (alice's is not his)", resp.StatusCode, b)
	}
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", spec, as(bobToken))
	if resp.StatusCode != 400 || !strings.Contains(string(b), "no secret named wandb") || strings.Contains(string(b), "alice") {
		t.Errorf("bob's task naming wandb after he deleted his: %d %s, want 400 that says nothing of alice", resp.StatusCode, b)
	}
	if l := list(aliceToken, ""); len(l) != 1 || l[0]["owner"] != "alice" || l[0]["created_at"] == l[0]["updated_at"] {
		t.Errorf("alice's list after bob deleted his: %v; want her wandb, replaced by the operator", l)
	}
	if resp, b := do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", spec, as(aliceToken)); resp.StatusCode != 200 {
		t.Errorf("alice's dry run naming her wandb: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, base, "DELETE", "/api/v2/secrets/wandb?owner=alice", "", "", nil); resp.StatusCode != 204 {
		t.Errorf("the operator deletes alice's wandb: %d %s", resp.StatusCode, b)
	}
	if l := list("", ""); len(l) != 0 {
		t.Errorf("left: %v", l)
	}
}
