package api

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// oneTaskStore is a store that holds one task.
type oneTaskStore struct {
	mvp.Store
	t *mvp.Task
}

func (s oneTaskStore) GetTask(_ context.Context, id string) (*mvp.Task, error) {
	if id != s.t.ID {
		return nil, mvp.ErrNotFound
	}
	return s.t, nil
}

// copyCountingRay counts the copies of a job's log asked of it and writes a log of its own.
type copyCountingRay struct {
	mvp.RayClient
	copies int
}

func (r *copyCountingRay) CopyJobLog(_ context.Context, _, _ string, w io.Writer) (int64, error) {
	r.copies++
	n, err := io.WriteString(w, "ray's copy of the log\n")
	return int64(n), err
}

// failingAfter takes n bytes, then fails every write.
type failingAfter struct {
	n    int
	took []byte
}

func (f *failingAfter) Write(p []byte) (int, error) {
	k := min(len(p), f.n-len(f.took))
	f.took = append(f.took, p[:k]...)
	if k < len(p) {
		return k, errors.New("the reader went away")
	}
	return k, nil
}

// TestACopyOfTheKeptLogCutShortIsNotCopiedAgain: when the copy of a kept log from the task folder stopped part way
// (a read error on the shared filesystem, or the writer's), copyLog copied the log again from Ray, from the same
// byte: the bytes already written were written twice (a tail then showed them twice), and it answered as if
// nothing had been written (a tail's next read started again there). It now answers what was written and that
// the copy was cut short.
func TestACopyOfTheKeptLogCutShortIsNotCopiedAgain(t *testing.T) {
	root := t.TempDir()
	files := taskfs.FS{Root: root}
	const id = "mvp2-ppo-20261201-000000-0001"
	dir, err := files.TaskDir(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "attempts", "a01"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := []byte("line one of the kept log\nline two of the kept log\n")
	if err := os.WriteFile(filepath.Join(dir, "attempts", "a01", "driver.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	task := &mvp.Task{ID: id, State: mvp.StateSucceeded, LatestAttemptNo: 1, Attempts: []*mvp.Attempt{{TaskID: id, No: 1,
		RaySubmissionID: mvp.SubmissionID(id, 1), RayStatus: mvp.RaySucceeded, LogKept: true}}}
	ray := &copyCountingRay{}
	s := &Server{Store: oneTaskStore{t: task}, Files: files, Ray: ray}
	w := &failingAfter{n: 10}
	m, _, err := s.copyLog(context.Background(), id, 1, 0, w)
	if err == nil || m != 10 || string(w.took) != string(log[:10]) || ray.copies != 0 {
		t.Errorf("a copy cut short after 10 bytes: answered %d bytes, err %v; the writer took %q; Ray was asked %d times; "+
			"want 10 bytes, an error, and Ray not asked", m, err, w.took, ray.copies)
	}
}
