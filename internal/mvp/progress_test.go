package mvp

import (
	"strings"
	"testing"
)

func TestParseProgress(t *testing.T) {
	good, err := ParseProgress([]byte(`{"percent_complete": 42.5, "step": 17, "total_steps": 40, "name": "epoch 1",
		"metrics": {"loss": 0.25, "reward": -1}, "extra": "ignored"}`))
	if err != nil {
		t.Fatal(err)
	}
	if *good.PercentComplete != 42.5 || *good.Step != 17 || *good.TotalSteps != 40 || good.Name != "epoch 1" ||
		good.Metrics["loss"] != 0.25 || good.Metrics["reward"] != -1 {
		t.Errorf("parsed %+v", good)
	}
	if p, err := ParseProgress([]byte(`{}`)); err != nil || p.Step != nil || p.Metrics != nil {
		t.Errorf("empty object: %+v %v", p, err)
	}
	for _, c := range []struct{ body, says string }{
		{``, "one JSON object"},
		{`null`, "one JSON object"},
		{`[1]`, "one JSON object"},
		{`{"step": `, "not a JSON object"},
		{`{"step": 1} {"step": 2}`, "more than one"},
		{`{"step": 1}}`, "more than one"}, // json.Decoder.More says false before a '}' or ']' (found by FuzzParseProgress)
		{`{"step": 1}]`, "more than one"},
		{`{"step": "ten"}`, "not a JSON object"},
		{`{"step": 1.5}`, "not a JSON object"},
		{`{"step": -1}`, "step must be ≥ 0"},
		{`{"total_steps": -3}`, "total_steps"},
		{`{"percent_complete": 101}`, "from 0 to 100"},
		{`{"percent_complete": -0.5}`, "from 0 to 100"},
		{`{"metrics": {"loss": "low"}}`, "metrics.loss must be a number"},
		{`{"metrics": {"loss": null}}`, "must be a number"},
		{`{"metrics": [1, 2]}`, "not a JSON object"},
		{`{"name": "` + strings.Repeat("n", 201) + `"}`, "name is longer"},
		{"{\"name\": \"\xff\"}", "UTF-8"},
		{`{"name": "` + strings.Repeat("x", MaxProgressBytes) + `"}`, "larger than"},
	} {
		if _, err := ParseProgress([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%.60q: error %v, want one saying %q", c.body, err, c.says)
		}
	}
	many := `{"metrics": {`
	for i := 0; i <= maxProgressMetrics; i++ {
		if i > 0 {
			many += ","
		}
		many += `"m` + strings.Repeat("x", i) + `": 1`
	}
	if _, err := ParseProgress([]byte(many + `}}`)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many metrics: %v", err)
	}
}

// Python's json.dump writes float('nan') and float('inf') as NaN and Infinity: a run whose loss diverged had its
// whole progress file refused (step and percent frozen at the last finite step, a PROGRESS_INVALID event at each
// change). Seen in walk-through 16.
func TestParseProgressLeavesOutNonFiniteMetrics(t *testing.T) {
	p, err := ParseProgress([]byte(`{"step": 57, "total_steps": 300, "percent_complete": 19.0, "name": "NaN Infinity",
		"metrics": {"loss": NaN, "reward": 0.5, "grad_norm": Infinity, "min": -Infinity, "NaN": 1, "s\"NaN": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if *p.Step != 57 || p.Name != "NaN Infinity" || len(p.Metrics) != 3 || p.Metrics["reward"] != 0.5 ||
		p.Metrics["NaN"] != 1 || p.Metrics[`s"NaN`] != 2 {
		t.Errorf("parsed %+v", p)
	}
	for _, c := range []struct{ body, says string }{
		{`{"percent_complete": NaN}`, "not a JSON object"},
		{`{"step": Infinity}`, "not a JSON object"},
		{`{"name": NaN}`, "name must be a string"},
		{`{"metrics": {"loss": NaNx}}`, "not a JSON object"},
		{`{"metrics": {"loss": null}}`, "must be a number"},
		// A bare NaN where a key goes is no number a JSON writer puts there: it was made the marker string, which
		// made '{NaN: 1}' a JSON object taken, and gave '{"metrics": {NaN: 1}}' a metric named by the marker (NUL
		// bytes and all). Found while writing FuzzParseProgress's property.
		{`{NaN: 1}`, "not a JSON object"},
		{`{"metrics": {NaN: 1}}`, "not a JSON object"},
		{`{"metrics": {"a": 1, Infinity: 2}}`, "not a JSON object"},
		{`{"step": 1, -Infinity: 2}`, "not a JSON object"},
	} {
		if _, err := ParseProgress([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%.60q: error %v, want one saying %q", c.body, err, c.says)
		}
	}
	// The string mvp put in a bare NaN's place could be written by a workload too (it is JSON text like any other):
	// a metric of that text was left out as non-finite, though a string, and a name of that text was refused as
	// "not a string". Seen while writing FuzzParseProgress's property.
	if _, err := ParseProgress([]byte(`{"metrics": {"a": "\u0000mvp:non-finite\u0000"}}`)); err == nil ||
		!strings.Contains(err.Error(), "metrics.a must be a number") {
		t.Errorf("a metric of the marker's text: %v", err)
	}
	if p, err := ParseProgress([]byte(`{"name": "\u0000mvp:non-finite\u0000"}`)); err != nil || p.Name != "\x00mvp:non-finite\x00" {
		t.Errorf("a name of the marker's text: %+v %v", p, err)
	}
	// Where a value goes, a bare non-finite number is still read: after ':', after '[', and after ',' in a list.
	if p, err := ParseProgress([]byte(`{"metrics": {"a": NaN, "b": 1}, "x": [NaN, Infinity], "step": 2}`)); err != nil ||
		len(p.Metrics) != 1 || *p.Step != 2 {
		t.Errorf("values: %+v %v", p, err)
	}
}
