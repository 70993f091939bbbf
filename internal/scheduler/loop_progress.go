package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// The loop's part of progress and heartbeats: it reads a running attempt's progress file on each sync (only when
// the file changed since the last read) and hands the file's last change time to Decide (ActiveAttempt.ProgressAt).

// fillProgressAt sets ProgressAt of every running attempt whose task asks for a heartbeat, from its progress
// file's modification time; when the file cannot be read, from the last progress recorded of that attempt (none:
// no heartbeat since the job started). It also forgets what was read of
// attempts no longer live (one that vanished from Ray has no final sync), when record (the loop's own tick).
func (l *Loop) fillProgressAt(as []ActiveAttempt, record bool) {
	live := make(map[string]bool, len(as))
	for _, a := range as {
		if a.Attempt != nil {
			live[a.Attempt.RaySubmissionID] = true
		}
	}
	if record {
		l.mu.Lock()
		for id := range l.progressRead {
			if !live[id] {
				delete(l.progressRead, id)
			}
		}
		l.mu.Unlock()
	}
	for i := range as {
		a := &as[i]
		if a.Attempt == nil || a.Task.HeartbeatTimeoutS <= 0 || a.Attempt.RayStatus != mvp.RayRunning {
			continue
		}
		if at, err := l.Files.ProgressModTime(a.Task.ID, a.Attempt.No); err == nil {
			a.ProgressAt = at
		} else if p := a.Task.Progress; p != nil && p.AttemptNo == a.Attempt.No {
			// Not readable now (its folder briefly gone: an NFS hiccup, a stale handle): the last heartbeat
			// recorded stands; that is not "none since the job started".
			a.ProgressAt = p.UpdatedAt
		}
	}
}

// syncProgress reads attempt a's progress file when it changed since the last read and records it on the task;
// a file that is too large or not the expected JSON is recorded once (PROGRESS_INVALID) and otherwise ignored.
// final is set when the attempt ended: its last progress is read and the loop forgets it.
func (l *Loop) syncProgress(ctx context.Context, t *mvp.Task, a *mvp.Attempt, final bool) {
	mt, err := l.Files.ProgressModTime(t.ID, a.No)
	if errors.Is(err, os.ErrNotExist) {
		return // nothing written yet
	}
	// What was seen of the file: its change time, or why it cannot be used; a file is read (or its trouble
	// recorded) once per change.
	sig := mt.UTC().Format(time.RFC3339Nano)
	if err != nil {
		sig = "error: " + err.Error()
	}
	l.mu.Lock()
	if l.progressRead == nil {
		l.progressRead = map[string]string{}
	}
	same := l.progressRead[a.RaySubmissionID] == sig
	if final {
		delete(l.progressRead, a.RaySubmissionID)
	} else {
		l.progressRead[a.RaySubmissionID] = sig
	}
	l.mu.Unlock()
	if same {
		return
	}
	if err != nil {
		l.noteBadProgress(ctx, t, a, err)
		return
	}
	b, mt, err := l.Files.ReadProgress(t.ID, a.No, mvp.MaxProgressBytes)
	var p *mvp.Progress
	if err == nil {
		p, err = mvp.ParseProgress(b)
	}
	if err != nil {
		l.noteBadProgress(ctx, t, a, err)
		return
	}
	p.AttemptNo, p.UpdatedAt = a.No, mt.UTC()
	if err := l.Store.NoteProgress(ctx, t.ID, p); err != nil {
		l.Logger.Error("record progress", "task_id", t.ID, "attempt_no", a.No, "err", err)
	}
}

// noteBadProgress records a progress file that could not be used, once per change of the file.
func (l *Loop) noteBadProgress(ctx context.Context, t *mvp.Task, a *mvp.Attempt, err error) {
	l.Logger.Warn("progress file ignored", "task_id", t.ID, "attempt_no", a.No, "err", err)
	b, _ := json.Marshal(map[string]any{"attempt_no": a.No, "error": cut(err.Error())})
	if aerr := l.Store.AddEvent(ctx, &mvp.Event{TaskID: t.ID, TS: l.Clock.Now(), Type: mvp.EventProgressInvalid,
		Payload: b}); aerr != nil {
		l.Logger.Error("record invalid progress", "task_id", t.ID, "err", aerr)
	}
}
