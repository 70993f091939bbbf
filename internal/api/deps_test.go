package api_test

import (
	"strings"
	"testing"
)

// TestSubmitChecksDependencies: a dependency must exist (400 naming the field otherwise, nothing stored); the dry
// run says the task would wait for it; a stored task shows its dependencies.
func TestSubmitChecksDependencies(t *testing.T) {
	base, db := newServer(t)
	first := submitGood(t, base)
	missing := "mvp2-ppo-20251223-143201-ffff"
	resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml",
		goodSpec+"after_ok: ["+first.ID+"]\nafter_any: ["+missing+"]\n", nil)
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"field":"after_any[0]"`) || !strings.Contains(string(body), missing) {
		t.Errorf("unknown dependency: %d %s", resp.StatusCode, body)
	}
	for _, bad := range []string{"after_ok: [not-a-task]\n", "after_ok: [" + first.ID + ", " + first.ID + "]\n", "after_ok: " + first.ID + "\n"} {
		if resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+bad, nil); resp.StatusCode != 400 ||
			!strings.Contains(string(body), "after_ok") {
			t.Errorf("%q: %d %s", bad, resp.StatusCode, body)
		}
	}
	if n, _ := db.CountTasks(t.Context()); n != 1 {
		t.Errorf("%d tasks stored, want 1: a refused submit stores nothing", n)
	}
	// A 1×4 task on the one 4-GPU node of the fake cluster: it would fit, but waits for the first task.
	resp, body = do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", goodSpec+"after_ok: ["+first.ID+"]\n", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"verdict":"waits_for_dependencies"`) ||
		!strings.Contains(string(body), "dependency: waiting for "+first.ID) {
		t.Errorf("dry run: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"after_ok: ["+first.ID+"]\n", nil)
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"after_ok":[`) {
		t.Errorf("with a dependency: %d %s", resp.StatusCode, body)
	}
}

// TestSubmitRefusesAnAfterOKOnATaskThatAlreadyFailed: after_ok naming a task that already ended FAILED or CANCELED
// could never run (the scheduler would cancel it at its first look): the submit is refused (409, naming the
// dependency and the way out), nothing is stored; the dry run still gives its verdict; after_any on it is taken.
func TestSubmitRefusesAnAfterOKOnATaskThatAlreadyFailed(t *testing.T) {
	base, db := newServer(t)
	first := submitGood(t, base)
	if resp, body := do(t, base, "POST", "/api/v2/tasks/"+first.ID+"/cancel", "", "", nil); resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	resp, body := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"after_ok: ["+first.ID+"]\n", nil)
	if resp.StatusCode != 409 || !strings.Contains(string(body), `"field":"after_ok[0]"`) ||
		!strings.Contains(string(body), first.ID+" already ended CANCELED") || !strings.Contains(string(body), "after_any") {
		t.Errorf("after_ok on a canceled task: %d %s", resp.StatusCode, body)
	}
	if n, _ := db.CountTasks(t.Context()); n != 1 {
		t.Errorf("%d tasks stored, want 1: a refused submit stores nothing", n)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", goodSpec+"after_ok: ["+first.ID+"]\n", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"verdict":"dependency_failed"`) {
		t.Errorf("dry run: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"after_any: ["+first.ID+"]\n", nil)
	if resp.StatusCode != 201 {
		t.Errorf("after_any on a canceled task: %d %s", resp.StatusCode, body)
	}
}
