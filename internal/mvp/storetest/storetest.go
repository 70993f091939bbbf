// Package storetest is the contract of mvp.Store written as a test suite that any implementation runs, the way
// river's driver tests are run by each of its database drivers. It knows nothing of how a store keeps its data:
// it drives the store only through the mvp.Store interface, with fixed times, and checks what comes back.
//
// A Store implementation runs it from a test of its own package, with a function that opens a new, empty store
// exactly as the service would open it (a real file in t.TempDir() for a file-backed store):
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) mvp.Store {
//			s, err := mystore.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.db"), mystore.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Every subtest opens its own store and Run closes it when the subtest ends. Tests private to an implementation
// (its files, its migrations, how it maps its driver's errors, its page-size defaults) stay in its own package.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// t0 is the suite's fixed clock: every time written to the store is t0 plus a fixed offset.
var t0 = time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)

// Run runs the whole mvp.Store contract as subtests of t. open must return a new, empty store each time it is
// called; Run closes that store when the subtest ends and fails the subtest if Close returns an error.
func Run(t *testing.T, open func(t *testing.T) mvp.Store) {
	tests := []struct {
		name string
		fn   func(h *harness)
	}{
		{"CreateAndGetTask", testCreateAndGetTask},
		{"CreateTaskRefusesBadTasks", testCreateTaskRefusesBadTasks},
		{"GetTaskNotFound", testGetTaskNotFound},
		{"ListTasksFiltersAndPages", testListTasksFiltersAndPages},
		{"ListTasksRefusesBadInput", testListTasksRefusesBadInput},
		{"EveryTransition", testEveryTransition},
		{"ApplyIsCompareAndSet", testApplyIsCompareAndSet},
		{"ApplyWritesNothingWhenRefused", testApplyWritesNothingWhenRefused},
		{"ApplySetsLeavesAndClearsFields", testApplySetsLeavesAndClearsFields},
		{"LeavingTheQueueClearsTheReason", testLeavingTheQueueClearsTheReason},
		{"ApplyNewAttemptAndAttemptUpdate", testApplyNewAttemptAndAttemptUpdate},
		{"ConcurrentApplyOneWinner", testConcurrentApplyOneWinner},
		{"ApplyAllIsApplyForEach", testApplyAllIsApplyForEach},
		{"UpdateAttempt", testUpdateAttempt},
		{"JudgeAttemptIsCompareAndSetOnTheTaskToo", testJudgeAttempt},
		{"RunnableOrder", testRunnableOrder},
		{"RanIsReadFromTheAttempts", testRanIsReadFromTheAttempts},
		{"Active", testActive},
		{"EventsPaging", testEventsPaging},
		{"FinishedInRayAndMarkRayDeleted", testFinishedInRayAndMarkRayDeleted},
		{"AddEvent", testAddEvent},
		{"NoteLogAndUnkeptLogs", testNoteLogAndUnkeptLogs},
		{"Counts", testCounts},
		{"NoteProgress", testNoteProgress},
		{"DependenciesAndTaskStates", testDependenciesAndTaskStates},
		{"ResubmitLinks", testResubmitLinks},
		{"OneCheckpointWriter", testOneCheckpointWriter},
		{"Secrets", testSecrets},
		{"RayDoorSubmissionIDs", testRayDoorSubmissionIDs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned no store")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close the store: %v", err)
				}
			})
			tc.fn(&harness{t: t, ctx: context.Background(), s: s})
		})
	}
}

// harness is one subtest's store with the helpers that drive it.
type harness struct {
	t   *testing.T
	ctx context.Context
	s   mvp.Store
	seq int
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// newTask returns a QUEUED task created at at, with a new id; it is not stored.
func (h *harness) newTask(at time.Time) *mvp.Task {
	h.seq++
	return &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-%s-%08x", at.Format("20060102-150405"), h.seq),
		Workload: mvp.WorkloadPPO, Name: fmt.Sprintf("task %d", h.seq), State: mvp.StateQueued, NNodes: 2,
		GPUsPerNode: 4, JobSpecYAML: "workload: ppo\nnnodes: 2\n", SpecJSON: json.RawMessage(`{"workload":"ppo","nnodes":2}`),
		CreatedAt: at, UpdatedAt: at, MaxRuntimeS: 7200, MaxQueuedS: 1800}
}

// create stores a new QUEUED task created at at.
func (h *harness) create(at time.Time) *mvp.Task {
	h.t.Helper()
	task := h.newTask(at)
	h.must(h.s.CreateTask(h.ctx, task))
	return task
}

func (h *harness) apply(c mvp.Change) {
	h.t.Helper()
	if err := h.s.Apply(h.ctx, c); err != nil {
		h.t.Fatalf("apply %s → %s to %s: %v", c.From, c.To, c.TaskID, err)
	}
}

// submit moves a task from from to SUBMITTING with a new attempt no, created at at.
func (h *harness) submit(id string, from mvp.State, no int, at time.Time) {
	h.t.Helper()
	h.apply(mvp.Change{TaskID: id, From: from, To: mvp.StateSubmitting, At: at, EventType: mvp.EventSubmit,
		NewAttempt: &mvp.Attempt{No: no, RaySubmissionID: mvp.SubmissionID(id, no), CreatedAt: at}})
}

// pathTo is the shortest walk of allowed transitions (self-loops aside) from QUEUED to s.
func pathTo(s mvp.State) ([]mvp.State, bool) {
	prev := map[mvp.State]mvp.State{mvp.StateQueued: ""}
	queue := []mvp.State{mvp.StateQueued}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == s {
			var path []mvp.State
			for at := s; at != mvp.StateQueued; at = prev[at] {
				path = append([]mvp.State{at}, path...)
			}
			return path, true
		}
		for _, next := range mvp.States {
			if _, seen := prev[next]; !seen && next != cur && mvp.CanTransition(cur, next) {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil, false
}

// drive takes a QUEUED task to state s through the transition table alone (the suite has no back door into the
// store). Every entry into SUBMITTING makes a new attempt, as the scheduler does. It returns the task's attempt
// count.
func (h *harness) drive(id string, s mvp.State) int {
	h.t.Helper()
	path, ok := pathTo(s)
	if !ok {
		h.t.Fatalf("no walk of allowed transitions leads from %s to %s", mvp.StateQueued, s)
	}
	cur, attempts := mvp.StateQueued, 0
	for _, next := range path {
		if next == mvp.StateSubmitting {
			attempts++
			h.submit(id, cur, attempts, t0.Add(time.Second))
		} else {
			h.apply(mvp.Change{TaskID: id, From: cur, To: next, At: t0.Add(time.Second)})
		}
		cur = next
	}
	if got := h.get(id); got.State != s {
		h.t.Fatalf("drove %s to %s, it is %s", id, s, got.State)
	}
	return attempts
}

func (h *harness) get(id string) *mvp.Task {
	h.t.Helper()
	task, err := h.s.GetTask(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get task %s: %v", id, err)
	}
	return task
}

// events returns every event of a task, paging through Events.
func (h *harness) events(id string) []*mvp.Event {
	h.t.Helper()
	var all []*mvp.Event
	cursor := ""
	for pages := 0; ; pages++ {
		evs, next, err := h.s.Events(h.ctx, id, cursor, 1000)
		if err != nil {
			h.t.Fatalf("events of %s: %v", id, err)
		}
		all = append(all, evs...)
		if next == "" {
			return all
		}
		if pages > 10000 {
			h.t.Fatalf("events of %s: paging does not end", id)
		}
		cursor = next
	}
}

// snapshot is everything the store says about a task: its row with its attempts, and its events.
type snapshot struct {
	Task   *mvp.Task
	Events []*mvp.Event
}

func (h *harness) snap(id string) snapshot {
	h.t.Helper()
	return snapshot{Task: h.get(id), Events: h.events(id)}
}

// unchanged fails the test when the task's stored state differs from before.
func (h *harness) unchanged(what string, before snapshot) {
	h.t.Helper()
	after := h.snap(before.Task.ID)
	if !reflect.DeepEqual(before, after) {
		h.t.Errorf("%s wrote something to %s:\nbefore %s\nafter  %s", what, before.Task.ID, dump(before), dump(after))
	}
}

func dump(s snapshot) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (h *harness) payload(e *mvp.Event) map[string]any {
	h.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		h.t.Fatalf("event %d (%s) payload %q: %v", e.ID, e.Type, e.Payload, err)
	}
	return m
}

func (h *harness) lastEvent(id string) *mvp.Event {
	h.t.Helper()
	evs := h.events(id)
	if len(evs) == 0 {
		h.t.Fatalf("task %s has no events", id)
	}
	return evs[len(evs)-1]
}

func ptr[T any](v T) *T { return &v }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func sameInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// taskDiff lists the fields of got that differ from want; attempts are compared by the caller.
func taskDiff(got, want *mvp.Task) []string {
	var d []string
	add := func(ok bool, field string, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w))
		}
	}
	add(got.ID == want.ID, "ID", got.ID, want.ID)
	add(got.Workload == want.Workload, "Workload", got.Workload, want.Workload)
	add(got.Name == want.Name, "Name", got.Name, want.Name)
	add(got.State == want.State, "State", got.State, want.State)
	add(got.NNodes == want.NNodes, "NNodes", got.NNodes, want.NNodes)
	add(got.GPUsPerNode == want.GPUsPerNode, "GPUsPerNode", got.GPUsPerNode, want.GPUsPerNode)
	add(got.JobSpecYAML == want.JobSpecYAML, "JobSpecYAML", got.JobSpecYAML, want.JobSpecYAML)
	add(len(got.SpecJSON)+len(want.SpecJSON) == 0 || sameJSON(got.SpecJSON, want.SpecJSON), "SpecJSON", string(got.SpecJSON), string(want.SpecJSON))
	add(got.CreatedAt.Equal(want.CreatedAt), "CreatedAt", got.CreatedAt, want.CreatedAt)
	add(got.UpdatedAt.Equal(want.UpdatedAt), "UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	add(sameTime(got.NextRunAt, want.NextRunAt), "NextRunAt", got.NextRunAt, want.NextRunAt)
	add(got.PendingReason == want.PendingReason, "PendingReason", got.PendingReason, want.PendingReason)
	add(got.ErrorSummary == want.ErrorSummary, "ErrorSummary", got.ErrorSummary, want.ErrorSummary)
	add(got.LatestAttemptNo == want.LatestAttemptNo, "LatestAttemptNo", got.LatestAttemptNo, want.LatestAttemptNo)
	add(got.Ran == want.Ran, "Ran", got.Ran, want.Ran)
	add(got.MaxRuntimeS == want.MaxRuntimeS, "MaxRuntimeS", got.MaxRuntimeS, want.MaxRuntimeS)
	add(got.MaxQueuedS == want.MaxQueuedS, "MaxQueuedS", got.MaxQueuedS, want.MaxQueuedS)
	add(got.SubmissionID == want.SubmissionID, "SubmissionID", got.SubmissionID, want.SubmissionID)
	add(got.DoorDeleted == want.DoorDeleted, "DoorDeleted", got.DoorDeleted, want.DoorDeleted)
	return d
}

// attemptDiff lists the fields of got that differ from want.
func attemptDiff(got, want *mvp.Attempt) []string {
	var d []string
	add := func(ok bool, field string, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w))
		}
	}
	add(got.TaskID == want.TaskID, "TaskID", got.TaskID, want.TaskID)
	add(got.No == want.No, "No", got.No, want.No)
	add(got.RaySubmissionID == want.RaySubmissionID, "RaySubmissionID", got.RaySubmissionID, want.RaySubmissionID)
	add(got.RayJobID == want.RayJobID, "RayJobID", got.RayJobID, want.RayJobID)
	add(got.RayStatus == want.RayStatus, "RayStatus", got.RayStatus, want.RayStatus)
	add(got.FailureKind == want.FailureKind, "FailureKind", got.FailureKind, want.FailureKind)
	add(got.Message == want.Message, "Message", got.Message, want.Message)
	add(got.DriverNodeID == want.DriverNodeID, "DriverNodeID", got.DriverNodeID, want.DriverNodeID)
	add(got.CreatedAt.Equal(want.CreatedAt), "CreatedAt", got.CreatedAt, want.CreatedAt)
	add(sameTime(got.StartTime, want.StartTime), "StartTime", got.StartTime, want.StartTime)
	add(sameTime(got.EndTime, want.EndTime), "EndTime", got.EndTime, want.EndTime)
	add(sameInt(got.ExitCode, want.ExitCode), "ExitCode", got.ExitCode, want.ExitCode)
	add(got.LogKept == want.LogKept, "LogKept", got.LogKept, want.LogKept)
	add(got.LogTries == want.LogTries, "LogTries", got.LogTries, want.LogTries)
	return d
}

func (h *harness) checkTask(what string, got, want *mvp.Task) {
	h.t.Helper()
	if d := taskDiff(got, want); len(d) > 0 {
		h.t.Errorf("%s: task %s:\n  %s", what, want.ID, strings.Join(d, "\n  "))
	}
}

func (h *harness) checkAttempts(what string, got, want []*mvp.Attempt) {
	h.t.Helper()
	if len(got) != len(want) {
		h.t.Errorf("%s: %d attempts, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if d := attemptDiff(got[i], want[i]); len(d) > 0 {
			h.t.Errorf("%s: attempt %d:\n  %s", what, i, strings.Join(d, "\n  "))
		}
	}
}

func ids(tasks []*mvp.Task) string {
	out := make([]string, len(tasks))
	for i, task := range tasks {
		out[i] = task.ID
	}
	return strings.Join(out, " ")
}

func testCreateAndGetTask(h *harness) {
	task := h.newTask(t0)
	next := t0.Add(time.Hour)
	task.NextRunAt = &next
	task.PendingReason, task.ErrorSummary = "reason", "summary"
	task.Workload, task.Name = mvp.WorkloadGRPO, "a name with ünïcode and 'quotes'"
	task.UpdatedAt = t0.Add(time.Second)
	task.MaxRuntimeS, task.MaxQueuedS = 86400, 0 // 0: the task may wait in the queue without bound
	h.must(h.s.CreateTask(h.ctx, task))

	got := h.get(task.ID)
	h.checkTask("round trip", got, task)
	if got.Attempts == nil || len(got.Attempts) != 0 {
		h.t.Errorf("a new task's attempts: %#v, want an empty, non-nil slice", got.Attempts)
	}
	evs := h.events(task.ID)
	if len(evs) != 1 {
		h.t.Fatalf("%d events after CreateTask, want 1 CREATED", len(evs))
	}
	p := h.payload(evs[0])
	if evs[0].Type != mvp.EventCreated || evs[0].TaskID != task.ID || !evs[0].TS.Equal(t0) || evs[0].ID == 0 ||
		p["state"] != string(mvp.StateQueued) || p["workload"] != string(mvp.WorkloadGRPO) || p["name"] != task.Name ||
		p["nnodes"] != float64(2) || p["n_gpus_per_node"] != float64(4) {
		h.t.Errorf("CREATED event: %+v payload %s", evs[0], evs[0].Payload)
	}

	// A zero UpdatedAt is the creation time.
	bare := h.newTask(t0.Add(time.Minute))
	bare.UpdatedAt = time.Time{}
	h.must(h.s.CreateTask(h.ctx, bare))
	want := *bare
	want.UpdatedAt = bare.CreatedAt
	h.checkTask("zero UpdatedAt", h.get(bare.ID), &want)

	// A second task with the same id is a conflict and changes nothing.
	before := h.snap(task.ID)
	dup := h.newTask(t0.Add(time.Second))
	dup.ID = task.ID
	err := h.s.CreateTask(h.ctx, dup)
	if !errors.Is(err, mvp.ErrConflict) || mvp.ErrorCode(err) != mvp.CodeConflict {
		h.t.Errorf("duplicate id: %v, want ErrConflict", err)
	}
	h.unchanged("a refused duplicate", before)
}

func testCreateTaskRefusesBadTasks(h *harness) {
	kept := h.create(t0)
	running := h.newTask(t0)
	running.State = mvp.StateRunning
	bogus := h.newTask(t0)
	bogus.Workload = "bogus"
	noID := h.newTask(t0)
	noID.ID = ""
	negRuntime := h.newTask(t0)
	negRuntime.MaxRuntimeS = -1
	negQueued := h.newTask(t0)
	negQueued.MaxQueuedS = -1
	for _, c := range []struct {
		what string
		task *mvp.Task
	}{{"a task that is not QUEUED", running}, {"an unknown workload", bogus}, {"a task without an id", noID},
		{"a negative max_runtime_s", negRuntime}, {"a negative max_queued_s", negQueued}} {
		if err := h.s.CreateTask(h.ctx, c.task); mvp.ErrorCode(err) != mvp.CodeInvalid {
			h.t.Errorf("%s: %v, want %s", c.what, err, mvp.CodeInvalid)
		}
		if c.task.ID == "" {
			continue
		}
		if _, err := h.s.GetTask(h.ctx, c.task.ID); !errors.Is(err, mvp.ErrNotFound) {
			h.t.Errorf("%s was stored: %v", c.what, err)
		}
	}
	all, next, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 100})
	h.must(err)
	if ids(all) != kept.ID || next != "" {
		h.t.Errorf("tasks stored: %q (next %q), want only %s", ids(all), next, kept.ID)
	}
}

func testGetTaskNotFound(h *harness) {
	h.create(t0)
	_, err := h.s.GetTask(h.ctx, "mvp2-ppo-20251223-143201-ffffffff")
	if !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("unknown task: %v, want ErrNotFound", err)
	}
}

func testListTasksFiltersAndPages(h *harness) {
	const n = 120
	var all []*mvp.Task
	for i := 0; i < n; i++ {
		// Many tasks share a creation time, and ids run against the insertion order, so only the id can
		// break the ties.
		task := h.newTask(t0.Add(time.Duration(i%7) * time.Second))
		task.ID = fmt.Sprintf("mvp2-ppo-20251223-143201-%08x", (n-i)*37%1000)
		if i%3 == 0 {
			task.Workload = mvp.WorkloadSFT
		}
		h.must(h.s.CreateTask(h.ctx, task))
		switch {
		case i%4 == 0:
			h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0.Add(time.Hour)})
			task.State, task.UpdatedAt = mvp.StatePendingResources, t0.Add(time.Hour)
		case i%10 == 1:
			h.submit(task.ID, mvp.StateQueued, 1, t0.Add(time.Hour))
			task.State, task.UpdatedAt, task.LatestAttemptNo = mvp.StateSubmitting, t0.Add(time.Hour), 1
		}
		all = append(all, task)
	}
	sort.Slice(all, func(i, j int) bool { // newest first, then the larger id
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	byID := map[string]*mvp.Task{}
	for _, task := range all {
		byID[task.ID] = task
	}
	filters := []mvp.TaskFilter{
		{Limit: 7}, {}, {Limit: 1}, {Limit: n}, {Limit: n + 1}, {Limit: 100000},
		{Limit: 9, Workload: mvp.WorkloadSFT},
		{Limit: 4, State: mvp.StatePendingResources},
		{Limit: 3, State: mvp.StatePendingResources, Workload: mvp.WorkloadSFT},
		{Limit: 5, State: mvp.StateSubmitting},
		{Limit: 5, State: mvp.StateRunning},
		{Limit: 5, Workload: mvp.WorkloadGRPO},
	}
	for _, f := range filters {
		var want []*mvp.Task
		for _, task := range all {
			if (f.State == "" || task.State == f.State) && (f.Workload == "" || task.Workload == f.Workload) {
				want = append(want, task)
			}
		}
		var got []*mvp.Task
		for pages := 0; ; pages++ {
			page, next, err := h.s.ListTasks(h.ctx, f)
			if err != nil {
				h.t.Fatalf("filter %+v: %v", f, err)
			}
			if (f.Limit > 0 && len(page) > f.Limit) || (next != "" && len(page) == 0) ||
				(next != "" && f.Limit > 0 && len(page) != f.Limit) {
				h.t.Fatalf("filter %+v: a page of %d tasks with next cursor %q", f, len(page), next)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			if pages > 2*n {
				h.t.Fatalf("filter %+v: paging does not end", f)
			}
			f.Cursor = next
		}
		if ids(got) != ids(want) {
			h.t.Errorf("filter %+v: got %d tasks\n  %s\nwant %d\n  %s", f, len(got), ids(got), len(want), ids(want))
			continue
		}
		for _, task := range got {
			h.checkTask(fmt.Sprintf("listed with %+v", f), task, byID[task.ID])
			if len(task.Attempts) != 0 {
				h.t.Errorf("listed task %s comes with %d attempts; a listing has none", task.ID, len(task.Attempts))
			}
		}
	}
	// A page's cursor keeps its place when newer tasks arrive meanwhile: no task twice, none missed.
	page, next, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 50})
	h.must(err)
	h.create(t0.Add(time.Hour))
	rest, next2, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 100, Cursor: next})
	h.must(err)
	if got := ids(append(page, rest...)); got != ids(all) || next2 != "" {
		h.t.Errorf("pages around an insert: %s (next %q)\nwant %s", got, next2, ids(all))
	}
}

func testListTasksRefusesBadInput(h *harness) {
	h.create(t0)
	_, next, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 1})
	h.must(err)
	if next != "" {
		h.t.Errorf("one task, one page: next %q", next)
	}
	for _, c := range []struct {
		f     mvp.TaskFilter
		field string
	}{
		{mvp.TaskFilter{Cursor: "!!"}, "cursor"},
		{mvp.TaskFilter{Cursor: "%%%"}, "cursor"},
		{mvp.TaskFilter{Cursor: "not a cursor this store gave out"}, "cursor"},
		{mvp.TaskFilter{State: "BOGUS"}, "state"},
		{mvp.TaskFilter{Workload: "bogus"}, "workload"},
	} {
		_, _, err := h.s.ListTasks(h.ctx, c.f)
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != c.field {
			h.t.Errorf("filter %+v: %v, want %s on field %q", c.f, err, mvp.CodeInvalid, c.field)
		}
	}
}

// testEveryTransition walks all pairs of states: an allowed one is written with its event; any other is refused
// with a conflict and leaves the task, its attempts and its events as they were.
func testEveryTransition(h *harness) {
	if len(mvp.States) < 2 {
		h.t.Fatalf("%d states", len(mvp.States))
	}
	allowed, refused := 0, 0
	for _, from := range mvp.States {
		for _, to := range mvp.States {
			task := h.create(t0)
			h.drive(task.ID, from)
			before := h.snap(task.ID)
			at := t0.Add(time.Minute)
			next := ptr(at.Add(time.Hour))
			err := h.s.Apply(h.ctx, mvp.Change{TaskID: task.ID, From: from, To: to, At: at, NextRunAt: &next,
				PendingReason: ptr("waiting"), ErrorSummary: ptr("summary"), EventPayload: map[string]any{"k": "v"}})
			if !mvp.CanTransition(from, to) {
				refused++
				if mvp.ErrorCode(err) != mvp.CodeConflict {
					h.t.Errorf("%s → %s is not in the table: got %v, want a %s error", from, to, err, mvp.CodeConflict)
				}
				h.unchanged(fmt.Sprintf("the refused %s → %s", from, to), before)
				continue
			}
			allowed++
			if err != nil {
				h.t.Errorf("%s → %s is in the table: %v", from, to, err)
				continue
			}
			after := h.snap(task.ID)
			want := *before.Task
			want.State, want.UpdatedAt, want.NextRunAt = to, at, next
			want.PendingReason, want.ErrorSummary = "waiting", "summary"
			h.checkTask(fmt.Sprintf("%s → %s", from, to), after.Task, &want)
			h.checkAttempts(fmt.Sprintf("%s → %s", from, to), after.Task.Attempts, before.Task.Attempts)
			if len(after.Events) != len(before.Events)+1 {
				h.t.Errorf("%s → %s: %d events became %d, want one more", from, to, len(before.Events), len(after.Events))
				continue
			}
			ev := after.Events[len(after.Events)-1]
			p := h.payload(ev)
			if ev.Type != mvp.EventStateTransition || ev.TaskID != task.ID || !ev.TS.Equal(at) ||
				p["from"] != string(from) || p["to"] != string(to) || p["k"] != "v" {
				h.t.Errorf("%s → %s: event %+v payload %s", from, to, ev, ev.Payload)
			}
		}
	}
	if allowed == 0 || refused == 0 {
		h.t.Fatalf("%d transitions allowed, %d refused: the walk checked nothing", allowed, refused)
	}

	task := h.create(t0)
	before := h.snap(task.ID)
	for _, c := range []mvp.Change{
		{TaskID: task.ID, From: "BOGUS", To: mvp.StateQueued, At: t0},
		{TaskID: task.ID, From: mvp.StateQueued, To: "BOGUS", At: t0},
	} {
		if err := h.s.Apply(h.ctx, c); mvp.ErrorCode(err) != mvp.CodeInvalid {
			h.t.Errorf("unknown state %q → %q: %v, want %s", c.From, c.To, err, mvp.CodeInvalid)
		}
	}
	h.unchanged("a transition with an unknown state", before)
}

// testApplyIsCompareAndSet applies every allowed transition to tasks in every other state: each write is refused
// with ErrConflict because its From does not match, and nothing is written.
func testApplyIsCompareAndSet(h *harness) {
	in := map[mvp.State]snapshot{}
	for _, s := range mvp.States {
		task := h.create(t0)
		h.drive(task.ID, s)
		in[s] = h.snap(task.ID)
	}
	checked := 0
	for _, actual := range mvp.States {
		task := in[actual].Task
		for _, from := range mvp.States {
			for _, to := range mvp.States {
				if from == actual || !mvp.CanTransition(from, to) {
					continue
				}
				checked++
				na := &mvp.Attempt{No: task.LatestAttemptNo + 1, RaySubmissionID: mvp.SubmissionID(task.ID, task.LatestAttemptNo+1), CreatedAt: t0}
				err := h.s.Apply(h.ctx, mvp.Change{TaskID: task.ID, From: from, To: to, At: t0.Add(time.Hour),
					PendingReason: ptr("stale"), NewAttempt: na, EventPayload: map[string]any{"k": "v"}})
				if !errors.Is(err, mvp.ErrConflict) || mvp.ErrorCode(err) != mvp.CodeConflict {
					h.t.Errorf("task in %s, change %s → %s: %v, want ErrConflict", actual, from, to, err)
				}
			}
		}
		h.unchanged(fmt.Sprintf("changes with a stale From on a task in %s", actual), in[actual])
	}
	if checked == 0 {
		h.t.Fatal("no stale change tried")
	}

	err := h.s.Apply(h.ctx, mvp.Change{TaskID: "mvp2-ppo-20251223-143201-ffffffff", From: mvp.StateQueued,
		To: mvp.StateCanceled, At: t0})
	if !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("unknown task: %v, want ErrNotFound", err)
	}
}

// testApplyAllIsApplyForEach: ApplyAll writes each change as Apply would, in one call: the changes that can be
// written are, each with its event; a lost compare-and-set, an unknown task, a refused transition and a change
// whose attempt cannot be written are each reported for that change alone and write nothing, and do not hold back
// the changes after them.
func testApplyAllIsApplyForEach(h *harness) {
	at := t0.Add(time.Minute)
	waitA, waitB, stale, dup, submit := h.create(t0), h.create(t0), h.create(t0), h.create(t0), h.create(t0)
	h.apply(mvp.Change{TaskID: stale.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0})
	h.submit(dup.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: dup.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources, At: t0,
		PendingReason: ptr("requeued")})
	staleBefore, dupBefore := h.snap(stale.ID), h.snap(dup.ID)
	wait := func(id string) mvp.Change {
		return mvp.Change{TaskID: id, From: mvp.StateQueued, To: mvp.StatePendingResources, At: at,
			PendingReason: ptr("gpus_busy"), EventPayload: map[string]any{"reason": "gpus_busy"}}
	}
	cs := []mvp.Change{
		wait(waitA.ID),
		wait(stale.ID), // CANCELED: its compare-and-set is lost
		wait("mvp2-ppo-20251223-143201-ffffffff"),
		{TaskID: waitB.ID, From: mvp.StateQueued, To: mvp.StateSucceeded, At: at}, // not in the table
		{TaskID: dup.ID, From: mvp.StatePendingResources, To: mvp.StateSubmitting, At: at, // attempt 1 exists
			NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(dup.ID, 1), CreatedAt: at}},
		{TaskID: submit.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: at,
			NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(submit.ID, 1), CreatedAt: at}},
		wait(waitB.ID),
	}
	errs, err := h.s.ApplyAll(h.ctx, cs)
	if err != nil || len(errs) != len(cs) {
		h.t.Fatalf("ApplyAll: %v, %d results for %d changes", err, len(errs), len(cs))
	}
	for i, want := range []error{nil, mvp.ErrConflict, mvp.ErrNotFound, nil, mvp.ErrConflict, nil, nil} {
		switch {
		case i == 3:
			if want := mvp.CheckTransition(mvp.StateQueued, mvp.StateSucceeded); errs[i] == nil ||
				errs[i].Error() != want.Error() {
				h.t.Errorf("change %d (a transition the table refuses): %v, want %v", i, errs[i], want)
			}
		case want == nil && errs[i] != nil, want != nil && !errors.Is(errs[i], want):
			h.t.Errorf("change %d: %v, want %v", i, errs[i], want)
		}
	}
	for _, id := range []string{waitA.ID, waitB.ID} {
		got := h.get(id)
		if got.State != mvp.StatePendingResources || got.PendingReason != "gpus_busy" {
			h.t.Errorf("%s: %s %q, want PENDING_RESOURCES gpus_busy", id, got.State, got.PendingReason)
		}
		if e := h.lastEvent(id); e.Type != mvp.EventStateTransition || h.payload(e)["reason"] != "gpus_busy" {
			h.t.Errorf("%s: last event %s %v", id, e.Type, h.payload(e))
		}
	}
	if got := h.get(submit.ID); got.State != mvp.StateSubmitting || len(got.Attempts) != 1 {
		h.t.Errorf("submitted task: %s with %d attempts", got.State, len(got.Attempts))
	}
	h.unchanged("a lost compare-and-set in ApplyAll", staleBefore)
	h.unchanged("a change whose attempt exists, in ApplyAll", dupBefore)
	if errs, err := h.s.ApplyAll(h.ctx, nil); err != nil || len(errs) != 0 {
		h.t.Errorf("ApplyAll of nothing: %v %v", errs, err)
	}
}

// testApplyWritesNothingWhenRefused: a change that fails after its compare-and-set matched (its attempt cannot
// be written) leaves no half row: not the task's new state, not the attempt, not the event.
func testApplyWritesNothingWhenRefused(h *harness) {
	a, b := h.create(t0), h.create(t0)
	h.submit(a.ID, mvp.StateQueued, 1, t0)
	aBefore := h.snap(a.ID)
	bBefore := h.snap(b.ID)
	at := t0.Add(time.Minute)
	base := func() mvp.Change {
		return mvp.Change{TaskID: b.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: at,
			PendingReason: ptr("x"), ErrorSummary: ptr("y"), NextRunAt: ptr(ptr(at))}
	}

	// b's new attempt reuses a's submission id.
	c := base()
	c.NewAttempt = &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(a.ID, 1), CreatedAt: at}
	if err := h.s.Apply(h.ctx, c); !errors.Is(err, mvp.ErrConflict) {
		h.t.Errorf("a submission id in use: %v, want ErrConflict", err)
	}
	h.unchanged("a new attempt with a submission id in use", bBefore)

	// An update of an attempt b does not have.
	c = base()
	c.To = mvp.StateCanceled
	c.AttemptUpdate = &mvp.Attempt{No: 3, RayStatus: mvp.RayStopped}
	if err := h.s.Apply(h.ctx, c); !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("update of an unknown attempt: %v, want ErrNotFound", err)
	}
	h.unchanged("an update of an unknown attempt", bBefore)

	// New attempts without a number or a submission id.
	for _, na := range []*mvp.Attempt{{No: 0, RaySubmissionID: mvp.SubmissionID(b.ID, 1)}, {No: 1}} {
		c = base()
		c.NewAttempt = na
		if err := h.s.Apply(h.ctx, c); mvp.ErrorCode(err) != mvp.CodeInvalid {
			h.t.Errorf("new attempt %+v: %v, want %s", na, err, mvp.CodeInvalid)
		}
	}
	h.unchanged("new attempts without a number or a submission id", bBefore)

	// A payload that is not JSON.
	c = base()
	c.EventPayload = map[string]any{"f": func() {}}
	if err := h.s.Apply(h.ctx, c); mvp.ErrorCode(err) != mvp.CodeInvalid {
		h.t.Errorf("a payload that cannot be JSON: %v, want %s", err, mvp.CodeInvalid)
	}
	h.unchanged("a change with a payload that cannot be JSON", bBefore)

	// a's attempt 1 again, under a new submission id.
	err := h.s.Apply(h.ctx, mvp.Change{TaskID: a.ID, From: mvp.StateSubmitting, To: mvp.StateSubmitting, At: at,
		PendingReason: ptr("x"), NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: a.ID + "--other", CreatedAt: at}})
	if !errors.Is(err, mvp.ErrConflict) {
		h.t.Errorf("attempt 1 twice: %v, want ErrConflict", err)
	}
	h.unchanged("a second attempt 1", aBefore)

	// The refusals left the store usable: the same change without its fault goes through.
	c = base()
	c.NewAttempt = &mvp.Attempt{No: 1, RaySubmissionID: mvp.SubmissionID(b.ID, 1), CreatedAt: at}
	h.must(h.s.Apply(h.ctx, c))
	if got := h.snap(b.ID); got.Task.State != mvp.StateSubmitting || len(got.Task.Attempts) != 1 ||
		len(got.Events) != len(bBefore.Events)+1 {
		h.t.Errorf("after the refusals: %s", dump(got))
	}
}

func testApplySetsLeavesAndClearsFields(h *harness) {
	task := h.create(t0)
	next := t0.Add(time.Hour)
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0.Add(time.Second),
		NextRunAt: ptr(&next), PendingReason: ptr("no node has 4 free GPUs"), ErrorSummary: ptr("last attempt: OOM")})
	want := *task
	want.State, want.UpdatedAt, want.NextRunAt = mvp.StatePendingResources, t0.Add(time.Second), &next
	want.PendingReason, want.ErrorSummary = "no node has 4 free GPUs", "last attempt: OOM"
	h.checkTask("set", h.get(task.ID), &want)

	// nil fields leave their columns alone; the state may be rewritten in place where the table allows it.
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: mvp.StatePendingResources, At: t0.Add(2 * time.Second)})
	want.UpdatedAt = t0.Add(2 * time.Second)
	h.checkTask("left alone", h.get(task.ID), &want)
	ev := h.lastEvent(task.ID)
	if p := h.payload(ev); ev.Type != mvp.EventStateTransition || p["from"] != string(mvp.StatePendingResources) ||
		p["to"] != string(mvp.StatePendingResources) || !ev.TS.Equal(t0.Add(2*time.Second)) {
		h.t.Errorf("in-place event %+v payload %s", ev, ev.Payload)
	}

	// A pointer to the zero value clears.
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: mvp.StatePendingResources,
		At: t0.Add(3 * time.Second), NextRunAt: ptr[*time.Time](nil), PendingReason: ptr(""), ErrorSummary: ptr("")})
	want.UpdatedAt, want.NextRunAt, want.PendingReason, want.ErrorSummary = t0.Add(3*time.Second), nil, "", ""
	h.checkTask("cleared", h.get(task.ID), &want)
	if n := len(h.events(task.ID)); n != 4 {
		h.t.Errorf("%d events, want CREATED and 3 transitions", n)
	}
}

// A task that no longer waits has no reason to wait: a task canceled while PENDING_RESOURCES kept "waiting for
// GPUs: …" in the API, the CLI and the web page. Found in a user walk-through.
func testLeavingTheQueueClearsTheReason(h *harness) {
	for _, to := range []mvp.State{mvp.StateCanceled, mvp.StateSubmitting} {
		task := h.create(t0)
		h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0.Add(time.Second),
			PendingReason: ptr("waiting for GPUs")})
		c := mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: to, At: t0.Add(2 * time.Second)}
		if to == mvp.StateSubmitting {
			c.NewAttempt = &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: mvp.SubmissionID(task.ID, 1), CreatedAt: c.At}
		}
		h.apply(c)
		if got := h.get(task.ID); got.PendingReason != "" {
			h.t.Errorf("%s: pending_reason %q stays", to, got.PendingReason)
		}
	}
}

func testApplyNewAttemptAndAttemptUpdate(h *harness) {
	task := h.create(t0)
	at1 := t0.Add(time.Second)
	a1 := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: mvp.SubmissionID(task.ID, 1), CreatedAt: at1}
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: at1, NewAttempt: a1,
		EventType: mvp.EventSubmit, EventPayload: map[string]any{"gpus": 8}})
	got := h.get(task.ID)
	if got.LatestAttemptNo != 1 || got.State != mvp.StateSubmitting {
		h.t.Errorf("after the submit: latest attempt %d, state %s", got.LatestAttemptNo, got.State)
	}
	h.checkAttempts("new attempt", got.Attempts, []*mvp.Attempt{a1})
	ev := h.lastEvent(task.ID)
	if p := h.payload(ev); ev.Type != mvp.EventSubmit || !ev.TS.Equal(at1) || p["attempt_no"] != float64(1) ||
		p["from"] != string(mvp.StateQueued) || p["to"] != string(mvp.StateSubmitting) || p["gpus"] != float64(8) {
		h.t.Errorf("submit event %+v payload %s", ev, ev.Payload)
	}

	// Ray runs it: the attempt update is written with the state.
	start := t0.Add(5 * time.Second)
	at2 := t0.Add(6 * time.Second)
	run := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: a1.RaySubmissionID, RayJobID: "02000000",
		RayStatus: mvp.RayRunning, Message: "running", DriverNodeID: "node-1", CreatedAt: at1, StartTime: &start}
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: at2, AttemptUpdate: run})
	got = h.get(task.ID)
	h.checkAttempts("running", got.Attempts, []*mvp.Attempt{run})
	ev = h.lastEvent(task.ID)
	if p := h.payload(ev); ev.Type != mvp.EventStateTransition || p["attempt_no"] != float64(1) || !ev.TS.Equal(at2) {
		h.t.Errorf("running event %+v payload %s", ev, ev.Payload)
	}

	// It fails for want of resources and is requeued; the update overwrites every Ray-side field.
	end := t0.Add(time.Minute)
	code := 1
	failed := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: a1.RaySubmissionID, RayJobID: "02000000",
		RayStatus: mvp.RayFailed, FailureKind: mvp.FailureInsufficientResources, DriverNodeID: "node-1",
		CreatedAt: at1, StartTime: &start, EndTime: &end, ExitCode: &code}
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StatePendingResources, At: end,
		AttemptUpdate: failed, EventType: mvp.EventRetryScheduled})

	// Attempt 2.
	at3 := t0.Add(2 * time.Minute)
	a2 := &mvp.Attempt{TaskID: task.ID, No: 2, RaySubmissionID: mvp.SubmissionID(task.ID, 2), CreatedAt: at3}
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: mvp.StateSubmitting, At: at3, NewAttempt: a2})
	got = h.get(task.ID)
	if got.LatestAttemptNo != 2 {
		h.t.Errorf("latest attempt %d, want 2", got.LatestAttemptNo)
	}
	h.checkAttempts("two attempts, in order", got.Attempts, []*mvp.Attempt{failed, a2})

	types := []string{}
	for _, e := range h.events(task.ID) {
		types = append(types, e.Type)
	}
	if want := []string{mvp.EventCreated, mvp.EventSubmit, mvp.EventStateTransition, mvp.EventRetryScheduled,
		mvp.EventStateTransition}; !reflect.DeepEqual(types, want) {
		h.t.Errorf("events %v, want %v", types, want)
	}
}

// testConcurrentApplyOneWinner races changes from the same state on the same task: exactly one is written, every
// other gets ErrConflict, and only the winner's attempt and event exist.
func testConcurrentApplyOneWinner(h *harness) {
	var targets []mvp.State
	for _, s := range mvp.States {
		if s != mvp.StateQueued && mvp.CanTransition(mvp.StateQueued, s) {
			targets = append(targets, s)
		}
	}
	if len(targets) < 2 {
		h.t.Fatalf("QUEUED has %d targets; the race needs two", len(targets))
	}
	const racers, rounds = 4, 25
	for round := 0; round < rounds; round++ {
		task := h.create(t0)
		errs := make([]error, racers)
		changes := make([]mvp.Change, racers)
		for i := range changes {
			to := targets[i%len(targets)]
			if round%2 == 1 {
				to = mvp.StateSubmitting // every racer submits attempt 1, each under its own submission id
			}
			changes[i] = mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: to, At: t0.Add(time.Duration(i+1) * time.Second),
				PendingReason: ptr(fmt.Sprintf("racer %d", i)), EventPayload: map[string]any{"racer": i}}
			if to == mvp.StateSubmitting {
				changes[i].NewAttempt = &mvp.Attempt{No: 1, RaySubmissionID: fmt.Sprintf("%s--racer%d", task.ID, i), CreatedAt: t0}
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range changes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = h.s.Apply(h.ctx, changes[i])
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				h.t.Fatalf("round %d: racers %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, mvp.ErrConflict):
				h.t.Fatalf("round %d: racer %d lost with %v, want ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			h.t.Fatalf("round %d: nobody won: %v", round, errs)
		}
		w := changes[winner]
		s := h.snap(task.ID)
		if s.Task.State != w.To || s.Task.PendingReason != *w.PendingReason || !s.Task.UpdatedAt.Equal(w.At) {
			h.t.Fatalf("round %d: racer %d won but the task is %s, %q, updated %s", round, winner, s.Task.State,
				s.Task.PendingReason, s.Task.UpdatedAt)
		}
		if w.NewAttempt != nil {
			if len(s.Task.Attempts) != 1 || s.Task.Attempts[0].RaySubmissionID != w.NewAttempt.RaySubmissionID {
				h.t.Fatalf("round %d: attempts %s, want only racer %d's", round, dump(s), winner)
			}
		} else if len(s.Task.Attempts) != 0 {
			h.t.Fatalf("round %d: attempts %s, want none", round, dump(s))
		}
		if len(s.Events) != 2 || h.payload(s.Events[1])["racer"] != float64(winner) {
			h.t.Fatalf("round %d: events %s, want CREATED and racer %d's", round, dump(s), winner)
		}
	}
}

func testUpdateAttempt(h *harness) {
	task := h.create(t0)
	h.submit(task.ID, mvp.StateQueued, 1, t0)
	sid := mvp.SubmissionID(task.ID, 1)
	start, end := t0.Add(time.Second), t0.Add(time.Minute)
	code := 3
	before := h.snap(task.ID)
	h.must(h.s.UpdateAttempt(h.ctx, "", &mvp.Attempt{TaskID: task.ID, No: 1, RayJobID: "02000000", RayStatus: mvp.RayFailed,
		FailureKind: mvp.FailureUserError, Message: "boom", DriverNodeID: "n1", StartTime: &start, EndTime: &end,
		ExitCode: &code, RaySubmissionID: "not-the-submission-id", CreatedAt: t0.Add(time.Hour)},
		mvp.EventRayStatusSync, map[string]any{"ray_status": "FAILED"}))
	s := h.snap(task.ID)
	want := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: sid, RayJobID: "02000000", RayStatus: mvp.RayFailed,
		FailureKind: mvp.FailureUserError, Message: "boom", DriverNodeID: "n1", CreatedAt: t0, StartTime: &start,
		EndTime: &end, ExitCode: &code}
	h.checkAttempts("updated (the submission id and creation time are not Ray-side fields)", s.Task.Attempts,
		[]*mvp.Attempt{want})
	h.checkTask("the task under an attempt update", s.Task, before.Task)
	if len(s.Events) != len(before.Events)+1 {
		h.t.Fatalf("%d events became %d, want one more", len(before.Events), len(s.Events))
	}
	last := s.Events[len(s.Events)-1]
	if p := h.payload(last); last.Type != mvp.EventRayStatusSync || last.TaskID != task.ID || last.TS.IsZero() ||
		p["attempt_no"] != float64(1) || p["ray_status"] != "FAILED" {
		h.t.Errorf("event %+v payload %s", last, last.Payload)
	}

	// Every Ray-side field is overwritten, the empty ones too; an empty event type is a status sync.
	h.must(h.s.UpdateAttempt(h.ctx, mvp.RayFailed, &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RayStopped}, "", nil))
	s = h.snap(task.ID)
	h.checkAttempts("overwritten", s.Task.Attempts, []*mvp.Attempt{{TaskID: task.ID, No: 1, RaySubmissionID: sid,
		RayStatus: mvp.RayStopped, CreatedAt: t0}})
	if last := s.Events[len(s.Events)-1]; last.Type != mvp.EventRayStatusSync || h.payload(last)["attempt_no"] != float64(1) {
		h.t.Errorf("default event %+v payload %s", last, last.Payload)
	}

	// A compare-and-set on the status read: a writer whose copy is stale (the attempt is no longer FAILED) changes
	// nothing.
	err := h.s.UpdateAttempt(h.ctx, mvp.RayFailed, &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RayRunning}, "", nil)
	if !errors.Is(err, mvp.ErrConflict) {
		h.t.Errorf("update from a stale status: %v, want ErrConflict", err)
	}
	h.unchanged("an update from a stale status", s)

	for _, a := range []*mvp.Attempt{{TaskID: task.ID, No: 2}, {TaskID: "mvp2-ppo-20251223-143201-ffffffff", No: 1}} {
		err := h.s.UpdateAttempt(h.ctx, "", a, mvp.EventRayStatusSync, map[string]any{"x": 1})
		if !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
			h.t.Errorf("unknown attempt %s/%d: %v, want ErrNotFound", a.TaskID, a.No, err)
		}
	}
	h.unchanged("updates of unknown attempts", s)
}

func testJudgeAttempt(h *harness) {
	task := h.create(t0)
	h.submit(task.ID, mvp.StateQueued, 1, t0)
	judged := &mvp.Attempt{TaskID: task.ID, No: 1, FailureKind: mvp.FailureMaxRuntimeExceeded, Message: "ran too long"}

	// The task's state read: SUBMITTING, not RUNNING (nor CANCELED, as a cancel that landed since would make it).
	before := h.snap(task.ID)
	for _, st := range []mvp.State{mvp.StateRunning, mvp.StateCanceled} {
		err := h.s.JudgeAttempt(h.ctx, st, mvp.RayUnknown, judged, mvp.EventStopRequested, map[string]any{"x": 1})
		if !errors.Is(err, mvp.ErrConflict) {
			h.t.Errorf("judged on a task read %s (it is SUBMITTING): %v, want ErrConflict", st, err)
		}
	}
	h.unchanged("judgements on a task whose state changed", before)
	// The attempt's status read is stale: refused as UpdateAttempt refuses it.
	if err := h.s.JudgeAttempt(h.ctx, mvp.StateSubmitting, mvp.RayRunning, judged, mvp.EventStopRequested, nil); !errors.Is(err, mvp.ErrConflict) {
		h.t.Errorf("judged on a stale Ray status: %v, want ErrConflict", err)
	}
	h.unchanged("a judgement on a stale Ray status", before)
	if err := h.s.JudgeAttempt(h.ctx, "", mvp.RayUnknown, judged, mvp.EventStopRequested, nil); mvp.ErrorCode(err) != mvp.CodeInvalid {
		h.t.Errorf("judged with no task state: %v, want invalid", err)
	}
	// Both as read: written, with its event.
	h.must(h.s.JudgeAttempt(h.ctx, mvp.StateSubmitting, mvp.RayUnknown, judged, mvp.EventStopRequested,
		map[string]any{"failure_kind": string(mvp.FailureMaxRuntimeExceeded)}))
	s := h.snap(task.ID)
	if a := s.Task.Attempts[0]; a.FailureKind != mvp.FailureMaxRuntimeExceeded || a.Message != "ran too long" {
		h.t.Errorf("attempt %+v, want the judgement", a)
	}
	h.checkTask("the task under a judgement", s.Task, before.Task)
	if last := s.Events[len(s.Events)-1]; last.Type != mvp.EventStopRequested || h.payload(last)["attempt_no"] != float64(1) {
		h.t.Errorf("event %+v payload %s", last, last.Payload)
	}
	if err := h.s.JudgeAttempt(h.ctx, mvp.StateSubmitting, mvp.RayUnknown, &mvp.Attempt{TaskID: task.ID, No: 2},
		"", nil); !errors.Is(err, mvp.ErrNotFound) {
		h.t.Errorf("an unknown attempt: %v, want ErrNotFound", err)
	}
}

func testRunnableOrder(h *harness) {
	// Created out of order; a and a2 share a creation time and a2 (the larger id) is created first.
	b := h.newTask(t0.Add(1 * time.Second))
	a2 := h.newTask(t0.Add(2 * time.Second))
	a2.ID = "mvp2-ppo-20251223-143203-bbbbbbbb"
	a := h.newTask(t0.Add(2 * time.Second))
	a.ID = "mvp2-ppo-20251223-143203-aaaaaaaa"
	c := h.newTask(t0.Add(3 * time.Second))
	for _, task := range []*mvp.Task{c, a2, b, a} {
		h.must(h.s.CreateTask(h.ctx, task))
	}
	// c waits for resources with a next_run_at far ahead: Runnable still returns it (Decide sees the whole queue).
	later := t0.Add(24 * time.Hour)
	h.apply(mvp.Change{TaskID: c.ID, From: mvp.StateQueued, To: mvp.StatePendingResources, At: t0.Add(time.Minute),
		NextRunAt: ptr(&later), PendingReason: ptr("waiting for 8 GPUs")})
	c.State, c.UpdatedAt, c.NextRunAt, c.PendingReason = mvp.StatePendingResources, t0.Add(time.Minute), &later, "waiting for 8 GPUs"

	// Tasks in every other state are not runnable, even the oldest.
	for _, s := range mvp.States {
		if !s.Waiting() {
			h.drive(h.create(t0).ID, s)
		}
	}
	q, err := h.s.Runnable(h.ctx)
	h.must(err)
	want := []*mvp.Task{b, a, a2, c}
	if ids(q) != ids(want) {
		h.t.Fatalf("runnable %s\nwant     %s", ids(q), ids(want))
	}
	for i := range want {
		if len(q[i].JobSpecYAML) != 0 || len(q[i].SpecJSON) != 0 {
			h.t.Errorf("runnable: task %s holds its specs (%d + %d bytes): the queue holds none", q[i].ID,
				len(q[i].JobSpecYAML), len(q[i].SpecJSON))
		}
		yml, spec, err := h.s.TaskSpec(h.ctx, q[i].ID)
		h.must(err)
		w := *want[i]
		if yml != w.JobSpecYAML || !sameJSON(spec, w.SpecJSON) {
			h.t.Errorf("TaskSpec(%s) = %q, %s; want %q, %s", w.ID, yml, spec, w.JobSpecYAML, w.SpecJSON)
		}
		got := *q[i]
		got.JobSpecYAML, got.SpecJSON, w.JobSpecYAML, w.SpecJSON = "", nil, "", nil
		h.checkTask("runnable", &got, &w)
	}
}

// testRanIsReadFromTheAttempts: a task has run (Task.Ran) once one of its attempts ran (mvp saw it RUNNING:
// running_at) other than a lost race (INSUFFICIENT_RESOURCES from verl's fail-fast check, which ends a run before
// it trains). Lost races and an attempt that never ran (Ray took it, so it has Ray's start_time, but it failed
// PENDING) leave it false: its max_queued_s still holds. A gang stopped as stuck after it ran counts as a run (mvp
// cannot tell whether it trained first). GetTask, ListTasks and Runnable (read whole, and brought up to date after
// a requeue) all say so.
func testRanIsReadFromTheAttempts(h *harness) {
	const lostRace = "Total available GPUs 6.0 is less than total desired GPUs 8"
	task := h.create(t0)
	check := func(id, what string, want bool) {
		h.t.Helper()
		if got := h.get(id); got.Ran != want {
			h.t.Errorf("%s: GetTask says Ran=%v, want %v", what, got.Ran, want)
		}
		list, _, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{})
		h.must(err)
		for _, l := range list {
			if l.ID == id && l.Ran != want {
				h.t.Errorf("%s: ListTasks says Ran=%v, want %v", what, l.Ran, want)
			}
		}
		q, err := h.s.Runnable(h.ctx)
		h.must(err)
		found := false
		for _, r := range q {
			if r.ID == id {
				found = true
				if r.Ran != want {
					h.t.Errorf("%s: Runnable says Ran=%v, want %v", what, r.Ran, want)
				}
			}
		}
		if !found {
			h.t.Errorf("%s: Runnable %s lacks %s", what, ids(q), id)
		}
	}
	check(task.ID, "never submitted", false)
	if _, err := h.s.Runnable(h.ctx); err != nil { // read whole now: the requeues below come through the journal
		h.t.Fatal(err)
	}
	end := func(id string, no int, at time.Time, ran bool, kind mvp.FailureKind, message string) {
		h.t.Helper()
		h.submit(id, h.get(id).State, no, at)
		start := at.Add(time.Second) // Ray's start_time: when Ray took the submission
		a := &mvp.Attempt{TaskID: id, No: no, RaySubmissionID: mvp.SubmissionID(id, no), CreatedAt: at,
			RayJobID: fmt.Sprintf("0%d000000", no), RayStatus: mvp.RayFailed, FailureKind: kind, Message: message,
			StartTime: &start}
		if ran {
			running, stop := at.Add(2*time.Second), at.Add(time.Minute)
			a.RunningAt, a.EndTime = &running, &stop
		}
		next := at.Add(time.Hour)
		h.apply(mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StatePendingResources,
			At: at.Add(time.Minute), AttemptUpdate: a, NextRunAt: ptr(&next), EventType: mvp.EventRetryScheduled})
	}
	end(task.ID, 1, t0.Add(time.Minute), true, mvp.FailureInsufficientResources, lostRace)
	check(task.ID, "a lost race", false)
	end(task.ID, 2, t0.Add(2*time.Hour), false, mvp.FailureInfra, "the Ray job vanished")
	check(task.ID, "an attempt Ray took but never ran (INFRA while PENDING)", false)
	end(task.ID, 3, t0.Add(4*time.Hour), true, mvp.FailureInsufficientResources, lostRace)
	check(task.ID, "another lost race", false)
	end(task.ID, 4, t0.Add(6*time.Hour), true, mvp.FailureInfra, "the Ray job vanished")
	check(task.ID, "a run that Ray lost (INFRA)", true)
	end(task.ID, 5, t0.Add(8*time.Hour), true, mvp.FailureInsufficientResources, lostRace)
	check(task.ID, "a lost race after a run", true)

	stuck := h.create(t0.Add(time.Second))
	end(stuck.ID, 1, t0.Add(time.Minute), true, mvp.FailureInsufficientResources,
		"the gang of 1×4 GPUs could not be placed for 2m0s: no node had room for its placement groups")
	check(stuck.ID, "a gang stopped as stuck after it ran", true)
}

func testActive(h *harness) {
	now := t0.Add(time.Hour)
	var want []*mvp.Task
	var wantAttempt []*mvp.Attempt
	follow := func(task *mvp.Task, no int) {
		want = append(want, task)
		wantAttempt = append(wantAttempt, &mvp.Attempt{TaskID: task.ID, No: no})
	}

	// Waiting without attempts: not active.
	h.create(t0)

	submitting := h.create(t0.Add(1 * time.Second))
	h.submit(submitting.ID, mvp.StateQueued, 1, t0)
	follow(submitting, 1)

	running := h.create(t0.Add(2 * time.Second))
	h.submit(running.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: running.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "01000000"}})
	follow(running, 1)

	// Terminal in mvp (canceled) while its Ray job still runs: active until the attempt's Ray status is terminal.
	canceled := h.create(t0.Add(3 * time.Second))
	h.submit(canceled.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: canceled.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "02000000"}})
	h.apply(mvp.Change{TaskID: canceled.ID, From: mvp.StateRunning, To: mvp.StateCanceled, At: t0})
	follow(canceled, 1)

	// Requeued after attempt 1 ended, then retried: only attempt 2 counts.
	retried := h.create(t0.Add(4 * time.Second))
	h.submit(retried.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: retried.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed, EndTime: &now}})
	h.submit(retried.ID, mvp.StatePendingResources, 2, t0)
	follow(retried, 2)

	// Requeued while Ray still says PENDING: its job may yet start, so it is followed.
	requeued := h.create(t0.Add(5 * time.Second))
	h.submit(requeued.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: requeued.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayPending, RayJobID: "03000000"}})
	follow(requeued, 1)

	// Ended in mvp's eyes (end time written) though Ray's status stayed empty: not followed.
	refused := h.create(t0.Add(6 * time.Second))
	h.submit(refused.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: refused.ID, From: mvp.StateSubmitting, To: mvp.StateFailed, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, FailureKind: mvp.FailureUserError, EndTime: &now}})

	// Succeeded with Ray's terminal status: not followed.
	done := h.create(t0.Add(7 * time.Second))
	h.submit(done.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: done.ID, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RaySucceeded, EndTime: &now}})

	check := func(what string, want []*mvp.Task, wantAttempt []*mvp.Attempt) []*mvp.Task {
		h.t.Helper()
		act, err := h.s.Active(h.ctx)
		h.must(err)
		if ids(act) != ids(want) {
			h.t.Fatalf("%s: active (oldest first) %s\nwant %s", what, ids(act), ids(want))
		}
		for i, task := range act {
			stored := h.get(task.ID)
			h.checkTask(what, task, stored)
			latest := stored.Attempts[len(stored.Attempts)-1]
			if latest.No != wantAttempt[i].No {
				h.t.Errorf("%s: %s's latest attempt is %d, want %d", what, task.ID, latest.No, wantAttempt[i].No)
			}
			h.checkAttempts(what+": only the latest attempt", task.Attempts, []*mvp.Attempt{latest})
		}
		return act
	}
	act := check("active", want, wantAttempt)
	if c := act[2]; c.ID != canceled.ID || c.State != mvp.StateCanceled || c.Attempts[0].RayJobID != "02000000" ||
		c.Attempts[0].RayStatus != mvp.RayRunning {
		h.t.Errorf("the canceled task: %+v", c)
	}

	// The canceled task's job stops: it leaves.
	h.must(h.s.UpdateAttempt(h.ctx, mvp.RayRunning, &mvp.Attempt{TaskID: canceled.ID, No: 1, RayStatus: mvp.RayStopped,
		RayJobID: "02000000", EndTime: &now}, mvp.EventRayStatusSync, nil))
	want = append(want[:2:2], want[3:]...)
	wantAttempt = append(wantAttempt[:2:2], wantAttempt[3:]...)
	check("after the stop", want, wantAttempt)
}

func testEventsPaging(h *harness) {
	a, other := h.create(t0), h.create(t0)
	const n = 250
	for i := 0; i < n; i++ {
		h.must(h.s.AddEvent(h.ctx, &mvp.Event{TaskID: a.ID, TS: t0.Add(time.Duration(i+1) * time.Second), Type: "X",
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}))
		if i%50 == 0 {
			h.must(h.s.AddEvent(h.ctx, &mvp.Event{TaskID: other.ID, TS: t0, Type: "Y"}))
		}
	}
	for _, limit := range []int{0, 1, 7, n, n + 1, 1000, 5000} {
		var got []*mvp.Event
		cursor := ""
		for pages := 0; ; pages++ {
			evs, next, err := h.s.Events(h.ctx, a.ID, cursor, limit)
			if err != nil {
				h.t.Fatalf("limit %d: %v", limit, err)
			}
			if (limit > 0 && len(evs) > limit) || (next != "" && len(evs) == 0) ||
				(next != "" && limit > 0 && len(evs) != limit) {
				h.t.Fatalf("limit %d: a page of %d events with next cursor %q", limit, len(evs), next)
			}
			got = append(got, evs...)
			if next == "" {
				break
			}
			if pages > 2*n {
				h.t.Fatalf("limit %d: paging does not end", limit)
			}
			cursor = next
		}
		if len(got) != n+1 || got[0].Type != mvp.EventCreated || !got[0].TS.Equal(t0) {
			h.t.Fatalf("limit %d: %d events, want CREATED and %d more", limit, len(got), n)
		}
		for i, e := range got[1:] {
			if e.TaskID != a.ID || e.ID <= got[i].ID || e.Type != "X" || !e.TS.Equal(t0.Add(time.Duration(i+1)*time.Second)) ||
				h.payload(e)["i"] != float64(i) {
				h.t.Fatalf("limit %d: event %d is %+v payload %s (after id %d)", limit, i+1, e, e.Payload, got[i].ID)
			}
		}
	}
	if evs := h.events(other.ID); len(evs) != 1+n/50 {
		h.t.Errorf("the other task has %d events, want %d", len(evs), 1+n/50)
	}
	for _, c := range []string{"!!", "%%%", "not a cursor this store gave out"} {
		_, _, err := h.s.Events(h.ctx, a.ID, c, 10)
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != "cursor" {
			h.t.Errorf("cursor %q: %v, want %s on field cursor", c, err, mvp.CodeInvalid)
		}
	}
}

func testFinishedInRayAndMarkRayDeleted(h *harness) {
	// finish submits a task and ends its attempt 1 with status at end (nil: Ray gave no end time).
	finish := func(created time.Time, status mvp.RayStatus, end *time.Time, to mvp.State) *mvp.Task {
		task := h.create(t0)
		h.submit(task.ID, mvp.StateQueued, 1, created)
		h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: to, At: t0.Add(time.Hour),
			AttemptUpdate: &mvp.Attempt{No: 1, RayJobID: "01000000", RayStatus: status, EndTime: end}})
		return task
	}
	at := func(d time.Duration) *time.Time { return ptr(t0.Add(d)) }
	a := finish(t0, mvp.RaySucceeded, at(1*time.Minute), mvp.StateSucceeded)
	b := finish(t0, mvp.RayFailed, at(2*time.Minute), mvp.StateFailed)
	c := finish(t0, mvp.RayStopped, at(3*time.Minute), mvp.StateCanceled)
	e := finish(t0.Add(150*time.Second), mvp.RaySucceeded, nil, mvp.StateSucceeded) // ordered by its creation
	// d's attempt 1 ended and was retried; attempt 2 still runs.
	d := finish(t0, mvp.RayFailed, at(4*time.Minute), mvp.StatePendingResources)
	h.submit(d.ID, mvp.StatePendingResources, 2, t0.Add(5*time.Minute))
	h.apply(mvp.Change{TaskID: d.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: t0.Add(5 * time.Minute),
		AttemptUpdate: &mvp.Attempt{No: 2, RayStatus: mvp.RayRunning}})
	// Still running, and canceled but still stopping: never listed.
	running := h.create(t0)
	h.submit(running.ID, mvp.StateQueued, 1, t0.Add(10*time.Minute))
	stopping := h.create(t0)
	h.submit(stopping.ID, mvp.StateQueued, 1, t0.Add(10*time.Minute))
	h.apply(mvp.Change{TaskID: stopping.ID, From: mvp.StateSubmitting, To: mvp.StateCanceled, At: t0.Add(10 * time.Minute),
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning}})

	list := func(keep, limit int) string {
		h.t.Helper()
		got, err := h.s.FinishedInRay(h.ctx, keep, limit)
		h.must(err)
		out := make([]string, len(got))
		for i, x := range got {
			full := h.get(x.TaskID).Attempts[x.No-1]
			if d := attemptDiff(x, full); len(d) > 0 {
				h.t.Errorf("finished attempt %s/%d differs from the stored one: %s", x.TaskID, x.No, strings.Join(d, "; "))
			}
			out[i] = fmt.Sprintf("%s/%d", x.TaskID, x.No)
		}
		return strings.Join(out, " ")
	}
	name := func(ts ...*mvp.Task) string {
		out := make([]string, len(ts))
		for i, task := range ts {
			out[i] = task.ID + "/1"
		}
		return strings.Join(out, " ")
	}
	for _, q := range []struct {
		keep, limit int
		want        string
	}{
		{0, 10, name(d, c, e, b, a)},
		{1, 2, name(c, e)},
		{4, 10, name(a)},
		{5, 10, ""},
		{0, 0, ""},
	} {
		if got := list(q.keep, q.limit); got != q.want {
			h.t.Errorf("FinishedInRay(keep %d, limit %d):\n  %s\nwant\n  %s", q.keep, q.limit, got, q.want)
		}
	}

	h.must(h.s.MarkRayDeleted(h.ctx, c.ID, 1))
	h.must(h.s.MarkRayDeleted(h.ctx, c.ID, 1)) // again: the loop may retry
	h.must(h.s.MarkRayDeleted(h.ctx, d.ID, 1))
	if got, want := list(0, 10), name(e, b, a); got != want {
		h.t.Errorf("after deleting %s/1 and %s/1:\n  %s\nwant\n  %s", c.ID, d.ID, got, want)
	}
	for _, x := range []struct {
		id string
		no int
	}{{a.ID, 9}, {"mvp2-ppo-20251223-143201-ffffffff", 1}} {
		if err := h.s.MarkRayDeleted(h.ctx, x.id, x.no); !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
			h.t.Errorf("mark unknown attempt %s/%d deleted: %v, want ErrNotFound", x.id, x.no, err)
		}
	}
}

func testAddEvent(h *harness) {
	task := h.create(t0)
	e := &mvp.Event{TaskID: task.ID, TS: t0.Add(time.Minute), Type: mvp.EventLogNotKept, Payload: json.RawMessage(`{"bytes": 12}`)}
	h.must(h.s.AddEvent(h.ctx, e))
	empty := &mvp.Event{TaskID: task.ID, TS: t0.Add(2 * time.Minute), Type: mvp.EventRayUnavailable}
	h.must(h.s.AddEvent(h.ctx, empty))
	if e.ID == 0 || empty.ID <= e.ID || !e.TS.Equal(t0.Add(time.Minute)) {
		h.t.Errorf("ids %d then %d, ts %s", e.ID, empty.ID, e.TS)
	}
	evs := h.events(task.ID)
	if len(evs) != 3 {
		h.t.Fatalf("%d events, want CREATED and the 2 added", len(evs))
	}
	got := evs[1]
	if got.ID != e.ID || got.TaskID != task.ID || got.Type != mvp.EventLogNotKept || !got.TS.Equal(e.TS) ||
		!sameJSON(got.Payload, []byte(`{"bytes":12}`)) {
		h.t.Errorf("added event read back as %+v payload %s", got, got.Payload)
	}
	if got := evs[2]; got.ID != empty.ID || got.Type != mvp.EventRayUnavailable || !sameJSON(got.Payload, []byte(`{}`)) {
		h.t.Errorf("event without a payload read back as %+v payload %q, want {}", got, got.Payload)
	}

	before := h.snap(task.ID)
	err := h.s.AddEvent(h.ctx, &mvp.Event{TaskID: "mvp2-ppo-20251223-143201-ffffffff", TS: t0, Type: "X"})
	if !errors.Is(err, mvp.ErrNotFound) || mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("event of an unknown task: %v, want ErrNotFound", err)
	}
	for _, bad := range []*mvp.Event{
		{TaskID: task.ID, TS: t0, Type: "X", Payload: json.RawMessage(`{`)},
		{TaskID: task.ID, TS: t0},
		{TS: t0, Type: "X"},
	} {
		if err := h.s.AddEvent(h.ctx, bad); mvp.ErrorCode(err) != mvp.CodeInvalid {
			h.t.Errorf("event %+v: %v, want %s", bad, err, mvp.CodeInvalid)
		}
	}
	h.unchanged("refused events", before)
}

// testNoteLogAndUnkeptLogs: an ended attempt whose log is not kept is listed until it is kept or tried maxTries
// times; a kept log is written through AttemptUpdate as well as NoteLog.
func testNoteLogAndUnkeptLogs(h *harness) {
	end := func(kept bool, d time.Duration) *mvp.Task {
		task := h.create(t0)
		h.submit(task.ID, mvp.StateQueued, 1, t0)
		h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: t0.Add(d),
			AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RaySucceeded, EndTime: ptr(t0.Add(d)), LogKept: kept}})
		return task
	}
	kept := end(true, time.Minute)
	lost := end(false, 2*time.Minute)
	later := end(false, 3*time.Minute)
	running := h.create(t0)
	h.submit(running.ID, mvp.StateQueued, 1, t0) // not ended: never listed
	list := func(maxTries int) string {
		h.t.Helper()
		got, err := h.s.UnkeptLogs(h.ctx, maxTries, 10)
		h.must(err)
		var out []string
		for _, a := range got {
			out = append(out, fmt.Sprintf("%s/%d", a.TaskID, a.LogTries))
		}
		return strings.Join(out, " ")
	}
	if got, want := list(3), lost.ID+"/0 "+later.ID+"/0"; got != want {
		h.t.Errorf("unkept logs %q, want %q (oldest end first)", got, want)
	}
	if !h.get(kept.ID).Attempts[0].LogKept || h.get(lost.ID).Attempts[0].LogKept {
		h.t.Errorf("log_kept not stored as written")
	}
	for i := 0; i < 3; i++ {
		h.must(h.s.NoteLog(h.ctx, lost.ID, 1, false))
	}
	h.must(h.s.NoteLog(h.ctx, later.ID, 1, true))
	if got := list(3); got != "" {
		h.t.Errorf("after 3 failed tries and one kept log: %q, want none", got)
	}
	if got, want := list(4), lost.ID+"/3"; got != want {
		h.t.Errorf("with 4 tries allowed: %q, want %q", got, want)
	}
	if a := h.get(later.ID).Attempts[0]; !a.LogKept {
		h.t.Errorf("NoteLog(kept) not stored: %+v", a)
	}
	h.must(h.s.MarkRayDeleted(h.ctx, lost.ID, 1))
	if got := list(4); got != "" {
		h.t.Errorf("a job deleted from Ray is still listed: %q", got)
	}
	if err := h.s.NoteLog(h.ctx, "mvp2-ppo-20990101-000000-ffff", 1, true); !errors.Is(err, mvp.ErrNotFound) {
		h.t.Errorf("NoteLog of an unknown attempt: %v, want ErrNotFound", err)
	}
}

func testCounts(h *harness) {
	c, err := h.s.Counts(h.ctx)
	h.must(err)
	if len(c.Tasks) != 0 || len(c.EndedAttempts) != 0 {
		h.t.Errorf("an empty store counts %+v", c)
	}
	// Two queued ppo tasks (the older at t0), one queued sft task, one running ppo task, and ended attempts:
	// one succeeded, two failed INFRA (one task requeued, then failed again), one still running (not counted).
	h.create(t0)
	h.create(t0.Add(time.Minute))
	sft := h.newTask(t0.Add(2 * time.Minute))
	sft.Workload, sft.ID = mvp.WorkloadSFT, strings.Replace(sft.ID, "-ppo-", "-sft-", 1)
	h.must(h.s.CreateTask(h.ctx, sft))
	h.drive(h.create(t0.Add(3*time.Minute)).ID, mvp.StateRunning)
	done := h.create(t0.Add(4 * time.Minute))
	h.submit(done.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: done.ID, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RaySucceeded}})
	bad := h.create(t0.Add(5 * time.Minute))
	h.submit(bad.ID, mvp.StateQueued, 1, t0)
	h.apply(mvp.Change{TaskID: bad.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed, FailureKind: mvp.FailureInfra}})
	h.submit(bad.ID, mvp.StatePendingResources, 2, t0)
	h.apply(mvp.Change{TaskID: bad.ID, From: mvp.StateSubmitting, To: mvp.StateFailed, At: t0,
		AttemptUpdate: &mvp.Attempt{No: 2, RayStatus: mvp.RayFailed, FailureKind: mvp.FailureInfra}})

	c, err = h.s.Counts(h.ctx)
	h.must(err)
	got := map[string]string{}
	for _, tc := range c.Tasks {
		got[string(tc.State)+"/"+string(tc.Workload)] = fmt.Sprintf("%d since %s", tc.N, tc.Oldest.Format(time.TimeOnly))
	}
	at := func(d time.Duration) string { return t0.Add(d).Format(time.TimeOnly) }
	want := map[string]string{
		"QUEUED/ppo":    "2 since " + at(0),
		"QUEUED/sft":    "1 since " + at(2*time.Minute),
		"RUNNING/ppo":   "1 since " + at(3*time.Minute),
		"SUCCEEDED/ppo": "1 since " + at(4*time.Minute),
		"FAILED/ppo":    "1 since " + at(5*time.Minute),
	}
	if !reflect.DeepEqual(got, want) {
		h.t.Errorf("tasks by state and workload:\n got %v\nwant %v", got, want)
	}
	ended := map[mvp.FailureKind]int{}
	for _, ac := range c.EndedAttempts {
		ended[ac.FailureKind] = ac.N
	}
	if want := map[mvp.FailureKind]int{mvp.FailureNone: 1, mvp.FailureInfra: 2}; !reflect.DeepEqual(ended, want) {
		h.t.Errorf("ended attempts by failure kind %v, want %v (a live attempt is not counted)", ended, want)
	}
}

// testNoteProgress: the latest attempt's progress is kept and shown on GetTask, ListTasks and Active; a late note
// from an older attempt changes nothing; a new attempt starts without progress; the heartbeat bound round-trips.
func testNoteProgress(h *harness) {
	task := h.newTask(t0)
	task.HeartbeatTimeoutS = 600
	h.must(h.s.CreateTask(h.ctx, task))
	if got := h.get(task.ID); got.Progress != nil || got.HeartbeatTimeoutS != 600 {
		h.t.Fatalf("new task: progress %+v, heartbeat_timeout_s %d", got.Progress, got.HeartbeatTimeoutS)
	}
	h.submit(task.ID, mvp.StateQueued, 1, t0)
	pct, step := 42.5, int64(17)
	p := &mvp.Progress{AttemptNo: 1, UpdatedAt: t0.Add(time.Minute), PercentComplete: &pct, Step: &step,
		Name: "epoch 1", Metrics: map[string]float64{"loss": 0.25}}
	h.must(h.s.NoteProgress(h.ctx, task.ID, p))
	if got := h.get(task.ID).Progress; !reflect.DeepEqual(got, p) {
		h.t.Errorf("GetTask progress %+v, want %+v", got, p)
	}
	page, _, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{})
	h.must(err)
	if len(page) != 1 || !reflect.DeepEqual(page[0].Progress, p) {
		h.t.Errorf("ListTasks does not show the progress: %+v", page)
	}
	active, err := h.s.Active(h.ctx)
	h.must(err)
	if len(active) != 1 || active[0].Progress == nil || active[0].HeartbeatTimeoutS != 600 {
		h.t.Errorf("Active: %+v", active)
	}
	// Attempt 2 starts: its progress is empty, and a late note of attempt 1 is dropped.
	h.apply(mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StatePendingResources, At: t0.Add(2 * time.Minute),
		AttemptUpdate: &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed, FailureKind: mvp.FailureInfra}})
	h.submit(task.ID, mvp.StatePendingResources, 2, t0.Add(3*time.Minute))
	if got := h.get(task.ID).Progress; got != nil {
		h.t.Errorf("a new attempt still shows the old progress %+v", got)
	}
	h.must(h.s.NoteProgress(h.ctx, task.ID, p))
	if got := h.get(task.ID).Progress; got != nil {
		h.t.Errorf("a late note of attempt 1 was kept over attempt 2: %+v", got)
	}
	if err := h.s.NoteProgress(h.ctx, "mvp2-ppo-20251223-143201-ffff", p); !errors.Is(err, mvp.ErrNotFound) {
		h.t.Errorf("unknown task: %v, want ErrNotFound", err)
	}
}

// testDependenciesAndTaskStates: after_ok and after_any round-trip on GetTask, ListTasks and Runnable; TaskStates
// answers the states of the tasks that exist and leaves unknown ids out.
func testDependenciesAndTaskStates(h *harness) {
	a := h.create(t0)
	b := h.create(t0.Add(time.Second))
	h.drive(b.ID, mvp.StateFailed)
	c := h.newTask(t0.Add(2 * time.Second))
	c.AfterOK, c.AfterAny = []string{a.ID}, []string{b.ID}
	h.must(h.s.CreateTask(h.ctx, c))
	got := h.get(c.ID)
	if !reflect.DeepEqual(got.AfterOK, []string{a.ID}) || !reflect.DeepEqual(got.AfterAny, []string{b.ID}) {
		h.t.Errorf("GetTask dependencies %v %v", got.AfterOK, got.AfterAny)
	}
	if plain := h.get(a.ID); plain.AfterOK != nil || plain.AfterAny != nil {
		h.t.Errorf("a task without dependencies shows %v %v", plain.AfterOK, plain.AfterAny)
	}
	queue, err := h.s.Runnable(h.ctx)
	h.must(err)
	found := false
	for _, q := range queue {
		if q.ID == c.ID {
			found = reflect.DeepEqual(q.AfterOK, []string{a.ID}) && reflect.DeepEqual(q.AfterAny, []string{b.ID})
		}
	}
	if !found {
		h.t.Errorf("Runnable does not carry the dependencies")
	}
	page, _, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 1})
	h.must(err)
	if len(page) != 1 || page[0].ID != c.ID || len(page[0].AfterOK) != 1 {
		h.t.Errorf("ListTasks dependencies: %+v", page)
	}
	unknown := "mvp2-ppo-20251223-143201-ffffffff"
	states, err := h.s.TaskStates(h.ctx, []string{a.ID, b.ID, unknown, c.ID})
	h.must(err)
	want := map[string]mvp.State{a.ID: mvp.StateQueued, b.ID: mvp.StateFailed, c.ID: mvp.StateQueued}
	if !reflect.DeepEqual(states, want) {
		h.t.Errorf("TaskStates %v, want %v", states, want)
	}
	if states, err := h.s.TaskStates(h.ctx, nil); err != nil || len(states) != 0 {
		h.t.Errorf("TaskStates of nothing: %v %v", states, err)
	}
}

// testResubmitLinks: a resubmitted task names its origin and what it resumes from; the origin lists its resubmits,
// oldest first.
func testResubmitLinks(h *harness) {
	origin := h.create(t0)
	h.drive(origin.ID, mvp.StateFailed)
	first := h.newTask(t0.Add(time.Minute))
	first.OriginID, first.ResumeFrom = origin.ID, origin.ID
	h.must(h.s.CreateTask(h.ctx, first))
	second := h.newTask(t0.Add(2 * time.Minute))
	second.OriginID = origin.ID
	h.must(h.s.CreateTask(h.ctx, second))
	got := h.get(origin.ID)
	if !reflect.DeepEqual(got.Resubmits, []string{first.ID, second.ID}) || got.OriginID != "" {
		h.t.Errorf("origin: resubmits %v, origin %q", got.Resubmits, got.OriginID)
	}
	if f := h.get(first.ID); f.OriginID != origin.ID || f.ResumeFrom != origin.ID || f.Resubmits != nil {
		h.t.Errorf("resubmit: origin %q resume_from %q resubmits %v", f.OriginID, f.ResumeFrom, f.Resubmits)
	}
	page, _, err := h.s.ListTasks(h.ctx, mvp.TaskFilter{Limit: 1})
	h.must(err)
	if len(page) != 1 || page[0].OriginID != origin.ID {
		h.t.Errorf("ListTasks does not show the origin: %+v", page)
	}
}

// testOneCheckpointWriter: a checkpoint folder (a task's own, which the tasks that resume from it write too) takes
// one run at a time. A task that resumes from a folder whose task, or another task resuming from it, has not
// ended, or has a Ray job not seen to end, is refused in the transaction that would insert it, naming that task;
// of resumes created together one is taken.
func testOneCheckpointWriter(h *harness) {
	refused := func(what string, err error, writer string) {
		h.t.Helper()
		var e *mvp.Error
		if !errors.As(err, &e) || e.Code != mvp.CodeConflict || e.Field != "resume_from" || !strings.Contains(e.Message, writer) ||
			errors.Is(err, mvp.ErrConflict) {
			h.t.Errorf("%s: %v, want a conflict on resume_from naming %s (not a lost compare-and-set)", what, err, writer)
		}
	}
	writer := func(folder string, want ...string) {
		h.t.Helper()
		got, err := h.s.CheckpointWriters(h.ctx, folder)
		var ids []string
		for id := range got {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		sort.Strings(want)
		if err != nil || strings.Join(ids, " ") != strings.Join(want, " ") {
			h.t.Errorf("CheckpointWriters(%s) = %v, %v; want %v", folder, got, err, want)
		}
	}
	folder := h.create(t0)
	writer(folder.ID, folder.ID)
	resume := h.newTask(t0.Add(time.Minute))
	resume.ResumeFrom = folder.ID
	refused("a resume from a task that waits", h.s.CreateTask(h.ctx, resume), folder.ID)

	// Its run was canceled; its Ray job is still stopping.
	h.submit(folder.ID, mvp.StateQueued, 1, t0.Add(time.Second))
	h.apply(mvp.Change{TaskID: folder.ID, From: mvp.StateSubmitting, To: mvp.StateCanceled, At: t0.Add(2 * time.Second)})
	writer(folder.ID, folder.ID)
	refused("a resume from a task whose Ray job is still stopping", h.s.CreateTask(h.ctx, resume), folder.ID)
	a := h.get(folder.ID).Latest()
	stopped := *a
	end := t0.Add(3 * time.Second)
	stopped.RayStatus, stopped.EndTime = mvp.RayStopped, &end
	h.must(h.s.UpdateAttempt(h.ctx, a.RayStatus, &stopped, mvp.EventRayStatusSync, nil))
	writer(folder.ID)

	// Resumes created together: one is taken.
	racers := make([]*mvp.Task, 6)
	errs := make([]error, len(racers))
	var wg sync.WaitGroup
	for i := range racers {
		racers[i] = h.newTask(t0.Add(time.Minute))
		racers[i].ResumeFrom = folder.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.s.CreateTask(h.ctx, racers[i])
		}()
	}
	wg.Wait()
	var taken *mvp.Task
	for i, err := range errs {
		if err == nil {
			if taken != nil {
				h.t.Fatalf("two resumes of %s taken: %s and %s", folder.ID, taken.ID, racers[i].ID)
			}
			taken = racers[i]
		}
	}
	if taken == nil {
		h.t.Fatalf("no resume of %s taken: %v", folder.ID, errs)
	}
	for i, err := range errs {
		if err != nil {
			refused("a resume created beside "+taken.ID, err, taken.ID)
			if _, gerr := h.s.GetTask(h.ctx, racers[i].ID); !errors.Is(gerr, mvp.ErrNotFound) {
				h.t.Errorf("a refused resume was stored: %v", gerr)
			}
		}
	}
	writer(folder.ID, taken.ID)
	other := h.create(t0.Add(time.Minute)) // a task resuming from nothing is not held
	writer(other.ID, other.ID)

	// A resume that starts after every writer of the folder is taken (segments chained by dependencies); one
	// that starts after some of them is refused, naming one it does not wait for.
	next := h.newTask(t0.Add(2 * time.Minute))
	next.ResumeFrom, next.AfterAny = folder.ID, []string{taken.ID}
	h.must(h.s.CreateTask(h.ctx, next))
	writer(folder.ID, taken.ID, next.ID)
	partly := h.newTask(t0.Add(3 * time.Minute))
	partly.ResumeFrom, partly.AfterOK = folder.ID, []string{next.ID}
	refused("a resume that waits for one writer of two", h.s.CreateTask(h.ctx, partly), taken.ID)
	partly.AfterAny = []string{taken.ID}
	h.must(h.s.CreateTask(h.ctx, partly))

	for _, id := range []string{taken.ID, next.ID, partly.ID} {
		h.apply(mvp.Change{TaskID: id, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0.Add(4 * time.Second)})
	}
	writer(folder.ID)
	again := h.newTask(t0.Add(4 * time.Minute))
	again.ResumeFrom = folder.ID
	h.must(h.s.CreateTask(h.ctx, again))
}

// testSecrets: sealed secrets round-trip as given; a put of an existing name replaces it and keeps its creation
// time; listing shows names and times by name, then owner; deleting twice is ErrNotFound. A name is its owner's:
// another owner's secret of the same name is stored beside it, read, replaced and deleted apart from it.
func testSecrets(h *harness) {
	put := func(owner, name string, at time.Time, ct string) bool {
		h.t.Helper()
		created, err := h.s.PutSecret(h.ctx, &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: name, Owner: owner,
			CreatedAt: at, UpdatedAt: at}, Nonce: []byte("nonce-" + name), Ciphertext: []byte(ct)})
		h.must(err)
		return created
	}
	if !put("", "wandb", t0, "c1") || !put("", "hf", t0, "c2") {
		h.t.Errorf("new secrets not reported created")
	}
	if put("", "wandb", t0.Add(time.Hour), "c3") {
		h.t.Errorf("a replaced secret reported created")
	}
	if !put("alice", "wandb", t0.Add(2*time.Hour), "alice-c") {
		h.t.Errorf("alice's wandb beside the operator's was not reported created")
	}
	got, err := h.s.SealedSecrets(h.ctx, "", []string{"wandb", "absent"})
	h.must(err)
	w := got["wandb"]
	if len(got) != 1 || w == nil || string(w.Ciphertext) != "c3" || string(w.Nonce) != "nonce-wandb" ||
		!w.CreatedAt.Equal(t0) || !w.UpdatedAt.Equal(t0.Add(time.Hour)) || w.Owner != mvp.Operator {
		h.t.Errorf("sealed secrets %+v", got)
	}
	got, err = h.s.SealedSecrets(h.ctx, "alice", []string{"wandb", "hf"})
	h.must(err)
	if a := got["wandb"]; len(got) != 1 || a == nil || string(a.Ciphertext) != "alice-c" || a.Owner != "alice" {
		h.t.Errorf("alice's sealed secrets %+v; want her wandb only (hf is the operator's)", got)
	}
	list, err := h.s.ListSecrets(h.ctx)
	h.must(err)
	if len(list) != 3 || list[0].Name != "hf" || list[1].Name != "wandb" || list[1].Owner != "alice" ||
		list[2].Name != "wandb" || list[2].Owner != mvp.Operator {
		h.t.Errorf("list %+v", list)
	}
	h.must(h.s.DeleteSecret(h.ctx, "", "wandb"))
	if err := h.s.DeleteSecret(h.ctx, "", "wandb"); !errors.Is(err, mvp.ErrNotFound) {
		h.t.Errorf("delete twice: %v", err)
	}
	if got, err := h.s.SealedSecrets(h.ctx, "alice", []string{"wandb"}); err != nil || got["wandb"] == nil {
		h.t.Errorf("alice's wandb after the operator's was deleted: %+v %v", got, err)
	}
	if err := h.s.DeleteSecret(h.ctx, "bob", "hf"); !errors.Is(err, mvp.ErrNotFound) {
		h.t.Errorf("bob deleting a name only the operator has: %v; want ErrNotFound", err)
	}
	if _, err := h.s.PutSecret(h.ctx, &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: "bad name"}, Nonce: []byte("n"),
		Ciphertext: []byte("c")}); err == nil {
		h.t.Errorf("a bad name was stored")
	}
}
