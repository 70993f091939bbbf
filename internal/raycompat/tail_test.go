package raycompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/sqlite"
)

// openDB opens a store on a file of the test's, as the service does, closed when the test ends.
func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestTailEndsOnShutdown: a tail of a job still waiting is dropped, with no close frame, when the server shuts
// down (the HTTP server does not wait for hijacked connections). It was closed with "going away" (1001), which
// Ray's own client (JobSubmissionClient.tail_job_logs, sdk.py) takes as the normal end of the log, so a script
// went on as if the job had ended while it still ran; it raises only on an abnormal closure (1006), which is
// what Ray's own dashboard gives when it stops. Found in a walk-through.
func TestTailEndsOnShutdown(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0001", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: "waits", Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		ReadLog: func(context.Context, string, int) (string, bool, error) { return "", false, nil }}
	srv := serveDoor(t, d)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/jobs/waits/logs/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	d.Shutdown()
	_, _, err = c.Read(dctx)
	if err == nil || websocket.CloseStatus(err) != -1 || dctx.Err() != nil {
		t.Errorf("the tail ended with %v (close status %d); want the connection dropped with no close frame",
			err, websocket.CloseStatus(err))
	}
}

// TestLinesKeepCharactersWhole: a line longer than a frame is cut, but never inside a character: a text frame
// must be valid UTF-8, or Ray's client fails the tail (aiohttp turns it into an error message).
func TestLinesKeepCharactersWhole(t *testing.T) {
	long := "a" + strings.Repeat("€", 100) + "\n" // 1 + 300 bytes
	for max := 1; max < len(long); max++ {
		s := long
		for s != "" {
			chunk := lines(s, max)
			if chunk == "" || !utf8.ValidString(chunk) {
				t.Fatalf("max %d: frame %q", max, chunk)
			}
			s = s[len(chunk):]
		}
	}
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// TestSubmitRetriesATakenTaskID: two submissions in one second may draw the same task id; the second is tried
// again under a fresh id, whether or not the user named a submission id (it was refused with 409 naming an id the
// user never chose). Only a taken submission id is the user's to change.
func TestSubmitRetriesATakenTaskID(t *testing.T) {
	db := openDB(t)
	now := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), Clock: fixedClock(now), MaxBodyBytes: 1 << 20,
		NewID: func(w mvp.Workload, _ time.Time, try int) string {
			return fmt.Sprintf("mvp2-%s-20251223-143201-%04d", w, try) // the first try always collides
		},
		Prepare: func(r *mvp.RayJobRequest) (*mvp.Task, error) {
			return &mvp.Task{Workload: mvp.WorkloadRayJob, SubmissionID: r.SubmissionID, Driver: map[string]float64{},
				SpecJSON: []byte(`{"entrypoint":"x"}`)}, nil
		}}
	for _, body := range []string{`{"entrypoint":"x","submission_id":"first"}`, `{"entrypoint":"x","submission_id":"mine"}`,
		`{"entrypoint":"x"}`, `{"entrypoint":"x"}`} { // without one, the task id is the submission id
		req := httptest.NewRequest("POST", "/api/jobs/", strings.NewReader(body))
		if err := d.submit(httptest.NewRecorder(), req); err != nil {
			t.Fatalf("submission %s: %v", body, err)
		}
	}
	req := httptest.NewRequest("POST", "/api/jobs/", strings.NewReader(`{"entrypoint":"x","submission_id":"mine"}`))
	if err := d.submit(httptest.NewRecorder(), req); !strings.Contains(fmt.Sprint(err), "submission_id mine already exists") {
		t.Errorf("a taken submission id: %v", err)
	}
}

// TestTailSendsNothingTwiceWhenALogReadFails: a read of the log that failed for a poll (Ray's log endpoint briefly
// down) gave "" or an older copy, which the tail took for a log that shrank: it sent the whole log again.
func TestTailSendsNothingTwiceWhenALogReadFails(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0002", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: "runs", Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	att := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: task.ID + "--a01", CreatedAt: now}
	for _, c := range []mvp.Change{
		{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: now, NewAttempt: att},
		{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateSubmitted, At: now},
		{TaskID: task.ID, From: mvp.StateSubmitted, To: mvp.StateRunning, At: now},
	} {
		if err := db.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	read := func(context.Context, string, int) (string, bool, error) {
		calls++
		switch {
		case calls == 1:
			return "a\nb\n", false, nil
		case calls <= 3:
			return "", false, fmt.Errorf("GET logs: %w", mvp.ErrRayUnavailable)
		case calls == 4:
			if err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StateSucceeded, At: time.Now(),
				AttemptUpdate: &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RaySucceeded}}); err != nil {
				t.Error(err)
			}
			return "a\nb\nc\n", false, nil
		default:
			return "a\nb\nc\n", true, nil
		}
	}
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond, ReadLog: read}
	srv := serveDoor(t, d)
	got := strings.Join(readTail(t, srv, "runs"), "")
	if got != "a\nb\nc\n" {
		t.Errorf("the client got %q, want each line once", got)
	}
}

// serveDoor serves d's routes on a loopback test server, closed when the test ends.
func serveDoor(t *testing.T, d *Door) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for _, rt := range d.Routes() {
		mux.HandleFunc(rt.Method+" "+rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.Handle(w, r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A canceled task whose Ray job had not ended yet was shown STOPPED at once: `ray job stop` (which waits for a
// terminal status) returned while the driver ran on for seconds, so a script that then resubmitted on the same
// GPUs, or read the final log, came too early. Ray's own server says STOPPED once the driver has stopped. The door
// shows the attempt's own status until it has ended. Found in a walk-through.
func TestACanceledJobIsStoppedOnceItsDriverIs(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0002", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: "st1", Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	att := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: mvp.SubmissionID(task.ID, 1), CreatedAt: now}
	running := *att
	running.RayStatus = mvp.RayRunning
	for _, c := range []mvp.Change{
		{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: now, NewAttempt: att},
		{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: now, AttemptUpdate: &running},
		{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StateCanceled, At: now},
	} {
		if err := db.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveDoor(t, &Door{Store: db, Logger: slog.New(slog.DiscardHandler)})
	status := func() (string, bool) {
		resp, err := http.Get(srv.URL + "/api/jobs/st1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var j struct {
			Status  string `json:"status"`
			EndTime *int64 `json:"end_time"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
			t.Fatal(err)
		}
		return j.Status, j.EndTime != nil
	}
	if st, ended := status(); st != "RUNNING" || ended {
		t.Errorf("canceled, its driver still running: %s (end_time set %v); want RUNNING until it stops", st, ended)
	}
	// A stop then answers as Ray does for a job not ended: stopped (it said false, as for an ended job).
	sresp, err := http.Post(srv.URL+"/api/jobs/st1/stop", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var stop struct {
		Stopped bool `json:"stopped"`
	}
	if err := json.NewDecoder(sresp.Body).Decode(&stop); err != nil || !stop.Stopped {
		t.Errorf("stop of a job still stopping: %+v %v; want stopped true", stop, err)
	}
	sresp.Body.Close()
	// Deleting it then is refused, as Ray refuses a job in a non-terminal state: it would free the submission id
	// while the driver still holds its GPUs (found in review).
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/jobs/st1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("DELETE of a job still stopping: %s; want it refused", resp.Status)
	}
	stopped := running
	end := now.Add(2 * time.Second)
	stopped.RayStatus, stopped.EndTime = mvp.RayStopped, &end
	if err := db.UpdateAttempt(ctx, mvp.RayRunning, &stopped, "", nil); err != nil {
		t.Fatal(err)
	}
	if st, ended := status(); st != "STOPPED" || !ended {
		t.Errorf("canceled, its driver stopped: %s (end_time set %v); want STOPPED", st, ended)
	}
}

// While Ray could not be read, a door job already admitted (its attempt submitted, its driver not started) said
// "waiting for its driver to start", with no word of the outage that only a queued job's message gave. Found in
// a walk-through.
func TestAnAdmittedJobSaysWhenRayIsDown(t *testing.T) {
	since := time.Date(2026, 11, 26, 14, 48, 55, 0, time.UTC)
	d := &Door{Health: func() scheduler.Health {
		return scheduler.Health{RayOK: false, RayDownSince: &since, RayError: "ray is unavailable"}
	}}
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0003", Workload: mvp.WorkloadRayJob, State: mvp.StateSubmitted,
		SubmissionID: "run2", LatestAttemptNo: 1, SpecJSON: []byte(`{"entrypoint":"x"}`),
		Attempts: []*mvp.Attempt{{No: 1, RaySubmissionID: "mvp2-ray_job-20251223-143201-0003--a01"}}}
	j := d.details(task)
	if j.Status != mvp.RayPending || !strings.Contains(j.Message, "cannot be read since 2026-11-26T14:48:55Z") {
		t.Errorf("an admitted job during an outage: %s %q; want PENDING saying Ray cannot be read, and since when", j.Status, j.Message)
	}
}

// A door job that expired (max_queued_s) while it backed off after a lost race showed the lost race's kind as its
// error_type and that attempt's end as its end_time, not the expiry and the task's end (walk-through 11).
func TestAnExpiredJobSaysSo(t *testing.T) {
	raceEnd := time.Date(2026, 11, 28, 18, 16, 31, 0, time.UTC)
	expired := time.Date(2026, 11, 28, 18, 17, 43, 0, time.UTC)
	d := &Door{}
	task := &mvp.Task{ID: "mvp2-ray_job-20261128-181530-0004", Workload: mvp.WorkloadRayJob, State: mvp.StateFailed,
		SubmissionID: "run4", LatestAttemptNo: 1, SpecJSON: []byte(`{"entrypoint":"x"}`), UpdatedAt: expired,
		ErrorSummary: string(mvp.FailureMaxQueuedExceeded) + ": waited 2m13s in the queue, longer than its max_queued_s (120 s), without starting",
		Attempts: []*mvp.Attempt{{No: 1, RaySubmissionID: "mvp2-ray_job-20261128-181530-0004--a01", RayStatus: mvp.RayFailed,
			FailureKind: mvp.FailureInsufficientResources, EndTime: &raceEnd}}}
	j := d.details(task)
	if j.ErrorType == nil || *j.ErrorType != string(mvp.FailureMaxQueuedExceeded) {
		t.Errorf("error_type %v, want MAX_QUEUED_EXCEEDED", j.ErrorType)
	}
	if j.EndTime == nil || *j.EndTime != expired.UnixMilli() {
		t.Errorf("end_time %v, want the task's end %d", j.EndTime, expired.UnixMilli())
	}
	// A task failed by its attempt keeps that attempt's kind and end.
	task.ErrorSummary = "attempt 1: RUNTIME_ERROR: exit code 1"
	task.Attempts[0].FailureKind = mvp.FailureRuntimeError
	if j := d.details(task); j.ErrorType == nil || *j.ErrorType != string(mvp.FailureRuntimeError) || *j.EndTime != raceEnd.UnixMilli() {
		t.Errorf("a task failed by its attempt: error_type %v end_time %v", j.ErrorType, j.EndTime)
	}
}

// TestTailFollowsTheStreamLineByLine: with a stream of the running attempt's log (FollowLogFrom), the tail sends
// whole lines as they come, reads on from the first byte it has not sent when a stream ends part way through a
// line, and sends the log's last line, without its newline, once the task has ended.
func TestTailFollowsTheStreamLineByLine(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	task := doorTaskAt(t, db, "0003", "streams", mvp.StateRunning, nil)
	const whole = "a\nb\nc\nd"
	var skips []int64
	follow := func(_ context.Context, _ string, _ int, skip int64, w io.Writer) (int64, bool, bool, error) {
		skips = append(skips, skip)
		switch len(skips) {
		case 1: // a stream that Ray ends part way through a line
			n, err := io.WriteString(w, whole[skip:3])
			return int64(n), false, true, err
		default: // the rest of the run, then the end
			n, err := io.WriteString(w, whole[skip:6])
			if err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StateSucceeded,
				At: time.Now(), AttemptUpdate: &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RaySucceeded}}); err != nil {
				t.Error(err)
			}
			return int64(n), true, true, err
		}
	}
	read := func(context.Context, string, int) (string, bool, error) { return whole, true, nil }
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond, ReadLog: read,
		FollowLogFrom: follow}
	srv := serveDoor(t, d)
	frames := readTail(t, srv, "streams")
	if got := strings.Join(frames, ""); got != whole {
		t.Errorf("the client got %q (frames %q), want %q", got, frames, whole)
	}
	for _, f := range frames[:len(frames)-1] {
		if !strings.HasSuffix(f, "\n") {
			t.Errorf("frame %q is not whole lines (frames %q)", f, frames)
		}
	}
	if len(skips) != 2 || skips[0] != 0 || skips[1] != 2 {
		t.Errorf("the streams began at bytes %v, want [0 2] (after the last whole line sent)", skips)
	}
}

// TestTailSendsARequeuedAttemptsLastLines: when an attempt ends and the task runs again, the tail went straight to
// the new attempt's log: what the ended attempt printed after the tail's last read (its last lines, often the
// traceback that made it fail) was never sent. The rest of the ended attempt's log is sent first. Found in
// walk-through 17.
func TestTailSendsARequeuedAttemptsLastLines(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-0004", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: "requeued", Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	apply := func(cs ...mvp.Change) {
		for _, c := range cs {
			if err := db.Apply(ctx, c); err != nil {
				t.Error(err)
			}
		}
	}
	a1 := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: task.ID + "--a01", CreatedAt: now}
	apply(mvp.Change{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: now, NewAttempt: a1},
		mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateRunning, At: now})
	logs := map[int]string{1: "one: a\n"}
	reads := 0
	read := func(_ context.Context, _ string, n int) (string, bool, error) {
		reads++
		if reads == 2 { // attempt 1 printed its last line and was requeued; attempt 2 ran to the task's end
			logs[1] += "one: traceback\n"
			at := time.Now().UTC()
			a2 := &mvp.Attempt{TaskID: task.ID, No: 2, RaySubmissionID: task.ID + "--a02", CreatedAt: at}
			apply(mvp.Change{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StatePendingResources, At: at,
				AttemptUpdate: &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RayFailed}},
				mvp.Change{TaskID: task.ID, From: mvp.StatePendingResources, To: mvp.StateSubmitting, At: at, NewAttempt: a2},
				mvp.Change{TaskID: task.ID, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: at,
					AttemptUpdate: &mvp.Attempt{TaskID: task.ID, No: 2, RayStatus: mvp.RaySucceeded}})
			logs[2] = "two: done\n"
			return logs[n][:len("one: a\n")], false, nil // this read was taken before the end
		}
		return logs[n], true, nil
	}
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond, ReadLog: read}
	srv := serveDoor(t, d)
	got := strings.Join(readTail(t, srv, "requeued"), "")
	if want := "one: a\none: traceback\ntwo: done\n"; got != want {
		t.Errorf("the client got %q, want %q", got, want)
	}
}

// readTail follows the door's log tail of the job sid and returns the frames it sent, once it closed normally.
func readTail(t *testing.T, srv *httptest.Server, sid string) []string {
	t.Helper()
	frames, st := tailToItsEnd(t, srv, sid)
	if st != websocket.StatusNormalClosure {
		t.Fatalf("the tail ended with close status %d after %q; want a normal close", st, frames)
	}
	return frames
}

// tailToItsEnd follows the door's tail of job sid until the door ends it, and returns the frames it sent and how it
// ended: a close frame's status, or -1 when the connection was dropped without one (what Ray's client raises on).
func tailToItsEnd(t *testing.T, srv *httptest.Server, sid string) ([]string, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/jobs/"+sid+"/logs/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var frames []string
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the tail of %s did not end within 20 s (sent %q)", sid, frames)
			}
			return frames, websocket.CloseStatus(err)
		}
		frames = append(frames, string(data))
	}
}

// TestTailSendsInvalidUTF8AsTheLogsDo: a driver that printed a byte that is not UTF-8 (a binary dump, a latin-1
// file name) broke the whole tail: the door sent the line as it was in a text frame, Ray's client (aiohttp)
// refuses a text frame that is not UTF-8 and raised "WebSocket error for job X: None", so `ray job submit` and
// `ray job logs -f` printed none of the log and exited 1 while the job succeeded; `ray job logs` of the same job
// showed every line, the bad byte as U+FFFD (encoding/json's replacement). The tail now sends what the logs
// answer does. Found in a walk-through against Ray (a driver writing b"\xff\xfe" to stdout).
func TestTailSendsInvalidUTF8AsTheLogsDo(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0005", "binary", mvp.StateSucceeded, &mvp.Attempt{No: 1, RayStatus: mvp.RaySucceeded})
	const log = "a\nbad byte: \xff\xfe end\ncut \xe2\x82\neuro \xe2\x82\xac\nlast \xc3"
	read := func(context.Context, string, int) (string, bool, error) { return log, true, nil }
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond, ReadLog: read}
	srv := serveDoor(t, d)
	frames := readTail(t, srv, "binary")
	for _, f := range frames {
		if !utf8.ValidString(f) {
			t.Errorf("frame %q is not UTF-8: Ray's client fails the whole tail on it", f)
		}
	}
	resp, err := http.Get(srv.URL + "/api/jobs/binary/logs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var logs struct {
		Logs string `json:"logs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&logs); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(frames, ""); got != logs.Logs {
		t.Errorf("the tail sent %q, the logs answer %q: want the same text", got, logs.Logs)
	}
}

// TestTailSendsAProgressBarAsItGoes: a progress bar (tqdm, which verl's trainers and most training loops print)
// redraws one line with '\r' and writes '\n' only when it is done. The tail sent only lines ended by '\n', so
// `ray job logs -f` and `ray job submit` through mvp printed nothing for a whole epoch and the job looked hung,
// where Ray's own tail shows each redraw as it comes. A '\r' now ends a frame too; the bytes are sent as they are
// (the terminal redraws the line, and the tail's text stays the logs answer's).
func TestTailSendsAProgressBarAsItGoes(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	task := doorTaskAt(t, db, "0006", "progress", mvp.StateRunning, nil)
	const whole = "start\n\repoch: 0/8\repoch: 1/8\repoch: 8/8\ndone\n"
	seen := make(chan struct{}) // closed when the client has received "epoch: 0/8"
	follow := func(_ context.Context, _ string, _ int, skip int64, w io.Writer) (int64, bool, bool, error) {
		if skip > 0 { // the first stream has ended the task; nothing more
			return 0, true, true, nil
		}
		n, err := io.WriteString(w, whole[:len("start\n\repoch: 0/8\repoch: 1/8")])
		if err != nil {
			return int64(n), false, true, err
		}
		select {
		case <-seen:
		case <-time.After(3 * time.Second):
			t.Errorf("the client had not received the redrawn line \"epoch: 0/8\" 3 s after it was written")
		}
		m, err := io.WriteString(w, whole[n:])
		if err := db.Apply(ctx, mvp.Change{TaskID: task.ID, From: mvp.StateRunning, To: mvp.StateSucceeded,
			At: time.Now(), AttemptUpdate: &mvp.Attempt{TaskID: task.ID, No: 1, RayStatus: mvp.RaySucceeded}}); err != nil {
			t.Error(err)
		}
		return int64(n + m), true, true, err
	}
	read := func(context.Context, string, int) (string, bool, error) { return whole, true, nil }
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond, ReadLog: read,
		FollowLogFrom: follow}
	srv := serveDoor(t, d)
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(rctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/jobs/progress/logs/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var got strings.Builder
	for {
		_, b, err := c.Read(rctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("the tail ended with %v", err)
			}
			break
		}
		got.Write(b)
		if strings.Contains(got.String(), "epoch: 0/8") {
			select {
			case <-seen:
			default:
				close(seen)
			}
		}
	}
	if got.String() != whole {
		t.Errorf("the client got %q, want %q", got.String(), whole)
	}
}

// doorTaskAt stores a Ray door task (mvp2-ray_job-20251223-143201-<suffix>, submission id sid) whose first attempt
// went to Ray, moved on to state with the attempt update up (nil for none).
func doorTaskAt(t *testing.T, db *sqlite.DB, suffix, sid string, state mvp.State, up *mvp.Attempt) *mvp.Task {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	task := &mvp.Task{ID: "mvp2-ray_job-20251223-143201-" + suffix, Workload: mvp.WorkloadRayJob, State: mvp.StateQueued,
		SubmissionID: sid, Driver: map[string]float64{}, SpecJSON: []byte(`{"entrypoint":"x"}`), CreatedAt: now, UpdatedAt: now}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	att := &mvp.Attempt{TaskID: task.ID, No: 1, RaySubmissionID: task.ID + "--a01", CreatedAt: now}
	if up != nil {
		up.TaskID = task.ID
	}
	for _, c := range []mvp.Change{
		{TaskID: task.ID, From: mvp.StateQueued, To: mvp.StateSubmitting, At: now, NewAttempt: att},
		{TaskID: task.ID, From: mvp.StateSubmitting, To: state, At: now, AttemptUpdate: up},
	} {
		if err := db.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// TestALogAnsweredAsItComesIsTheJSONOfTheWholeLog: however the log is cut into writes (a character of several
// bytes between two of them, a byte that is not UTF-8, one cut character at the very end), the streamed answer is
// byte for byte what writeJSON makes of the whole log.
func TestALogAnsweredAsItComesIsTheJSONOfTheWholeLog(t *testing.T) {
	logs := []string{"", "plain\n", "é✓🚀 <b>&\x00\t\"\\ \u2028\n", "bad \xff\xfe bytes \xe2\x9c", "\xf0\x9f\x9a",
		strings.Repeat("ü", jsonLogPiece) + "x"}
	for _, log := range logs {
		var want bytes.Buffer
		rec := httptest.NewRecorder()
		writeJSON(rec, map[string]string{"logs": log})
		want.Write(rec.Body.Bytes())
		for _, size := range []int{1, 2, 3, 5, 7, len(log) + 1} {
			rec := httptest.NewRecorder()
			jw := &jsonLogWriter{w: rec}
			for i := 0; i < len(log); i += size {
				if _, err := jw.Write([]byte(log[i:min(i+size, len(log))])); err != nil {
					t.Fatal(err)
				}
			}
			if err := jw.end(); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != want.String() || rec.Code != http.StatusOK {
				t.Errorf("log %q in writes of %d: %d %q; want %q", mvp.Clip(log, 30), size, rec.Code, mvp.Clip(got, 80), mvp.Clip(want.String(), 80))
			}
		}
	}
}
