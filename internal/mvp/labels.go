package mvp

import (
	"fmt"
	"strings"
)

// A Ray job's entrypoint_label_selector names labels its driver's node must have. mvp admits the driver only on a
// node whose labels match, as Ray's scheduler will: each constraint of the selector is carried in the driver's
// demand (Task.Driver) as a key of its own, DriverLabelPrefix + key + "=" + value, asking 1 of it; a node offers
// such a key when its labels match the constraint (LabelMatches), without limit. The keys never reach Ray: the
// job is submitted with the request as given.
const DriverLabelPrefix = "label:"

// DriverLabelKey is the key of the driver's demand that carries the selector's constraint key: value.
func DriverLabelKey(key, value string) string { return DriverLabelPrefix + key + "=" + value }

// DriverLabel splits a key of a driver's demand made by DriverLabelKey; ok is false for a resource.
func DriverLabel(demandKey string) (key, value string, ok bool) {
	rest, found := strings.CutPrefix(demandKey, DriverLabelPrefix)
	if !found {
		return "", "", false
	}
	return strings.Cut(rest, "=")
}

// LabelMatches reports whether a node with labels matches the selector's constraint key: value, as Ray 2.60
// reads it (src/ray/common/scheduling/label_selector.cc): "v" is the label key with value v; "!v" is any node
// without that (no such label, or another value); "in(a,b)" is one of a and b; "!in(a,b)" is none of them.
func LabelMatches(labels map[string]string, key, value string) bool {
	negated := strings.HasPrefix(value, "!")
	value = strings.TrimPrefix(value, "!")
	values := []string{value}
	if strings.HasPrefix(value, "in(") && strings.HasSuffix(value, ")") {
		values = strings.Split(value[len("in("):len(value)-1], ",")
	}
	have, ok := labels[key]
	in := false
	if ok {
		for _, v := range values {
			if v == have {
				in = true
				break
			}
		}
	}
	return in != negated
}

// CheckLabelSelector refuses a selector mvp cannot admit by as Ray reads it: an empty key or value, a key with
// "=" (the driver's demand key would be ambiguous), an empty in() or an empty value in it.
func CheckLabelSelector(sel map[string]string) error {
	for k, v := range sel {
		field := "entrypoint_label_selector"
		switch {
		case k == "":
			return Errorf(CodeInvalid, field, "entrypoint_label_selector has an empty label key")
		case strings.ContainsAny(k, "= \t\n"):
			return Errorf(CodeInvalid, field, "entrypoint_label_selector key %q is not a label key (no '=' or spaces)", labelClip(k))
		}
		inner := strings.TrimPrefix(v, "!")
		if strings.HasPrefix(inner, "in(") && strings.HasSuffix(inner, ")") {
			inner = inner[len("in(") : len(inner)-1]
			for _, one := range strings.Split(inner, ",") {
				if one == "" {
					return Errorf(CodeInvalid, field, "entrypoint_label_selector.%s = %q has an empty value in its list; "+
						`write e.g. "in(a,b)"`, labelClip(k), labelClip(v))
				}
			}
			continue
		}
		if inner == "" {
			return Errorf(CodeInvalid, field, "entrypoint_label_selector.%s has no value; give the label's value (%q), "+
				`"!value", "in(a,b)" or "!in(a,b)"`, labelClip(k), "value")
		}
	}
	return nil
}

// DescribeLabels writes the label constraints of a driver's demand as "{key: value, …}" in the order given.
func DescribeLabels(keys []string) string {
	parts := make([]string, 0, len(keys))
	for _, dk := range keys {
		if k, v, ok := DriverLabel(dk); ok {
			parts = append(parts, fmt.Sprintf("%s: %s", k, v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func labelClip(s string) string { return Clip(s, 64) }
