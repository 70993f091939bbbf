package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds Parse what an operator may write into dev.yaml. A refusal has a message; a file taken validates
// (Parse and Validate agree), has its defaults applied (no zero tick, no empty database path), and reads the same
// a second time.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"../../configs/dev.yaml", "../../configs/prod.example.yaml"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "{}", "address: http://127.0.0.1:8265\nv2:\n  scheduler:\n    tick_s: 1\n    tick_ss: 2\n",
		"v2: {scheduler: {tick_s: 0}}\n", "v2: {sqlite: {checkpoint_schedule: 'TZ=UTC */10 * * * *'}}\n",
		"v2: {sqlite: {checkpoint_schedule: \"TZ=UTC\"}}\n", "v2: {workloads: {sft: {cpus_per_gpu: 7}}}\n",
		"v2: {auth: {users: [{name: alice, token_env: ALICE_TOKEN, max_gpus: 8, max_priority: 60, share: 2}]}}\n",
		"entrypoint_resources: {worker_node: 1, 'node:10.0.0.1': 0.01}\n", "user_code_path: /private/user/code\n",
		"scheduler:\n  tick_s: 5\napi:\n  port: 9000\nsomething_else: 1\nv2:\n  api:\n    port: 9001\n",
		"v2: {scheduler: {tick_s: .nan}}\n", "v2: {scheduler: {default_max_runtime_s: 2592001}}\n",
		"v2:\n  ray:\n    token_env: MY_RAY_TOKEN\n", "address: 'http://:8265'\n", "runtime_env: {env_vars: {A: b}}\n",
		"v2: {metrics: {enabled: false, public: true}, secrets: {key_env: K}}\n", "a: &x [1]\nb: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("a refusal with no message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse took what Validate refuses: %v", err)
		}
		if c.V2.Scheduler.TickS <= 0 || c.V2.SQLite.DBPath == "" || c.V2.API.Port < 0 || c.V2.API.MaxBodyBytes <= 0 {
			t.Fatalf("defaults not applied: tick %g, db %q, port %d, body %d", c.V2.Scheduler.TickS, c.V2.SQLite.DBPath,
				c.V2.API.Port, c.V2.API.MaxBodyBytes)
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("taken once, refused the second time: %v", err)
		}
	})
}
