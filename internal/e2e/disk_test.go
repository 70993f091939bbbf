//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
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
	small := smallDisk(t, "4m")
	waitIdle(t)
	s := startService(t, serviceOpts{dataDir: small})
	first := s.submit(spec("ppo", 1, 8, 1)) // never fits: stays queued, so the scheduler keeps writing its reason
	s.waitState(first.ID, mvp.StatePendingResources, 30*time.Second)

	filler := fill(t, small)

	_, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)), false)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(se.Detail.Message, "disk is full") {
		t.Fatalf("submit on a full disk: %v", err)
	}
	page, _, err := s.c.List(ctxT(t), "", "", 100, "")
	if err != nil {
		t.Fatalf("reads must keep working on a full disk: %v", err)
	}
	// /healthz says so (it said "ok" while every write failed).
	if status, db := s.databaseHealth(); status != "degraded" || !strings.Contains(db, "disk is full") {
		t.Errorf("/healthz on a full disk: status %q, database %q; want degraded, naming the full disk", status, db)
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
	if status, db := s.databaseHealth(); db != "" {
		t.Errorf("/healthz after a write succeeded again: status %q, database %q; want no database sentence", status, db)
	}
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

// databaseHealth returns /healthz's status and its database sentence.
func (s *service) databaseHealth() (status, database string) {
	s.t.Helper()
	h, _ := healthz(s.t, s)
	return h.Status, h.Database
}

// smallDisk mounts a tmpfs of size (e.g. "4m") in a temporary folder for the test (skipped where it cannot).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	small := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); the full-disk test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", small).Run() })
	return small
}

// fill writes to dir until its filesystem is full and returns the file that holds the space.
func fill(t *testing.T, dir string) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return filler
		}
	}
}

// TestFullSharedRootHoldsSubmissions: with shared_root full (the database elsewhere has room), a task that fits is
// not sent to Ray: sent, its driver failed on the full disk as the run's own RUNTIME_ERROR, and its jobspec,
// payload and driver log were never kept. It waits with a reason naming shared_root, and runs once space returns.
func TestFullSharedRootHoldsSubmissions(t *testing.T) {
	small := smallDisk(t, "2m")
	waitIdle(t)
	s := startService(t, serviceOpts{sharedRoot: filepath.Join(small, "shared")})
	filler := fill(t, small)
	task := s.submit(spec("ppo", 1, 1, 1))
	waitFor(t, 30*time.Second, "the task waiting for shared_root", func() (bool, string) {
		got := s.get(task.ID)
		return got.State == mvp.StatePendingResources && strings.Contains(got.PendingReason, "shared_root"),
			fmt.Sprintf("%s %q", got.State, got.PendingReason)
	})
	if got := s.get(task.ID); len(got.Attempts) != 0 {
		t.Fatalf("%d attempts made while the task folder could not be written", len(got.Attempts))
	}
	if _, err := rayc.GetJob(ctxT(t), task.ID+"--a01"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Fatalf("Ray's answer for %s--a01, whose folder could not be written: %v; want no such job", task.ID, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if len(done.Attempts) != 1 {
		t.Errorf("%d attempts, want 1", len(done.Attempts))
	}
	if _, err := os.Stat(filepath.Join(s.sharedRoot, "jobs", task.ID, "jobspec.yaml")); err != nil {
		t.Errorf("the task folder has no jobspec.yaml: %v", err)
	}
	if log := s.logs(task.ID, 1); !strings.Contains(log, "verl-standin: driver exits with code 0") {
		t.Errorf("driver log: %q", tail(log, 5))
	}
}

// TestAnUnmountedSharedRootHoldsSubmissions: shared_root is a mount point (as /private is) and its filesystem is
// unmounted under a running mvp, leaving an empty folder on the disk beneath. mvp made its task folder there and
// sent the job, whose driver, on a node that still had the shared filesystem, wrote its progress, results and log
// elsewhere than mvp looked. The task waits with a reason saying to mount it back, nothing goes to Ray, and it
// runs once the filesystem (with mvp's jobs folder) is mounted again. Ray's own client through the door likewise:
// its working_dir package is refused while the share is not mounted and kept on it once it is back.
func TestAnUnmountedSharedRootHoldsSubmissions(t *testing.T) {
	mnt := smallDisk(t, "8m")
	waitIdle(t)
	s := startService(t, serviceOpts{sharedRoot: mnt})
	if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v: %s", mnt, err, out)
	}
	task := s.submit(spec("ppo", 1, 1, 1))
	waitFor(t, 30*time.Second, "the task waiting for shared_root to be mounted", func() (bool, string) {
		got := s.get(task.ID)
		return got.State == mvp.StatePendingResources && strings.Contains(got.PendingReason, "shared_root") &&
			strings.Contains(got.PendingReason, "mounted"), fmt.Sprintf("%s %q", got.State, got.PendingReason)
	})
	if got := s.get(task.ID); len(got.Attempts) != 0 {
		t.Fatalf("%d attempts made while shared_root was not mounted", len(got.Attempts))
	}
	if _, err := rayc.GetJob(ctxT(t), task.ID+"--a01"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Fatalf("Ray's answer for %s--a01, sent while shared_root was not mounted: %v; want no such job", task.ID, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "jobs")); err == nil {
		t.Errorf("mvp made its jobs folder again on the empty mount point %s", mnt)
	}
	// Ray's own client through the door: its working_dir package is not kept on the empty mount point (where no
	// node sees it and the share, mounted back, hides it); the upload is refused saying why.
	d := newRayDoor(t, s)
	dir := workingDir(t)
	doorID := uniq("unmounted")
	out, code := d.run(2*time.Minute, nil, "job", "submit", "--no-wait", "--working-dir", dir, "--submission-id", doorID,
		"--", "python", "script.py", "0", "1", "0")
	if code == 0 || !strings.Contains(out, "not mounted") {
		t.Errorf("ray job submit --working-dir while shared_root was not mounted: exit %d, want a failure saying shared_root is not mounted:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(mnt, "ray_packages")); err == nil {
		t.Errorf("mvp kept a Ray package on the empty mount point %s", mnt)
	}

	// Mounted back: the shared filesystem, with mvp's jobs folder on it.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s again: %v: %s", mnt, err, out)
	}
	if err := os.Mkdir(filepath.Join(mnt, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if len(done.Attempts) != 1 {
		t.Fatalf("%d attempts, want 1", len(done.Attempts))
	}
	// The door keeps the package on the share again, and its job runs with it.
	if out, code := d.run(3*time.Minute, nil, "job", "submit", "--working-dir", dir, "--submission-id", doorID,
		"--", "python", "script.py", "0", "1", "0"); code != 0 || !strings.Contains(out, "data: from-the-working-dir") {
		t.Errorf("ray job submit --working-dir once shared_root was mounted back: exit %d:\n%s", code, out)
	}
	// The driver log is kept in the folder after the pass that concluded the run.
	waitFor(t, 30*time.Second, "the driver log to be kept", func() (bool, string) {
		a := s.get(task.ID).Attempts[0]
		return a.LogKept, fmt.Sprintf("log_kept %v", a.LogKept)
	})
	if _, err := os.Stat(filepath.Join(mnt, "jobs", task.ID, "jobspec.yaml")); err != nil {
		t.Errorf("the task folder on the mounted shared_root has no jobspec.yaml: %v", err)
	}
}

// TestARunThatEndsOnAFullSharedRootKeepsItsEnd: a run that ends while shared_root is full (the database elsewhere
// has room) cannot have its end (status.json) or its driver log written in its task folder then. The log was kept
// once space returned; status.json never was. Both are there once the disk has room again.
func TestARunThatEndsOnAFullSharedRootKeepsItsEnd(t *testing.T) {
	small := smallDisk(t, "4m")
	waitIdle(t)
	s := startService(t, serviceOpts{sharedRoot: filepath.Join(small, "shared")})
	task := s.submit(spec("ppo", 1, 1, 4))
	s.waitState(task.ID, mvp.StateRunning, 60*time.Second)
	filler := fill(t, small)
	var ended *mvp.Task
	// The run's attempt ends: it may finish, or crash on the full disk (INFRA, and its task waits for room).
	waitFor(t, 90*time.Second, "the run to end on the full disk", func() (bool, string) {
		ended = s.get(task.ID)
		a := ended.Attempts[0]
		return a.RayStatus.Terminal() && (ended.State.Terminal() || a.FailureKind != ""), fmt.Sprintf("%s, attempt 1 %s", ended.State, a.RayStatus)
	})
	t.Logf("the run ended %s on the full disk (attempt 1 %s; %q)", ended.State, ended.Attempts[0].FailureKind, ended.ErrorSummary+ended.PendingReason)
	status := filepath.Join(s.sharedRoot, "jobs", task.ID, "attempts", "a01", "status.json")
	if _, err := os.Stat(status); err == nil {
		t.Logf("status.json was written although the disk was full (the filesystem had room for it)")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the attempt's status.json and driver log once the disk has room", func() (bool, string) {
		a := s.get(task.ID).Attempts[0]
		_, err := os.Stat(status)
		return a.LogKept && err == nil, fmt.Sprintf("log_kept %v, status.json: %v", a.LogKept, err)
	})
	var got struct {
		SubmissionID string        `json:"submission_id"`
		Status       mvp.RayStatus `json:"status"`
		FailureKind  string        `json:"failure_kind"`
		Seal         string        `json:"mvp_seal"`
	}
	if err := json.Unmarshal([]byte(readFile(t, status)), &got); err != nil {
		t.Fatalf("status.json: %v", err)
	}
	a := s.get(task.ID).Attempts[0]
	if got.SubmissionID != a.RaySubmissionID || got.Status != a.RayStatus || got.FailureKind != string(a.FailureKind) || got.Seal == "" {
		t.Errorf("status.json %+v; want the attempt's end as recorded: %s %s kind %q, sealed", got, a.RaySubmissionID, a.RayStatus, a.FailureKind)
	}
}

// TestARunThatCrashesOnAFullSharedRootIsRetriedOnceThereIsRoom: a run that crashed because shared_root filled up
// under it (its progress file and metrics there) ended FAILED as the user's own RUNTIME_ERROR and was not retried.
// It is INFRA now: requeued, held while shared_root cannot be written, and run again once there is room.
func TestARunThatCrashesOnAFullSharedRootIsRetriedOnceThereIsRoom(t *testing.T) {
	small := smallDisk(t, "4m")
	waitIdle(t)
	s := startService(t, serviceOpts{sharedRoot: filepath.Join(small, "shared")})
	task := s.submit(spec("ppo", 1, 1, 20))
	waitFor(t, 90*time.Second, "the run to write its progress", func() (bool, string) {
		got := s.get(task.ID)
		return got.State == mvp.StateRunning && got.Progress != nil, fmt.Sprintf("%s, progress %v", got.State, got.Progress != nil)
	})
	filler := fill(t, small)
	var got *mvp.Task
	waitFor(t, 90*time.Second, "the first attempt to end on the full disk", func() (bool, string) {
		got = s.get(task.ID)
		a := got.Attempts[0]
		return a.RayStatus.Terminal() && a.FailureKind != "", fmt.Sprintf("%s, attempt 1 %s %q", got.State, a.RayStatus, a.FailureKind)
	})
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInfra || got.State.Terminal() || !strings.Contains(a.Message, "shared_root") {
		t.Fatalf("the run that crashed on the full shared_root: task %s, attempt 1 %s %s %q; want INFRA, the task requeued",
			got.State, a.RayStatus, a.FailureKind, a.Message)
	}
	waitFor(t, 60*time.Second, "the retry to be held for shared_root", func() (bool, string) {
		got = s.get(task.ID)
		return strings.Contains(got.PendingReason, "shared_root") && len(got.Attempts) == 1,
			fmt.Sprintf("%s, %d attempt(s), reason %q", got.State, len(got.Attempts), got.PendingReason)
	})
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	got = s.waitState(task.ID, mvp.StateSucceeded, 3*time.Minute)
	if len(got.Attempts) != 2 {
		t.Errorf("succeeded after %d attempts; want the retry to be the second", len(got.Attempts))
	}
}
