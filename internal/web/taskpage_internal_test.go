package web

import (
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestTheTaskPageShowsWhatMvpGetShows: `mvp get` of a running task showed its owner, priority, progress ("20% step
// 8/40 training loss=0.125 (attempt 1, …)") and "71h59m51s left"; the task's page showed none of the first three
// and "runtime left 259189 s of 259200 s" (the local cluster's walk-through).
func TestTheTaskPageShowsWhatMvpGetShows(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 35, 5, 0, time.UTC)
	pct, step, total := 20.0, int64(8), int64(40)
	left := 259189
	task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-0e3a", Workload: mvp.WorkloadPPO, State: mvp.StateRunning,
		Owner: "alice", Priority: 70, NNodes: 1, GPUsPerNode: 4, MaxRuntimeS: 259200, RuntimeLeftS: &left,
		CreatedAt: at, UpdatedAt: at, Progress: &mvp.Progress{AttemptNo: 1, UpdatedAt: at, PercentComplete: &pct,
			Step: &step, TotalSteps: &total, Name: "training", Metrics: map[string]float64{"loss": 0.125}}}
	var b strings.Builder
	if err := pages["task"].ExecuteTemplate(&b, "live", taskView{Now: at.Add(5 * time.Second), Task: task}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{">alice<", ">70<", "20% step 8/40 training loss=0.125", "attempt 1", "runtime left</dt><dd>71h59m49s of 72h0m0s"} {
		if !strings.Contains(page, want) {
			t.Errorf("the task's page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "259189 s") {
		t.Errorf("the page counts the time left in seconds:\n%s", page)
	}
}

// TestTheRunningTableShowsProgress: mvp list has a PROGRESS column ("30% step 9/30"); the page's running table
// had none, so a run's progress was on no page but its own.
func TestTheRunningTableShowsProgress(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 35, 5, 0, time.UTC)
	pct, step, total := 30.0, int64(9), int64(30)
	run := func(p *mvp.Progress) string {
		task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-0e3a", State: mvp.StateRunning, Progress: p}
		var b strings.Builder
		v := dashboardView{Now: at, Running: []scheduler.ActiveAttempt{{Task: task, Attempt: &mvp.Attempt{No: 1, CreatedAt: at}}}}
		if err := pages["dashboard"].ExecuteTemplate(&b, "live", v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if page := run(&mvp.Progress{AttemptNo: 1, PercentComplete: &pct, Step: &step, TotalSteps: &total}); !strings.Contains(page, "30% step 9/30") {
		t.Errorf("the running table lacks the progress:\n%s", page)
	}
	if page := run(nil); !strings.Contains(page, "<th>progress</th>") {
		t.Errorf("a run without progress:\n%s", page)
	}
}

// TestTheTaskPageSaysRaysOutage: mvp get says a running task's ray_outage while Ray cannot be read; the task's page
// did not (found in review).
func TestTheTaskPageSaysRaysOutage(t *testing.T) {
	at := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	task := &mvp.Task{ID: "mvp2-ppo-20251223-143201-0e3a", Workload: mvp.WorkloadPPO, State: mvp.StateRunning,
		NNodes: 1, GPUsPerNode: 4, CreatedAt: at, UpdatedAt: at, RayOutage: "Ray cannot be read, so this state is what Ray last said"}
	var b strings.Builder
	if err := pages["task"].ExecuteTemplate(&b, "live", taskView{Now: at, Task: task}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "what Ray last said") {
		t.Errorf("the task's page lacks ray_outage:\n%s", b.String())
	}
}
