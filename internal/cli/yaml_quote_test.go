package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestYAMLOutputQuotesWhatYAML11ReadsOtherwise: `-o yaml` is read back by scripts, often with PyYAML (YAML 1.1,
// as Ray and verl read their configs). A string such as "on", "no", "y" or "1:20" written plain reads there as a
// bool or a number (1:20 is 80): env: {WANDB_MODE: "off"} came back as false. They stay quoted (a key too: yaml.v2
// reads n as false); plain strings do not.
func TestYAMLOutputQuotesWhatYAML11ReadsOtherwise(t *testing.T) {
	raw := json.RawMessage(`{"env":{"A":"on","B":"no","C":"1:20","D":"2.10","E":"y","F":"OFF","G":"plain","H":"1_000"},"n":2}`)
	var b bytes.Buffer
	if err := render(&b, "yaml", raw, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`A: "on"`, `B: "no"`, `C: "1:20"`, `D: "2.10"`, `E: "y"`, `F: "OFF"`, `G: plain`, `H: "1_000"`, `"n": 2`} {
		if !strings.Contains(out, want) {
			t.Errorf("-o yaml lacks %s:\n%s", want, out)
		}
	}
}
