package scheduler

import (
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
	l.activeAttempts(t0, nil, []*mvp.Task{live})
	if len(l.copied) != 1 || l.copied["t1--a01"].IsZero() {
		t.Errorf("copied holds %d entries after one live attempt; want only t1--a01", len(l.copied))
	}
}

// endedID names an ended attempt.
func endedID(i int) string { return mvp.SubmissionID("ended", i+1) }
