package raycompat

import (
	"context"
	"errors"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/mvp"
)

// maxFrame bounds one text frame (Ray's client accepts up to 4 MiB).
const maxFrame = 1 << 20

// streamLog upgrades the request and streams t's log until t has ended and its last attempt's log is drained.
func (d *Door) streamLog(w http.ResponseWriter, r *http.Request, t *mvp.Task) error {
	// The server's read timeout must not end a long tail: the connection is the WebSocket's from here on.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		d.Logger.Warn("log tail: websocket handshake failed", "task_id", t.ID, "err", err)
		return nil // Accept has answered the request
	}
	defer c.CloseNow()
	// The client sends nothing but control frames; CloseRead answers them and ends ctx when it goes away.
	ctx := c.CloseRead(r.Context())
	poll := d.LogPoll
	if poll <= 0 {
		poll = time.Second
	}
	attempt, sent := 0, int64(0)
	cut := false // the ended job's log could not be read to its end
	for {
		cur, err := d.Store.GetTask(ctx, t.ID)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Dropped, not closed: Ray's client takes every close but an abnormal one (1006) as the end of the log.
			d.Logger.Warn("log tail dropped: the task could not be read", "task_id", t.ID, "err", err)
			c.CloseNow()
			return nil
		}
		done := cur.State.Terminal() && cur.LatestAttemptNo == 0
		if n := cur.LatestAttemptNo; n > 0 && n != attempt {
			if attempt > 0 {
				// The attempt followed has ended and the task runs again: the rest of its log first (its last
				// lines are often the traceback that ended it), the last one without its newline too.
				_, ok, err := d.sendLogFrom(ctx, c, cur.ID, attempt, sent, func(bool, error) bool { return true })
				if !ok || ctx.Err() != nil {
					return nil
				}
				if err != nil {
					d.Logger.Info("log tail: the end of an attempt's log could not be read", "task_id", cur.ID,
						"attempt_no", attempt, "err", err)
				}
			}
			attempt, sent = n, 0
		}
		if n := cur.LatestAttemptNo; n > 0 && d.FollowLogFrom != nil && !cur.State.Terminal() {
			// While the task lives: Ray's stream of the running attempt's log, framed line by line. The task's
			// end is written by the copy below, which sends the last line even without its newline.
			fw := &frameWriter{ctx: ctx, c: c}
			_, _, _, err := d.FollowLogFrom(ctx, cur.ID, n, sent, fw)
			sent += fw.sent
			if fw.err != nil || ctx.Err() != nil {
				return nil // the client went away
			}
			if err != nil && !errors.Is(err, ErrLogLost) { // a lost log is looked at each poll until the task ends
				d.Logger.Info("log tail: log not readable yet", "task_id", cur.ID, "attempt_no", n, "err", err)
			}
		} else if n > 0 {
			m, ok, err := d.sendLogFrom(ctx, c, cur.ID, n, sent, func(ended bool, err error) bool {
				done = cur.State.Terminal() && (ended || err != nil)
				// No log at all (no driver ran: Ray refused the attempt) is an empty log, as the logs answer
				// says, not one cut short; but lines sent, and then no log, are a log lost part way.
				// (ErrLogLost: the copy made while it ran, the rest gone with its Ray job, is such a log too.)
				cut = done && err != nil && (mvp.ErrorCode(err) != mvp.CodeNotFound || sent > 0)
				return done
			})
			sent += m
			if !ok || (err != nil && ctx.Err() != nil) {
				return nil // the client went away
			}
			if err != nil {
				d.Logger.Info("log tail: log not readable yet", "task_id", cur.ID, "attempt_no", n, "err", err)
			}
		}
		if done && cut {
			// A normal close would tell Ray's client (sdk.py tail_job_logs raises on 1006 only) that this is the
			// whole log, and its last lines are often the traceback: dropped, as the logs answer is aborted then.
			d.Logger.Warn("log tail dropped: the ended job's log could not be read to its end", "task_id", cur.ID,
				"attempt_no", cur.LatestAttemptNo, "sent_bytes", sent)
			c.CloseNow()
			return nil
		}
		if done {
			c.Close(websocket.StatusNormalClosure, "the job has ended")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.stopping():
			// Dropped, not closed: Ray's client takes any close frame but an abnormal one as the end of the job's
			// log, and the job goes on. Ray's own dashboard, stopped, drops its tails too.
			d.Logger.Info("log tail dropped: mvp is shutting down", "task_id", t.ID)
			c.CloseNow()
			return nil
		case <-time.After(poll):
		}
	}
}

// sendLines sends text as text frames of whole lines (ended by '\n' or '\r': lines), at most maxFrame each, and
// with whole its last line without its newline too; it returns the bytes sent, and false when the client went away.
func sendLines(ctx context.Context, c *websocket.Conn, text string, whole bool) (int64, bool) {
	var sent int64
	for text != "" {
		chunk := lines(text, maxFrame)
		if whole && chunk == "" {
			chunk = text // the last line without its newline, once the log is complete
		}
		if chunk == "" {
			break
		}
		if err := c.Write(ctx, websocket.MessageText, validUTF8(chunk)); err != nil {
			return sent, false
		}
		sent += int64(len(chunk)) // bytes of the log, which the next read skips, not of the frame
		text = text[len(chunk):]
	}
	return sent, true
}

// validUTF8 returns s as a text frame may carry it: each byte that is not part of a UTF-8 character becomes
// U+FFFD, as encoding/json writes it in the logs answer. A text frame that is not UTF-8 makes Ray's client (aiohttp)
// fail the whole tail, so one such byte in a driver's output cost every line of the log.
func validUTF8(s string) []byte {
	if utf8.ValidString(s) {
		return []byte(s)
	}
	// Ranging over a string yields U+FFFD for each byte that does not begin a valid character, one byte at a
	// time: the same replacement encoding/json makes (strings.ToValidUTF8 would fold a run of them into one).
	b := make([]byte, 0, len(s)+8)
	for _, r := range s {
		b = utf8.AppendRune(b, r)
	}
	return b
}

// frameWriter sends what is written to it as text frames of whole lines (at most maxFrame each); sent counts
// the bytes sent. A line not ended yet is held: the next read begins with it.
type frameWriter struct {
	ctx     context.Context
	c       *websocket.Conn
	pending []byte
	sent    int64
	err     error
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	// A frame at a time: a writer that hands over a whole log at once (Ray's job server's copy) is not held
	// whole twice more.
	for done := 0; done < len(p); {
		k := min(len(p)-done, maxFrame)
		f.pending = append(f.pending, p[done:done+k]...)
		m, ok := sendLines(f.ctx, f.c, string(f.pending), false)
		f.sent += m
		f.pending = f.pending[m:]
		if !ok {
			f.err = errors.New("the tail's client went away")
			return done, f.err
		}
		done += k
	}
	return len(p), nil
}

// sendLogFrom sends attempt n's log from byte skip on as frames of whole lines, and its last line without its
// newline too when whole (given whether the attempt has ended and the read's error) says so. With CopyLogFrom the
// log is streamed through the frames, never held whole (an ended training's log may be gigabytes); else it is
// ReadLog's text, of which nothing is sent when the read fails. It returns the bytes of the log sent (the next
// read skips them), false when the client went away, and the read's error.
func (d *Door) sendLogFrom(ctx context.Context, c *websocket.Conn, taskID string, n int, skip int64,
	whole func(ended bool, err error) bool) (int64, bool, error) {
	if d.CopyLogFrom == nil {
		text, ended, err := d.readLogFrom(ctx, taskID, n, skip)
		if err != nil {
			text = "" // nothing new this time; the next poll reads again
		}
		m, ok := sendLines(ctx, c, text, whole(ended, err))
		return m, ok, err
	}
	fw := &frameWriter{ctx: ctx, c: c}
	_, ended, err := d.CopyLogFrom(ctx, taskID, n, skip, fw)
	if fw.err != nil {
		return fw.sent, false, err
	}
	if whole(ended, err) && len(fw.pending) > 0 {
		m, ok := sendLines(ctx, c, string(fw.pending), true)
		fw.sent += m
		if !ok {
			return fw.sent, false, err
		}
	}
	return fw.sent, true, err
}

// readLogFrom is attempt n's log from byte skip on: ReadLog's text cut there (a copy shorter than skip, an older
// one, gives nothing new).
func (d *Door) readLogFrom(ctx context.Context, taskID string, n int, skip int64) (string, bool, error) {
	text, ended, err := d.ReadLog(ctx, taskID, n)
	if err != nil || int64(len(text)) <= skip {
		return "", ended, err
	}
	return text[skip:], ended, nil
}
