package mvp

import (
	"errors"
	"strings"
	"testing"
)

// TestLabelMatchesAsRayReadsASelector: the four forms of a label selector's value, against a node with the label,
// with another value, and without it (Ray 2.60's LabelSelector and NodeLabelMatchesConstraint).
func TestLabelMatchesAsRayReadsASelector(t *testing.T) {
	a, b, none := map[string]string{"pool": "a"}, map[string]string{"pool": "b"}, map[string]string{"other": "a"}
	for _, c := range []struct {
		value       string
		a, b, none_ bool
	}{
		{"a", true, false, false},
		{"!a", false, true, true},
		{"in(a,c)", true, false, false},
		{"in(b,c)", false, true, false},
		{"!in(a,c)", false, true, true},
		{"!in(a,b)", false, false, true},
	} {
		if got := LabelMatches(a, "pool", c.value); got != c.a {
			t.Errorf("pool=%s on pool=a: %v", c.value, got)
		}
		if got := LabelMatches(b, "pool", c.value); got != c.b {
			t.Errorf("pool=%s on pool=b: %v", c.value, got)
		}
		if got := LabelMatches(none, "pool", c.value); got != c.none_ {
			t.Errorf("pool=%s on a node without pool: %v", c.value, got)
		}
	}
	k := DriverLabelKey("ray.io/node-id", "!in(x,y)")
	if key, value, ok := DriverLabel(k); !ok || key != "ray.io/node-id" || value != "!in(x,y)" {
		t.Errorf("DriverLabel(%q) = %q %q %v", k, key, value, ok)
	}
	if _, _, ok := DriverLabel("worker_node"); ok {
		t.Error("a resource taken for a label")
	}
}

// TestCheckLabelSelectorNamesWhatToFix: selectors Ray takes pass; an empty key or value, a key with '=' and an
// empty in() entry are refused with a message naming the key.
func TestCheckLabelSelectorNamesWhatToFix(t *testing.T) {
	for _, ok := range []map[string]string{nil, {"pool": "a"}, {"pool": "!a", "zone": "in(x,y)", "gpu": "!in(a100)"}} {
		if err := CheckLabelSelector(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for sel, want := range map[string]map[string]string{
		"empty label key":    {"": "a"},
		"not a label key":    {"a=b": "c"},
		"has no value":       {"pool": ""},
		"pool has no value":  {"pool": "!"},
		"an empty value in":  {"pool": "in(a,)"},
		"empty value in its": {"pool": "!in()"},
	} {
		err := CheckLabelSelector(want)
		var e *Error
		if err == nil || !errors.As(err, &e) || e.Code != CodeInvalid || !strings.Contains(err.Error(), sel) {
			t.Errorf("%v: %v, want an invalid error saying %q", want, err, sel)
		}
	}
}
