package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/jobspec"
)

// The CLI edits a jobspec (mvp submit -e, mvp schedule create) without changing what it does not touch: the
// server keeps the text of an unquoted scalar where it wants a string (env: {TORCH_VERSION: 2.10} runs with
// "2.10", not "2.1"), so a scalar must reach it as it was written, not decoded into a Go number and encoded again.

// scalar is a YAML scalar kept as written: it encodes back to YAML as its own node, and to JSON as its text (a
// number whose text is a JSON number stays that number, text and all; true, false and null stay themselves; any
// other scalar is a JSON string of its text).
type scalar struct{ n *yaml.Node }

// MarshalYAML returns the scalar's own node.
func (s scalar) MarshalYAML() (any, error) { return s.n, nil }

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// MarshalJSON writes the scalar's text.
func (s scalar) MarshalJSON() ([]byte, error) {
	switch tag := s.n.ShortTag(); {
	case tag == "!!null":
		return []byte("null"), nil
	case tag == "!!bool" && (s.n.Value == "true" || s.n.Value == "false"):
		return []byte(s.n.Value), nil
	case (tag == "!!int" || tag == "!!float") && jsonNumber.MatchString(s.n.Value):
		return []byte(s.n.Value), nil
	}
	return json.Marshal(s.n.Value)
}

// decodeSpec reads a YAML (or JSON) jobspec into maps and lists whose leaves are scalars kept as written, for
// jobspec.SetPath to edit and yaml.Marshal or json.Marshal to write back.
func decodeSpec(body []byte) (map[string]any, error) {
	body, err := jobspec.YAMLText(body) // a JSON jobspec's surrogate pairs, which the server takes too
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("the jobspec is empty")
	}
	v, err := nodeValue(doc.Content[0], 0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the jobspec must be a mapping of fields (workload: ppo, nnodes: 1, …)")
	}
	return m, nil
}

// nodeValue is n as maps, lists and scalars; aliases are followed (to a bounded depth, as the server does).
func nodeValue(n *yaml.Node, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("the jobspec is nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a field name must be a plain string", k.Line)
			}
			v, err := nodeValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	default:
		return scalar{n}, nil
	}
}
