package taskfs

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzCheckResultPath feeds CheckResultPath a result path as GET /api/v2/tasks/{id}/results/{path...} gives it. A
// path taken is local to the results folder (filepath.IsLocal), clean, UTF-8, with no control character or
// backslash; a refusal is an invalid *mvp.Error whose message is UTF-8 and short (the path quoted, clipped to 80 bytes).
func FuzzCheckResultPath(f *testing.F) {
	for _, s := range []string{"a01/summary.json", "notes.txt", "a01/model/w.bin", "odd name (1).jsonl", "ünïcode.txt",
		"..hidden", "", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "./a", "a//b", "a/", "a\\..\\b", "a\x00b",
		"a\nb", "\xff", strings.Repeat("x", 1025), "a\u2028b", "~/x", "C:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckResultPath(p)
		if err != nil {
			if mvp.ErrorCode(err) != mvp.CodeInvalid || !utf8.ValidString(err.Error()) || len(err.Error()) > 800 {
				t.Fatalf("%.60q: %v", p, err)
			}
			return
		}
		if !filepath.IsLocal(p) || filepath.Clean(p) != p || !utf8.ValidString(p) || strings.ContainsAny(p, "\\\x00") ||
			strings.Contains("/"+p+"/", "/../") || len(p) > maxResultPath {
			t.Fatalf("%q taken", p)
		}
	})
}
