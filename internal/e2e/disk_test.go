//go:build e2e

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// TestFullDisk puts the database and the task folders on a small tmpfs and fills it: submits answer 503 with a
// clear message, nothing is half-written, the scheduler keeps its pace, and all resumes when space returns.
func TestFullDisk(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); the full-disk test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", small).Run() })
	waitIdle(t)
	s := startService(t, serviceOpts{dataDir: small})
	first := s.submit(spec("ppo", 1, 8, 1)) // never fits: stays queued, so the scheduler keeps writing its reason
	s.waitState(first.ID, mvp.StatePendingResources, 30*time.Second)

	filler := filepath.Join(small, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	_, err = s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)), false)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(se.Detail.Message, "disk is full") {
		t.Fatalf("submit on a full disk: %v", err)
	}
	page, _, err := s.c.List(ctxT(t), "", "", 100, "")
	if err != nil {
		t.Fatalf("reads must keep working on a full disk: %v", err)
	}
	if len(page.Tasks) != 1 {
		t.Errorf("%d tasks after a refused submit, want 1 (nothing half-written)", len(page.Tasks))
	}

	// The scheduler keeps its pace: its ticks fail to write, but it does not spin.
	logLines := func() int { return strings.Count(readFile(t, s.logPath), "\n") }
	before, start := logLines(), time.Now()
	waitFor(t, 30*time.Second, "a few ticks on the full disk", func() (bool, string) {
		return time.Since(start) > 3*time.Second, ""
	})
	if grown := logLines() - before; grown > 200 {
		t.Errorf("%d log lines in ~3 s of ticks at 0.5 s: the scheduler spins", grown)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var task *mvp.Task
	waitFor(t, 30*time.Second, "submits to work again", func() (bool, string) {
		raw, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)), false)
		if err != nil {
			return false, err.Error()
		}
		task = &mvp.Task{}
		return true, string(raw[:min(len(raw), 80)])
	})
	page, _, _ = s.c.List(ctxT(t), "", "", 100, "")
	for _, x := range page.Tasks {
		if x.ID != first.ID {
			task = x
		}
	}
	s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if _, _, err := s.c.Cancel(ctxT(t), first.ID); err != nil {
		t.Errorf("cancel after the disk came back: %v", err)
	}
}
