package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestJSONTheYAMLReaderRefusedIsTaken: JSON is read with the YAML parser, whose reader refuses characters JSON
// allows raw in a string (DEL, the C1 controls, U+FFFE/U+FFFF) and escapes it does not know ("\/", which PHP's
// and some Java encoders write). A jobspec taken in YAML that holds such a character (a YAML escape) could not be
// resubmitted: its stored spec goes back to the parser as JSON (400 "control characters are not allowed", naming
// no field). Found by a review; each case failed before.
func TestJSONTheYAMLReaderRefusedIsTaken(t *testing.T) {
	base := servicetest.Start(t, nil).URL()
	const head = `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/t","val_file":"/v",`
	for _, c := range []struct{ name, ctype, spec, want string }{
		{"a YAML escape of DEL", "application/yaml", "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\n" +
			"train_file: /t\nval_file: /v\nenv:\n  X: \"a\\x7fb\\u0090\\uFFFE\"\n", "a\x7fb\u0090\uFFFE"},
		{"DEL raw in a JSON string", "application/json", head + `"env":{"X":"a` + "\x7f" + `b"}}`, "a\x7fb"},
		{"an escaped slash", "application/json", head + `"env":{"X":"a\/b"}}`, "a/b"},
		{"a byte order mark before JSON with a surrogate pair", "application/json", "\ufeff" + head + `"env":{"X":"\ud83d\ude00"}}`, "😀"},
	} {
		resp, b := do(t, base, "POST", "/api/v2/tasks?dry_run=true", c.ctype, c.spec, nil)
		var dry struct {
			Spec struct {
				Env map[string]string `json:"env"`
			} `json:"effective_spec"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &dry) != nil {
			t.Errorf("%s: dry run %d %s", c.name, resp.StatusCode, b)
			continue
		}
		if dry.Spec.Env["X"] != c.want {
			t.Errorf("%s: env.X %q, want %q", c.name, dry.Spec.Env["X"], c.want)
		}
		resp, b = do(t, base, "POST", "/api/v2/tasks", c.ctype, c.spec, nil)
		var got struct {
			ID string `json:"task_id"`
		}
		if resp.StatusCode != 201 || json.Unmarshal(b, &got) != nil {
			t.Errorf("%s: submit %d %s", c.name, resp.StatusCode, b)
			continue
		}
		resp, b = do(t, base, "POST", "/api/v2/tasks/"+got.ID+"/resubmit", "application/json", `{}`, nil)
		if resp.StatusCode != 201 || !strings.Contains(string(b), `"task_id"`) {
			t.Errorf("%s: resubmit %d %s", c.name, resp.StatusCode, b)
		}
	}
}
