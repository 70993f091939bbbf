package taskfs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
