package recurring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/recurring"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/workload"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	c.t = t
}

const jobspecJSON = `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/d/t.parquet","val_file":"/d/v.parquet"}`

type harness struct {
	db    *sqlite.DB
	clock *clock
	loop  *recurring.Loop
	woken int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{db: db, clock: &clock{}}
	h.clock.set("2026-01-01T10:00:00Z")
	n := 0
	h.loop = &recurring.Loop{Tasks: db, Schedules: db, Clock: h.clock, Logger: slog.New(slog.DiscardHandler),
		Prepare: func(b []byte) (*mvp.Task, error) {
			return workload.Prepare(b, workload.Settings{SharedRoot: "/shared"})
		},
		NewID: func(w mvp.Workload, now time.Time, try int) string {
			n++
			return fmt.Sprintf("mvp2-%s-%s-%04x", w, now.UTC().Format("20060102-150405"), n)
		},
		Submitted: func(*mvp.Task) { h.woken++ }}
	return h
}

func (h *harness) create(t *testing.T, name, cron string, overlap mvp.Overlap) {
	t.Helper()
	if err := h.db.CreateSchedule(context.Background(), &mvp.Schedule{Name: name, Cron: cron, Timezone: "UTC",
		Overlap: overlap, JobSpec: []byte(jobspecJSON), CreatedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) pass(t *testing.T, at string) *mvp.Schedule {
	t.Helper()
	h.clock.set(at)
	if err := h.loop.Pass(context.Background()); err != nil {
		t.Fatalf("pass at %s: %v", at, err)
	}
	s, err := h.db.GetSchedule(context.Background(), "", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// canceled returns the schedule's tasks that are CANCELED, newest first, each checked to have been canceled by
// the schedule.
func (h *harness) canceled(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, id := range h.tasks(t) {
		got, err := h.db.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != mvp.StateCanceled {
			continue
		}
		evs, _, err := h.db.Events(context.Background(), id, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		by := ""
		for _, e := range evs {
			if e.Type == mvp.EventCancelRequested {
				var p struct{ By string }
				_ = json.Unmarshal(e.Payload, &p)
				by = p.By
			}
		}
		if by != "schedule nightly" {
			t.Errorf("%s canceled by %q, want \"schedule nightly\"", id, by)
		}
		out = append(out, id)
	}
	return out
}

func (h *harness) tasks(t *testing.T) []string {
	t.Helper()
	ids, err := h.db.ScheduleTasks(context.Background(), "", "nightly", time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestLoopRunsOnScheduleWithOneCatchUp: runs happen when due, each makes one linked QUEUED task, and a long gap
// (mvp down) gives one catch-up run, not one per missed time.
func TestLoopRunsOnScheduleWithOneCatchUp(t *testing.T) {
	h := newHarness(t)
	h.create(t, "nightly", "0 * * * *", mvp.OverlapQueue)
	if s := h.pass(t, "2026-01-01T10:59:59Z"); len(h.tasks(t)) != 0 || s.LastTaskID != "" {
		t.Fatalf("a run before its time: %+v", s)
	}
	s := h.pass(t, "2026-01-01T11:00:01Z")
	ids := h.tasks(t)
	if len(ids) != 1 || s.LastTaskID != ids[0] || !s.LastFireAt.Equal(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)) || h.woken != 1 {
		t.Fatalf("after the first run: tasks %v, schedule %+v, woken %d", ids, s, h.woken)
	}
	task, err := h.db.GetTask(context.Background(), ids[0])
	if err != nil || task.State != mvp.StateQueued || task.Workload != mvp.WorkloadPPO {
		t.Fatalf("the task made: %+v %v", task, err)
	}
	evs, _, err := h.db.Events(context.Background(), task.ID, "", 10)
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"schedule":"nightly"`) {
		t.Fatalf("CREATED event: %v %v", evs, err)
	}
	// A second pass in the same hour does nothing.
	if h.pass(t, "2026-01-01T11:30:00Z"); len(h.tasks(t)) != 1 {
		t.Fatalf("two runs in one hour: %v", h.tasks(t))
	}
	// mvp was down from 11:30 to 15:10: 12:00, 13:00, 14:00 and 15:00 passed. One catch-up run, three missed.
	s = h.pass(t, "2026-01-01T15:10:00Z")
	if got := len(h.tasks(t)); got != 2 || s.Missed != 3 || !s.LastFireAt.Equal(time.Date(2026, 1, 1, 15, 0, 0, 0, time.UTC)) ||
		!strings.Contains(s.LastOutcome, "catch-up") {
		t.Fatalf("after the gap: %d tasks, schedule %+v", got, s)
	}
}

// TestLoopOverlap: skip makes no task while the previous one is live; replace cancels it first.
func TestLoopOverlap(t *testing.T) {
	h := newHarness(t)
	h.create(t, "nightly", "@every 1m", mvp.OverlapSkip)
	h.pass(t, "2026-01-01T10:01:00Z")
	s := h.pass(t, "2026-01-01T10:02:00Z")
	if ids := h.tasks(t); len(ids) != 1 || !strings.HasPrefix(s.LastOutcome, "skipped") {
		t.Fatalf("skip: tasks %v, outcome %q", ids, s.LastOutcome)
	}
	if !s.LastFireAt.Equal(time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC)) {
		t.Errorf("a skipped run is still recorded: last fire %s", s.LastFireAt)
	}
	first := h.tasks(t)[0]

	// The same schedule with replace: the live task is canceled, a new one made.
	if err := h.db.DeleteSchedule(context.Background(), "", "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.GetTask(context.Background(), first); err != nil {
		t.Fatalf("deleting a schedule removed its task: %v", err)
	}
	h.create(t, "nightly", "@every 1m", mvp.OverlapReplace)
	h.pass(t, "2026-01-01T10:03:00Z")
	second := h.tasks(t)[0]
	s = h.pass(t, "2026-01-01T10:04:00Z")
	ids := h.tasks(t)
	if c := h.canceled(t); len(ids) != 2 || len(c) != 1 || c[0] != second || s.LastTaskID != ids[0] {
		t.Fatalf("replace: tasks %v, canceled %v, schedule %+v", ids, c, s)
	}
	if got, _ := h.db.GetTask(context.Background(), second); got.State != mvp.StateCanceled {
		t.Errorf("the replaced task is %s", got.State)
	} else if want := "replaced by " + ids[0] + ", the next run of schedule nightly (overlap: replace)"; got.ErrorSummary != want {
		// mvp canceled it, not its user: the task (and its attempt's message, scheduler.Conclude) says why.
		t.Errorf("the replaced task's error_summary is %q, want %q", got.ErrorSummary, want)
	}
}

// TestLoopPauseAndResume: a paused schedule makes nothing; on resume it starts from then (no make-up runs).
func TestLoopPauseAndResume(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.create(t, "nightly", "@every 1m", mvp.OverlapQueue)
	h.pass(t, "2026-01-01T10:01:00Z")
	h.clock.set("2026-01-01T10:01:30Z")
	if err := h.db.SetSchedulePaused(ctx, "", "nightly", true, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if h.pass(t, "2026-01-01T10:30:00Z"); len(h.tasks(t)) != 1 {
		t.Fatalf("a paused schedule ran: %v", h.tasks(t))
	}
	if err := h.db.SetSchedulePaused(ctx, "", "nightly", false, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	s := h.pass(t, "2026-01-01T10:30:30Z")
	if len(h.tasks(t)) != 1 || s.Missed != 0 {
		t.Fatalf("resume made up runs: %v, missed %d", h.tasks(t), s.Missed)
	}
	if h.pass(t, "2026-01-01T10:31:00Z"); len(h.tasks(t)) != 2 {
		t.Fatalf("no run a period after resume: %v", h.tasks(t))
	}
	if err := h.db.SetSchedulePaused(ctx, "", "nope", true, h.clock.Now()); !errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("pause of an unknown schedule: %v", err)
	}
}

// TestLoopJobspecNoLongerValid: a run whose jobspec fails today's checks makes no task and says why.
func TestLoopJobspecNoLongerValid(t *testing.T) {
	h := newHarness(t)
	if err := h.db.CreateSchedule(context.Background(), &mvp.Schedule{Name: "nightly", Cron: "@every 1m", Timezone: "UTC",
		Overlap: mvp.OverlapSkip, JobSpec: []byte(`{"workload":"ppo"}`), CreatedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	s := h.pass(t, "2026-01-01T10:01:00Z")
	if len(h.tasks(t)) != 0 || !strings.Contains(s.LastOutcome, "no longer valid") {
		t.Fatalf("tasks %v, outcome %q", h.tasks(t), s.LastOutcome)
	}
}

// TestLoopReplaceKeepsThePreviousTaskWhenNoNewOneCanBeMade: with overlap replace, a run that cannot make its task
// (refused at admission: a deleted secret, a quota, a jobspec no longer valid) canceled the live task first and
// then made nothing, leaving the user with neither. The previous task stays; the outcome says why nothing ran.
func TestLoopReplaceKeepsThePreviousTaskWhenNoNewOneCanBeMade(t *testing.T) {
	h := newHarness(t)
	h.create(t, "nightly", "@every 1m", mvp.OverlapReplace)
	h.pass(t, "2026-01-01T10:01:00Z")
	first := h.tasks(t)[0]
	h.loop.Admit = func(context.Context, *mvp.Task, *mvp.Task) error {
		return mvp.Errorf(mvp.CodeInvalid, "secrets", "no secret named hf-token")
	}
	s := h.pass(t, "2026-01-01T10:02:00Z")
	if c := h.canceled(t); len(c) != 0 {
		t.Fatalf("canceled %v though no new task could be made", c)
	}
	if got, _ := h.db.GetTask(context.Background(), first); got.State != mvp.StateQueued {
		t.Errorf("the previous task is %s", got.State)
	}
	if !strings.Contains(s.LastOutcome, "not submitted") || !strings.Contains(s.LastOutcome, "hf-token") ||
		!strings.Contains(s.LastOutcome, first) {
		t.Errorf("outcome %q does not say nothing was made, why, and that %s was kept", s.LastOutcome, first)
	}
	// The same for a jobspec that no longer passes today's checks.
	h.loop.Admit = nil
	h.loop.Prepare = func([]byte) (*mvp.Task, error) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "workload", "unknown workload")
	}
	h.pass(t, "2026-01-01T10:03:00Z")
	if c := h.canceled(t); len(c) != 0 {
		t.Fatalf("canceled %v for a jobspec no longer valid", c)
	}
}

// TestLoopReplaceKeepsThePreviousTaskWhenTheInsertIsRefused: the checks before the cancel refuse nearly every run
// that cannot make its task, but the transaction that stores the task checks again (the owner's max_queued,
// reached by submits that landed after Admit counted; a checkpoint folder taken since). Refused there, the run had
// already canceled the previous task: the user had neither, and last_outcome did not say the previous one was
// gone. The cancel is now written in the transaction that stores the new task, so a refusal keeps the previous one.
func TestLoopReplaceKeepsThePreviousTaskWhenTheInsertIsRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.create(t, "nightly", "@every 1m", mvp.OverlapReplace)
	h.pass(t, "2026-01-01T10:01:00Z")
	first := h.tasks(t)[0]
	// Two submits of the owner land between Admit's count and the insert, reaching max_queued (2).
	h.loop.Admit = func(_ context.Context, task, _ *mvp.Task) error {
		for i := range 2 {
			other, err := workload.Prepare([]byte(jobspecJSON), workload.Settings{SharedRoot: "/shared"})
			if err != nil {
				return err
			}
			other.ID, other.State, other.CreatedAt = fmt.Sprintf("mvp2-ppo-20260101-100130-aa%02d", i), mvp.StateQueued, h.clock.Now()
			if err := h.db.CreateTask(ctx, other); err != nil {
				return err
			}
		}
		task.MaxWaiting = 2
		return nil
	}
	s := h.pass(t, "2026-01-01T10:02:00Z")
	if got, _ := h.db.GetTask(ctx, first); got.State != mvp.StateQueued {
		t.Errorf("the previous task is %s after a run whose new task was refused", got.State)
	}
	if ids := h.tasks(t); len(ids) != 1 || !strings.Contains(s.LastOutcome, "not submitted") ||
		!strings.Contains(s.LastOutcome, "max_queued") || !strings.Contains(s.LastOutcome, first+" is kept") {
		t.Errorf("tasks %v, outcome %q: want no new task, and an outcome saying why and that %s is kept", ids, s.LastOutcome, first)
	}
}

// TestRunWaitsForTheSchedulersFirstPass: right after a restart the tasks' states are what the previous process
// left, not what Ray has done since: a run whose previous task ended while mvp was down was skipped as "still
// RUNNING", and under replace the finished task was canceled. Run makes no pass until Ready is closed (the
// scheduler's first pass has followed every live attempt).
func TestRunWaitsForTheSchedulersFirstPass(t *testing.T) {
	h := newHarness(t)
	h.create(t, "nightly", "0 * * * *", mvp.OverlapQueue)
	h.clock.set("2026-01-01T11:00:01Z")
	ready := make(chan struct{})
	h.loop.Ready, h.loop.Every = ready, 10*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // ten periods: none may run a pass before Ready
	if ids := h.tasks(t); len(ids) != 0 {
		t.Fatalf("a run before the scheduler's first pass: %v", ids)
	}
	close(ready)
	deadline := time.Now().Add(5 * time.Second)
	for len(h.tasks(t)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no run after the scheduler's first pass")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWakeWhileRunStarts: the API wakes the loop (a schedule made) while Run is starting; both made the wake
// channel lazily without a lock, a data race the race detector caught in CI (TestScheduleLifecycle).
func TestWakeWhileRunStarts(t *testing.T) {
	ready := make(chan struct{}) // never closed: Run starts, then waits for it
	l := &recurring.Loop{Ready: ready, Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	l.Wake()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestARunWhoseFolderIsTakenIsRecorded: a run of a schedule whose jobspec resumes from a checkpoint folder that
// another task writes is refused where its task is stored (Admit passed, the folder taken since): that was returned
// as an error of the whole pass, logged and tried again each pass, and the schedule's last_outcome did not say it.
// It is recorded as a run that made no task, naming the writer.
func TestARunWhoseFolderIsTakenIsRecorded(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	writer := &mvp.Task{ID: "mvp2-ppo-20260101-095900-beef", Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 1, SpecJSON: []byte(jobspecJSON), CreatedAt: h.clock.Now()}
	if err := h.db.CreateTask(ctx, writer); err != nil {
		t.Fatal(err)
	}
	spec := strings.TrimSuffix(jobspecJSON, "}") + `,"resume_from":"` + writer.ID + `"}`
	if err := h.db.CreateSchedule(ctx, &mvp.Schedule{Name: "nightly", Cron: "@every 1m", Timezone: "UTC",
		Overlap: mvp.OverlapQueue, JobSpec: []byte(spec), CreatedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	s := h.pass(t, "2026-01-01T10:01:00Z")
	if len(h.tasks(t)) != 0 || !strings.Contains(s.LastOutcome, "not submitted") || !strings.Contains(s.LastOutcome, writer.ID) {
		t.Errorf("tasks %v, outcome %q: want no task and an outcome naming %s", h.tasks(t), s.LastOutcome, writer.ID)
	}
}

// TestLoopReplaceLogsTheCancel: the service's log has a task's life under its id, a cancel as "task canceled" with
// who asked (specs/deploy.md). A replace run canceled its previous task through the API's cancel, which said so;
// since the cancel is written in the run's transaction nothing was logged of it: grep task_id=<the replaced task>
// showed its attempt end CANCELED and no word of the schedule that canceled it. And a previous task that ended
// before the transaction (canceled by its user) is not canceled by the run, and is not said to be.
func TestLoopReplaceLogsTheCancel(t *testing.T) {
	h := newHarness(t)
	var buf bytes.Buffer
	h.loop.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	h.create(t, "nightly", "@every 1m", mvp.OverlapReplace)
	h.pass(t, "2026-01-01T10:01:00Z")
	first := h.tasks(t)[0]
	h.pass(t, "2026-01-01T10:02:00Z")
	want := `msg="task canceled" task_id=` + first + ` by="schedule nightly" was=QUEUED`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("the log after a replace run:\n%s\nwant a line with %s", buf.String(), want)
	}

	second := h.tasks(t)[0]
	buf.Reset()
	ctx := context.Background()
	// The user cancels the previous task after the run read it, before its transaction.
	h.loop.Admit = func(context.Context, *mvp.Task, *mvp.Task) error {
		return h.db.Apply(ctx, mvp.Change{TaskID: second, From: mvp.StateQueued, To: mvp.StateCanceled,
			At: h.clock.Now(), EventType: mvp.EventCancelRequested, EventPayload: map[string]any{"by": "api"}})
	}
	h.pass(t, "2026-01-01T10:03:00Z")
	if ids := h.tasks(t); len(ids) != 3 {
		t.Fatalf("tasks %v, want a third", ids)
	}
	if strings.Contains(buf.String(), "task canceled") {
		t.Errorf("the log says the run canceled %s, which its user had canceled:\n%s", second, buf.String())
	}
}

// TestLoopReplaceOfATaskThatEndedMeanwhileSaysSo: the previous task ended (its user canceled it, or its run
// ended) after the run read it and before the run's transaction, so the run canceled nothing; its last_outcome
// still said it had canceled the previous task.
func TestLoopReplaceOfATaskThatEndedMeanwhileSaysSo(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.create(t, "nightly", "@every 1m", mvp.OverlapReplace)
	h.pass(t, "2026-01-01T10:01:00Z")
	first := h.tasks(t)[0]
	h.loop.Admit = func(context.Context, *mvp.Task, *mvp.Task) error {
		return h.db.Apply(ctx, mvp.Change{TaskID: first, From: mvp.StateQueued, To: mvp.StateCanceled,
			At: h.clock.Now(), EventType: mvp.EventCancelRequested, EventPayload: map[string]any{"by": "api"}})
	}
	s := h.pass(t, "2026-01-01T10:02:00Z")
	ids := h.tasks(t)
	if len(ids) != 2 {
		t.Fatalf("tasks %v, want a second", ids)
	}
	if strings.Contains(s.LastOutcome, "canceled the previous task") ||
		!strings.Contains(s.LastOutcome, first+" had ended before this run") || !strings.Contains(s.LastOutcome, ids[0]) {
		t.Errorf("last_outcome %q; want it to say %s had ended before this run, and name %s", s.LastOutcome, first, ids[0])
	}
	if got, _ := h.db.GetTask(ctx, first); got.ErrorSummary != "" {
		t.Errorf("the task its user canceled says %q", got.ErrorSummary)
	}
}
