package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestYAMLOutputOfTextTheYAMLReaderRefuses: `-o yaml` read the API's JSON with the YAML parser, whose reader
// refuses DEL, the C1 controls and U+FFFE/U+FFFF, which JSON carries raw: a job that wrote such a character in its
// progress name broke `mvp list -o yaml` for its owner and the operator. Found by a review; it failed before.
func TestYAMLOutputOfTextTheYAMLReaderRefuses(t *testing.T) {
	want := map[string]any{"task_id": "x", "error_summary": "boom\x7f", "progress": map[string]any{"name": "step\u0085\u009b\uffff"}}
	raw, err := json.Marshal(map[string]any{"tasks": []any{want}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := render(&b, "yaml", raw, nil); err != nil {
		t.Fatalf("render -o yaml: %v", err)
	}
	var got struct{ Tasks []map[string]any }
	if err := yaml.Unmarshal(b.Bytes(), &got); err != nil || len(got.Tasks) != 1 {
		t.Fatalf("the YAML written does not read back: %v\n%s", err, b.String())
	}
	if g := got.Tasks[0]; g["error_summary"] != want["error_summary"] ||
		g["progress"].(map[string]any)["name"] != "step\u0085\u009b\uffff" {
		t.Errorf("read back %q, want %q", g, want)
	}
}
