package scheduler_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// breakRoot makes the harness's shared_root unwritable (a path under a regular file: every write fails, even as
// root, as on a full or read-only shared disk) and returns what makes it writable again.
func (h *harness) breakRoot() (heal func()) {
	blocker := filepath.Join(h.t.TempDir(), "disk")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.loop.Files = taskfs.FS{Root: filepath.Join(blocker, "shared")}
	return func() {
		if err := os.Remove(blocker); err != nil {
			h.t.Fatal(err)
		}
		if err := os.Mkdir(blocker, 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestUnwritableSharedRootHoldsTheSubmission: a task whose folder cannot be written on shared_root (disk full,
// read-only) is not sent to Ray. Sent, it failed as the run's own RUNTIME_ERROR (its driver could not write its
// files either) and its jobspec, payload and log were never kept. It waits, saying why and which setting to look
// at, without an event per pass, and goes once the folder can be written.
func TestUnwritableSharedRootHoldsTheSubmission(t *testing.T) {
	h := newHarness(t)
	heal := h.breakRoot()
	task := h.task()
	for i := 0; i < 5; i++ {
		h.tick()
	}
	if n := len(h.ray.jobs); n != 0 {
		t.Fatalf("%d Ray jobs submitted while the task folder could not be written", n)
	}
	got := h.get(task.ID)
	if got.State != mvp.StatePendingResources || len(got.Attempts) != 0 {
		t.Fatalf("state %s with %d attempts; want PENDING_RESOURCES and none", got.State, len(got.Attempts))
	}
	if !strings.Contains(got.PendingReason, "shared_root") || !strings.Contains(got.PendingReason, "cannot be written") {
		t.Errorf("pending_reason %q does not say that shared_root cannot be written", got.PendingReason)
	}
	if evs := h.events(task.ID); len(evs) > 2 {
		t.Errorf("events after 5 passes: %v; want the task's creation and the wait written once", evs)
	}
	heal()
	h.tick()
	got = h.get(task.ID)
	if got.State != mvp.StateSubmitted || len(got.Attempts) != 1 {
		t.Fatalf("after the disk came back: %s, %d attempts", got.State, len(got.Attempts))
	}
	if _, err := os.Stat(filepath.Join(h.loop.Files.Root, "jobs", task.ID, "jobspec.yaml")); err != nil {
		t.Errorf("the task folder was not written: %v", err)
	}
}

// TestUnwritableSharedRootIsNotALogTry: a driver log that cannot be written to the task folder is not a try used
// up: the job stays in Ray (not pruned) until the folder can be written, and its log is then kept.
func TestUnwritableSharedRootIsNotALogTry(t *testing.T) {
	h := newHarness(t)
	h.loop.MaxLogTries = 2
	tasks := []*mvp.Task{h.task(), h.task(), h.task()} // the newer ones put the first past KeepFinishedJobs
	h.tick()
	heal := h.breakRoot()
	for _, task := range tasks {
		h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.tick()
	}
	for i := 0; i < 60; i++ { // 60 s: a try every keepLogEvery (5 s), 2 allowed
		h.tick()
	}
	id := tasks[0].ID + "--a01"
	if got := h.get(tasks[0].ID); got.State != mvp.StateSucceeded {
		t.Fatalf("state %s", got.State)
	}
	for _, d := range h.ray.deleted {
		if d == id {
			t.Fatalf("%s was deleted from Ray before its log was kept", id)
		}
	}
	heal()
	for i := 0; i < 10; i++ {
		h.tick()
	}
	b, err := os.ReadFile(filepath.Join(h.loop.Files.Root, "jobs", tasks[0].ID, "attempts", "a01", "driver.log"))
	if err != nil || !strings.Contains(string(b), "log of "+id) {
		t.Fatalf("driver log after the disk came back: %q %v", b, err)
	}
}

// TestAnUnmountedSharedRootHoldsTheSubmission: shared_root's filesystem unmounted under mvp leaves an empty mount
// point on mvp's local disk. mvp made the task folder there (jobs/ too) and sent the job to Ray, whose nodes saw
// the shared filesystem without that folder: the run's results, progress and kept log were split between two
// disks (seen in the fault walk-through with the real binary). A missing jobs/ folder, which mvp made when it
// started, holds the submission with a reason that says to mount it back; once it is back the task goes.
func TestAnUnmountedSharedRootHoldsTheSubmission(t *testing.T) {
	h := newHarness(t)
	files := taskfs.FS{Root: filepath.Join(h.t.TempDir(), "shared"), Mounted: true}
	if _, err := files.CheckWritable(); err != nil {
		t.Fatal(err)
	}
	h.loop.Files = files
	jobs := filepath.Join(files.Root, "jobs")
	if err := os.RemoveAll(jobs); err != nil { // unmounted: the mount point is empty
		t.Fatal(err)
	}
	task := h.task()
	for i := 0; i < 3; i++ {
		h.tick()
	}
	if n := len(h.ray.jobs); n != 0 {
		t.Fatalf("%d Ray jobs submitted while shared_root was not mounted", n)
	}
	got := h.get(task.ID)
	if got.State != mvp.StatePendingResources || len(got.Attempts) != 0 {
		t.Fatalf("state %s with %d attempts; want PENDING_RESOURCES and none", got.State, len(got.Attempts))
	}
	if !strings.Contains(got.PendingReason, "shared_root") || !strings.Contains(got.PendingReason, "mounted") {
		t.Errorf("pending_reason %q does not say that shared_root is not mounted", got.PendingReason)
	}
	if _, err := os.Stat(jobs); err == nil {
		t.Errorf("%s was made again on the empty mount point", jobs)
	}
	if err := os.Mkdir(jobs, 0o755); err != nil { // mounted back
		t.Fatal(err)
	}
	h.tick()
	got = h.get(task.ID)
	if got.State != mvp.StateSubmitted || len(got.Attempts) != 1 {
		t.Fatalf("after shared_root was mounted back: %s, %d attempts", got.State, len(got.Attempts))
	}
}

// TestAnAttemptsEndIsWrittenOnceTheDiskIsBack: an attempt that ended while shared_root could not be written had
// its status.json (Ray's last word on it and the failure kind, what people, tools and a restored database read)
// logged as not written and never written after; its driver log was kept once the disk came back. The end is
// now written with the log, from what the database recorded.
func TestAnAttemptsEndIsWrittenOnceTheDiskIsBack(t *testing.T) {
	h := newHarness(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	h.loop.Files.Key = key
	task := h.task()
	h.tick()
	heal := h.breakRoot()
	h.loop.Files.Key = key
	h.ray.set(task.ID+"--a01", mvp.RayFailed, "Job entrypoint command failed with exit code 3", 3)
	h.tick()
	a := h.get(task.ID).Attempts[0]
	if a.RayStatus != mvp.RayFailed || a.FailureKind == "" {
		t.Fatalf("attempt %s %q; want FAILED with a failure kind", a.RayStatus, a.FailureKind)
	}
	heal()
	for i := 0; i < 10; i++ {
		h.tick()
	}
	if a := h.get(task.ID).Attempts[0]; !a.LogKept {
		t.Fatal("the driver log was not kept once the disk came back")
	}
	info, kind, err := h.loop.Files.ReadResult(task.ID, 1)
	if err != nil {
		t.Fatalf("status.json once the disk came back: %v", err)
	}
	if info.SubmissionID != task.ID+"--a01" || info.Status != mvp.RayFailed || kind != a.FailureKind ||
		info.DriverExitCode == nil || *info.DriverExitCode != 3 || !strings.Contains(info.Message, "exit code 3") {
		t.Errorf("status.json holds %+v, kind %q; want the attempt's end (FAILED, exit 3, kind %q)", info, kind, a.FailureKind)
	}
}

// TestAnUnwritableSharedRootIsInTheHealth: a task folder that cannot be written (a full or read-only shared disk)
// held the task with a reason on it, and nothing else said so: /healthz was ok. The loop keeps the latest such
// error, for /healthz, until a task folder is written again.
func TestAnUnwritableSharedRootIsInTheHealth(t *testing.T) {
	h := newHarness(t)
	heal := h.breakRoot()
	h.task()
	h.tick()
	if err := h.loop.SharedRootError(); err == nil || !strings.Contains(err.Error(), "shared_root") {
		t.Errorf("SharedRootError with the task folder unwritable: %v; want one naming shared_root", err)
	}
	heal()
	h.tick()
	if err := h.loop.SharedRootError(); err != nil {
		t.Errorf("SharedRootError once a task folder was written again: %v", err)
	}
}

// TestASharedRootErrorEndsWithTheLastHeldTask: the error was kept until a task folder was written again, so a
// held task canceled (the disk freed meanwhile, or not) left /healthz degraded, naming shared_root, until the
// next submission: status.sh exited 3 on a service with nothing to write.
func TestASharedRootErrorEndsWithTheLastHeldTask(t *testing.T) {
	h := newHarness(t)
	h.breakRoot()
	task := h.task()
	h.tick()
	if h.loop.SharedRootError() == nil {
		t.Fatal("no SharedRootError while the task folder cannot be written")
	}
	h.view.Nodes[0].Available["GPU"] = 0 // a pass that submits nothing: the held task still waits for its folder
	h.tick()
	if h.loop.SharedRootError() == nil {
		t.Error("SharedRootError forgotten while a task still waits for its folder")
	}
	got := h.get(task.ID)
	if err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: got.State, To: mvp.StateCanceled,
		At: h.clock.t}); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if err := h.loop.SharedRootError(); err != nil {
		t.Errorf("SharedRootError with no task left waiting for its folder: %v", err)
	}
}

// TestAnUnwritableSharedRootIsSaidOncePerLog: while shared_root was read-only, every pass that tried to keep an
// ended job's driver log (every 5 s, up to 10 jobs) logged level=ERROR "keep driver log: its task folder cannot be
// written on shared_root; will try again" for each: 42 lines for 3 jobs in the walk-through's 70 s, about 2,000 an
// hour per job, for one condition that /healthz already names. It is said once per log until that log is kept.
func TestAnUnwritableSharedRootIsSaidOncePerLog(t *testing.T) {
	h := newHarness(t)
	var logs bytes.Buffer
	h.loop.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	tasks := []*mvp.Task{h.task(), h.task(), h.task()}
	h.tick()
	heal := h.breakRoot()
	for _, task := range tasks {
		h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.tick()
	}
	for i := 0; i < 60; i++ { // 60 s: a keep every 5 s
		h.tick()
	}
	const line = "its task folder cannot be written on shared_root"
	if n := strings.Count(logs.String(), line); n != len(tasks) {
		t.Errorf("%d lines %q for %d logs in 60 s; want one per log:\n%s", n, line, len(tasks), logs.String())
	}
	heal()
	for i := 0; i < 10; i++ {
		h.tick()
	}
	for _, task := range tasks {
		if _, err := os.Stat(filepath.Join(h.loop.Files.Root, "jobs", task.ID, "attempts", "a01", "driver.log")); err != nil {
			t.Errorf("%s: driver log not kept once the disk came back: %v", task.ID, err)
		}
	}
}

// TestACrashOnAnUnwritableSharedRootIsRetried: a run that crashed because shared_root filled up under it ended
// FAILED as the user's RUNTIME_ERROR: its log could not be kept there, so the verdict read only Ray's message,
// which holds the log's last lines alone (the actor lines Ray forwarded after the exception; measured on Ray 2.60).
// The loop reads the log's end from Ray without keeping it, and the crash on mvp's own storage is INFRA: requeued,
// held until the folder can be written.
func TestACrashOnAnUnwritableSharedRootIsRetried(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	id := task.ID + "--a01"
	h.ray.set(id, mvp.RayRunning, "", 0)
	h.tick()
	h.breakRoot()
	h.loop.Retry.SharedRoot = h.loop.Files.Root
	actor := strings.Repeat("\x1b[36m(TaskRunner pid=7)\x1b[0m verl-standin: step 2 progress 0.05\n", 10)
	h.ray.logs = map[string]string{id: "Traceback (most recent call last):\n  File \"/x/_standin.py\", line 85, in report\n" +
		"    with open(tmp, \"w\") as f:\nOSError: [Errno 28] No space left on device\n" + actor}
	h.ray.set(id, mvp.RayFailed, "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n"+actor, 1)
	h.tick()
	got := h.get(task.ID)
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInfra || got.State != mvp.StatePendingResources || !strings.Contains(a.Message, "No space left on device") {
		t.Fatalf("task %s, attempt 1 %s %q; want INFRA with the exception, the task requeued", got.State, a.FailureKind, a.Message)
	}
}
