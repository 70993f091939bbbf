package mvp

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseProgress feeds ParseProgress what a workload may write into progress.json. A refusal has a message; a
// file taken is JSON once its bare NaN and Infinity are read as numbers (the only leave from JSON mvp gives), its
// values are within the documented bounds, and what was read round-trips: the Progress written as JSON reads back
// the same.
func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{
		`{"percent_complete": 42.5, "step": 17, "total_steps": 40, "name": "epoch 1", "metrics": {"loss": 0.25, "reward": -1}, "extra": "ignored"}`,
		`{}`, ``, `null`, `[1]`, `{"step": `, `{"step": 1} {"step": 2}`, `{"step": "ten"}`, `{"step": 1.5}`,
		`{"step": -1}`, `{"percent_complete": 101}`, `{"metrics": {"loss": "low"}}`, `{"metrics": {"loss": null}}`,
		"{\"name\": \"\xff\"}",
		`{"step": 57, "total_steps": 300, "percent_complete": 19.0, "name": "NaN Infinity", "metrics": {"loss": NaN, "reward": 0.5, "grad_norm": Infinity, "min": -Infinity, "NaN": 1, "s\"NaN": 2}}`,
		`{"percent_complete": NaN}`, `{"name": NaN}`, `{"metrics": {"loss": NaNx}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProgress(b)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("a refusal with no message")
			}
			return
		}
		if !json.Valid(nonFiniteAsZero(b)) {
			t.Fatalf("taken, but not JSON even with NaN and Infinity read as numbers: %q", b)
		}
		if v := p.PercentComplete; v != nil && !(*v >= 0 && *v <= 100) {
			t.Fatalf("percent_complete %g taken", *v)
		}
		if (p.Step != nil && *p.Step < 0) || (p.TotalSteps != nil && *p.TotalSteps < 0) {
			t.Fatalf("a negative step taken: %+v", p)
		}
		if len(p.Name) > maxProgressName || len(p.Metrics) > maxProgressMetrics {
			t.Fatalf("beyond the bounds: name of %d bytes, %d metrics", len(p.Name), len(p.Metrics))
		}
		for k, v := range p.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) || len(k) > maxProgressName {
				t.Fatalf("metric %q = %g taken", k, v)
			}
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal %+v: %v", p, err)
		}
		back, err := ParseProgress(out)
		if err != nil {
			t.Fatalf("%s (read from %q) does not read back: %v", out, b, err)
		}
		if !reflect.DeepEqual(p, back) {
			t.Fatalf("round trip: %+v became %+v", p, back)
		}
	})
}

// nonFiniteAsZero is b with each bare NaN, Infinity and -Infinity (outside strings) read as the number 0.
func nonFiniteAsZero(b []byte) []byte {
	marker := []byte(nonFinite)
	var out []byte
	m := nonFiniteToMarker(b)
	for {
		i := bytes.Index(m, marker)
		if i < 0 {
			return append(out, m...)
		}
		out = append(append(out, m[:i]...), '0')
		m = m[i+len(marker):]
	}
}
