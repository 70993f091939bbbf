package jobspec

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzSetPath feeds SetPath a key=value as `mvp submit -e` and a resubmit's "set" give it, on a good jobspec, then
// parses the result as a resubmit does. A refusal has a message that is UTF-8 (when the input is) and short
// whatever the input's length; a value set reads back in the spec Parse takes, or Parse refuses it with an
// *mvp.Error.
func FuzzSetPath(f *testing.F) {
	for _, kv := range [][2]string{
		{"nnodes", "1"}, {"env.WANDB_MODE", "offline"}, {"overrides", "a=1"}, {"name", "x"}, {"nnode", "1"},
		{"nnodes.x", "1"}, {"env", "1"}, {"nnodes", "two"}, {"max_runtime_s", "99999999999999999999"},
		{"after_ok", "[]"}, {"after_ok", "mvp2-ppo-20251223-143201-7f3a"}, {"trainer.total_epochs", "2"},
		{"secrets.HF_TOKEN", "hf"}, {"priority", "101"}, {"heartbeat_timeout_s", "60"}, {"code_path", "relative"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(good), &doc); err != nil {
			t.Fatal(err)
		}
		if err := SetPath(doc, key, value); err != nil {
			msg := err.Error()
			if strings.TrimSpace(msg) == "" || (utf8.ValidString(key) && utf8.ValidString(value) && !utf8.ValidString(msg)) || len(msg) > 1000 {
				t.Fatalf("SetPath(%.40q, %.40q): a message empty, not UTF-8 or of %d bytes: %.200q", key, value, len(msg), msg)
			}
			return
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("SetPath(%q, %q) made a document JSON cannot hold: %v", key, value, err)
		}
		s, err := Parse(b, DefaultLimits)
		if err != nil {
			if _, ok := err.(*mvp.Error); !ok {
				t.Fatalf("SetPath(%q, %q) then Parse: not an *mvp.Error: %T %v", key, value, err, err)
			}
			return
		}
		if key == "name" && s.Name != value {
			t.Fatalf("name=%q read back as %q", value, s.Name)
		}
	})
}
