package mvp

import (
	"fmt"
	"regexp"
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

// Ray 2.60's rules for a label selector (python/ray/_private/label_utils.py, which Ray's job manager applies at
// submit and answers 400 for): a key is an optional DNS-like prefix and "/", then a name; a name and a value are
// at most 63 characters of [A-Za-z0-9_.-], beginning and ending with a letter or digit; a selector's value is
// empty, v, !v, in(a,b) or !in(a,b) (", " between entries allowed; Ray's own pattern also takes the list without
// "in", which its scheduler then reads as one literal value).
var (
	labelName     = `[a-zA-Z0-9](?:[a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?`
	labelNameRe   = regexp.MustCompile(`^` + labelName + `$`)
	labelPrefixRe = regexp.MustCompile(`^(?:` + labelName + `)?(?:\.(?:` + labelName + `)?)*$`)
	labelValueRe  = regexp.MustCompile(`^!?(?:in)?\(` + labelName + `(?:, ?` + labelName + `)*\)$|^!?` + labelName + `$`)
)

// CheckLabelSelector refuses a selector Ray's job manager would refuse (the rules above), naming the key and
// what to fix, so that the job is refused at once rather than queued behind a label no node can carry.
func CheckLabelSelector(sel map[string]string) error {
	const field = "entrypoint_label_selector"
	for k, v := range sel {
		name := k
		if i := strings.LastIndex(k, "/"); i >= 0 {
			prefix := k[:i]
			name = k[i+1:]
			if len(prefix) > 253 || !labelPrefixRe.MatchString(prefix) {
				return Errorf(CodeInvalid, field, "entrypoint_label_selector key %q: its prefix %q is not a DNS name "+
					"(labels of letters, digits, '-', '_' separated by dots, at most 253 characters)", labelClip(k), labelClip(prefix))
			}
		}
		if len(name) > 63 || !labelNameRe.MatchString(name) {
			return Errorf(CodeInvalid, field, "entrypoint_label_selector key %q is not a label key: its name must be "+
				"1 to 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit", labelClip(k))
		}
		if v != "" && !labelValueRe.MatchString(v) {
			return Errorf(CodeInvalid, field, "entrypoint_label_selector.%s = %q is not a selector value: give "+
				`"value", "!value", "in(a,b)" or "!in(a,b)", each value 1 to 63 letters, digits, '-', '_' or '.', `+
				"beginning and ending with a letter or digit", labelClip(k), labelClip(v))
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
