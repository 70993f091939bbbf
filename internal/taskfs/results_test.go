package taskfs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestCheckResultPath(t *testing.T) {
	for _, ok := range []string{"a01/summary.json", "notes.txt", "a01/model/w.bin", "odd name (1).jsonl", "ünïcode.txt", "..hidden"} {
		if err := CheckResultPath(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "./a", "a//b", "a/", "a\\..\\b",
		"a\x00b", "a\nb", "\xff", strings.Repeat("x", 1025)} {
		err := CheckResultPath(bad)
		if err == nil || mvp.ErrorCode(err) != mvp.CodeInvalid {
			t.Errorf("%.40q accepted or wrong code: %v", bad, err)
		}
	}
}

// TestOpenResultStaysInside: OpenResult serves regular files under results/ only; ListResults skips links and
// reports a truncated listing.
func TestOpenResultStaysInside(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.AttemptResultsDir(id, 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok"), 0o644)
	taskDir, _ := f.TaskDir(id)
	os.WriteFile(filepath.Join(taskDir, "spec.json"), []byte("secret"), 0o644)
	os.Symlink("../../spec.json", filepath.Join(dir, "up"))
	fh, fi, err := f.OpenResult(id, "a01/ok.txt")
	if err != nil || fi.Size() != 2 {
		t.Fatalf("open a result: %v", err)
	}
	fh.Close()
	if _, _, err := f.OpenResult(id, "a01/up"); mvp.ErrorCode(err) != mvp.CodeNotFound {
		t.Errorf("a symlink: %v", err)
	}
	if _, _, err := f.OpenResult(id, "../spec.json"); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("..: %v", err)
	}
	// A results folder that is itself a link is refused.
	other := "mvp2-ppo-20251223-143201-7f3b"
	otherDir, _ := f.TaskDir(other)
	os.MkdirAll(otherDir, 0o755)
	os.Symlink(taskDir, filepath.Join(otherDir, "results"))
	if _, _, err := f.OpenResult(other, "spec.json"); err == nil {
		t.Errorf("served through a linked results folder")
	}
	files, truncated, _, err := f.ListResults(id)
	if err != nil || truncated || len(files) != 1 || files[0].Path != "a01/ok.txt" || files[0].AttemptNo != 1 {
		t.Errorf("list: %+v %v %v", files, truncated, err)
	}
}

// TestOpenLeafDoesNotBlockOnAFIFO: a job can swap a checked result file for a named pipe before it is opened; the
// open must not wait for a writer (that held the request's goroutine for ever) but refuse the pipe as not found.
func TestOpenLeafDoesNotBlockOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	type result struct {
		fh  *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		fh, _, err := openLeaf(root, "pipe")
		done <- result{fh, err}
	}()
	select {
	case r := <-done:
		if r.fh != nil {
			r.fh.Close()
			t.Fatal("a named pipe was opened as a result file")
		}
		if r.err == nil {
			t.Fatal("no error for a named pipe")
		}
	case <-time.After(10 * time.Second):
		// Unblock the open so the goroutine ends, then fail.
		if w, err := os.OpenFile(filepath.Join(dir, "pipe"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("opening a named pipe blocked waiting for a writer")
	}
}

// TestWriteSubmissionMakesTheResultsFolder: $MVP_RESULTS_DIR did not exist when the job started, so user code that
// opened a file in it failed (the stand-in made it itself, which hid this).
func TestWriteSubmissionMakesTheResultsFolder(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	if err := f.WriteSubmission(id, 2, &mvp.JobSubmission{SubmissionID: id + "--a02"}); err != nil {
		t.Fatal(err)
	}
	dir, _ := f.AttemptResultsDir(id, 2)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("results folder of attempt 2: %v", err)
	}
}

// TestListedResultsCanBeFetched: files whose names OpenResult refuses (a backslash, a control character, bytes
// that are not UTF-8) were listed, and then could not be fetched. They are counted, not listed.
func TestListedResultsCanBeFetched(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.AttemptResultsDir(id, 1)
	if err := os.MkdirAll(filepath.Join(dir, "bad\nfolder"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ok.txt", "back\\slash.txt", "new\nline.txt", "bad\xffname.txt", "bad\nfolder/inside.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, truncated, skipped, err := f.ListResults(id)
	if err != nil || truncated || skipped != 4 || len(files) != 1 || files[0].Path != "a01/ok.txt" {
		t.Fatalf("list: %+v truncated %v skipped %d %v; want a01/ok.txt and 4 skipped", files, truncated, skipped, err)
	}
	for _, rf := range files {
		fh, _, err := f.OpenResult(id, rf.Path)
		if err != nil {
			t.Errorf("listed %q cannot be fetched: %v", rf.Path, err)
			continue
		}
		fh.Close()
	}
}

// TestListResultsCountsFilesUnderAFolderNotUTF8: a file under a folder whose name is not UTF-8 cannot be asked for,
// and is to be counted in skipped; the walk could not read such a folder (io/fs paths are UTF-8) and passed over
// its files without a count: a job's results vanished from the listing without a word. Found by FuzzListResults.
func TestListResultsCountsFilesUnderAFolderNotUTF8(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.AttemptResultsDir(id, 1)
	for _, p := range []string{"ok.txt", "caf\xe9/a.txt", "caf\xe9/sub/b.txt", "back\\slash/c.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, _, skipped, err := f.ListResults(id)
	if err != nil || len(files) != 1 || files[0].Path != "a01/ok.txt" || skipped != 3 {
		t.Errorf("listed %+v, skipped %d, %v; want a01/ok.txt and 3 skipped", files, skipped, err)
	}
}

// TestAResultPathWithoutItsAttemptFolderSaysWhichToGive: `mvp results ID` lists a01/summary.json; asked for
// summary.json (the name the job wrote in MVP_RESULTS_DIR), the 404 named only the path asked for, so the user did
// not learn that paths begin with the attempt's folder. It names the listed path to give instead.
func TestAResultPathWithoutItsAttemptFolderSaysWhichToGive(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	for _, n := range []int{1, 2} {
		dir, _ := f.AttemptResultsDir(id, n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := f.OpenResult(id, "summary.json")
	if mvp.ErrorCode(err) != mvp.CodeNotFound {
		t.Fatalf("summary.json: %v, want not found", err)
	}
	for _, want := range []string{`"a01/summary.json"`, `"a02/summary.json"`, "attempt's folder"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %s", err, want)
		}
	}
	// A path that is nowhere says only that it is not there.
	_, _, err = f.OpenResult(id, "nothing.json")
	if mvp.ErrorCode(err) != mvp.CodeNotFound || strings.Contains(err.Error(), "a01/") {
		t.Errorf("nothing.json: %v", err)
	}
}
