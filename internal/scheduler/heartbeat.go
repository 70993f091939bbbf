package scheduler

import (
	"fmt"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// lastHeartbeat is when a running attempt last showed life: its progress file's last change, or the start of its
// run when it has written none yet, counted as max_runtime_s is (runStart: from the placement of its gang when
// that came after the job started; the wait for it is gang_wait_s's to judge, and a run whose gang was placed past
// its heartbeat_timeout_s was stopped as HEARTBEAT_LOST in the pass that saw it placed). ok is false when neither
// is known.
func lastHeartbeat(a ActiveAttempt) (time.Time, bool) {
	last := a.ProgressAt
	if since := a.runStart(); since != nil && since.After(last) {
		last = *since
	}
	return last, !last.IsZero()
}

// heartbeats returns a Stop (HEARTBEAT_LOST) for every running attempt whose task asks for a heartbeat and whose
// progress file has not changed for heartbeat_timeout_s. An attempt already judged (stops retries it), one
// judged in this pass (out holds its Stop), a canceled task, a gang that is still being placed (the gang wait
// covers it) and an attempt whose folder mvp cannot see (Unseen) are left alone.
func heartbeats(now time.Time, s Snapshot, out []Action) []Action {
	if s.JobsUnread {
		return out // the attempts' states are not known now (Snapshot.JobsUnread)
	}
	judged := map[*mvp.Attempt]bool{}
	for _, x := range out {
		if st, ok := x.(Stop); ok {
			judged[st.Attempt] = true
		}
	}
	for _, a := range s.Active {
		if a.Attempt == nil || a.Task.HeartbeatTimeoutS <= 0 || a.Task.State == mvp.StateCanceled ||
			a.Attempt.RayStatus != mvp.RayRunning || a.Judged() || judged[a.Attempt] || !a.StuckSince.IsZero() || a.Unseen {
			continue
		}
		last, ok := lastHeartbeat(a)
		limit := time.Duration(a.Task.HeartbeatTimeoutS) * time.Second
		if !ok || now.Sub(last) < limit {
			continue
		}
		since := "since the job started, no progress file was written"
		// Counted from the gang's placement (this pass's view of it, or the attempt's saved one) when that came
		// after the job started running.
		rs, running := a.runStart(), a.Attempt.RunningSince()
		placed := rs != nil && running != nil && rs.After(*running) && last.Equal(*rs)
		switch {
		case !a.ProgressAt.IsZero() && !a.ProgressAt.Before(last):
			since = "mvp last saw its progress file change at " + a.ProgressAt.UTC().Format(time.RFC3339)
		case placed && !a.ProgressAt.IsZero():
			since = fmt.Sprintf("its progress file last changed at %s, before its gang was placed at %s, and not since",
				a.ProgressAt.UTC().Format(time.RFC3339), rs.UTC().Format(time.RFC3339))
		case placed:
			since = "since its gang was placed at " + rs.UTC().Format(time.RFC3339) + ", no progress file was written"
		}
		out = append(out, Stop{Task: a.Task, Attempt: a.Attempt, Kind: mvp.FailureHeartbeatLost,
			Event: mvp.EventHeartbeatLost, Reason: fmt.Sprintf(
				"no heartbeat for %s, longer than its heartbeat_timeout_s (%d s): %s; stopped by mvp",
				now.Sub(last).Round(time.Second), a.Task.HeartbeatTimeoutS, since)})
	}
	return out
}
