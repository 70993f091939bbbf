package sqlite

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// The fast path of encodePayload writes what json.Marshal writes, byte for byte: events written before it and
// after it read alike, and readers that compare payloads as text see no change.
func TestEncodePayloadIsJSONMarshalByteForByte(t *testing.T) {
	strs := []string{"", "plain", `q"uote`, `back\slash`, "tab\tnl\ncr\r", "\b\f\x00\x01\x1f\x7f", "<b>&amp;</b>",
		"snow ☃ and 𝄞", "line\u2028sep\u2029", "bad \xff utf8 \xc3", "\xe2\x80", "end\xe2\x80\xa8", "ünïcödé",
		"can never fit on this cluster: needs 1 node(s) with 16 GPU and 48 CPU each"}
	cases := []map[string]any{
		{"state": mvp.StateQueued, "workload": "ppo", "name": "load", "nnodes": 1, "n_gpus_per_node": 16},
		{"from": mvp.StateQueued, "to": mvp.StatePendingResources, "reason": strs[13], "never_fits": true},
		{"attempt_no": int64(-3), "x": int32(7), "ok": false},
	}
	for _, s := range strs {
		cases = append(cases, map[string]any{s: s, "k": s + s})
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		m := map[string]any{}
		for j := rng.Intn(6); j >= 0; j-- {
			b := make([]byte, rng.Intn(12))
			for k := range b {
				b[k] = byte(rng.Intn(256))
			}
			switch rng.Intn(5) {
			case 0:
				m[string(b)] = string(b)
			case 1:
				m[string(b)] = rng.Intn(2) == 0
			case 2:
				m[string(b)] = rng.Int63() - rng.Int63()
			case 3:
				m[string(b)] = rng.Intn(1000) - 500
			default:
				m[strs[rng.Intn(len(strs))]] = strs[rng.Intn(len(strs))]
			}
		}
		cases = append(cases, m)
	}
	fast := 0
	for _, m := range cases {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodePayload(m)
		if err != nil {
			t.Fatalf("encodePayload(%q): %v", m, err)
		}
		if got != string(want) && !(len(m) == 0 && got == "{}") {
			t.Fatalf("encodePayload(%q)\n got %s\nwant %s", m, got, want)
		}
		if _, ok := encodeFlat(m); ok {
			fast++
		}
	}
	if fast != len(cases) {
		t.Fatalf("the fast path took %d of %d payloads of strings, booleans and integers", fast, len(cases))
	}
	// Anything else goes to json.Marshal.
	m := map[string]any{"f": 1.5, "list": []int{1, 2}}
	if _, ok := encodeFlat(m); ok {
		t.Fatal("the fast path took a float and a list")
	}
	if got, _ := encodePayload(m); got != `{"f":1.5,"list":[1,2]}` {
		t.Fatalf("fallback: %s", got)
	}
}
