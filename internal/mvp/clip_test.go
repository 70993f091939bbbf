package mvp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipCutsBetweenCharacters(t *testing.T) {
	s := "a" + strings.Repeat("€", 40) // 1 + 120 bytes
	for max := 0; max <= len(s)+1; max++ {
		p, c := PrefixUTF8(s, max), Clip(s, max)
		if len(p) > max || !utf8.ValidString(p) || !strings.HasPrefix(s, p) || !utf8.ValidString(c) {
			t.Fatalf("max %d: prefix %q, clip %q", max, p, c)
		}
		if (max >= len(s)) != (c == s) {
			t.Fatalf("max %d: clip %q", max, c)
		}
	}
}

// TestJSONForYAML: an escaped pair becomes its character; an escaped backslash before "u" is text; lone
// halves and other escapes stay as they are; the JSON value is the same.
func TestJSONForYAML(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"x":"\ud83d\ude00"}`, `{"x":"😀"}`},
		{`{"x":"a\ud83d\ude00b\ud83d\ude01"}`, `{"x":"a😀b😁"}`},
		{`{"x":"\\ud83d\\ude00"}`, `{"x":"\\ud83d\\ude00"}`},
		{`{"x":"\\\ud83d\ude00"}`, `{"x":"\\😀"}`},
		{`{"x":"\ud800"}`, `{"x":"\ud800"}`},
		{`{"x":"\ude00\ud83d"}`, `{"x":"\ude00\ud83d"}`},
		{`{"x":"\u00e9\n\""}`, `{"x":"\u00e9\n\""}`},
		{`{"\ud83d\ude00":1}`, `{"😀":1}`},
	} {
		got := string(JSONForYAML([]byte(c.in)))
		if got != c.want {
			t.Errorf("JSONForYAML(%s) = %s; want %s", c.in, got, c.want)
		}
		var a, b any
		if err := json.Unmarshal([]byte(c.in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(got), &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the value changed: %v vs %v (%v)", c.in, a, b, err)
		}
	}
}
