package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogsFollowOnAfterARestartMidAttempt: `mvp logs -f` of a running attempt, when mvp restarts (its stream is
// cut, or ended with the server-stopping trailer, then 503 or refused while it starts again), asks again from the
// byte where the stream stopped and prints the rest: once, whole, exit 0. It gave up ("run the same command
// again"), and running it again printed the log from its start.
func TestLogsFollowOnAfterARestartMidAttempt(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	for _, how := range []string{"cut", "stopping"} {
		t.Run(how, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				switch r.URL.Path {
				case "/api/v2/tasks/" + id + "/logs":
					asked = append(asked, r.URL.RawQuery)
					switch len(asked) {
					case 1: // the first stream: two lines, then the server goes away
						w.Header().Set("Trailer", "X-Mvp-Log-End")
						w.Header().Set("X-Mvp-Log-Attempt", "1")
						io.WriteString(w, "step 1\nstep 2\n")
						w.(http.Flusher).Flush()
						if how == "cut" {
							conn, _, err := w.(http.Hijacker).Hijack()
							if err == nil {
								conn.Close()
							}
							return
						}
						w.Header().Set("X-Mvp-Log-End", "server-stopping")
					case 2: // starting again
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusServiceUnavailable)
						io.WriteString(w, `{"error": {"code": "unavailable", "message": "the server is starting"}}`)
					default: // back: the log from the offset asked, to the attempt's end
						w.Header().Set("Trailer", "X-Mvp-Log-End")
						w.Header().Set("X-Mvp-Log-Attempt", "1")
						log := "step 1\nstep 2\nstep 3\ndone\n"
						off := 0
						if o := r.URL.Query().Get("offset"); o != "" {
							for _, c := range o {
								off = off*10 + int(c-'0')
							}
						}
						if off <= len(log) {
							io.WriteString(w, log[off:])
						}
						w.Header().Set("X-Mvp-Log-End", "ended")
					}
				case "/api/v2/tasks/" + id:
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 1, "attempts": `+
						`[{"attempt_no": 1, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			out, errb, env := serverEnv(srv.URL)
			code := Run(context.Background(), []string{"logs", "-f", id}, env)
			if want := "step 1\nstep 2\nstep 3\ndone\n"; code != 0 || out.String() != want {
				t.Fatalf("exit %d, stdout %q (want %q), stderr %q", code, out.String(), want, errb.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 3 || !strings.Contains(asked[2], "attempt=1") || !strings.Contains(asked[2], "offset=14") {
				t.Errorf("log requests %q: want the third to ask attempt 1 from offset 14", asked)
			}
			if !strings.Contains(errb.String(), "following on from where it stopped") ||
				!strings.Contains(errb.String(), "mvp answers again; following on\n") {
				t.Errorf("stderr %q: want it to say it follows on, and when mvp answers again", errb.String())
			}
		})
	}
}

// TestLogsFollowWaitsOutARestartBeforeTheFirstAttempt: `mvp logs -f` right after a submit waits, through the
// server, for the task's first attempt, which may take hours; a restart of mvp meanwhile answered 503 ("the server
// is stopping … follow it again once the server is back") and the command ended, exit 1. That 503 carries
// Retry-After; the command waits for mvp to answer again and follows on.
func TestLogsFollowWaitsOutARestartBeforeTheFirstAttempt(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3b"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	var mu sync.Mutex
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			asked++
			if asked == 1 { // the stop ends the wait for the first attempt
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error": {"code": "unavailable", "message": "the server is stopping (a restart?) and task `+
					id+` has no attempt yet: follow it again once the server is back"}}`)
				return
			}
			w.Header().Set("X-Mvp-Log-Attempt", "1")
			io.WriteString(w, "step 1\ndone\n")
		case "/api/v2/tasks/" + id:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 1, "attempts": `+
				`[{"attempt_no": 1, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || out.String() != "step 1\ndone\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the log once mvp is back", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "mvp stopped (a restart?) before the log") {
		t.Errorf("stderr %q: want it to say mvp was stopping and it waits", errb.String())
	}
}

// logServer is a server of one task's log: the first answer sends first and is cut (the connection closed: mvp
// killed); each later request of the log is answered by later. The task has one attempt, ended.
func logServer(t *testing.T, id, first string, later func(w http.ResponseWriter, r *http.Request)) (srv *httptest.Server, asked func() []string) {
	t.Helper()
	var mu sync.Mutex
	var qs []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/tasks/" + id + "/logs":
			mu.Lock()
			qs = append(qs, r.URL.RawQuery)
			k := len(qs)
			mu.Unlock()
			if k == 1 {
				w.Header().Set("Trailer", "X-Mvp-Log-End")
				w.Header().Set("X-Mvp-Log-Attempt", "1")
				io.WriteString(w, first)
				w.(http.Flusher).Flush()
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			later(w, r)
		case "/api/v2/tasks/" + id:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 1, "attempts": `+
				`[{"attempt_no": 1, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), qs...)
	}
}

// TestLogsFollowOnFromAServerWithoutOffset: a server from before offset= (an older mvp restarted, or a newer
// mvp logs against an older mvp) refuses it, 400 "unknown query parameter", and mvp logs -f failed with that 400
// after the restart. It asks for the log from its start and prints from the byte where it stopped: once, whole.
func TestLogsFollowOnFromAServerWithoutOffset(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	const log = "step 1\nstep 2\nstep 3\ndone\n"
	srv, asked := logServer(t, id, log[:14], func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("offset") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error": {"code": "invalid", "field": "offset", "message": "unknown query parameter \"offset\": `+
				`GET /api/v2/tasks/{task_id}/logs takes attempt, follow"}}`)
			return
		}
		w.Header().Set("Trailer", "X-Mvp-Log-End")
		w.Header().Set("X-Mvp-Log-Attempt", "1")
		io.WriteString(w, log)
		w.Header().Set("X-Mvp-Log-End", "ended")
	})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || out.String() != log {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %q; log requests %q", code, out.String(), log, errb.String(), asked())
	}
}

// TestLogsFollowGivesUpOnAServerThatStopsEveryFollow: a server that answers each request of the log at once with
// nothing and the server-stopping trailer (it stops every follow as it begins) is not back: mvp logs -f gives up
// after followOutage, as for one that refuses the connection. Each such answer began a new outage, so it asked
// again every followPoll, forever.
func TestLogsFollowGivesUpOnAServerThatStopsEveryFollow(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p, o time.Duration) { followPoll, followOutage = p, o }(followPoll, followOutage)
	followPoll, followOutage = 10*time.Millisecond, 200*time.Millisecond
	srv, asked := logServer(t, id, "step 1\n", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Mvp-Log-End")
		w.Header().Set("X-Mvp-Log-Attempt", "1")
		w.Header().Set("X-Mvp-Log-End", "server-stopping")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, errb, env := serverEnv(srv.URL)
	code := Run(ctx, []string{"logs", "-f", id}, env)
	if ctx.Err() != nil {
		t.Fatalf("still following after 5 s (%d log requests), given up on after %s: stderr %d lines", len(asked()),
			followOutage, strings.Count(errb.String(), "\n"))
	}
	if code != 1 || out.String() != "step 1\n" || !strings.Contains(errb.String(), "stopping") {
		t.Errorf("exit %d, stdout %q, stderr %q: want 1 and why", code, out.String(), errb.String())
	}
	if n := strings.Count(errb.String(), "following on from where it stopped"); n != 1 {
		t.Errorf("the outage is said %d times, want once: %q", n, errb.String())
	}
}

// TestLogsFollowGiveUpSaysWhatMvpAnswered: back after a restart, mvp answers 503 because Ray's log cannot be read:
// mvp logs -f waits that out too, and when it gives up it says what mvp answered; it said "mvp did not answer".
func TestLogsFollowGiveUpSaysWhatMvpAnswered(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p, o time.Duration) { followPoll, followOutage = p, o }(followPoll, followOutage)
	followPoll, followOutage = 10*time.Millisecond, 100*time.Millisecond
	srv, _ := logServer(t, id, "step 1\n", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error": {"code": "unavailable", "message": "Ray's log could not be read: dashboard down"}}`)
	})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 1 || out.String() != "step 1\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if e := errb.String(); strings.Contains(e, "did not answer") || !strings.Contains(e, "Ray's log could not be read") {
		t.Errorf("stderr %q: want what mvp answered, not that it did not answer", e)
	}
}

// TestLogsFollowWaitsOutATooManyAfterACut: a follow cut on the way (the network, not a restart) may still be
// counted by the server as one of its user's follows until it notices, so asking again from the offset can be
// refused 429 ("follows … logs already") at a user's limit. That is the same outage: mvp logs -f waits it out as
// it waits out a 503, and follows on; it ended with the 429.
func TestLogsFollowWaitsOutATooManyAfterACut(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	const log = "step 1\nstep 2\nstep 3\ndone\n"
	var mu sync.Mutex
	refused := 0
	srv, asked := logServer(t, id, log[:14], func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if refused < 2 { // the cut follow still counted
			refused++
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error": {"code": "too_many", "message": "alice follows 32 logs already, as many as a user may at once"}}`)
			return
		}
		w.Header().Set("Trailer", "X-Mvp-Log-End")
		w.Header().Set("X-Mvp-Log-Attempt", "1")
		off := len(log)
		fmt.Sscan(r.URL.Query().Get("offset"), &off)
		io.WriteString(w, log[min(off, len(log)):])
		w.Header().Set("X-Mvp-Log-End", "ended")
	})
	out, errb, env := serverEnv(srv.URL)
	code := Run(context.Background(), []string{"logs", "-f", id}, env)
	if code != 0 || out.String() != log {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %q; log requests %q", code, out.String(), log, errb.String(), asked())
	}
}

// TestLogsFollowFirstTooManyIsReturned: a 429 on the first request of a follow (no outage going on) is the user's
// limit, said at once: it is not waited out.
func TestLogsFollowFirstTooManyIsReturned(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error": {"code": "too_many", "message": "alice follows 32 logs already, as many as a user may at once"}}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, errb, env := serverEnv(srv.URL)
	code := Run(ctx, []string{"logs", "-f", id}, env)
	if ctx.Err() != nil || code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "follows 32 logs already") {
		t.Fatalf("exit %d, stdout %q, stderr %q (ctx %v): want exit 1 saying the limit at once", code, out.String(), errb.String(), ctx.Err())
	}
}
