package mvp

import "unicode/utf8"

// PrefixUTF8 returns the longest prefix of s of at most max bytes that does not end inside a character.
func PrefixUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Clip shortens text echoed back (user input in an error, a log line in a summary) to at most max bytes, cut
// between characters, with "…" where it cut.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return PrefixUTF8(s, max) + "…"
}
