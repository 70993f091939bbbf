package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/taskfs"
)

// fakeRay is a scriptable Ray for the loop's harness: jobs live in a map; hooks inject failures.
type fakeRay struct {
	mu        sync.Mutex
	jobs      map[string]*mvp.JobInfo
	submits   int
	submitErr func(id string) error // returned instead of (or after) creating the job
	createOn  bool                  // with submitErr: create the job anyway (a timeout after Ray accepted)
	deleted   []string
	stopped   []string
	down      bool // every call fails as if Ray were unreachable
	jobsDown  bool // GetJob and SubmitJob fail as if Ray's job server were unreachable (the cluster still reads)
	gets      int
	stopErr   error                 // returned by StopJob (the job is not stopped)
	stopSlow  bool                  // StopJob is taken but the job runs on (Ray's stop wait: SIGTERM, then SIGKILL)
	logsErr   func(id string) error // when set and non-nil for id, returned by JobLogs
	logs      map[string]string     // when set for id, the job's log (else "log of <id>")
	hang      chan struct{}         // when set, GetJob signals it, then waits for its context (Ray not answering)
	answering func()                // when set, GetJob calls it before it answers (e.g. to let time pass)
}

func newFakeRay() *fakeRay { return &fakeRay{jobs: map[string]*mvp.JobInfo{}} }

func (f *fakeRay) SubmitJob(_ context.Context, s *mvp.JobSubmission) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits++
	if f.down || f.jobsDown {
		return fmt.Errorf("POST /api/jobs/: %w: dial tcp 127.0.0.1:8265: connect: connection refused", mvp.ErrRayUnavailable)
	}
	if f.submitErr != nil {
		if err := f.submitErr(s.SubmissionID); err != nil {
			if f.createOn {
				f.jobs[s.SubmissionID] = &mvp.JobInfo{SubmissionID: s.SubmissionID, Status: mvp.RayPending}
			}
			return err
		}
	}
	if _, ok := f.jobs[s.SubmissionID]; ok {
		return fmt.Errorf("submit: %w", mvp.ErrJobExists)
	}
	f.jobs[s.SubmissionID] = &mvp.JobInfo{SubmissionID: s.SubmissionID, Status: mvp.RayPending}
	return nil
}

func (f *fakeRay) GetJob(ctx context.Context, id string) (*mvp.JobInfo, error) {
	if f.hang != nil {
		select {
		case f.hang <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, fmt.Errorf("GET /api/jobs/%s: %w", id, ctx.Err()) // as the real client says a call cut by its context
	}
	if f.answering != nil {
		f.answering()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.down || f.jobsDown { // as the real client says it: the call, then the cause
		return nil, fmt.Errorf("GET /api/jobs/%s: %w: dial tcp 127.0.0.1:8265: connect: connection refused", id, mvp.ErrRayUnavailable)
	}
	j, ok := f.jobs[id]
	if !ok {
		return nil, mvp.ErrJobNotFound
	}
	c := *j
	return &c, nil
}

func (f *fakeRay) StopJob(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, id)
	if f.stopErr != nil {
		return f.stopErr
	}
	if j, ok := f.jobs[id]; ok && !j.Status.Terminal() && !f.stopSlow {
		j.Status = mvp.RayStopped
	}
	return nil
}

func (f *fakeRay) DeleteJob(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, id)
	delete(f.jobs, id)
	return nil
}

// UploadPackage is not used by the loop's tests (ray_job packages are uploaded by the service's wiring).
func (f *fakeRay) UploadPackage(context.Context, string, []byte) error { return nil }

func (f *fakeRay) JobLogs(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logsErr != nil {
		if err := f.logsErr(id); err != nil {
			return "", err
		}
	}
	if l, ok := f.logs[id]; ok {
		return l, nil
	}
	return "log of " + id + "\n", nil
}

// CopyJobLog writes what JobLogs returns.
func (f *fakeRay) CopyJobLog(ctx context.Context, id, _ string, w io.Writer) (int64, error) {
	logs, err := f.JobLogs(ctx, id)
	if err != nil {
		return 0, err
	}
	n, err := io.WriteString(w, logs)
	return int64(n), err
}

func (f *fakeRay) set(id string, st mvp.RayStatus, msg string, exit int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[id]
	j.Status, j.Message, j.JobID = st, msg, "01000000"
	j.DriverExitCode = &exit
}

type fixedCluster struct {
	view *mvp.ClusterView
	ray  *fakeRay
}

func (c fixedCluster) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	if c.ray != nil && c.ray.down {
		return nil, mvp.ErrRayUnavailable
	}
	return c.view, nil
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

type harness struct {
	t     *testing.T
	db    *sqlite.DB
	ray   *fakeRay
	clock *clock
	loop  *scheduler.Loop
	root  string
	view  *mvp.ClusterView
}

func newHarness(t *testing.T) *harness {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{t: t, db: db, ray: newFakeRay(), clock: &clock{t: time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)}, root: t.TempDir()}
	view := &mvp.ClusterView{Source: "probe", Nodes: []mvp.Node{{ID: "w1", Alive: true,
		Total:     map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
		Available: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100}}}}
	h.view = view
	h.loop = h.newLoop()
	return h
}

// newLoop is a loop over the harness's store, Ray and cluster, as a (re)started mvp makes it.
func (h *harness) newLoop() *scheduler.Loop {
	view, db := h.view, h.db
	return &scheduler.Loop{Store: db, Nodes: db, Ray: h.ray, Cluster: fixedCluster{view, h.ray}, Files: taskfs.FS{Root: h.root},
		Clock: h.clock, Logger: slog.New(slog.DiscardHandler), Tick: time.Second,
		Retry:            scheduler.RetryPolicy{RetryInterval: time.Minute, MaxInfraRetries: 2, MaxResourceRetries: 3, SubmitGrace: time.Minute},
		KeepFinishedJobs: 1,
		Policy: scheduler.Policy{MaxRunning: 10, CPUsPerGPU: map[mvp.Workload]float64{"ppo": 3},
			Driver: map[string]float64{"worker_node": 1}},
		Build: func(t *mvp.Task, n int) (*mvp.JobSubmission, error) {
			return &mvp.JobSubmission{Entrypoint: "python3 -m x", SubmissionID: mvp.SubmissionID(t.ID, n)}, nil
		}}
}

var n int

func (h *harness) task() *mvp.Task { return h.taskOf(2) }

// taskOf queues a 1 × gpus task.
func (h *harness) taskOf(gpus int) *mvp.Task { return h.gangOf(1, gpus) }

// gangOf queues an nnodes × gpus task.
func (h *harness) gangOf(nnodes, gpus int) *mvp.Task {
	n++
	t := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: nnodes, GPUsPerNode: gpus, JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), t); err != nil {
		h.t.Fatal(err)
	}
	return t
}

// worker4 is an idle worker node with 4 GPUs.
func worker4(id string) mvp.Node {
	return mvp.Node{ID: id, Alive: true, Total: map[string]float64{"GPU": 4, "CPU": 96, "worker_node": 100},
		Available: map[string]float64{"GPU": 4, "CPU": 96, "worker_node": 100}}
}

func (h *harness) tick() {
	h.t.Helper()
	h.clock.t = h.clock.t.Add(time.Second)
	if err := h.loop.RunOnce(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get(id string) *mvp.Task {
	t, err := h.db.GetTask(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

func TestLoopRunsATaskToSucceeded(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateSubmitted || got.Attempts[0].RaySubmissionID != task.ID+"--a01" {
		t.Fatalf("after one tick: %s %+v", got.State, got.Attempts)
	}
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	if s := h.get(task.ID).State; s != mvp.StateRunning {
		t.Fatalf("state %s", s)
	}
	h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "ok", 0)
	h.tick()
	got = h.get(task.ID)
	if got.State != mvp.StateSucceeded || got.Attempts[0].RayStatus != mvp.RaySucceeded {
		t.Fatalf("%s %+v", got.State, got.Attempts[0])
	}
	if log, err := (taskfs.FS{Root: h.root}).ReadLog(task.ID, 1); err != nil || log == "" {
		t.Errorf("driver log not kept: %v", err)
	}
	if h.ray.submits != 1 {
		t.Errorf("%d submits", h.ray.submits)
	}
}

func TestLoopRequeuesInsufficientResources(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayFailed, "Traceback\nValueError: Total available GPUs 0.0 is less than total desired GPUs 2", 1)
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StatePendingResources || got.Attempts[0].FailureKind != mvp.FailureInsufficientResources ||
		got.NextRunAt == nil || !got.NextRunAt.Equal(h.clock.t.Add(time.Minute)) {
		t.Fatalf("%s %+v next %v", got.State, got.Attempts[0], got.NextRunAt)
	}
	h.tick() // not due yet: no new attempt
	if h.get(task.ID).LatestAttemptNo != 1 {
		t.Fatal("retried before next_run_at")
	}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	got = h.get(task.ID)
	if got.LatestAttemptNo != 2 || got.Attempts[1].RaySubmissionID != task.ID+"--a02" || got.State != mvp.StateSubmitted {
		t.Fatalf("second attempt: %s %+v", got.State, got.Attempts)
	}
}

func TestLoopSubmitOutcomes(t *testing.T) {
	t.Run("timeout after Ray accepted: found by lookup, one job", func(t *testing.T) {
		h := newHarness(t)
		h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable }
		h.ray.createOn = true
		task := h.task()
		h.tick()
		if s := h.get(task.ID).State; s != mvp.StateSubmitted || h.ray.submits != 1 {
			t.Errorf("%s after %d submits", s, h.ray.submits)
		}
	})
	t.Run("Ray down: stays SUBMITTING, then resubmitted with the same id", func(t *testing.T) {
		h := newHarness(t)
		down := true
		h.ray.submitErr = func(string) error {
			if down {
				return mvp.ErrRayUnavailable
			}
			return nil
		}
		task := h.task()
		h.tick()
		if s := h.get(task.ID).State; s != mvp.StateSubmitting {
			t.Fatalf("state %s", s)
		}
		down = false
		h.clock.t = h.clock.t.Add(2 * time.Second) // past the backoff of the outage the failed POST began
		h.tick()
		got := h.get(task.ID)
		if got.State != mvp.StateSubmitted || len(got.Attempts) != 1 || h.ray.submits != 2 {
			t.Errorf("%s, %d attempts, %d submits", got.State, len(got.Attempts), h.ray.submits)
		}
	})
	t.Run("Ray refuses the payload: FAILED as USER_ERROR", func(t *testing.T) {
		h := newHarness(t)
		h.ray.submitErr = func(string) error { return &mvp.Error{Code: mvp.CodeInvalid, Message: "bad runtime_env"} }
		task := h.task()
		h.tick()
		got := h.get(task.ID)
		if got.State != mvp.StateFailed || got.Attempts[0].FailureKind != mvp.FailureUserError || got.ErrorSummary == "" {
			t.Errorf("%s %+v", got.State, got.Attempts[0])
		}
	})
	t.Run("canceled while the submit was in flight: the job is stopped", func(t *testing.T) {
		h := newHarness(t)
		var task *mvp.Task
		h.ray.submitErr = func(string) error {
			// The API's cancel lands while Ray is accepting the job.
			err := h.db.Apply(context.Background(), mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateCanceled, At: h.clock.t})
			if err != nil {
				t.Error(err)
			}
			return nil
		}
		task = h.task()
		h.tick()
		if s := h.get(task.ID).State; s != mvp.StateCanceled || len(h.ray.stopped) == 0 {
			t.Errorf("%s, stopped %v", s, h.ray.stopped)
		}
		h.tick()
		if a := h.get(task.ID).Attempts[0]; a.RayStatus != mvp.RayStopped {
			t.Errorf("attempt %+v", a)
		}
	})
}

func TestLoopLostJobsAreInfraRetriedThenFail(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	for i := 1; i <= 3; i++ {
		h.tick() // submit attempt i
		sid := mvp.SubmissionID(task.ID, i)
		if _, err := h.ray.GetJob(context.Background(), sid); err != nil {
			t.Fatalf("attempt %d not submitted: %v (state %s)", i, err, h.get(task.ID).State)
		}
		h.ray.DeleteJob(context.Background(), sid) // the head restarted and forgot it
		h.tick()
	}
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || len(got.Attempts) != 3 {
		t.Fatalf("%s after %d attempts", got.State, len(got.Attempts))
	}
	for _, a := range got.Attempts {
		if a.FailureKind != mvp.FailureInfra {
			t.Errorf("attempt %d: %s", a.No, a.FailureKind)
		}
	}
}

func TestLoopPrunesFinishedJobs(t *testing.T) {
	h := newHarness(t)
	var ids []string
	for i := 0; i < 3; i++ {
		task := h.task()
		h.tick()
		h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "", 0)
		h.clock.t = h.clock.t.Add(time.Second)
		h.tick()
		ids = append(ids, task.ID+"--a01")
	}
	h.tick()
	if len(h.ray.deleted) != 2 || h.ray.deleted[0] == ids[2] || h.ray.deleted[1] == ids[2] {
		t.Errorf("deleted %v; the newest (%s) must stay", h.ray.deleted, ids[2])
	}
	h.tick()
	if len(h.ray.deleted) != 2 {
		t.Errorf("deleted twice: %v", h.ray.deleted)
	}
}

func TestLoopBacksOffWhileRayIsDown(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.ray.down = true
	h.ray.gets = 0
	for i := 0; i < 30; i++ {
		h.tick() // one second each
	}
	if h.ray.gets >= 15 {
		t.Errorf("%d calls to Ray in 30 ticks while it was down: no backoff", h.ray.gets)
	}
	if h.ray.gets < 3 {
		t.Errorf("only %d calls in 30 s: the backoff is too long", h.ray.gets)
	}
	got := h.get(task.ID)
	if got.State != mvp.StateRunning {
		t.Errorf("Ray's absence changed the task: %s", got.State)
	}
	if hl := h.loop.Health(); hl.RayOK || hl.RayDownSince == nil {
		t.Errorf("health %+v", hl)
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if hl := h.loop.Health(); !hl.RayOK {
		t.Errorf("health after Ray came back: %+v", hl)
	}
	evs, _, _ := h.db.Events(context.Background(), task.ID, "", 1000)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	joined := fmt.Sprint(types)
	if !strings.Contains(joined, mvp.EventRayUnavailable) || !strings.Contains(joined, mvp.EventRayAvailable) {
		t.Errorf("events %v", types)
	}
}

// TestAStopCutsATickHungOnRay: a shutdown lets the tick in progress finish its writes, but a tick waiting on Ray
// (a dashboard that does not answer, each call until its timeout) held the stop for a minute. Past StopGrace its
// calls are cut, as a crash would cut them (every step is safe to lose).
func TestAStopCutsATickHungOnRay(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.ray.hang = make(chan struct{}, 1)
	h.loop.StopGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.loop.Run(ctx) }()
	select {
	case <-h.ray.hang:
	case <-time.After(10 * time.Second):
		t.Fatal("the tick never asked Ray")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not stop within 10 s of its stop while Ray did not answer")
	}
}

// TestATickCutByTheStopIsNoError: mvp serve stopped (SIGTERM) while Ray's dashboard accepted and never answered
// logged level=ERROR msg="scheduler tick" err="load queue: load queue: context canceled" for an orderly stop, the
// line an operator greps for failures. A tick cut by the stop is said so at INFO, and no tick starts after the stop.
func TestATickCutByTheStopIsNoError(t *testing.T) {
	h := newHarness(t)
	running := h.task() // a live task: the rest of a cut tick synced it on the dead context (ERROR "sync attempt",
	h.tick()            // a false "Ray is unavailable" and an outage event; found in review)
	h.ray.set(running.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	var logs bytes.Buffer
	hung := &hungCluster{entered: make(chan struct{}, 8)}
	h.loop = h.newLoop()
	h.loop.Cluster = hung
	h.loop.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h.loop.StopGrace = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.loop.Run(ctx) }()
	select {
	case <-hung.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the tick never read the cluster")
	}
	h.loop.Wake()
	cancel()
	<-done
	if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "unavailable") {
		t.Errorf("an orderly stop logged an error or an outage:\n%s", logs.String())
	}
	if evs := h.eventsOf(running.ID, mvp.EventRayUnavailable); len(evs) != 0 {
		t.Errorf("an orderly stop wrote an outage in the task's history: %+v", evs)
	}
	if len(hung.entered) != 0 {
		t.Errorf("%d ticks began after the stop", len(hung.entered))
	}
}

// TestATickCutWhileSyncingIsNoReturnOfRay: Ray's dashboard stopped answering (frozen) while the live probe still
// read the cluster; mvp serve, backing off, got SIGTERM during a pass whose lookup of the only live attempt hung.
// Cut by the stop, the lookup failed with context canceled, not as Ray unavailable, and the pass went on as if Ray
// had answered: level=ERROR "sync attempt", then "Ray is available again" (down_for=30s) and a RAY_AVAILABLE event
// tried in the task's history, while Ray had not come back (found in a fault walk-through).
func TestATickCutWhileSyncingIsNoReturnOfRay(t *testing.T) {
	h := newHarness(t)
	running := h.task()
	h.tick()
	h.ray.set(running.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.ray.jobsDown = true // the job server does not answer; the cluster reads
	h.tick()
	if h.loop.Health().RayOK {
		t.Fatal("Ray's job server did not answer, yet the loop says Ray is ok")
	}
	var logs bytes.Buffer
	h.loop.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h.ray.jobsDown = false
	h.ray.hang = make(chan struct{}, 1)
	h.clock.t = h.clock.t.Add(time.Minute) // past the backoff
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.loop.RunOnce(ctx) }()
	select {
	case <-h.ray.hang:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass never asked Ray for the job")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not end when its context was canceled")
	}
	if s := logs.String(); strings.Contains(s, "level=ERROR") || strings.Contains(s, "available again") {
		t.Errorf("a pass cut by the stop logged an error or Ray's return:\n%s", s)
	}
	if h.loop.Health().RayOK {
		t.Errorf("a pass cut by the stop marked Ray ok: %+v", h.loop.Health())
	}
	if evs := h.eventsOf(running.ID, mvp.EventRayAvailable); len(evs) != 0 {
		t.Errorf("a pass cut by the stop wrote Ray's return in the task's history: %+v", evs)
	}
}

// hungCluster is a dashboard that accepts and never answers: each read waits for its context.
type hungCluster struct{ entered chan struct{} }

func (c *hungCluster) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	c.entered <- struct{}{}
	<-ctx.Done()
	return nil, fmt.Errorf("cluster status: %w", ctx.Err())
}

// TestOutageEventsNameNoOtherTask: Ray's absence is noticed on one task's call, but it is written in every live
// task's history and in /healthz. Those words must not carry that task's job id: another user's task showed it.
func TestOutageEventsNameNoOtherTask(t *testing.T) {
	h := newHarness(t)
	a, b := h.task(), h.task()
	h.tick()
	h.ray.set(a.ID+"--a01", mvp.RayRunning, "", 0)
	h.ray.set(b.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.ray.down = true
	h.tick()
	for _, task := range []*mvp.Task{a, b} {
		evs, _, _ := h.db.Events(context.Background(), task.ID, "", 1000)
		seen := false
		for _, e := range evs {
			if e.Type != mvp.EventRayUnavailable {
				continue
			}
			seen = true
			if p := string(e.Payload); strings.Contains(p, a.ID) || strings.Contains(p, b.ID) || !strings.Contains(p, "connection refused") {
				t.Errorf("%s's RAY_UNAVAILABLE says %s; want the cause, naming no task", task.ID, p)
			}
		}
		if !seen {
			t.Errorf("%s: no RAY_UNAVAILABLE event", task.ID)
		}
	}
	if e := h.loop.Health().RayError; strings.Contains(e, a.ID) || strings.Contains(e, b.ID) || e == "" {
		t.Errorf("health's ray_error %q names a task", e)
	}
}

// TestLoopWritesAPassOfWaitsInFewCommits: the waits of one pass are independent compare-and-sets; written one
// after the other, each waited for its own commit (fsync), so that a pass after a burst of submissions took as
// many commits as new tasks (and a shutdown waited for all of them). They go to the writer together, up to
// waitsPerWrite in one request (ApplyAll), written in one transaction.
func TestLoopWritesAPassOfWaitsInFewCommits(t *testing.T) {
	h := newHarness(t)
	h.tick() // the first healthy pass also records the count of GPU nodes, once
	const n = 200
	var ids []string
	for i := 0; i < n; i++ {
		task := h.task()
		ids = append(ids, task.ID)
	}
	h.view.Nodes[0].Available["GPU"] = 0 // nothing fits: every task gets a Wait
	before := h.db.Stats()
	h.tick()
	after := h.db.Stats()
	for _, id := range ids {
		if s := h.get(id).State; s != mvp.StatePendingResources {
			t.Fatalf("task %s is %s, want %s", id, s, mvp.StatePendingResources)
		}
	}
	// One request to the writer per waitsPerWrite waits (ApplyAll), each in one commit at most.
	want := int64((n + scheduler.WaitsPerWrite - 1) / scheduler.WaitsPerWrite)
	if writes, txns := after.Writes-before.Writes, after.Transactions-before.Transactions; writes > want || txns > want {
		t.Fatalf("%d waits written in %d requests and %d transactions; want at most %d of each", n, writes, txns, want)
	}
}

// TestSyncedOnlyOnceEveryLiveAttemptIsFollowed: Synced is closed by the first pass that asked Ray about every live
// attempt (what the schedules wait for after a start), not by one that found Ray down.
func TestSyncedOnlyOnceEveryLiveAttemptIsFollowed(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()             // submitted: a live attempt
	h.loop = h.newLoop() // mvp restarted, and Ray down
	h.ray.down = true
	synced := h.loop.Synced()
	h.tick()
	select {
	case <-synced:
		t.Fatal("Synced closed by a pass that could not ask Ray")
	default:
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute) // past the backoff
	h.tick()
	select {
	case <-synced:
	default:
		t.Fatalf("Synced not closed after a full pass (task %s)", task.ID)
	}
}

// slowCluster is a cluster whose reading takes d of the harness's clock, as a probe or dashboard that answers
// late does.
type slowCluster struct {
	fixedCluster
	clock *clock
	d     time.Duration
}

func (c slowCluster) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	c.clock.t = c.clock.t.Add(c.d)
	return c.fixedCluster.ReadCluster(ctx)
}

// A pass stamped what it wrote with the time it began: after a cluster reading that took 20 s, the submission's
// event and its attempt's created_at said it happened 20 s before it did (and P3, which measures from an
// attempt's created_at, read short). Found in a fault walk-through.
func TestWritesAreStampedWhenTheyHappen(t *testing.T) {
	h := newHarness(t)
	h.loop.Cluster = slowCluster{fixedCluster{h.view, h.ray}, h.clock, 20 * time.Second}
	run := h.task()
	wait := h.taskOf(16) // never fits: waits
	began := h.clock.t.Add(time.Second)
	h.tick()
	after := h.clock.t // the pass's writes came after the 20 s reading
	if !after.After(began) {
		t.Fatalf("the slow cluster did not move the clock")
	}
	got := h.get(run.ID)
	if len(got.Attempts) != 1 || !got.Attempts[0].CreatedAt.Equal(after) {
		t.Errorf("attempt created_at %v; want %v (when it was recorded, not %v when the pass began)", got.Attempts, after, began)
	}
	for _, id := range []string{run.ID, wait.ID} {
		evs, _, err := h.db.Events(context.Background(), id, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if !last.TS.Equal(after) {
			t.Errorf("%s: event %s at %v; want %v (when written), not the pass's start %v", id, last.Type, last.TS, after, began)
		}
	}
}

// The pass that finds a gang's job SUCCEEDED fetched its driver log from Ray before deciding, so the waiting
// task's submission came after a log download it does not depend on (10–25 ms on the local cluster, more for a
// long log): P3's path from freed GPUs to the next submission. A success's log is not needed to conclude it; it
// is kept after the pass's actions, in the same pass.
func TestASuccessLogIsKeptAfterTheNextSubmission(t *testing.T) {
	h := newHarness(t)
	first := h.taskOf(8)
	h.tick()
	next := h.taskOf(8) // waits behind first
	h.tick()
	if s := h.get(next.ID).State; s != mvp.StatePendingResources {
		t.Fatalf("next: %s, want it waiting", s)
	}
	h.ray.set(first.ID+"--a01", mvp.RaySucceeded, "ok", 0)
	submittedFirst := false
	h.ray.logsErr = func(id string) error {
		if id == first.ID+"--a01" {
			_, submittedFirst = h.ray.jobs[next.ID+"--a01"] // JobLogs holds f.mu
		}
		return nil
	}
	h.tick()
	if s := h.get(next.ID).State; s != mvp.StateSubmitted {
		t.Fatalf("next after first succeeded: %s", s)
	}
	if !submittedFirst {
		t.Errorf("first's log was fetched before next was submitted")
	}
	got := h.get(first.ID)
	if got.State != mvp.StateSucceeded || !got.Attempts[0].LogKept {
		t.Errorf("first: %s, log kept %v; want SUCCEEDED with its log kept in the same pass", got.State, got.Attempts[0].LogKept)
	}
	if log, err := (taskfs.FS{Root: h.root}).ReadLog(first.ID, 1); err != nil || log == "" {
		t.Errorf("first's driver log not in its folder: %v", err)
	}
}

// A database restored from a copy older than a run, whose Ray job mvp had since deleted (keep_finished_jobs):
// the task, QUEUED in the copy, was sent to Ray again under the same submission id and ran twice; one RUNNING in
// the copy was taken as lost by Ray (INFRA) and run again. The attempt's end is in its task folder (status.json,
// sealed with the database's key when it was concluded): it is read from there, and nothing is sent. An end mvp
// judged itself keeps its kind (it was classified again from Ray's message, UNKNOWN, and the task failed instead
// of being retried: found in review). Found in a walk-through.
func TestARestoredDatabaseDoesNotRunAnEndedAttemptAgain(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	h := newHarness(t)
	h.loop.Files.Key = key
	done := h.task() // runs to SUCCEEDED
	lost := h.task() // its job is lost by Ray: INFRA, retried
	at := h.clock.t
	h.tick()
	h.ray.set(done.ID+"--a01", mvp.RaySucceeded, "", 0)
	h.ray.set(lost.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	h.ray.mu.Lock()
	delete(h.ray.jobs, lost.ID+"--a01")
	h.ray.mu.Unlock()
	h.tick()
	if got := h.get(done.ID); got.State != mvp.StateSucceeded {
		t.Fatalf("done: %s", got.State)
	}
	if got := h.get(lost.ID); got.Attempts[0].FailureKind != mvp.FailureInfra || got.LatestAttemptNo != 2 {
		t.Fatalf("lost: %s, attempts %+v", got.State, got.Attempts[0])
	}
	// Both jobs leave Ray (pruned); lost's second attempt is still there.
	h.ray.mu.Lock()
	delete(h.ray.jobs, done.ID+"--a01")
	submits := h.ray.submits
	h.ray.mu.Unlock()

	// The copy, taken before: done QUEUED, lost RUNNING on its first attempt. Same task folders, same key.
	r := newHarness(t)
	r.ray, r.root, r.clock.t = h.ray, h.root, h.clock.t
	for _, task := range []*mvp.Task{done, lost} {
		c := *task
		c.State, c.CreatedAt, c.UpdatedAt = mvp.StateQueued, at, at
		if err := r.db.CreateTask(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
	}
	att := &mvp.Attempt{TaskID: lost.ID, No: 1, RaySubmissionID: lost.ID + "--a01", CreatedAt: at}
	running := *att
	running.RayStatus = mvp.RayRunning
	for _, c := range []mvp.Change{{TaskID: lost.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: at, NewAttempt: att},
		{TaskID: lost.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: at, AttemptUpdate: &running}} {
		if err := r.db.Apply(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	r.loop = r.newLoop()
	r.loop.Files.Key = key
	r.tick()
	r.tick()
	if got := r.get(done.ID); got.State != mvp.StateSucceeded || len(got.Attempts) != 1 || got.Attempts[0].RayStatus != mvp.RaySucceeded {
		t.Errorf("done after the restore: %s with %d attempt(s); want SUCCEEDED from its kept end", got.State, len(got.Attempts))
	}
	if got := r.get(lost.ID); got.State.Terminal() || got.Attempts[0].FailureKind != mvp.FailureInfra || got.LatestAttemptNo != 2 {
		t.Errorf("lost after the restore: %s, attempt 1 %s, latest %d; want attempt 1 INFRA as judged, retried as attempt 2",
			got.State, got.Attempts[0].FailureKind, got.LatestAttemptNo)
	}
	h.ray.mu.Lock()
	defer h.ray.mu.Unlock()
	if _, ok := h.ray.jobs[done.ID+"--a01"]; ok {
		t.Errorf("done's attempt 1 was sent to Ray again")
	}
	if h.ray.submits-submits > 1 { // lost's attempt 2, which Ray has (the copy does not know it)
		t.Errorf("%d submissions to Ray after the restore; want at most lost's attempt 2 again", h.ray.submits-submits)
	}
}

// A job can write in its attempt's folder: a status.json it wrote in its next attempt's folder, claiming that
// attempt succeeded, skipped the attempt when its first one failed (and ended the task SUCCEEDED, starting its
// after_ok dependents). Only an end with mvp's seal is read back. Found in review.
func TestAForgedEndInTheTaskFolderIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.loop.Files.Key = []byte("0123456789abcdef0123456789abcdef")
	task := h.task()
	h.tick()
	code := 0
	sub := mvp.SubmissionID(task.ID, 2)
	if err := (taskfs.FS{Root: h.root}).WriteResult(task.ID, 2, &mvp.JobInfo{SubmissionID: sub, Status: mvp.RaySucceeded,
		DriverExitCode: &code}, ""); err != nil { // written without mvp's key: no seal
		t.Fatal(err)
	}
	h.ray.mu.Lock()
	delete(h.ray.jobs, task.ID+"--a01") // lost by Ray: INFRA, retried
	h.ray.mu.Unlock()
	h.tick()
	h.tick()
	h.ray.mu.Lock()
	_, sent := h.ray.jobs[sub]
	h.ray.mu.Unlock()
	if got := h.get(task.ID); got.State == mvp.StateSucceeded || !sent {
		t.Errorf("with a forged status.json for attempt 2: %s, attempt 2 sent to Ray %v; want it sent", got.State, sent)
	}
}

// lockedLog is a log sink a test reads after the loop wrote it (the waits are written from goroutines).
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listingRay is a fakeRay that also lists its jobs, with metadata.
type listingRay struct {
	*fakeRay
	meta map[string]map[string]string
}

func (r listingRay) ListJobs(context.Context) ([]*mvp.JobInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*mvp.JobInfo
	for id, j := range r.jobs {
		c := *j
		c.Metadata = r.meta[id]
		out = append(out, &c)
	}
	return out, nil
}

// A database restored from a copy older than a job: the job ran on, holding its GPUs, and nothing said so. The
// loop lists Ray's jobs at its first synced pass (and every 10 min) and logs once each live job whose metadata
// names this database but that it does not follow; another mvp's jobs (another instance id) and its own followed
// ones are not named. Found in a walk-through.
func TestAJobThisMvpDoesNotFollowIsLogged(t *testing.T) {
	h := newHarness(t)
	var log lockedLog
	h.loop.Logger = slog.New(slog.NewTextHandler(&log, nil))
	lr := listingRay{fakeRay: h.ray, meta: map[string]map[string]string{}}
	h.loop.Jobs, h.loop.Instance = lr, "db1"
	followed := h.task()
	h.tick()
	lr.meta[followed.ID+"--a01"] = map[string]string{mvp.MetaInstance: "db1"}
	h.ray.mu.Lock()
	for id, inst := range map[string]string{"mvp2-ppo-20251223-000000-dead--a01": "db1", "mvp2-ppo-20251223-000000-beef--a01": "db2"} {
		h.ray.jobs[id] = &mvp.JobInfo{SubmissionID: id, Status: mvp.RayRunning}
		lr.meta[id] = map[string]string{mvp.MetaInstance: inst, "task_id": id[:len(id)-5]}
	}
	h.ray.mu.Unlock()
	h.loop = h.newLoop() // a restart: the check runs at its first pass
	h.loop.Jobs, h.loop.Instance, h.loop.Logger = lr, "db1", slog.New(slog.NewTextHandler(&log, nil))
	h.tick()
	h.tick()
	out := log.String()
	if strings.Count(out, "does not follow it") != 1 || !strings.Contains(out, "dead--a01") {
		t.Errorf("log: want one warning naming dead--a01:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") { // the followed task's own lines (submitted to Ray) are not the warning
		if strings.Contains(l, "does not follow it") && (strings.Contains(l, "beef--a01") || strings.Contains(l, followed.ID)) {
			t.Errorf("another mvp's job or a followed one was named:\n%s", out)
		}
	}
}

// The Ray cluster restarted while mvp ran: its first reading after the outage had one of the two workers back. A
// 2 × 4 gang requeued by the outage was judged never to fit, and a newer 1 × 4 task took the first worker; the gang
// then waited behind it (days, with real runs). After an outage nothing is admitted until as many GPU nodes are
// alive as before it (at most rejoinWait): then the gang, older, goes first. The hold also holds on a pass whose
// job lookups fail while the cluster reads (usual just after a restart), and the queue's view shows it (found in
// review). Found in a walk-through.
func TestAfterAnOutageNothingIsAdmittedUntilTheNodesRejoin(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	// A driver-only job (no gang) runs throughout: the loop follows it, so a pass asks Ray's job server.
	n++
	driver := &mvp.Task{ID: fmt.Sprintf("mvp2-ray_job-20251223-143201-%04x", n), Workload: mvp.WorkloadRayJob,
		State: mvp.StateQueued, Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`),
		CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), driver); err != nil {
		t.Fatal(err)
	}
	h.tick()
	h.ray.set(driver.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick() // a healthy pass sees both workers
	if s := h.get(driver.ID).State; s != mvp.StateRunning {
		t.Fatalf("the driver-only job: %s", s)
	}
	h.ray.down = true
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	gang := h.gangOf(2, 4)
	h.clock.t = h.clock.t.Add(time.Second)
	newer := h.taskOf(4)
	// Ray comes back with one of the two workers; its job server does not answer yet.
	h.ray.down, h.ray.jobsDown = false, true
	h.view.Nodes = []mvp.Node{worker4("w1")}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	h.ray.jobsDown = false
	h.clock.t = h.clock.t.Add(5 * time.Second) // past the backoff of the failed lookups
	h.tick()
	if s := h.get(newer.ID).State; s == mvp.StateSubmitted || s == mvp.StateSubmitting {
		t.Fatalf("the newer 1 × 4 task was admitted on the half-rejoined cluster: %s", s)
	}
	snap, err := h.loop.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := scheduler.Explain(h.clock.t, snap, h.loop.Policy)
	if len(v.Starting) != 0 || len(v.Queue) == 0 || v.Queue[0].Code != scheduler.CodeClusterUnknown ||
		!strings.Contains(v.Queue[0].Reason, "1 of the 2 GPU nodes") {
		t.Errorf("the queue's view during the hold: starting %v, %+v; want nothing starting and the hold's reason", v.Starting, v.Queue)
	}
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.tick()
	if s := h.get(gang.ID).State; s != mvp.StateSubmitted {
		t.Errorf("the gang once both workers are back: %s %q; want it submitted first", s, h.get(gang.ID).PendingReason)
	}
}

// slowJobs is a Ray whose job lookups take d of the harness's clock each.
type slowJobs struct {
	*fakeRay
	clock *clock
	d     time.Duration
}

func (r slowJobs) GetJob(ctx context.Context, id string) (*mvp.JobInfo, error) {
	r.clock.t = r.clock.t.Add(r.d)
	return r.fakeRay.GetJob(ctx, id)
}

// TestARequeuedGangIsDecidedInTheSamePass: the CI run of TestRayOutage on 2026-11-26 admitted the newer 1 × 4 task
// before the 2 × 4 gang whose job Ray lost in the outage. The pass concluded the lost attempt (INFRA, requeued at
// once: next_run_at stamped when written), then decided with the time the pass began, earlier than that
// next_run_at: the gang looked as if it were backing off, and the newer task took the freed GPUs. A pass now
// decides at the time its snapshot is read.
func TestARequeuedGangIsDecidedInTheSamePass(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	gang := h.gangOf(2, 4)
	h.tick()
	sid := gang.ID + "--a01"
	h.ray.set(sid, mvp.RayRunning, "", 0)
	h.view.Nodes[0].Available["GPU"], h.view.Nodes[1].Available["GPU"] = 0, 0
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if s := h.get(gang.ID).State; s != mvp.StateRunning {
		t.Fatalf("the gang: %s", s)
	}
	h.clock.t = h.clock.t.Add(time.Second)
	newer := h.taskOf(4)
	h.tick() // it waits behind the running gang
	// Ray restarts: the gang's job is gone, both workers are free again, and job lookups take a while.
	h.ray.mu.Lock()
	delete(h.ray.jobs, sid)
	h.ray.mu.Unlock()
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.loop.Ray = slowJobs{h.ray, h.clock, 2 * time.Second}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	got := h.get(gang.ID)
	if s := h.get(newer.ID).State; s == mvp.StateSubmitted || s == mvp.StateSubmitting {
		t.Errorf("the newer 1 × 4 task was admitted before the requeued gang (gang %s, attempt %d, %q)", got.State,
			got.LatestAttemptNo, got.PendingReason)
	}
	if got.LatestAttemptNo != 2 {
		t.Errorf("the requeued gang was not submitted again in the pass that requeued it: %s, attempt %d, %q", got.State,
			got.LatestAttemptNo, got.PendingReason)
	}
}

// TestNeverFitsIsJudgedOnTheClusterTheLastPassSaw: a submit is warned (api.Server.NeverFits) when its gang could not
// start even on the empty cluster the loop last read; before any pass there is nothing to judge by.
func TestNeverFitsIsJudgedOnTheClusterTheLastPassSaw(t *testing.T) {
	h := newHarness(t) // one 8-GPU worker, and a head without GPUs (not counted: walk-through 9 read "1 of 2", where "1 of 1" was right)
	h.view.Nodes = append(h.view.Nodes, mvp.Node{ID: "head", Alive: true, Total: map[string]float64{"CPU": 8},
		Available: map[string]float64{"CPU": 8}})
	big := &mvp.Task{Workload: mvp.WorkloadPPO, NNodes: 2, GPUsPerNode: 8}
	small := &mvp.Task{Workload: mvp.WorkloadPPO, NNodes: 1, GPUsPerNode: 8}
	if why, never := h.loop.NeverFits(big); never {
		t.Fatalf("before any pass: %q", why)
	}
	h.tick()
	why, never := h.loop.NeverFits(big)
	if !never || !strings.Contains(why, "needs 2 node(s) with 8 GPU") || !strings.Contains(why, "the cluster has 1 alive GPU node(s)") {
		t.Errorf("2 × 8 on one 8-GPU worker: %v %q", never, why)
	}
	if why, never := h.loop.NeverFits(small); never {
		t.Errorf("1 × 8 on one 8-GPU worker: %q", why)
	}
	// A second worker joins: the next pass sees it.
	h.view.Nodes = append(h.view.Nodes, mvp.Node{ID: "w2", Alive: true,
		Total:     map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
		Available: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100}})
	h.tick()
	if why, never := h.loop.NeverFits(big); never {
		t.Errorf("2 × 8 on two 8-GPU workers: %q", why)
	}
}

// TestASubmitReadsTheSpecTheQueueDoesNotHold: the queue holds no specs (Store.Runnable), so the submit reads the
// task's jobspec and effective spec: the payload is built from them and the task folder keeps them as submitted.
func TestASubmitReadsTheSpecTheQueueDoesNotHold(t *testing.T) {
	h := newHarness(t)
	var built []string
	build := h.loop.Build
	h.loop.Build = func(t *mvp.Task, n int) (*mvp.JobSubmission, error) {
		built = append(built, string(t.SpecJSON))
		return build(t, n)
	}
	task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-5bec", Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "workload: ppo\n# as typed\n", SpecJSON: []byte(`{"workload":"ppo"}`),
		CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateSubmitted {
		t.Fatalf("state %s, want SUBMITTED", got.State)
	}
	if len(built) != 1 || built[0] != string(task.SpecJSON) {
		t.Fatalf("built from specs %q, want [%s]", built, task.SpecJSON)
	}
	b, err := os.ReadFile(filepath.Join(h.root, "jobs", task.ID, "jobspec.yaml"))
	if err != nil || string(b) != task.JobSpecYAML {
		t.Fatalf("task folder's jobspec.yaml %q (%v), want %q", b, err, task.JobSpecYAML)
	}
}

// TestARestartedMvpWaitsForTheNodesItSawBefore: mvp started while Ray was down (the usual case in the Ray head
// container, where both start together), a 2 × 4 gang and then a 1 × 4 task submitted, and Ray came back with one
// of its two workers first: the newer 1 × 4 took it and the gang waited for it to end. The hold after an outage
// knew the count of GPU nodes only from a pass of the same process. The count of the last healthy pass is kept in
// the database, and a restarted mvp holds admissions as after an outage it lived through. Found in the fault
// walk-through with the real binary.
func TestARestartedMvpWaitsForTheNodesItSawBefore(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.tick() // a healthy pass of the first process sees both workers

	// mvp restarts while Ray is down; a gang, then a newer 1 × 4 task, are submitted meanwhile.
	h.ray.down = true
	h.loop = h.newLoop()
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	gang := h.gangOf(2, 4)
	h.clock.t = h.clock.t.Add(time.Second)
	newer := h.taskOf(4)
	// Ray comes back with one of the two workers.
	h.ray.down = false
	h.view.Nodes = []mvp.Node{worker4("w1")}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if s := h.get(newer.ID).State; s == mvp.StateSubmitted || s == mvp.StateSubmitting {
		t.Fatalf("the newer 1 × 4 task was admitted on a cluster with 1 of the 2 GPU nodes mvp saw before its restart: %s", s)
	}
	// The queue says why in the words of a restart: there was no outage that this process saw.
	snap, err := h.loop.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rj *scheduler.ErrRejoining
	if !errors.As(snap.ClusterErr, &rj) || !strings.Contains(rj.Error(), "1 of the 2 GPU nodes its last run saw") ||
		strings.Contains(rj.Error(), "outage") {
		t.Errorf("why nothing is admitted after the restart: %v; want it to name the nodes mvp's last run saw, not an outage", snap.ClusterErr)
	}
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.tick()
	if s := h.get(gang.ID).State; s != mvp.StateSubmitted {
		t.Errorf("the gang once both workers are back: %s %q; want it submitted first", s, h.get(gang.ID).PendingReason)
	}

}

// TestAStopDuringASubmitIsNoRefusal: mvp stopped while a submit waits for Ray's answer. The call ends with the
// stop's context error, which callRay took as Ray refusing the submission (only the store's refusal of a dead
// context kept the task from FAILED), and each action left in the pass logged ERROR "apply action … context
// canceled". The attempt stays SUBMITTING (the next start looks it up, with the same id), quietly.
func TestAStopDuringASubmitIsNoRefusal(t *testing.T) {
	h := newHarness(t)
	first, second := h.task(), h.task()
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	h.ray.submitErr = func(id string) error {
		if id != first.ID+"--a01" {
			return nil
		}
		entered <- struct{}{}
		<-release
		return fmt.Errorf("submit job %s: %w", id, context.Canceled)
	}
	var logs bytes.Buffer
	h.loop.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.loop.RunOnce(ctx) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass never submitted")
	}
	cancel()
	close(release)
	<-done
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("an orderly stop logged an error:\n%s", logs.String())
	}
	got, err := h.db.GetTask(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != mvp.StateSubmitting || got.ErrorSummary != "" {
		t.Errorf("after a stop mid-submit: %s %q, want SUBMITTING with no error", got.State, got.ErrorSummary)
	}
	if got2, _ := h.db.GetTask(context.Background(), second.ID); got2.State == mvp.StateSubmitted {
		t.Errorf("the pass went on submitting %s after the stop", second.ID)
	}
}

// TestASubmitDuringAnOutageIsOneWarning: with Ray's dashboard down (the job server gone, the cluster still read by
// the probe), each submission the loop tried logged WARN "submit did not go through; will look again next tick" and
// then, for the same error, level=ERROR msg="apply action": an ERROR line per submission for an outage the loop
// handles (the attempt stays SUBMITTING and is sent again). Found in a fault walk-through (dashboard killed).
func TestASubmitDuringAnOutageIsOneWarning(t *testing.T) {
	h := newHarness(t)
	var logs bytes.Buffer
	h.loop.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	task := h.task()
	h.ray.submitErr = func(string) error {
		return fmt.Errorf("POST /api/jobs/: %w: connection refused", mvp.ErrRayUnavailable)
	}
	h.ray.jobsDown = true
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateSubmitting {
		t.Fatalf("a submission Ray did not take is %s; want it SUBMITTING, sent again later", got.State)
	}
	s := logs.String()
	if strings.Contains(s, "level=ERROR") {
		t.Errorf("a submission during an outage logged an error:\n%s", s)
	}
	if strings.Count(s, "submit did not go through") != 1 {
		t.Errorf("want one warning that the submission did not go through:\n%s", s)
	}
}

// TestPassesBackOffWhileTheDatabaseTakesNoWrites: with the database's disk full, the loop kept its 1 s passes, each
// failing every write it tried (progress notes, attempt updates, conclusions) and logging each at ERROR: 345 lines
// in 45 s for 4 running tasks in the walk-through, about 28,000 an hour, on a machine whose disk is full. While the
// database takes no writes (its health says so until one commits), passes back off as while Ray is down (doubling
// to MaxBackoff); a pass still comes at that pace, and its writes say when the disk has room again.
func TestPassesBackOffWhileTheDatabaseTakesNoWrites(t *testing.T) {
	h := newHarness(t)
	task := h.task()
	h.tick()
	h.ray.set(task.ID+"--a01", mvp.RayRunning, "", 0)
	h.tick()
	var full error
	h.loop.StoreHealth = func() error { return full }
	full = errors.New("writes to the database fail: database disk is full: free space on /db")
	before := h.ray.gets
	for i := 0; i < 60; i++ { // 60 s
		h.tick()
	}
	if n := h.ray.gets - before; n > 8 {
		t.Errorf("%d passes looked at Ray in 60 s while the database took no writes; want them backed off (about 6)", n)
	}
	full = nil
	h.clock.t = h.clock.t.Add(time.Minute)
	before = h.ray.gets
	h.tick()
	h.tick()
	if n := h.ray.gets - before; n != 2 {
		t.Errorf("%d passes of 2 looked at Ray once the database took writes again", n)
	}
}
