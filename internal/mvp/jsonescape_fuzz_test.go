package mvp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzJSONEscapes feeds the two readers of a JSON body's \u escapes what a client may send. LoneSurrogate says
// true exactly when Go's decoder would make an escape U+FFFD (the body holds no U+FFFD of its own); and
// JSONForYAML gives JSON that decodes to the same value.
func FuzzJSONEscapes(f *testing.F) {
	for _, s := range []string{
		`{"a": "\ud83d\ude00"}`, `{"a": "\ud800"}`, `{"a": "\udc00\ud800"}`, `{"a": "\\ud800"}`, `["\ud83d", "\ude00"]`,
		`{"\ud800": 1}`, `"\u00e9\ud83d\ude00x"`, `{"a": "\ud83d\u0041"}`, `{"entrypoint": "echo \"\ud83d\ude00\""}`,
		`{"a": "\\\ud83d\ude00"}`, `"\ud83d\uDE00"`, `"\uD83D\ude00"`, `{"a":1}`,
		`{"a": "x\/y"}`, `{"a": "\\/"}`, "{\"a\": \"\x7f\u0085\u0090\u2028\ufffe\uffff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // the decoder refuses it before either matters
		}
		v, err := decodeAny(b)
		if err != nil {
			t.Fatalf("valid, but does not decode: %v", err)
		}
		if !bytes.ContainsRune(b, utf8.RuneError) && !strings.Contains(strings.ToLower(string(b)), `\ufffd`) && utf8.Valid(b) {
			if replaced := holdsRuneError(v); replaced != LoneSurrogate(b) {
				t.Fatalf("%q: decoded with U+FFFD %v, LoneSurrogate %v", b, replaced, !replaced)
			}
		}
		joined := JSONForYAML(b)
		w, err := decodeAny(joined)
		if err != nil {
			t.Fatalf("%q joined as %q, which does not decode: %v", b, joined, err)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("%q joined as %q: %v became %v", b, joined, v, w)
		}
	})
}

// decodeAny decodes JSON text into any, its numbers as text (a number too large for a float64 is valid JSON).
func decodeAny(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// holdsRuneError reports whether a decoded JSON value holds U+FFFD in a string or a key.
func holdsRuneError(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case []any:
		for _, e := range v {
			if holdsRuneError(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, utf8.RuneError) || holdsRuneError(e) {
				return true
			}
		}
	}
	return false
}
