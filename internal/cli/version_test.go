package cli

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `mvp version` says which build runs, as text and as JSON, without asking a server.
func TestVersion(t *testing.T) {
	code, out, errs := runCLI("version")
	if code != 0 || !strings.HasPrefix(out, "mvp ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI("version", "-o", "json")
	var b struct {
		Revision  string `json:"revision"`
		GoVersion string `json:"go_version"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Revision == "" || b.GoVersion != runtime.Version() {
		t.Errorf("version -o json: %d %q %q", code, out, errs)
	}
	if code, _, _ := runCLI("version", "extra"); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}
