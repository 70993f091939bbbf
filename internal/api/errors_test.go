package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestStatusTableIsOneToOne: every code has its own status, and the client reads each status back as its code.
func TestStatusTableIsOneToOne(t *testing.T) {
	seen := map[int]string{}
	for _, e := range statuses {
		if other, ok := seen[e.status]; ok {
			t.Errorf("HTTP %d is both %s and %s", e.status, other, e.code)
		}
		seen[e.status] = e.code
		if statusOf(e.code) != e.status || codeOf(e.status, "") != e.code || codeOf(e.status, "http") != e.code {
			t.Errorf("%s ↔ %d: statusOf %d, codeOf %s", e.code, e.status, statusOf(e.code), codeOf(e.status, ""))
		}
	}
	if statusOf("no-such-code") != http.StatusInternalServerError || codeOf(400, mvp.CodeConflict) != mvp.CodeConflict {
		t.Error("fallbacks")
	}
}

// TestWriteJSONSaysWhatItCannotEncode: a value JSON cannot hold (a NaN share, say) gives a 500 that says so, not
// a 200 with an empty body.
func TestWriteJSONSaysWhatItCannotEncode(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]float64{"share": math.NaN()})
	var body ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusInternalServerError ||
		body.Error.Code != mvp.CodeInternal || !strings.Contains(body.Error.Message, "could not be encoded") {
		t.Fatalf("status %d, body %q (%v)", rec.Code, rec.Body.String(), err)
	}
}

// TestAFullDiskIsUnavailable: a write that fails for want of space (or on a read-only disk) outside the database,
// such as a package the Ray door keeps on shared_root, is 503 naming the folder to free, in both error shapes; it
// was "500 internal error".
func TestAFullDiskIsUnavailable(t *testing.T) {
	cases := []struct {
		errno syscall.Errno
		want  string
	}{
		{syscall.ENOSPC, "no space left in /shared/ray_packages: free space there"},
		{syscall.EDQUOT, "no space left in /shared/ray_packages: free space there"},
		{syscall.EROFS, "/shared/ray_packages is read-only"},
	}
	for _, c := range cases {
		err := fmt.Errorf("keep package x.zip: %w", &fs.PathError{Op: "write", Path: "/shared/ray_packages/.upload-1", Err: c.errno})
		r := httptest.NewRequest("PUT", "/ray/api/packages/gcs/x.zip", nil)
		rec := httptest.NewRecorder()
		writeTextError(rec, slog.New(slog.DiscardHandler), r, err)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%v, text: %d %q; want 503 saying %q", c.errno, rec.Code, rec.Body.String(), c.want)
		}
		rec = httptest.NewRecorder()
		writeError(rec, slog.New(slog.DiscardHandler), r, err)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%v, JSON: %d %q; want 503 saying %q", c.errno, rec.Code, rec.Body.String(), c.want)
		}
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// TestHealthzSaysWhenTheSchedulerIsStuck: a pass waiting on a dashboard that does not answer (each call until its
// timeout) left /healthz "ok" for half a minute, its last_tick standing still. A last pass older than StaleTick is
// degraded, saying so.
func TestHealthzSaysWhenTheSchedulerIsStuck(t *testing.T) {
	now := time.Date(2026, 11, 26, 11, 53, 40, 0, time.UTC)
	for _, c := range []struct {
		last time.Time
		want string
	}{{now.Add(-2 * time.Second), `"status":"ok"`}, {now.Add(-30 * time.Second), `"status":"degraded"`}} {
		s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Health: func() scheduler.Health { return scheduler.Health{RayOK: true, LastTick: c.last} }}
		rec := httptest.NewRecorder()
		if err := s.healthz(rec, httptest.NewRequest("GET", "/healthz", nil)); err != nil {
			t.Fatal(err)
		}
		body := strings.Join(strings.Fields(rec.Body.String()), "")
		if !strings.Contains(body, c.want) {
			t.Errorf("last pass %s ago: %s; want %s", now.Sub(c.last), body, c.want)
		}
		if c.want == `"status":"degraded"` && !strings.Contains(rec.Body.String(), "last pass began 30s ago") {
			t.Errorf("degraded without saying why: %s", rec.Body.String())
		}
	}
}

// TestHealthzBlamesTheDatabaseNotTheSchedulerWhileItTakesNoWrites: while the database takes no writes (a full
// disk) the scheduler's passes back off up to 30 s, so its last pass is older than StaleTick; /healthz must not
// then say the scheduler is waiting "on Ray perhaps": the database sentence says why.
func TestHealthzBlamesTheDatabaseNotTheSchedulerWhileItTakesNoWrites(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 30, 0, 0, time.UTC)
	s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
		Health:   func() scheduler.Health { return scheduler.Health{RayOK: true, LastTick: now.Add(-25 * time.Second)} },
		Database: func() error { return errors.New("database disk is full: free space on /db") }}
	rec := httptest.NewRecorder()
	if err := s.healthz(rec, httptest.NewRequest("GET", "/healthz", nil)); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "database disk is full") || strings.Contains(body, "last pass began") {
		t.Errorf("health while the database takes no writes: %s; want the database's sentence and no stale scheduler", body)
	}
}

// TestHealthzIsNotOKBeforeTheFirstLookAtRay: right after the start, before the scheduler's first pass has read
// Ray, /healthz said "ok" with ray_ok false (about 5 s while Ray was unreachable, and status.sh said healthy).
// It is degraded then, saying that mvp has not looked at Ray yet. Found in walk-through 17.
func TestHealthzIsNotOKBeforeTheFirstLookAtRay(t *testing.T) {
	s := &Server{Clock: fixedClock{time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}, StaleTick: 15 * time.Second,
		Logger: slog.New(slog.DiscardHandler), Health: func() scheduler.Health { return scheduler.Health{} }}
	rec := httptest.NewRecorder()
	if err := s.healthz(rec, httptest.NewRequest("GET", "/healthz", nil)); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	if !strings.Contains(strings.Join(strings.Fields(body), ""), `"status":"degraded"`) || !strings.Contains(body, NotLookedYet) {
		t.Errorf("before the first pass: %s; want degraded, saying %q", body, NotLookedYet)
	}
}

// TestHealthzSaysHowLongTheFirstLookAtRayHasTaken: while the first look waited on a Ray that did not answer (35 s
// in the e2e test TestServeAnswersBeforeItsFirstLookAtRay: the probe's 5 s, then the dashboard's 30 s), /healthz
// kept saying mvp "started moments ago". Past StaleTick it says how long the first look has taken and where to
// look.
func TestHealthzSaysHowLongTheFirstLookAtRayHasTaken(t *testing.T) {
	now := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		started time.Time
		want    string
	}{
		{now.Add(-2 * time.Second), NotLookedYet},
		{now.Add(-40 * time.Second), "its first look at Ray began 40s ago"},
	} {
		s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Started: c.started,
			Logger: slog.New(slog.DiscardHandler), Health: func() scheduler.Health { return scheduler.Health{} }}
		rec := httptest.NewRecorder()
		if err := s.healthz(rec, httptest.NewRequest("GET", "/healthz", nil)); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if !strings.Contains(strings.Join(strings.Fields(body), ""), `"status":"degraded"`) || !strings.Contains(body, c.want) {
			t.Errorf("started %s ago, no pass yet: %s; want degraded, saying %q", now.Sub(c.started), body, c.want)
		}
		if strings.Contains(body, "see ray_error") { // there is none before the first look ends
			t.Errorf("started %s ago, no pass yet: %s points at a ray_error it does not have", now.Sub(c.started), body)
		}
	}
}

// TestHealthzSaysWhenRaysStateAPIKeepsRefusingLogs: Ray's state API at its limit of requests in progress (taken by
// others' log streams, which Ray 2.60 does not free once a followed log stops growing) refuses every log read:
// ended jobs' logs are not kept, and so their jobs are not pruned from Ray, while the scheduler runs on. mvp said so
// only once per log in its own log. Past a minute of refusals /healthz is degraded with a ray_logs sentence that
// says what to do; a refusal of moments ago is not yet a condition.
func TestHealthzSaysWhenRaysStateAPIKeepsRefusingLogs(t *testing.T) {
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since    time.Duration
		degraded bool
	}{{0, false}, {10 * time.Second, false}, {5 * time.Minute, true}} {
		var since *time.Time
		if c.since > 0 {
			at := now.Add(-c.since)
			since = &at
		}
		s := &Server{Clock: fixedClock{now}, StaleTick: 15 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Health: func() scheduler.Health {
				return scheduler.Health{RayOK: true, LastTick: now.Add(-time.Second), RayLogsBusySince: since}
			}}
		body, degraded := s.health()
		if got := body["status"] == "degraded"; got != c.degraded || degraded["ray_logs"] != c.degraded {
			t.Errorf("refused for %s: %v (components %v); want degraded %v", c.since, body, degraded, c.degraded)
		}
		if !c.degraded {
			continue
		}
		why := fmt.Sprint(body["ray_logs"])
		for _, want := range []string{"5m0s", "RAY_STATE_SERVER_MAX_HTTP_REQUEST", "not kept", "dashboard"} {
			if !strings.Contains(why, want) {
				t.Errorf("ray_logs %q does not say %q", why, want)
			}
		}
	}
	if !slices.Contains(HealthComponents, "ray_logs") {
		t.Errorf("HealthComponents %v lack ray_logs: mvp_health_degraded would not show it", HealthComponents)
	}
}
