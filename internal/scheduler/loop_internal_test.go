package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// Defect 7: the map of attempts whose running logs were copied holds only live attempts.
func TestLoopForgetsCopiedLogsOfEndedAttempts(t *testing.T) {
	l := &Loop{copied: map[string]time.Time{}}
	live := &mvp.Task{ID: "t1", State: mvp.StateRunning, LatestAttemptNo: 1,
		Attempts: []*mvp.Attempt{{No: 1, RaySubmissionID: "t1--a01", RayStatus: mvp.RayRunning}}}
	for i := 0; i < 1000; i++ {
		l.copied[endedID(i)] = t0
	}
	l.copied["t1--a01"] = t0
	l.activeAttempts(t0, nil, []*mvp.Task{live}, true)
	if len(l.copied) != 1 || l.copied["t1--a01"].IsZero() {
		t.Errorf("copied holds %d entries after one live attempt; want only t1--a01", len(l.copied))
	}
}

// endedID names an ended attempt.
func endedID(i int) string { return mvp.SubmissionID("ended", i+1) }

func TestPlacedNodes(t *testing.T) {
	v := &mvp.ClusterView{Groups: []mvp.PlacementGroup{
		{CreatorJobID: "01000000", State: "CREATED", Node: "n1"},
		{CreatorJobID: "01000000", State: "CREATED", Node: "n2"},
		{CreatorJobID: "01000000", State: "PENDING"},
		{CreatorJobID: "02000000", State: "CREATED", Node: "n3"},
		{CreatorJobID: "03000000", State: "CREATED"},
	}}
	if got := placedNodes(v, "01000000"); len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
		t.Errorf("job 01: %v", got)
	}
	if got := placedNodes(v, "03000000"); got != nil {
		t.Errorf("a placed group without its node: %v, want nil (unknown)", got)
	}
	if got := placedNodes(nil, "01000000"); got != nil {
		t.Errorf("no view: %v", got)
	}
}

func TestWakeDelay(t *testing.T) {
	end := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		now       time.Time
		lastPass  time.Duration
		wantDelay time.Duration
	}{
		{"first pass ever", time.Time{}.Add(time.Hour), 0, 0},
		{"short pass, wake at once", end, 1 * ms, minWakeSpacing},
		{"short pass, wake later", end.Add(time.Second), 1 * ms, 0},
		{"long pass: three times its length", end, 100 * ms, 300 * ms},
		{"long pass, part waited", end.Add(250 * ms), 100 * ms, 50 * ms},
		{"long pass, waited enough", end.Add(400 * ms), 100 * ms, 0},
	} {
		lastEnd := end
		if c.name == "first pass ever" {
			lastEnd = time.Time{}
		}
		if got := wakeDelay(c.now, lastEnd, c.lastPass); got != c.wantDelay {
			t.Errorf("%s: %v, want %v", c.name, got, c.wantDelay)
		}
	}
}

// A log copy ends in time for its pass to go on: it keeps passReserve of the pass, or a quarter of what is left.
func TestCopyTime(t *testing.T) {
	for _, c := range []struct {
		left time.Duration
		ok   bool
		want time.Duration
	}{
		{0, false, LogCopyTimeout},                 // no bound on the pass
		{time.Hour, true, LogCopyTimeout},          // the copy's own bound first
		{2 * time.Minute, true, 110 * time.Second}, // Run's bound on a pass: 10 s kept
		{2 * time.Second, true, 1500 * time.Millisecond},
		{0, true, 0}, // the pass is over: no copy
	} {
		if got := copyTime(t0, t0.Add(c.left), c.ok); got != c.want {
			t.Errorf("copyTime with %s left (bounded %v) = %s, want %s", c.left, c.ok, got, c.want)
		}
	}
}

// The job server's outage is said in every waiting task's queue entry, to every user, and in every live task's
// history: the cause must not name the task whose lookup found it (net/http's error quotes the URL it called, which
// holds the job's submission id, another user's task perhaps).
func TestAnOutagesCauseNamesNoTasksJob(t *testing.T) {
	err := fmt.Errorf("follow attempt 1: get job x--a01: GET /api/jobs/mvp2-ppo-20261201-064629-8479--a01: %w (Get "+
		"\"http://127.0.0.1:8465/api/jobs/mvp2-ppo-20261201-064629-8479--a01\": dial tcp 127.0.0.1:8465: connect: connection refused; "+
		"is Ray's dashboard running at http://127.0.0.1:8465? `address` in dev.yaml)", mvp.ErrRayUnavailable)
	l := &Loop{JobServer: "http://127.0.0.1:8465"}
	got := outageCause(l.jobServerDown(t0, err))
	if strings.Contains(got, "8479") || !strings.Contains(got, "connection refused") || !strings.Contains(got, "http://127.0.0.1:8465") {
		t.Errorf("the outage's cause: %q; want the cause and the dashboard's address, not the job it was noticed on", got)
	}
}
