package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestDecideHeartbeats(t *testing.T) {
	started := t0.Add(-time.Hour)
	running := func(timeoutS int, progressAgo time.Duration) ActiveAttempt {
		tk := task(mvp.WorkloadPPO, 1, 1, mvp.StateRunning)
		tk.HeartbeatTimeoutS = timeoutS
		a := ActiveAttempt{Task: tk, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, StartTime: &started}}
		if progressAgo >= 0 {
			a.ProgressAt = t0.Add(-progressAgo)
		}
		return a
	}
	const none = time.Duration(-1)
	quiet := running(600, 10*time.Minute) // exactly the timeout: stopped
	fresh := running(600, 9*time.Minute)  // within it
	silent := running(600, none)          // started an hour ago, never wrote: stopped
	noBound := running(0, 5*time.Hour)    // no heartbeat asked for
	pending := running(600, none)         // not running yet
	pending.Attempt.RayStatus = mvp.RayPending
	canceled := running(600, 2*time.Hour)
	canceled.Task.State = mvp.StateCanceled
	placing := running(600, none) // its gang is still being placed: the gang wait covers it
	placing.StuckSince = t0.Add(-time.Minute)
	judged := running(600, 2*time.Hour) // already being stopped: only the retry of its stop
	judged.Attempt.FailureKind, judged.Attempt.Message = mvp.FailureHeartbeatLost, "earlier"
	both := running(600, 2*time.Hour) // also past max_runtime_s: judged once, for the time limit
	both.Task.MaxRuntimeS = 60
	recentStart := running(600, none) // started 5 minutes ago without writing: within the bound
	st := t0.Add(-5 * time.Minute)
	recentStart.Attempt.StartTime = &st

	snap := Snapshot{Active: []ActiveAttempt{quiet, fresh, silent, noBound, pending, canceled, placing, judged, both, recentStart}}
	var got []string
	for _, a := range Decide(t0, snap, policy()) {
		if s, ok := a.(Stop); ok {
			got = append(got, fmt.Sprintf("%s:%s:%v", s.Task.ID, s.Kind, s.Retry))
			if s.Kind == mvp.FailureHeartbeatLost && !s.Retry &&
				(s.Event != mvp.EventHeartbeatLost || !strings.Contains(s.Reason, "heartbeat_timeout_s (600 s)")) {
				t.Errorf("stop of %s: event %q reason %q", s.Task.ID, s.Event, s.Reason)
			}
		}
	}
	want := []string{
		judged.Task.ID + ":HEARTBEAT_LOST:true",
		both.Task.ID + ":MAX_RUNTIME_EXCEEDED:false",
		quiet.Task.ID + ":HEARTBEAT_LOST:false",
		silent.Task.ID + ":HEARTBEAT_LOST:false",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// The reason says whether the file went quiet or was never written.
	for _, a := range Decide(t0, Snapshot{Active: []ActiveAttempt{quiet, silent}}, policy()) {
		s := a.(Stop)
		wantText := "mvp last saw its progress file change at"
		if s.Task == silent.Task {
			wantText = "no progress file was written"
		}
		if !strings.Contains(s.Reason, wantText) {
			t.Errorf("reason %q does not say %q", s.Reason, wantText)
		}
	}
}

// TestHeartbeatReasonAfterPlacement: the heartbeat counts from the gang's placement when that came after the job
// started (and after the progress file's last change, written while the driver waited for it). The reason then
// said "since the job started, no progress file was written", though one was: it names the placement, and the
// progress file's last change when there was one.
func TestHeartbeatReasonAfterPlacement(t *testing.T) {
	started := t0.Add(-3 * time.Hour)
	placed := t0.Add(-2 * time.Hour)
	mk := func(progress time.Time) ActiveAttempt {
		tk := task(mvp.WorkloadPPO, 1, 1, mvp.StateRunning)
		tk.HeartbeatTimeoutS = 600
		return ActiveAttempt{Task: tk, Attempt: &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, StartTime: &started},
			PlacedAt: placed, ProgressAt: progress}
	}
	wrote, never := mk(t0.Add(-150*time.Minute)), mk(time.Time{})
	// As the database holds it once a status sync saved the placement: on the attempt, not only in this pass's view.
	saved := mk(time.Time{})
	saved.Attempt.PlacedAt, saved.PlacedAt = &placed, time.Time{}
	acts := Decide(t0, Snapshot{Active: []ActiveAttempt{wrote, never, saved}}, policy())
	if len(acts) != 3 {
		t.Fatalf("three runs silent for 2 h past their placement: %d actions %+v; want three stops", len(acts), acts)
	}
	for _, a := range acts {
		s := a.(Stop)
		if s.Task == wrote.Task {
			if strings.Contains(s.Reason, "no progress file was written") || !strings.Contains(s.Reason, "placed at") ||
				!strings.Contains(s.Reason, wrote.ProgressAt.UTC().Format(time.RFC3339)) {
				t.Errorf("a run that wrote its progress file before its gang was placed, then nothing: reason %q", s.Reason)
			}
		} else if !strings.Contains(s.Reason, "since its gang was placed at") || !strings.Contains(s.Reason, "no progress file was written") {
			t.Errorf("a run placed 2 h ago that never wrote: reason %q", s.Reason)
		}
	}
}
