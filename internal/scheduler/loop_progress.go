package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// The loop's part of progress and heartbeats: it reads a running attempt's progress file on each sync (only when
// the file changed since the last read) and hands Decide when it last saw the file change
// (ActiveAttempt.ProgressAt).

// progressSeen is a progress file's modification time as the loop last saw it, and when, on mvp's clock, it first
// saw that time.
type progressSeen struct {
	mtime time.Time
	at    time.Time
}

// fillProgressAt sets ProgressAt of every running attempt whose task asks for a heartbeat: when the loop first
// saw its progress file's current modification time, on mvp's clock. The modification time itself is another
// machine's clock (the driver's node, or shared_root's file server): compared with mvp's, a clock minutes behind
// stopped healthy runs and one ahead hid hung ones, so it is only compared with itself. What the loop has not
// seen before (a file new to it, or every file after a restart) counts from now: a restart gives a silent run at
// most one more heartbeat_timeout_s. A file that cannot be read now (its folder briefly gone: an NFS hiccup, a
// stale handle) keeps the last change seen. It also forgets what was seen of attempts no longer live (one that
// vanished from Ray has no final sync), when record (the loop's own tick).
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
		for id := range l.progressSeen {
			if !live[id] {
				delete(l.progressSeen, id)
			}
		}
		for id := range l.unseenWarned {
			if !live[id] {
				delete(l.unseenWarned, id)
			}
		}
		l.mu.Unlock()
	}
	now := l.Clock.Now()
	for i := range as {
		a := &as[i]
		if a.Attempt == nil || a.Task.HeartbeatTimeoutS <= 0 || a.Attempt.RayStatus != mvp.RayRunning {
			continue
		}
		mt, err := l.Files.ProgressModTime(a.Task.ID, a.Attempt.No)
		sid := a.Attempt.RaySubmissionID
		if err != nil && l.folderGone(a.Task.ID, a.Attempt.No) {
			// mvp wrote this folder before the attempt was sent: not there now, mvp looks in the wrong place
			// (shared_root changed, or not mounted) and cannot tell whether the run lives.
			a.Unseen = true
			if l.firstTime(&l.unseenWarned, sid) {
				dir, _ := l.Files.AttemptDir(a.Task.ID, a.Attempt.No)
				l.Logger.Warn("a running attempt's folder is not under shared_root: its heartbeat is not judged until it "+
					"is (was shared_root changed, or is it not mounted?)", "task_id", a.Task.ID, "submission_id", sid,
					"folder", dir)
			}
			continue
		}
		l.mu.Lock()
		seen, ok := l.progressSeen[sid]
		switch {
		case err == nil && (!ok || !seen.mtime.Equal(mt)):
			seen = progressSeen{mtime: mt, at: now}
		case err != nil && !ok && a.Task.Progress != nil && a.Task.Progress.AttemptNo == a.Attempt.No:
			// Recorded before a restart, not readable now: that is not "none since the job started".
			seen = progressSeen{at: now}
		case !ok:
			l.mu.Unlock()
			continue // no progress file yet: the job's start is its last sign of life
		}
		if record {
			if l.progressSeen == nil {
				l.progressSeen = map[string]progressSeen{}
			}
			l.progressSeen[sid] = seen
		}
		l.mu.Unlock()
		a.ProgressAt = seen.at
	}
}

// folderGone reports whether attempt n's submission_id file, which mvp writes in the attempt's folder before
// sending it, is not at its place under shared_root (a folder there may be one the log copy made since).
func (l *Loop) folderGone(id string, n int) bool {
	dir, err := l.Files.AttemptDir(id, n)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "submission_id"))
	return errors.Is(err, os.ErrNotExist)
}

// readProgress reads the progress files of the running tasks' attempts, without Ray: while Ray cannot be asked
// about them, their progress (on mvp's own disk) is still shown as it changes.
func (l *Loop) readProgress(ctx context.Context, active []*mvp.Task) {
	for _, t := range active {
		if a := t.Latest(); t.State == mvp.StateRunning && a != nil && !a.RayStatus.Terminal() {
			l.syncProgress(ctx, t, a, false)
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
