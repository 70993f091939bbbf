package sqlite

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// encodePayload encodes an event's payload as encoding/json would (keys sorted, HTML characters escaped), byte
// for byte. The payloads the service writes on every submit and every wait hold strings, numbers and booleans
// only: those are written here without reflection (json.Marshal of a map sorts its keys through reflect and cost
// 3 % of a submission's CPU); any other value falls back to json.Marshal of the whole payload.
func encodePayload(p map[string]any) (string, error) {
	if len(p) == 0 {
		return "{}", nil
	}
	if s, ok := encodeFlat(p); ok {
		return s, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", mvp.Errorf(mvp.CodeInvalid, "payload", "event payload cannot be encoded as JSON: %v", err)
	}
	return string(b), nil
}

// encodeFlat encodes p when every value is a string, a bool or an integer; ok is false otherwise.
func encodeFlat(p map[string]any) (s string, ok bool) {
	var keys [16]string
	ks := keys[:0]
	for k, v := range p {
		switch v.(type) {
		case string, bool, int, int64, int32, mvp.State:
		default:
			return "", false
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	b := make([]byte, 0, 128)
	b = append(b, '{')
	for i, k := range ks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		switch v := p[k].(type) {
		case string:
			b = appendJSONString(b, v)
		case mvp.State:
			b = appendJSONString(b, string(v))
		case bool:
			b = strconv.AppendBool(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case int32:
			b = strconv.AppendInt(b, int64(v), 10)
		}
	}
	b = append(b, '}')
	return string(b), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes a string: quoted; `"`, `\` and control characters escaped
// (\b \f \n \r \t short, the rest \u00XX); <, > and & as \u003c \u003e \u0026; U+2028 and U+2029 escaped; each
// invalid UTF-8 byte as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
