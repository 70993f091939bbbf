package mvp

import (
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
