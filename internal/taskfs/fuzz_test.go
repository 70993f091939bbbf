package taskfs

import (
	"io/fs"
	"os"
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

// FuzzListResults stands for a job that writes files of any name under its results folder (names separated by
// NUL, which no name holds). Every regular file is listed or counted as skipped, none lost silently; every file
// listed passes CheckResultPath and opens, by the path listed, to a file of the size listed.
func FuzzListResults(f *testing.F) {
	for _, s := range []string{"a01/summary.json\x00notes.txt", "a01/model/w.bin\x00a02/x", "odd name (1).jsonl\x00ünïcode.txt",
		"..hidden\x00a\\b\x00a\nb", "\xff\x00a01/\xfe/x", "a01/" + strings.Repeat("x", 250) + "/" + strings.Repeat("y", 250)} {
		f.Add(s)
	}
	fsys := FS{Root: f.TempDir()}
	const id = "mvp2-ppo-20251223-143201-7f3a"
	f.Fuzz(func(t *testing.T, names string) {
		dir, err := fsys.ResultsDir(id)
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		made := map[string]bool{}
		for _, n := range strings.Split(names, "\x00") {
			p := filepath.Join(dir, n)
			if n == "" || !strings.HasPrefix(p, dir+"/") || os.MkdirAll(filepath.Dir(p), 0o755) != nil {
				continue
			}
			if os.WriteFile(p, []byte(n), 0o644) == nil {
				made[p] = true
			}
		}
		regular := 0 // what is a regular file at the end (a later name may have made an earlier file a folder's parent)
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				regular++
			}
			return nil
		})
		files, truncated, skipped, err := fsys.ListResults(id)
		if err != nil || truncated {
			t.Fatalf("list: %v %v", truncated, err)
		}
		if len(files)+skipped != regular {
			t.Fatalf("%d regular files, %d listed and %d skipped", regular, len(files), skipped)
		}
		for _, rf := range files {
			if err := CheckResultPath(rf.Path); err != nil {
				t.Fatalf("%q listed, but refused: %v", rf.Path, err)
			}
			fh, fi, err := fsys.OpenResult(id, rf.Path)
			if err != nil {
				t.Fatalf("%q listed, but does not open: %v", rf.Path, err)
			}
			fh.Close()
			if fi.Size() != rf.Size {
				t.Fatalf("%q listed of %d bytes, opens to %d", rf.Path, rf.Size, fi.Size())
			}
		}
	})
}
