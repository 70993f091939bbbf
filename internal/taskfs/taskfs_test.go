package taskfs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestRefusesNonIDs(t *testing.T) {
	f := FS{Root: t.TempDir()}
	for _, id := range []string{"", "../etc", "mvp2-ppo-20251223-143201-7f3a/../../x", "mvp2-ppo-20251223-143201-7F3A",
		"/abs", "mvp2-dpo-20251223-143201-7f3a", "mvp2-ppo-20251223-143201-7f3a\x00"} {
		if _, err := f.TaskDir(id); mvp.ErrorCode(err) != mvp.CodeInvalid {
			t.Errorf("%q: want invalid, got %v", id, err)
		}
	}
}

func TestWriteAndRead(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	id := "mvp2-ppo-20251223-143201-7f3a"
	if err := f.WriteTask(id, []byte("workload: ppo\n"), json.RawMessage(`{"workload":"ppo"}`)); err != nil {
		t.Fatal(err)
	}
	s := &mvp.JobSubmission{Entrypoint: "python3 -m x", SubmissionID: mvp.SubmissionID(id, 1)}
	if err := f.WriteSubmission(id, 1, s); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteResult(id, 1, &mvp.JobInfo{Status: mvp.RaySucceeded}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadLog(id, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing log: %v", err)
	}
	if err := f.WriteLog(id, 1, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ReadLog(id, 1); err != nil || got != "hello\n" {
		t.Errorf("log %q %v", got, err)
	}
	for _, p := range []string{"jobspec.yaml", "spec.json", "attempts/a01/submission.json", "attempts/a01/submission_id",
		"attempts/a01/status.json", "attempts/a01/driver.log"} {
		if _, err := os.Stat(filepath.Join(root, "jobs", id, p)); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "jobs", id, "attempts/a01/submission_id"))
	if string(b) != id+"--a01\n" {
		t.Errorf("submission_id file %q", b)
	}
}

// TestTaskIDPatternFollowsTheWorkloadTable: an id of every workload in the table matches, other names do not.
func TestTaskIDPatternFollowsTheWorkloadTable(t *testing.T) {
	for _, w := range mvp.Workloads {
		if id := "mvp2-" + string(w) + "-20251223-143201-7f3a"; !TaskIDPattern.MatchString(id) {
			t.Errorf("%s does not match", id)
		}
	}
	for _, id := range []string{"mvp2-dpo-20251223-143201-7f3a", "mvp2--20251223-143201-7f3a", "mvp2-p.o-20251223-143201-7f3a"} {
		if TaskIDPattern.MatchString(id) {
			t.Errorf("%s matches", id)
		}
	}
}

// TestCheckWritableSaysWhenItMadeTheRoot: a shared_root that does not exist (a shared filesystem not mounted, a
// mistyped path) is made, and said to be, so that mvp serve warns instead of writing task folders no Ray node sees.
func TestCheckWritableSaysWhenItMadeTheRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "private")
	if made, err := (FS{Root: root}).CheckWritable(); err != nil || !made {
		t.Errorf("missing root: made %v, %v; want made", made, err)
	}
	if made, err := (FS{Root: root}).CheckWritable(); err != nil || made {
		t.Errorf("existing root: made %v, %v; want not made", made, err)
	}
}

// TestLatestCheckpointIsVerlsRule: the step verl's resume_mode=auto would resume from, as its find_latest_ckpt_path
// finds it: the tracker's step, if that step's folder exists; 0 otherwise, whatever the tracker holds.
func TestLatestCheckpointIsVerlsRule(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.TaskDir(id)
	ckpt := filepath.Join(dir, CheckpointFolder)
	check := func(what string, want int) {
		t.Helper()
		if got, err := f.LatestCheckpoint(id); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", what, got, err, want)
		}
	}
	check("no task folder", 0)
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	check("an empty checkpoint folder", 0)
	for _, c := range []struct {
		tracker string
		want    int
	}{{"2\n", 0}, {"two", 0}, {"-2", 0}, {"", 0}} {
		if err := os.WriteFile(filepath.Join(ckpt, CheckpointTracker), []byte(c.tracker), 0o644); err != nil {
			t.Fatal(err)
		}
		check("tracker "+c.tracker+" and no step folder", c.want)
	}
	if err := os.MkdirAll(filepath.Join(ckpt, "global_step_2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ckpt, CheckpointTracker), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("tracker 2 and global_step_2/", 2)
	// A checkpoint folder that a job made a link to somewhere else is not read through.
	if err := os.RemoveAll(ckpt); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "global_step_5"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, CheckpointTracker), []byte("5"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ckpt); err != nil {
		t.Fatal(err)
	}
	if got, err := f.LatestCheckpoint(id); err == nil && got != 0 {
		t.Errorf("a checkpoint folder linked outside the task folder: step %d read through it", got)
	}
}

// TestLatestCheckpointDoesNotBlockOnAFIFO: the checkpoint folder is the job's to write, and a tracker file it made
// a named pipe held the open for ever, waiting for a writer: the submit (or dry run) of a resume, which reads it for
// its warning, never answered, after its task was stored. A tracker that is not a regular file is an error (no
// warning), as openAttemptFile and openLeaf refuse one.
func TestLatestCheckpointDoesNotBlockOnAFIFO(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	dir, _ := f.TaskDir(id)
	ckpt := filepath.Join(dir, CheckpointFolder)
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(ckpt, CheckpointTracker)
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.LatestCheckpoint(id)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a named pipe read as the tracker, without an error")
		}
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // the open ends, and with it the goroutine
		}
		t.Fatal("reading a tracker that is a named pipe blocked waiting for a writer")
	}
}
