package taskfs

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// A job can write in its attempt folder (MVP_PROGRESS_FILE, metrics.jsonl, tensorboard live there). A symlink it
// puts at attempts/aNN/driver.log must not make ReadLog (GET /api/v2/tasks/{id}/logs, the web page's log, the Ray
// door) hand out a file outside the task folder, e.g. /proc/self/environ (the API token, the secrets key).
func TestReadLogRefusesASymlinkOutOfTheTaskFolder(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.AttemptDir(id, 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "environ")
	os.WriteFile(outside, []byte("MVP_TOKEN=operator-token\nMVP_SECRETS_KEY=00ff"), 0o600)
	if err := os.Symlink(outside, filepath.Join(dir, "driver.log")); err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadLog(id, 1)
	if err == nil && strings.Contains(got, "operator-token") {
		t.Fatalf("ReadLog followed a symlink planted by the job and returned %q", got)
	}
}

// A job that swaps results/ for a symlink to a folder outside (it creates results/ itself, so it owns that entry)
// must not get a file from there served as a result, however its swaps fall between a check and the open.
func TestResultsFolderSwappedForASymlinkIsNotServed(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	id := "mvp2-ppo-20251223-143201-7f3b"
	res, _ := f.ResultsDir(id)
	os.MkdirAll(filepath.Join(res, "a01"), 0o755)
	os.WriteFile(filepath.Join(res, "a01", "x.txt"), []byte("inside"), 0o644)
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "a01"), 0o755)
	os.WriteFile(filepath.Join(outside, "a01", "x.txt"), []byte("OUTSIDE-SECRET"), 0o644)
	taskDir := filepath.Dir(res)
	realDir, link := filepath.Join(taskDir, "results.real"), filepath.Join(taskDir, "results.link")
	os.Symlink(outside, link)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the job: swap results/ between the real folder and a symlink, over and over
		defer close(done)
		for !stop.Load() {
			os.Rename(res, realDir)
			os.Rename(link, res)
			os.Rename(res, link)
			os.Rename(realDir, res)
		}
	}()
	defer func() { stop.Store(true); <-done }() // before t.TempDir's cleanup removes the folders it renames
	deadline := time.Now().Add(2 * time.Second) // before the fix, one got through within about 20 ms
	for time.Now().Before(deadline) {
		fh, _, err := f.OpenResult(id, "a01/x.txt")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(fh)
		fh.Close()
		if string(b) == "OUTSIDE-SECRET" {
			t.Fatalf("OpenResult served a file outside the task folder (results/ was a symlink when OpenRoot ran)")
		}
	}
}

// TestAttemptWritesStayInTheTaskFolder: a job that replaces a later attempt's folder (or its driver.log) with a
// symlink out of the task folder must not make mvp write the submission, status or log copy there.
func TestAttemptWritesStayInTheTaskFolder(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3c"
	if err := f.WriteTask(id, []byte("workload: ppo\n"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	a1, _ := f.AttemptDir(id, 1)
	a2, _ := f.AttemptDir(id, 2)
	if err := os.MkdirAll(a1, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, a2); err != nil { // the job, from attempt 1, plants attempts/a02
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "planted.log"), filepath.Join(a1, "driver.log")); err != nil {
		t.Fatal(err)
	}
	_ = f.WriteSubmission(id, 2, &mvp.JobSubmission{SubmissionID: id + "--a02", Entrypoint: "x"})
	_ = f.WriteResult(id, 2, &mvp.JobInfo{SubmissionID: id + "--a02"}, mvp.FailureNone)
	_ = f.WriteLog(id, 2, "log of a02")
	_ = f.WriteLog(id, 1, "log of a01")
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("mvp wrote %s outside the task folder, where the job's symlink pointed", e.Name())
	}
	if got, err := f.ReadLog(id, 1); err != nil || got != "log of a01" {
		t.Errorf("attempt 1's log: %q %v, want it written in the task folder in place of the symlink", got, err)
	}
}

// A job can write in shared_root's jobs folder (it writes in its task folder there, which mvp made), so it can
// swap its whole task folder for a symlink: to another user's task folder, or to a folder on mvp's host. The
// results listing and GET …/results/{path} must not follow it, as the log and progress reads (openTask) do not.
func TestResultsOfATaskFolderThatIsASymlinkAreNotServed(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	id := "mvp2-ppo-20251223-143201-7f3c"
	taskDir, _ := f.TaskDir(id)
	outside := t.TempDir() // another task's folder, or one on mvp's host
	os.MkdirAll(filepath.Join(outside, "results", "a01"), 0o755)
	os.WriteFile(filepath.Join(outside, "results", "a01", "x.txt"), []byte("OUTSIDE-SECRET"), 0o644)
	os.MkdirAll(filepath.Dir(taskDir), 0o755)
	if err := os.Symlink(outside, taskDir); err != nil {
		t.Fatal(err)
	}
	if files, _, _, err := f.ListResults(id); len(files) > 0 {
		t.Errorf("ListResults through a symlinked task folder listed %v (err %v)", files, err)
	}
	if fh, _, err := f.OpenResult(id, "a01/x.txt"); err == nil {
		b, _ := io.ReadAll(fh)
		fh.Close()
		t.Errorf("OpenResult through a symlinked task folder served %q", b)
	}
}
