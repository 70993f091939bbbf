package jobspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/mvp"
)

const good = `workload: ppo
nnodes: 2
n_gpus_per_node: 8
name: gsm8k-baseline
model_path: /private/models/Qwen2.5-0.5B-Instruct
train_file: /private/datasets/gsm8k/train.parquet
val_file: /private/datasets/gsm8k/test.parquet
code_path: /private/user/code
overrides:
  - trainer.total_epochs=1
env:
  WANDB_MODE: offline
`

func TestGoodSpecs(t *testing.T) {
	s, err := Parse([]byte(good), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload != mvp.WorkloadPPO || s.NNodes != 2 || s.GPUsPerNode != 8 || s.Env["WANDB_MODE"] != "offline" ||
		len(s.Overrides) != 1 || s.CodePath != "/private/user/code" {
		t.Errorf("%+v", s)
	}
	j := `{"workload":"sft","nnodes":1,"n_gpus_per_node":2,"model_path":"/m","train_file":"/d/t.parquet"}`
	s, err = Parse([]byte(j), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Effective(Defaults{UserCodePath: "/private/code"})
	if e.Name != "sft" || e.CodePath != "/private/code" || e.Overrides == nil || e.Env == nil {
		t.Errorf("effective %+v", e)
	}
	if s.Name != "" {
		t.Errorf("Effective changed its receiver")
	}
}

// TestBadSpecs: every bad document gets an invalid error naming the field to fix.
func TestBadSpecs(t *testing.T) {
	base := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	with := func(extra string) string { return base + extra }
	replace := func(old, new string) string { return strings.Replace(base, old, new, 1) }
	cases := []struct{ doc, field string }{
		{"", ""},
		{"   \n", ""},
		{"- a\n- b\n", ""},
		{"just a string", ""},
		{"42", ""},
		{"{", ""},
		{"workload: [", ""},
		{"\x00", ""},
		{with("heartbeat_timeout_s: -1\n"), "heartbeat_timeout_s"},
		{with("after_ok: [x]\n"), "after_ok[0]"},
		{with("after_ok: mvp2-ppo-20251223-143201-7f3a\n"), "after_ok"},
		{with("after_ok: [mvp2-ppo-20251223-143201-7f3a]\nafter_any: [mvp2-ppo-20251223-143201-7f3a]\n"), "after_any[0]"},
		{with("after_any: [[a]]\n"), "after_any[0]"},
		{with("heartbeat_timeout_s: 604801\n"), "heartbeat_timeout_s"},
		{with("heartbeat_timeout_s: soon\n"), "heartbeat_timeout_s"},
		{"workload: \xff\xfe\n", ""},
		{base + "---\nworkload: grpo\n", ""},
		{"a: &x [1]\nb: *x\n", ""},
		{with("overrides: &o [a=1]\n"), ""},
		{strings.Repeat("[", 40) + strings.Repeat("]", 40), ""},
		{replace("workload: ppo", "workload: dpo"), "workload"},
		{replace("workload: ppo", "workload: ray_job"), "workload"}, // made through the Ray Jobs door only
		{replace("workload: ppo\n", ""), "workload"},
		{replace("workload: ppo", "workload: [ppo]"), "workload"},
		{replace("workload: ppo", "workload: {a: 1}"), "workload"},
		{replace("nnodes: 1", "nnodes: two"), "nnodes"},
		{replace("nnodes: 1", "nnodes: 0"), "nnodes"},
		{replace("nnodes: 1", "nnodes: -3"), "nnodes"},
		{replace("nnodes: 1", "nnodes: 1.5"), "nnodes"},
		{replace("nnodes: 1", "nnodes: 65"), "nnodes"},
		{replace("nnodes: 1", "nnodes: 99999999999999999999"), "nnodes"},
		{replace("nnodes: 1", "nnodes: true"), "nnodes"},
		{replace("nnodes: 1", `nnodes: "1"`), "nnodes"},
		{replace("nnodes: 1\n", ""), "nnodes"},
		{replace("n_gpus_per_node: 4", "n_gpus_per_node: 0"), "n_gpus_per_node"},
		{replace("n_gpus_per_node: 4", "n_gpus_per_node: 17"), "n_gpus_per_node"},
		{replace("n_gpus_per_node: 4", "n_gpus_per_node: [4]"), "n_gpus_per_node"},
		{with("nnode: 2\n"), "nnode"},
		{with("n_gpu_per_node: 2\n"), "n_gpu_per_node"},
		{with("extra: 1\n"), "extra"},
		{with("nnodes: 2\n"), "nnodes"},
		{with("name: Has_Upper\n"), "name"},
		{with("name: -lead\n"), "name"},
		{with("name: trail-\n"), "name"},
		{with("name: " + strings.Repeat("a", 41) + "\n"), "name"},
		{with("name: ../../etc\n"), "name"},
		{with("name: a/b\n"), "name"},
		{with("name: \"a b\"\n"), "name"},
		{replace("model_path: /m", "model_path: relative/path"), "model_path"},
		{replace("model_path: /m", "model_path: /a/../../etc/passwd"), "model_path"},
		{replace("model_path: /m\n", ""), "model_path"},
		{replace("train_file: /t", "train_file: \"/t\\nrm -rf /\""), "train_file"},
		{replace("train_file: /t", "train_file: /a//b"), "train_file"},
		{replace("train_file: /t\n", ""), "train_file"},
		{replace("val_file: /v\n", ""), "val_file"},
		{replace("val_file: /v", "val_file: ~/v"), "val_file"},
		{with("code_path: code\n"), "code_path"},
		{with("code_path: \"/a/$(id)\"\n"), "code_path"},
		{replace("model_path: /m", "model_path: \"/models/my model\""), "model_path"},
		{with("code_path: [a]\n"), "code_path"},
		{with("overrides: trainer.total_epochs=1\n"), "overrides"},
		{with("overrides:\n  - no_equals_sign\n"), "overrides[0]"},
		{with("overrides:\n  - ok=1\n  - \"$(rm -rf /)=1\"\n"), "overrides[1]"},
		{with("overrides:\n  - \"a=b\\nc\"\n"), "overrides[0]"},
		{with("overrides:\n  - trainer.nnodes=4\n"), "overrides[0]"},
		{with("overrides:\n  - +trainer.n_gpus_per_node=4\n"), "overrides[0]"},
		// Hydra merges a dict given for trainer into the trainer node: it would set the gang behind mvp's back.
		{with("overrides:\n  - \"trainer={nnodes:8,n_gpus_per_node:16}\"\n"), "overrides[0]"},
		{with("overrides:\n  - \"++trainer={nnodes:8}\"\n"), "overrides[0]"},
		// The overrides go into the one shell command line Ray runs; Linux refuses an argument over 128 KiB.
		{with("overrides:\n" + strings.Repeat("  - a="+strings.Repeat("x", 4000)+"\n", 40)), "overrides"},
		{with("overrides:\n  - {a: 1}\n"), "overrides[0]"},
		{with("overrides:\n  - \"=1\"\n"), "overrides[0]"},
		{with("overrides:\n" + strings.Repeat("  - a=1\n", MaxOverrides+1)), "overrides"},
		{with("env: [A=1]\n"), "env"},
		{with("env:\n  1BAD: x\n"), "env.1BAD"},
		{with("env:\n  \"A B\": x\n"), "env.A B"},
		{with("env:\n  RAY_ADDRESS: x\n"), "env.RAY_ADDRESS"},
		{with("env:\n  MVP_TASK_ID: x\n"), "env.MVP_TASK_ID"},
		{with("env:\n  A: [1]\n"), "env.A"},
		{with("env:\n  A: x\n  A: y\n"), ""},
		{with("workload: grpo\n"), "workload"},
	}
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
	for i, c := range cases {
		s, err := Parse([]byte(c.doc), DefaultLimits)
		if err == nil {
			t.Errorf("case %d accepted: %.300q → %.300v", i, c.doc, s)
			continue
		}
		var e *mvp.Error
		if !asErr(err, &e) || (e.Code != mvp.CodeInvalid && e.Code != mvp.CodeTooLarge) || e.Message == "" {
			t.Errorf("case %d: not an invalid-input error: %v", i, err)
			continue
		}
		if c.field != "" && e.Field != c.field {
			t.Errorf("case %d %q: field %q, want %q (%s)", i, c.doc, e.Field, c.field, e.Message)
		}
	}
}

func asErr(err error, e **mvp.Error) bool {
	x, ok := err.(*mvp.Error)
	*e = x
	return ok
}

func TestLimits(t *testing.T) {
	big := "workload: ppo\nenv:\n" + strings.Repeat("  A: "+strings.Repeat("x", 100)+"\n", 1)
	if _, err := Parse([]byte(big), Limits{MaxBytes: 50}); mvp.ErrorCode(err) != mvp.CodeTooLarge {
		t.Errorf("size: %v", err)
	}
	many := "workload: ppo\noverrides:\n" + strings.Repeat("  - a=1\n", 100)
	if _, err := Parse([]byte(many), Limits{MaxNodes: 50}); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("nodes: %v", err)
	}
}

func TestSetPath(t *testing.T) {
	doc := map[string]any{"workload": "ppo"}
	for _, kv := range [][2]string{{"nnodes", "1"}, {"env.WANDB_MODE", "offline"}, {"overrides", "a=1"}, {"name", "x"}} {
		if err := SetPath(doc, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if doc["nnodes"] != 1 || doc["env"].(map[string]any)["WANDB_MODE"] != "offline" || len(doc["overrides"].([]any)) != 1 {
		t.Errorf("%v", doc)
	}
	for _, k := range []string{"nnode", "nnodes.x", "env"} {
		if err := SetPath(doc, k, "1"); err == nil && k != "env" {
			t.Errorf("%s accepted", k)
		}
	}
	if err := SetPath(doc, "nnodes", "two"); err == nil {
		t.Error("non-integer nnodes accepted")
	}
	// A whole number too large to read is not "not an integer" (walk-through 11): it is out of range, and says
	// what the field takes.
	if err := SetPath(doc, "max_runtime_s", "99999999999999999999"); err == nil ||
		strings.Contains(err.Error(), "must be an integer") || !strings.Contains(err.Error(), "out of range") ||
		!strings.Contains(err.Error(), "max_runtime_cap_s") {
		t.Errorf("a huge max_runtime_s: %v", err)
	}
	// A list can be emptied, then filled again (a resubmit could not drop a dependency that failed: found in
	// walk-through 7).
	doc["after_ok"] = []any{"mvp2-ppo-20251223-143201-7f3a"}
	for _, kv := range [][2]string{{"after_ok", "[]"}, {"overrides", "[]"}, {"overrides", "b=2"}} {
		if err := SetPath(doc, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if l := doc["after_ok"].([]any); len(l) != 0 {
		t.Errorf("after_ok=[] left %v", l)
	}
	if l := doc["overrides"].([]any); len(l) != 1 || l[0] != "b=2" {
		t.Errorf("overrides=[] then b=2: %v", l)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"workload":"sft","nnodes":1,"n_gpus_per_node":2,"model_path":"/m","train_file":"/t"}`))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Add([]byte("workload: ppo\noverrides: [a=1, 'b=$(x)']\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var doc yaml.Node
		if yaml.Unmarshal(b, &doc) == nil {
			if n := countNodes(&doc); n > nodeBound(b) {
				t.Fatalf("%d nodes, above nodeBound's %d", n, nodeBound(b))
			}
		}
		s, err := Parse(b, DefaultLimits)
		if err != nil {
			if _, ok := err.(*mvp.Error); !ok {
				t.Fatalf("not an *mvp.Error: %T %v", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		// A spec taken is stored as JSON and parsed again by a resubmit: it must read back as itself.
		stored, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a spec taken does not encode: %v", err)
		}
		back, err := Parse(stored, DefaultLimits)
		if err != nil {
			t.Fatalf("a spec taken, stored as %s, is refused: %v", stored, err)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("a spec taken, stored as %s, reads back as %+v, not %+v", stored, back, s)
		}
	})
}

func TestHeartbeatTimeout(t *testing.T) {
	s, err := Parse([]byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nheartbeat_timeout_s: 900\n"), DefaultLimits)
	if err != nil || s.Effective(Defaults{}).HeartbeatTimeoutS != 900 {
		t.Fatalf("%+v %v", s, err)
	}
	doc := map[string]any{}
	if err := SetPath(doc, "heartbeat_timeout_s", "60"); err != nil || doc["heartbeat_timeout_s"] != 60 {
		t.Errorf("SetPath: %v %v", doc, err)
	}
}

func TestDependencies(t *testing.T) {
	a, b := "mvp2-ppo-20251223-143201-7f3a", "mvp2-sft-20251223-143202-00ff"
	s, err := Parse([]byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nafter_ok: ["+a+"]\nafter_any: ["+b+"]\n"), DefaultLimits)
	if err != nil || len(s.AfterOK) != 1 || s.AfterOK[0] != a || s.AfterAny[0] != b {
		t.Fatalf("%+v %v", s, err)
	}
	doc := map[string]any{}
	if err := SetPath(doc, "after_ok", a); err != nil {
		t.Fatal(err)
	}
	if err := SetPath(doc, "after_ok", b); err != nil || len(doc["after_ok"].([]any)) != 2 {
		t.Errorf("SetPath appends: %v %v", doc, err)
	}
	many := "workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nafter_ok:\n"
	for i := 0; i <= MaxDependencies; i++ {
		many += fmt.Sprintf("  - mvp2-ppo-20251223-143201-%04x\n", i)
	}
	if _, err := Parse([]byte(many), DefaultLimits); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many dependencies: %v", err)
	}
}

// TestMessagesSayWhatToFix: an error names a field of bounded length, quotes the input cut at a character
// boundary, and states the rule that applies to that field.
func TestMessagesSayWhatToFix(t *testing.T) {
	base := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	parse := func(doc string) *mvp.Error {
		t.Helper()
		_, err := Parse([]byte(doc), DefaultLimits)
		var e *mvp.Error
		if !asErr(err, &e) {
			t.Fatalf("%.80q: %v", doc, err)
		}
		return e
	}
	if e := parse(base + "priority: high\n"); strings.Contains(e.Message, "≥ 1") || !strings.Contains(e.Message, "whole number") {
		t.Errorf("priority (0..100) told: %s", e.Message)
	}
	if e := parse(base + strings.Repeat("k", 1000) + ": 1\n"); len(e.Field) > 100 || strings.Contains(e.Message, strings.Repeat("k", 100)) {
		t.Errorf("an unknown key comes back whole: field of %d bytes, message of %d", len(e.Field), len(e.Message))
	}
	if e := parse(base + "name: \"a" + strings.Repeat("é", 100) + "\"\n"); !utf8.ValidString(e.Message) || strings.Contains(e.Message, `\x`) {
		t.Errorf("message cut inside a character: %s", e.Message)
	}
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// nodeBound must never be below what yaml.v3 makes of a body: a body under it is parsed without waiting for the
// heavy-parse slot, and one over MaxNodes is refused after its parse.
func TestNodeBoundIsAnUpperBound(t *testing.T) {
	docs := []string{"", "a", "abc\n", "? a\n: b\n", "[[[[]]]]", "{a: {b: {c: 1}}}", "- - - - 1\n", "{a, b, c}", "{a}",
		"[a: 1, b: 2]", "[? a]", "{:}", "[a, b]", "a:\nb:\nc:\n", "- \n- \n- \n", "---\na: 1\n", "a: |\n  x\n  y\n",
		"a: !!str 1", "{? }", "[? ]", "a: [1, [2, {b: 3}], {c: [4]}]\n", "- a: 1\n  b: [x, y]\n- {c: d}\n", good,
		"workload: ppo\nx: [" + strings.Repeat("1,", 3000) + "1]\n", "x:\n" + strings.Repeat("- \n", 3000)}
	for _, d := range docs {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(d), &doc); err != nil {
			continue
		}
		if n := countNodes(&doc); n > nodeBound([]byte(d)) {
			t.Errorf("%.60q: %d nodes, nodeBound %d", d, n, nodeBound([]byte(d)))
		}
	}
}

// A megabyte of tiny YAML nodes makes about 120 MB of yaml.v3 nodes before they can be counted: such bodies are
// parsed one at a time, so a burst of them cannot take the service's memory. Each is still refused with the limit.
func TestNodeBombsAreParsedOneAtATime(t *testing.T) {
	bomb := []byte("workload: ppo\nx: [" + strings.Repeat("1,", 100000) + "1]\n")
	var inside, most atomic.Int32
	heavyHook = func(enter bool) {
		if enter {
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		} else {
			inside.Add(-1)
		}
	}
	defer func() { heavyHook = nil }()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Parse(bomb, DefaultLimits); err == nil || !strings.Contains(err.Error(), "more than 10000 YAML nodes") {
				t.Errorf("bomb: %v", err)
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d bombs were parsed at once; want 1", most.Load())
	}
	// An ordinary jobspec does not wait for that slot.
	heavy <- struct{}{}
	defer func() { <-heavy }()
	if _, err := Parse([]byte(good), DefaultLimits); err != nil {
		t.Fatal(err)
	}
}

// TestVariablesMvpSetsAreRefused: a secret named PYTHONPATH, TENSORBOARD_DIR or VERL_FILE_LOGGER_PATH replaced
// what mvp set (the code path, the attempt's folders: specs/api.md says mvp's variables win), and env's
// TENSORBOARD_DIR or VERL_FILE_LOGGER_PATH was silently replaced by mvp's. Both are refused, saying why.
func TestVariablesMvpSetsAreRefused(t *testing.T) {
	base := "workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\n"
	for _, extra := range []string{
		"secrets: {PYTHONPATH: pp}\n", "secrets: {TENSORBOARD_DIR: tb}\n", "secrets: {VERL_FILE_LOGGER_PATH: fl}\n",
		"env: {TENSORBOARD_DIR: /x}\n", "env: {VERL_FILE_LOGGER_PATH: /x}\n",
	} {
		_, err := Parse([]byte(base+extra), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), "mvp sets") {
			t.Errorf("%q: %v; want it refused as a variable mvp sets", extra, err)
		}
	}
	if _, err := Parse([]byte(base+"env: {PYTHONPATH: /extra}\n"), DefaultLimits); err != nil {
		t.Errorf("env PYTHONPATH (merged after the code path): %v", err)
	}
}

// TestOverridesCannotAskForAnotherGPUPool: verl's main_ppo makes a separate GPU pool for the reward model when
// reward_model.enable_resource_pool is set (its own nnodes × n_gpus_per_node): GPUs mvp's admission never counted,
// so two gangs could each hold part of the other's. Those keys (and reward_model as a whole) are refused; the
// reward model itself (colocated, the default) is not.
func TestOverridesCannotAskForAnotherGPUPool(t *testing.T) {
	base := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	for _, o := range []string{"reward_model.enable_resource_pool=True", "reward_model.nnodes=2",
		"+reward_model.n_gpus_per_node=8", "reward_model={enable_resource_pool: true}"} {
		_, err := Parse([]byte(base+"overrides: ['"+o+"']\n"), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), "GPU") {
			t.Errorf("%s: %v; want it refused", o, err)
		}
	}
	if _, err := Parse([]byte(base+"overrides: [reward_model.enable=True, reward_model.model.path=/rm]\n"), DefaultLimits); err != nil {
		t.Errorf("a colocated reward model: %v", err)
	}
}

// A number given as text, or too large to read, said "must be a whole number" (of a whole number) or "far out of
// range" without the range. Found in a user walk-through.
// TestAllMissingFieldsAreNamedAtOnce: a jobspec holding only its workload took five round trips, one per missing
// field, the first saying "nnodes … got 0". Found in walk-through 7.
func TestAllMissingFieldsAreNamedAtOnce(t *testing.T) {
	_, err := Parse([]byte("workload: ppo\n"), DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "missing required fields: nnodes, n_gpus_per_node, model_path, train_file, val_file") {
		t.Errorf("a jobspec with only its workload: %v", err)
	}
	_, err = Parse([]byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\n"), DefaultLimits) // sft needs no val_file
	if err == nil || !strings.Contains(err.Error(), "missing required fields: model_path, train_file") {
		t.Errorf("an sft jobspec without its paths: %v", err)
	}
}

func TestNumberErrorsSayWhatToWrite(t *testing.T) {
	base := "workload: ppo\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	for body, want := range map[string]string{
		base + "nnodes: \"1\"\n":                      `not text: write 1, not "1"`,
		base + "nnodes: 99999999999999999999999\n":    "nnodes is from 1 to",
		`{"workload": "ppo", "nnodes": "2"}`:          `not text: write 2`,
		base + "nnodes: 1\npriority: 1000000000000\n": "priority is from 0 to 100",
		// YAML's other ways of writing an integer were taken: 1_0 was 10, 0_4 octal 4, 0x1 and 0o1 one.
		base + "nnodes: 1_0\n":              "in decimal digits",
		base + "nnodes: 0x1\n":              "in decimal digits",
		base + "nnodes: 0o1\n":              "in decimal digits",
		base + "nnodes: 1\npriority: 0_4\n": "in decimal digits",
		// Text that is not a number got the hint for quoted digits: "write two, not "two"".
		base + "nnodes: two\n": `must be a whole number such as 2, got the text "two"`,
	} {
		_, err := Parse([]byte(body), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to say %q", body, err, want)
		}
	}
}

// TestNegativeLimitsSayWhatZeroMeans: -1 was told "must be a whole number of seconds ≥ 1" while 0 is taken (the
// configured default); the message says both (walk-through 11).
func TestNegativeLimitsSayWhatZeroMeans(t *testing.T) {
	base := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	for _, f := range []string{"max_runtime_s", "max_queued_s"} {
		_, err := Parse([]byte(base+f+": -1\n"), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "0 or leave it out") ||
			!strings.Contains(err.Error(), "v2.scheduler.default_"+f) {
			t.Errorf("%s: -1: %v", f, err)
		}
	}
}

// TestATabInTheJobspecIsNamed: YAML refuses a tab as indentation with "found character that cannot start any
// token", which does not say what to fix; the message now names the tab (walk-through 17).
func TestATabInTheJobspecIsNamed(t *testing.T) {
	_, err := Parse([]byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\noverrides:\n\t- a=b\n"), Limits{})
	if err == nil || !strings.Contains(err.Error(), "tab") {
		t.Errorf("a tab-indented jobspec: %v; want a message naming the tab", err)
	}
}

// TestSetPathPointsAHydraKeyAtOverrides: `mvp submit -e trainer.total_epochs=2` (a verl setting written as a
// field) was refused with 'unknown field "trainer"; known fields: …', which does not say that verl's settings go
// in overrides. The error now gives the change that does it.
func TestSetPathPointsAHydraKeyAtOverrides(t *testing.T) {
	err := SetPath(map[string]any{}, "trainer.total_epochs", "2")
	if err == nil || !strings.Contains(err.Error(), "overrides=trainer.total_epochs=2") {
		t.Errorf("trainer.total_epochs=2: %v", err)
	}
	if err := SetPath(map[string]any{}, "nnode", "1"); err == nil || strings.Contains(err.Error(), "overrides=") {
		t.Errorf("a mistyped field is pointed at overrides: %v", err)
	}
}

// TestSetPathClipsAnUnknownKey: an unknown key came back whole in the refusal ("unknown field %q"), so a resubmit's
// set of a 1 MB key (or a key of bytes that are not UTF-8) was answered with a message of 1 MB. Found by
// FuzzSetPath. The key is clipped, as Parse clips an unknown key.
func TestSetPathClipsAnUnknownKey(t *testing.T) {
	for _, key := range []string{strings.Repeat("k", 5000), "x" + strings.Repeat("é", 2000), strings.Repeat("k", 5000) + ".x"} {
		err := SetPath(map[string]any{}, key, "1")
		if err == nil || len(err.Error()) > 1000 || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("a key of %d bytes: a message of %d bytes: %.120q", len(key), len(fmt.Sprint(err)), fmt.Sprint(err))
		}
	}
}

// TestAFieldOfTheWrongKindIsShownItsShape: `secrets: [HF_TOKEN]` (a list, where the jobspec maps variables to
// stored secrets) was refused with "secrets: must be a mapping (line 15)", which does not say what to map to what
// (found by a user's-eye drill). Each list or mapping field's refusal shows its shape with an example.
func TestAFieldOfTheWrongKindIsShownItsShape(t *testing.T) {
	base := "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"
	for doc, want := range map[string]string{
		base + "secrets: [HF_TOKEN]\n":                       "secrets: {WANDB_API_KEY: wandb}",
		base + "env: WANDB_MODE=offline\n":                   "env: {WANDB_MODE: offline}",
		base + "overrides: {a: 1}\n":                         "overrides: [trainer.total_epochs=1]",
		base + "after_ok: {a: 1}\n":                          "after_ok: [mvp2-ppo-20251223-143201-7f3a]",
		base + "after_any: {a: 1}\n":                         "after_any: [mvp2-ppo-20251223-143201-7f3a]",
		strings.Replace(base, "nnodes: 1", "nnodes: [1]", 1): "must be a single value (line 2)",
	} {
		_, err := Parse([]byte(doc), Limits{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want it to show %q", doc[len(base)-1:], err, want)
		}
	}
	for f, kind := range fields {
		if _, ok := shapes[f]; ok != (kind != yaml.ScalarNode) {
			t.Errorf("field %s (%s) has a shape: %v; every list or mapping field has one, no other", f, kindName(kind), ok)
		}
	}
}

// TestAJSONJobspecWithSomethingAfterItSaysSo: a JSON jobspec followed by more ({"workload": …} {}) was refused with
// "the jobspec is not valid YAML: did not find expected <document start>", which a JSON sender cannot act on (found
// by a user's-eye drill; the Ray door already said "holds more than one JSON value"). It says the JSON object is
// followed by more, and to send one.
func TestAJSONJobspecWithSomethingAfterItSaysSo(t *testing.T) {
	body := `{"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, "model_path": "/m", "train_file": "/t", "val_file": "/v"}`
	for _, extra := range []string{" {}", "\n{}", ` "x"`, "\n[1]"} {
		_, err := Parse([]byte(body+extra), Limits{})
		if err == nil || !strings.Contains(err.Error(), "more than one JSON value") {
			t.Errorf("%q after the object: %v", extra, err)
		}
	}
	if _, err := Parse([]byte(body+"\n"), Limits{}); err != nil {
		t.Errorf("one object: %v", err)
	}
}

// TestAKeyTooLongForYAMLSaysSo: YAML reads a key of at most 1024 characters (from its first character, quotes
// included, to its colon). A longer one, in JSON as in YAML, was refused in the parser's words ("did not find
// expected ',' or '}'" of a valid JSON object; "could not find expected ':'"), which do not say what to change.
// The answer names the key's line and length and the limit; a key within it is taken as before.
func TestAKeyTooLongForYAMLSaysSo(t *testing.T) {
	const base = "workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /d/t.parquet\nval_file: /d/v.parquet\n"
	long := strings.Repeat("K", 1100)
	for name, body := range map[string]string{
		"json":            `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"env_vars":{"` + long + `":"1"}}`,
		"yaml plain":      base + "env_vars:\n  " + long + ": 1\n",
		"yaml in a list":  base + "env_vars:\n  - " + long + ": 1\n",
		"yaml quoted":     base + "env_vars:\n  '" + long + "': 1\n",
		"yaml flow":       base + "env_vars: {" + long + ": 1}\n",
		"just past, json": `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"env_vars":{"` + strings.Repeat("é", 1023) + `":"1"}}`,
	} {
		_, err := Parse([]byte(body), Limits{})
		msg := fmt.Sprint(err)
		if err == nil || !strings.Contains(msg, "1024") || !strings.Contains(msg, "line ") || !strings.Contains(msg, "shorten") {
			t.Errorf("%s: %v; want the key's line, its length and YAML's limit of 1024", name, err)
		}
	}
	// Within the limit the key is read (and refused or taken for what it is, not for its length).
	for _, n := range []int{1022} {
		body := `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"env_vars":{"` + strings.Repeat("é", n) + `":"1"}}`
		if _, err := Parse([]byte(body), Limits{}); err != nil && strings.Contains(err.Error(), "1024") {
			t.Errorf("a key of %d characters in quotes: %v", n, err)
		}
	}
}

// TestAYAMLErrorNamesTheLineWhereItIs: yaml.v3 names the line of its parser's context, counted from 0, for many
// errors (an unclosed flow sequence on line 2 read "line 1"; a tab on line 3, "line 2"), so a user looked at the
// wrong line. mvp names the line where the document stops being YAML (found in a user walk-through).
func TestAYAMLErrorNamesTheLineWhereItIs(t *testing.T) {
	for _, c := range []struct{ body, line string }{
		{"workload: ppo\nnnodes: [1\nn_gpus_per_node: 1\n", "line 2:"},
		{"workload: ppo\nnnodes: 1\n\tn_gpus_per_node: 1\n", "line 3:"},
		{"workload: ppo\n- nnodes\nn_gpus_per_node: 1\n", "line 2:"},
		{"workload: ppo\noverrides:\n  - a=1\n b: 1\n", "line 4:"},
		{"workload: ppo\nnnodes: {x\nn_gpus_per_node: 1\n", "line 2:"},
		{"workload: ppo\nnnodes: 1\nn_gpus_per_node: [\n", "line 3:"},
		{"workload: ppo\nnnodes: 1: 2\n", "line 2:"},
	} {
		_, err := Parse([]byte(c.body), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), c.line) {
			t.Errorf("%q: %v, want it to name %q", c.body, err, c.line)
		}
	}
}

// TestAGangSizeOutOfRangeIsNotCalledMissing: n_gpus_per_node: 17 was refused as "n_gpus_per_node is required and
// must be from 1 to 16, got 17", though it was given (found in a user walk-through).
func TestAGangSizeOutOfRangeIsNotCalledMissing(t *testing.T) {
	for _, c := range []struct{ body, field, want string }{
		{"workload: ppo\nnnodes: 1\nn_gpus_per_node: 17\n", "n_gpus_per_node", "n_gpus_per_node must be from 1 to 16, got 17"},
		{"workload: ppo\nnnodes: -1\nn_gpus_per_node: 1\n", "nnodes", "nnodes must be from 1 to"},
		{"workload: ppo\nnnodes: 0\nn_gpus_per_node: 1\n", "nnodes", "nnodes is required"},
		{"workload: ppo\nn_gpus_per_node: 1\n", "nnodes", "nnodes is required"},
	} {
		_, err := Parse([]byte(c.body+"model_path: /m\ntrain_file: /t\nval_file: /v\n"), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
}
