package mvp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONError rewrites a JSON decoding error in JSON's words: a value of the wrong type names its key and what it
// takes ("set" must be a list of strings, got a string), not Go's struct and type names. Other errors are
// returned as they are.
func JSONError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	key := te.Field
	if i := strings.LastIndex(key, "."); i >= 0 {
		key = key[i+1:] // the JSON key (the path before it names Go's structs)
	}
	if num, ok := strings.CutPrefix(te.Value, "number "); ok {
		// encoding/json's words for a number its field cannot hold: too large for it, or a fraction for a whole
		// number. "must be a number, got number 1e400" told the sender nothing.
		if msg := numberMisfit(num, te.Type); msg != "" {
			if key == "" {
				return fmt.Errorf("the body %s", msg)
			}
			return fmt.Errorf("%q %s", key, msg)
		}
	}
	got := map[string]string{"string": "a string", "number": "a number", "object": "an object", "array": "a list",
		"bool": "true or false"}[te.Value]
	if got == "" {
		got = te.Value
	}
	if key == "" {
		return fmt.Errorf("the body must be %s, got %s", jsonKind(te.Type), got)
	}
	return fmt.Errorf("%q must be %s, got %s", key, jsonKind(te.Type), got)
}

// numberMisfit says why the JSON number num does not fit a field of type t ("is out of range: …" or "must be a
// whole number, got 1.5"), or "" when t is not a number's type.
func numberMisfit(num string, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("is out of range: %.40s does not fit in a number", num)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.ContainsAny(num, ".eE") {
			if f, err := strconv.ParseFloat(num, 64); err == nil && f == math.Trunc(f) {
				// 1e3 and 2.0 are whole, but Go's decoder reads a whole number in digits only.
				return fmt.Sprintf("must be a whole number written in digits, got %.40s", num)
			}
			return fmt.Sprintf("must be a whole number, got %.40s", num)
		}
		lo := "0"
		if t.Kind() < reflect.Uint {
			lo = strconv.FormatInt(-1<<(t.Bits()-1), 10)
			return fmt.Sprintf("is out of range: %.40s is not from %s to %d", num, lo, int64(1<<(t.Bits()-1)-1))
		}
		return fmt.Sprintf("is out of range: %.40s is not from %s to %d", num, lo, uint64(1<<t.Bits()-1))
	}
	return ""
}

// jsonKind says in JSON's words what a Go type takes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a JSON value"
}

// LoneSurrogateWhy says, after what holds one ("the jobspec "), why a lone surrogate escape is refused and what to
// send instead: the one wording of every refusal of LoneSurrogate's.
const LoneSurrogateWhy = `escapes half of a UTF-16 surrogate pair alone (\uD800 to \uDFFF without its other half), ` +
	`which is no character (JSON decoders would make it U+FFFD, a value that was not sent); send the character ` +
	`itself, or both halves of its pair`

// unicodeEscape returns the code unit of the \uXXXX escape at body[j:], if there is one there.
func unicodeEscape(body []byte, j int) (rune, bool) {
	if j+6 > len(body) || body[j] != '\\' || body[j+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(body[j+2:j+6]), 16, 32)
	return rune(n), err == nil
}

// surrogatePair reports whether the escapes at body[i:] and body[i+6:] are a high and a low surrogate, and the
// character they make.
func surrogatePair(body []byte, i int) (rune, bool) {
	hi, ok := unicodeEscape(body, i)
	if !ok || hi < 0xD800 || hi > 0xDBFF {
		return 0, false
	}
	lo, ok := unicodeEscape(body, i+6)
	if !ok || lo < 0xDC00 || lo > 0xDFFF {
		return 0, false
	}
	return utf16.DecodeRune(hi, lo), true
}

// LoneSurrogate reports whether a JSON string in body escapes half of a UTF-16 surrogate pair alone: a high half
// ("\ud800") not followed at once by a low one, or a low half ("\udc00") first. Go's decoder silently makes it
// U+FFFD, so the value decoded would not be the value sent (YAML parsers refuse it instead).
func LoneSurrogate(body []byte) bool {
	in := false
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			in = !in
		case '\\':
			if !in {
				continue
			}
			r, ok := unicodeEscape(body, i)
			if !ok {
				i++ // another escape (\" \\ \n …), or a malformed one the decoder refuses
				continue
			}
			if _, pair := surrogatePair(body, i); pair {
				i += 6 // the pair's low half
			} else if utf16.IsSurrogate(r) {
				return true
			}
			i += 5
		}
	}
	return false
}

// JSONForYAML returns the JSON text body written so that a YAML parser (yaml.v3, which reads mvp's JSON
// jobspecs) reads it as JSON does: the same JSON value, each string's text unchanged. It replaces an escaped UTF-16
// surrogate pair ("\ud83d\ude00", what Python's json.dumps writes for a character outside the Basic Multilingual
// Plane; YAML refuses such escapes) by the character itself in UTF-8, an escaped slash ("\/", which PHP's and some
// Java encoders write; not a YAML escape) by the slash, and a character JSON carries raw but YAML's reader refuses
// (DEL, the C1 controls, U+FFFE and U+FFFF: Go's encoder writes them raw), or reads as a line break inside a string
// (NEL, U+2028, U+2029: a quoted scalar would fold it into a space), by its \u escape. Everything else,
// lone halves included, is left as it is. body must be valid JSON (json.Valid): its escapes and any byte from
// 0x7F up are then all within strings.
func JSONForYAML(body []byte) []byte {
	var out []byte
	last := 0
	put := func(i, n int, repl []byte) { // body[i:i+n] becomes repl
		out = append(append(out, body[last:i]...), repl...)
		last = i + n
	}
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '\\' && i+1 < len(body) && body[i+1] == '/':
			put(i, 2, []byte{'/'})
			i += 2
		case c == '\\':
			if r, ok := surrogatePair(body, i); ok {
				put(i, 12, utf8.AppendRune(nil, r))
				i += 12
			} else if _, ok := unicodeEscape(body, i); ok {
				i += 6
			} else {
				i += 2 // \" \\ \n …: its character is not an escape's start
			}
		case c >= 0x7f:
			r, n := utf8.DecodeRune(body[i:])
			if yamlAlters(r) {
				put(i, n, fmt.Appendf(nil, `\u%04x`, r))
			}
			i += n
		default:
			i++
		}
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// yamlAlters reports whether YAML's reader, given r (DEL or a character above it) raw in a quoted scalar, refuses
// it or reads it as a line break: it takes U+00A0 to U+D7FF, U+E000 to U+FFFD and U+10000 up, and NEL, U+2028 and
// U+2029 are line breaks to it.
func yamlAlters(r rune) bool {
	return r == 0x2028 || r == 0x2029 || !(r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= utf8.MaxRune)
}
