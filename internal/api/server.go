// Package api is mvp's HTTP API: tasks in, task state, events and logs out, behind an internal bearer token.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/raycompat"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Preparer validates a request body and returns the task it describes (workload, name, gang shape, the raw
// jobspec and the effective spec), without an id or state.
type Preparer func(body []byte) (*mvp.Task, error)

// Server serves the API.
type Server struct {
	stopOnce, closeOnce sync.Once
	stopped             chan struct{}
	followsMu           sync.Mutex
	follows             map[string]int // named user → logs followed now (MaxFollowsPerUser)

	Store   mvp.Store
	Files   taskfs.FS
	Ray     mvp.RayClient
	Prepare Preparer
	Build   scheduler.Builder
	Policy  scheduler.Policy
	Clock   mvp.Clock
	Logger  *slog.Logger
	// Token is the internal bearer token, the operator's; never logged.
	Token string
	// Users are the named users (v2.auth.users), each with its own token; never logged.
	Users []mvp.User
	// MaxBodyBytes caps request bodies.
	MaxBodyBytes int64
	// Wake asks the scheduler for a tick (after a submit or a cancel); may be nil.
	Wake func()
	// NeverFits (scheduler.Loop.NeverFits) says whether a task could not start even on an empty cluster as the
	// scheduler last saw it, and why: a submit of such a task is taken, with a warning. May be nil.
	NeverFits func(*mvp.Task) (string, bool)
	// ForgetNode (scheduler.Loop.ForgetNode) forgets a GPU node that is down, for DELETE /api/v2/nodes/{node_id};
	// nil answers that route 404.
	ForgetNode func(ctx context.Context, id string) (mvp.Node, error)
	// Snapshot reads what the scheduler decides on (scheduler.Loop.Snapshot), for the dry run.
	Snapshot func(context.Context) (scheduler.Snapshot, error)
	// Health reports the scheduler's view of Ray for /healthz; may be nil.
	Health func() scheduler.Health
	// StaleTick: a scheduler whose last pass began longer ago than this is degraded in /healthz (a pass waiting on
	// a Ray that does not answer); 0 never judges it.
	StaleTick time.Duration
	// Started is when the service started (zero: not known); /healthz says how long a first look at Ray has taken.
	Started time.Time
	// Database, when set, says what is wrong with the database (its file removed or replaced under mvp, or its
	// writes failing on a full disk): /healthz is degraded then.
	Database func() error
	// SharedRoot, when set, says what is wrong with shared_root (unmounted, or a task folder that could not be
	// written): every submission waits then, and /healthz is degraded with a shared_root sentence.
	SharedRoot func() error
	// LogPoll is the period at which a followed log is read again.
	LogPoll time.Duration
	// NoLogStreams makes a follower read a running attempt's log by a copy at every poll, never through a stream
	// from Ray (mvp.LogFollower; v2.ray.max_log_streams: 0). Ray 2.60 holds a place of its state API's requests
	// for every stream whose log file has stopped growing, for good (a followed attempt's, once it ended).
	NoLogStreams bool
	// Crash, when set (tests only), is called at named points and may end the process there.
	Crash func(point string)
	// Observer is told of each task the API accepts; nil for none.
	Observer mvp.Observer
	// Metrics serves /metrics (the Prometheus exposition); nil answers 404 (metrics are off).
	Metrics http.Handler
	// MetricsPublic lets /metrics be read without the token.
	MetricsPublic bool
	// Schedules keeps recurring schedules (/api/v2/schedules).
	Schedules mvp.ScheduleStore
	// WakeSchedules asks the schedules loop for a pass (after a create or a resume); may be nil.
	WakeSchedules func()
	// Secrets is secret storage (off when it has no key).
	Secrets *secrets.Vault
	// RayDoor is the Ray-Jobs-compatible door, served under RayPrefix behind the same token; its Cancel, ReadLog
	// and NewID are this server's. Nil: its routes answer 404.
	RayDoor *raycompat.Door
}

// RayPrefix is where the Ray Jobs door is mounted: Ray's clients take http://<mvp>/ray as their address (the
// door answers Ray's paths at mvp's root too).
const RayPrefix = "/ray"

func (s *Server) crash(point string) {
	if s.Crash != nil {
		s.Crash(point)
	}
}

type route struct {
	method, pattern string
	auth            bool
	h               func(http.ResponseWriter, *http.Request) error
	// text: errors are answered as plain text, the shape Ray's client shows its users (the Ray door).
	text bool
	// params are the query parameters the route reads; any other, or one given twice, is a 400 (a misspelt
	// ?dry-run=true made a real task). The Ray door's routes are not checked: Ray's clients are not ours.
	params []string
}

func (s *Server) routes() []route {
	out := []route{
		{"GET", "/healthz", false, s.healthz, false, nil},
		{"GET", "/metrics", !s.MetricsPublic, s.metrics, false, nil},
		{"GET", "/api/v2/openapi.json", true, s.openapi, false, nil},
		{"POST", "/api/v2/tasks", true, s.createTask, false, []string{"dry_run"}},
		{"GET", "/api/v2/tasks", true, s.listTasks, false, []string{"state", "workload", "owner", "limit", "cursor"}},
		{"GET", "/api/v2/tasks/{task_id}", true, s.getTask, false, nil},
		{"POST", "/api/v2/tasks/{task_id}/cancel", true, s.cancelTask, false, nil},
		{"POST", "/api/v2/tasks/{task_id}/resubmit", true, s.resubmitTask, false, []string{"dry_run"}},
		{"GET", "/api/v2/tasks/{task_id}/logs", true, s.taskLogs, false, []string{"attempt", "follow", "offset"}},
		{"GET", "/api/v2/tasks/{task_id}/events", true, s.taskEvents, false, []string{"limit", "cursor"}},
		{"POST", "/api/v2/schedules", true, s.createSchedule, false, nil},
		{"GET", "/api/v2/schedules", true, s.listSchedules, false, []string{"owner"}},
		{"GET", "/api/v2/queue", true, s.queue, false, nil},
		{"GET", "/api/v2/users", true, s.users, false, nil},
		{"DELETE", "/api/v2/nodes/{node_id}", true, s.forgetNode, false, nil},
		{"GET", "/api/v2/schedules/{name}", true, s.getSchedule, false, []string{"owner"}},
		{"DELETE", "/api/v2/schedules/{name}", true, s.deleteSchedule, false, []string{"owner"}},
		{"POST", "/api/v2/schedules/{name}/pause", true, s.pauseSchedule, false, []string{"owner"}},
		{"POST", "/api/v2/schedules/{name}/resume", true, s.resumeSchedule, false, []string{"owner"}},
		{"GET", "/api/v2/secrets", true, s.listSecrets, false, []string{"owner"}},
		{"PUT", "/api/v2/secrets/{name}", true, s.putSecret, false, []string{"owner"}},
		{"DELETE", "/api/v2/secrets/{name}", true, s.deleteSecret, false, []string{"owner"}},
		{"GET", "/api/v2/tasks/{task_id}/results", true, s.taskResults, false, nil},
		{"GET", "/api/v2/tasks/{task_id}/results/{path...}", true, s.taskResultFile, false, nil},
	}
	door := s.RayDoor
	if door == nil {
		door = &raycompat.Door{}
	}
	for _, rt := range door.Routes() {
		h := rt.Handle
		if s.RayDoor == nil {
			h = func(http.ResponseWriter, *http.Request) error {
				return mvp.Errorf(mvp.CodeNotFound, "", "the Ray Jobs door is not served here")
			}
		}
		// Under /ray, and at the root too: Ray's paths are none of mvp's own (/api/v2/…), and a Ray user points
		// Ray's client at the URL mvp printed (answered 404 there, it says only that the cluster is older than
		// Ray 1.9).
		out = append(out, route{method: rt.Method, pattern: RayPrefix + rt.Pattern, auth: true, h: h, text: true},
			route{method: rt.Method, pattern: rt.Pattern, auth: true, h: h, text: true})
	}
	return out
}

// Routes lists every route the server serves as "METHOD pattern" (tests enumerate them, so that no route escapes
// the ownership checks).
func (s *Server) Routes() []string {
	var out []string
	for _, rt := range s.routes() {
		out = append(out, rt.method+" "+rt.pattern)
	}
	return out
}

// Handler returns the API's http.Handler.
func (s *Server) Handler() http.Handler {
	if s.LogPoll == 0 {
		s.LogPoll = time.Second
	}
	if d := s.RayDoor; d != nil {
		d.ReadLog, d.NewID = s.readLog, NewTaskID
		d.CopyLogFrom, d.FollowLogFrom = s.copyLog, s.followLog // a lost log's error is raycompat.ErrLogLost
		d.Cancel = func(ctx context.Context, t *mvp.Task) (*mvp.Task, error) { return s.cancel(ctx, t, "ray door") }
		if d.LogPoll == 0 {
			d.LogPoll = s.LogPoll
		}
	}
	mux := http.NewServeMux()
	byPattern := map[string][]route{}
	var order []string
	for _, rt := range s.routes() {
		if _, ok := byPattern[rt.pattern]; !ok {
			order = append(order, rt.pattern)
		}
		byPattern[rt.pattern] = append(byPattern[rt.pattern], rt)
	}
	for _, p := range order {
		rts := byPattern[p]
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			for _, rt := range rts {
				if rt.method == r.Method || (rt.method == "GET" && r.Method == "HEAD") {
					s.serve(w, r, rt)
					return
				}
			}
			var allow []string
			for _, rt := range rts {
				allow = append(allow, rt.method)
			}
			w.Header().Set("Allow", strings.Join(allow, ", "))
			errorWriter(rts[0])(w, s.Logger, r, mvp.Errorf(mvp.CodeMethod, "", "%s is not allowed on %s; use %s",
				r.Method, r.URL.Path, strings.Join(allow, " or ")))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, s.Logger, r, mvp.Errorf(mvp.CodeNotFound, "", "no such endpoint %s; see /api/v2/openapi.json", r.URL.Path))
	})
	return mux
}

// counted reports whether an answer counts in mvp_http_request_duration_seconds (specs/metrics.md): not
// /healthz's nor /metrics's (probes and scrapes), nor the web page's own reads of the API (mvp.Uncounted).
func counted(r *http.Request, rt route) bool {
	if rt.pattern == "/healthz" || rt.pattern == "/metrics" {
		return false
	}
	return !mvp.Uncounted(r.Context())
}

// errorWriter is how a route answers errors: mvp's JSON shape, or plain text for the Ray door.
func errorWriter(rt route) func(http.ResponseWriter, *slog.Logger, *http.Request, error) {
	if rt.text {
		return writeTextError
	}
	return writeError
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) {
	start, sw := time.Now(), &statusWriter{ResponseWriter: w}
	if counted(r, rt) {
		defer func() { mvp.ObserverOr(s.Observer).HTTPRequest(rt.pattern, r.Method, sw.Status(), time.Since(start)) }()
	}
	w = sw
	writeError := errorWriter(rt)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.Logger.Error("handler panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
			writeError(w, s.Logger, r, mvp.Errorf(mvp.CodeInternal, "", "internal error"))
		}
	}()
	if rt.auth {
		c, err := s.authorize(r)
		if err != nil {
			if mvp.ErrorCode(err) == mvp.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mvp"`)
			}
			writeError(w, s.Logger, r, err)
			return
		}
		if rt.text && !c.Operator {
			// The Ray door does not know users yet: what it lists and stops is every task, so only the operator's
			// token may use it. Named users submit through /api/v2.
			writeError(w, s.Logger, r, mvp.Errorf(mvp.CodeForbidden, "", "the Ray-compatible door at %s takes the "+
				"operator's token only; named users submit through /api/v2", RayPrefix))
			return
		}
		r = r.WithContext(mvp.WithCaller(r.Context(), c))
	}
	if !rt.text {
		if err := checkParams(r, rt); err != nil {
			writeError(w, s.Logger, r, err)
			return
		}
	}
	if err := rt.h(w, r); err != nil {
		writeError(w, s.Logger, r, err)
	}
}

// statusWriter records the status an answer was given (for the metrics). It passes Flush on, and Unwrap lets
// http.ResponseController and the WebSocket upgrade reach the connection beneath.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code // not an informational 1xx (103 Early Hints), which another status follows
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered (a followed log line by line).
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the ResponseWriter beneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Status is the answer's status: 200 when the handler wrote none; 101 for a WebSocket upgrade (the tail).
func (w *statusWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// checkParams refuses a query parameter the route does not read, and one given more than once.
func checkParams(r *http.Request, rt route) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return mvp.Errorf(mvp.CodeInvalid, "", "the query string cannot be read: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(rt.params, k) {
			if len(rt.params) == 0 {
				return mvp.Errorf(mvp.CodeInvalid, k, "unknown query parameter %q: %s %s takes no query parameter",
					clip(k), rt.method, rt.pattern)
			}
			return mvp.Errorf(mvp.CodeInvalid, k, "unknown query parameter %q: %s %s takes %s", clip(k), rt.method,
				rt.pattern, strings.Join(rt.params, ", "))
		}
		if n := len(q[k]); n > 1 {
			return mvp.Errorf(mvp.CodeInvalid, k, "query parameter %q is given %d times; give it once", k, n)
		}
	}
	return nil
}

// authorize finds who the bearer token belongs to: the operator (the internal token) or a named user. Every
// token is compared, each in constant time, so the time taken does not tell which one matched.
func (s *Server) authorize(r *http.Request) (mvp.Caller, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		return mvp.Caller{}, mvp.Errorf(mvp.CodeUnauthorized, "", "more than one Authorization header: send one "+
			"Authorization header, Bearer <token>")
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return mvp.Caller{}, mvp.Errorf(mvp.CodeUnauthorized, "", "missing Authorization: Bearer <token> header")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return mvp.Caller{}, mvp.Errorf(mvp.CodeUnauthorized, "", "the Authorization header must be 'Bearer <token>'")
	}
	got := []byte(strings.TrimSpace(tok))
	match := subtle.ConstantTimeCompare(got, []byte(s.Token))
	who := -1
	for k := range s.Users {
		m := subtle.ConstantTimeCompare(got, []byte(s.Users[k].Token))
		who = subtle.ConstantTimeSelect(m, k, who)
		match |= m
	}
	switch {
	case match != 1:
		return mvp.Caller{}, mvp.Errorf(mvp.CodeForbidden, "", "the token is not valid")
	case who < 0:
		return mvp.Caller{Name: mvp.Operator, Operator: true}, nil
	}
	return mvp.Caller{Name: s.Users[who].Name}, nil
}

// user is the named user of this caller, or nil for the operator (who has no limits).
func (s *Server) user(c mvp.Caller) *mvp.User {
	if c.Operator {
		return nil
	}
	for k := range s.Users {
		if s.Users[k].Name == c.Name {
			return &s.Users[k]
		}
	}
	return nil
}

// notYours is the 403 for a caller that asks for what another user owns; field names where the request named it
// ("" for the path).
func notYours(field, what, id string) error {
	return mvp.Errorf(mvp.CodeForbidden, field, "%s %s belongs to another user; a user sees and acts on their own only", what, id)
}

// operatorOnly refuses a caller who is not the operator.
func operatorOnly(r *http.Request) error {
	if !mvp.CallerOf(r.Context()).Operator {
		return mvp.Errorf(mvp.CodeForbidden, "", "%s is for the operator (the internal token) only", r.URL.Path)
	}
	return nil
}

// ForgottenNode is the answer to DELETE /api/v2/nodes/{node_id}: the GPU node that mvp no longer waits for.
type ForgottenNode struct {
	NodeID    string  `json:"node_id"`
	IP        string  `json:"ip,omitempty"`
	TotalGPUs float64 `json:"total_gpus"`
	Forgotten bool    `json:"forgotten"`
}

// forgetNode forgets a GPU node that is down (operator only): gangs that fit only with it stop waiting for it as
// nodes_down (scheduler.Loop.ForgetNode).
func (s *Server) forgetNode(w http.ResponseWriter, r *http.Request) error {
	if err := operatorOnly(r); err != nil {
		return err
	}
	if s.ForgetNode == nil {
		return mvp.Errorf(mvp.CodeNotFound, "", "this mvp has no scheduler to forget nodes in")
	}
	n, err := s.ForgetNode(r.Context(), r.PathValue("node_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ForgottenNode{NodeID: n.ID, IP: n.IP, TotalGPUs: n.Total["GPU"], Forgotten: true})
	return nil
}

// NotLookedYet is /healthz's scheduler sentence before the scheduler's first pass has read Ray (just after the
// start): degraded, since nothing says yet that Ray can be read; v2/scripts/start.sh waits it out.
const NotLookedYet = "mvp has not looked at Ray yet: it started moments ago"

// passWaits says that the scheduler's pass under way has waited longer than StaleTick while Ray answered its last
// look (a pass waiting on a job server that does not answer, each call until its timeout); "" otherwise. /healthz,
// the queue and a QUEUED task say it: what the queue shows as starting, and a task no pass has decided on yet,
// wait for that pass to end.
func (s *Server) passWaits(h scheduler.Health) string {
	if s.StaleTick <= 0 || !h.RayOK || h.LastTick.IsZero() || s.Clock.Now().Sub(h.LastTick) <= s.StaleTick {
		return ""
	}
	age := s.Clock.Now().Sub(h.LastTick).Round(time.Second)
	if h.WaitingOn == "" {
		return fmt.Sprintf("the scheduler's last pass began %s ago: it is waiting, on Ray perhaps (mvp's log says more)", age)
	}
	return fmt.Sprintf("the scheduler's last pass began %s ago: it is waiting, %s (mvp's log says more)", age, h.WaitingOn)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	body, _ := s.health()
	writeJSON(w, http.StatusOK, body)
	return nil
}

// HealthComponents are the parts of mvp /healthz judges, each degraded with a sentence (ray_error for ray) under
// its name; the metric mvp_health_degraded has one series per component.
var HealthComponents = []string{"ray", "scheduler", "database", "shared_root", "ray_logs"}

// RayLogsBusyAfter is how long Ray's state API may refuse the scheduler's reads of ended jobs' logs as busy before
// /healthz is degraded with a ray_logs sentence (a refusal of moments ago, many readers at once, passes by itself).
const RayLogsBusyAfter = time.Minute

// Degraded reports, for each of HealthComponents, whether /healthz would say it is degraded now (for the metrics).
func (s *Server) Degraded() map[string]bool {
	_, degraded := s.health()
	return degraded
}

// health is /healthz's answer, and which components it finds degraded.
func (s *Server) health() (map[string]any, map[string]bool) {
	body := map[string]any{"status": "ok"}
	degraded := map[string]bool{}
	defer func() {
		for _, c := range HealthComponents {
			if c != "ray" {
				degraded[c] = body[c] != nil
			}
		}
	}()
	var dbErr error
	if s.Database != nil {
		dbErr = s.Database()
	}
	if s.Health != nil {
		h := s.Health()
		body["ray"] = h
		if !h.RayOK && !h.LastTick.IsZero() {
			body["status"] = "degraded"
			degraded["ray"] = true
		}
		if h.LastTick.IsZero() {
			body["status"], body["scheduler"] = "degraded", NotLookedYet
			if age := s.Clock.Now().Sub(s.Started); !s.Started.IsZero() && s.StaleTick > 0 && age > s.StaleTick {
				doing := "(the dashboard at dev.yaml's address, the GCS the probe reads)"
				if h.WaitingOn != "" {
					doing = "(" + h.WaitingOn + ")"
				}
				body["scheduler"] = fmt.Sprintf("mvp has not looked at Ray yet: its first look at Ray began %s ago "+
					"and Ray has not answered it %s; mvp's log says more", age.Round(time.Second), doing)
			}
		}
		if since := h.RayLogsBusySince; since != nil && h.RayOK {
			if d := s.Clock.Now().Sub(*since); d >= RayLogsBusyAfter {
				body["status"] = "degraded"
				body["ray_logs"] = fmt.Sprintf("Ray's state API has refused mvp's reads of ended jobs' logs as busy for "+
					"%s: its limit of requests in progress (RAY_STATE_SERVER_MAX_HTTP_REQUEST on the head, 100 unless "+
					"set) is taken, often by log streams of other clients whose readers left (Ray 2.60 frees such a "+
					"place only when the log grows again). Ended jobs' logs are not kept meanwhile, so those jobs stay "+
					"in Ray; nothing is lost while Ray keeps them. Restart Ray's dashboard (the head) to free the "+
					"places, or raise the limit on the head", d.Round(time.Second))
			}
		}
		// While Ray is down, or the database takes no writes, the loop backs off (fewer passes), and ray_error or
		// database already says why.
		if stuck := s.passWaits(h); stuck != "" && dbErr == nil {
			body["status"] = "degraded"
			body["scheduler"] = stuck
		}
	}
	if dbErr != nil {
		body["status"] = "degraded"
		body["database"] = dbErr.Error()
	}
	if s.SharedRoot != nil {
		if err := s.SharedRoot(); err != nil {
			body["status"] = "degraded"
			body["shared_root"] = err.Error()
		}
	}
	return body, degraded
}

// metrics serves the Prometheus exposition, when the metrics are on.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if !s.MetricsPublic {
		// It counts every user's tasks and names the nodes: the operator's, not a named user's.
		if err := operatorOnly(r); err != nil {
			return err
		}
	}
	if s.Metrics == nil {
		return mvp.Errorf(mvp.CodeNotFound, "", "metrics are off; set v2.metrics.enabled: true in dev.yaml")
	}
	s.Metrics.ServeHTTP(w, r)
	return nil
}

// What readBody's callers take.
const (
	yamlOrJSON = "application/yaml or application/json"
	jsonOnly   = "application/json"
)

// checkContentType refuses (415) a request whose Content-Type is not one that send names; none is taken.
func checkContentType(r *http.Request, send string) error {
	// A body is taken as it is sent: a compressed one read as the jobspec was refused as "not valid UTF-8".
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return mvp.Errorf(mvp.CodeUnsupported, "", "Content-Encoding %q is not accepted: send the body uncompressed", clip(enc))
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return mvp.Errorf(mvp.CodeUnsupported, "", "Content-Type %q cannot be parsed; send %s", ct, send)
	}
	ok := mt == "application/json" || mt == "text/plain"
	if send != jsonOnly {
		ok = ok || mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml"
	}
	if !ok {
		return mvp.Errorf(mvp.CodeUnsupported, "", "Content-Type %q is not accepted; send %s", mt, send)
	}
	return nil
}

// readBody reads a request's body; send names the media types the endpoint takes, for the 415 of another
// Content-Type ("application/yaml or application/json" for a jobspec, "application/json" for a JSON-only body),
// and want what the body holds, for the 400 of an empty one ("a YAML or JSON jobspec").
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, send, want string) ([]byte, error) {
	if err := checkContentType(r, send); err != nil {
		return nil, err
	}
	body, err := s.readAll(w, r)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, mvp.Errorf(mvp.CodeInvalid, "", "the body is empty; send %s", want)
	}
	if !utf8.Valid(body) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "", "the body is not valid UTF-8")
	}
	if strings.ContainsRune(string(body), 0) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "", "the body contains a NUL byte")
	}
	return body, nil
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, yamlOrJSON, "a YAML or JSON jobspec")
	if err != nil {
		return err
	}
	t, err := s.Prepare(body)
	if err != nil {
		return err
	}
	return s.admit(w, r, t, dry)
}

// admit checks a prepared task against the store (its dependencies, the task it resumes from), then answers a dry
// run or stores it QUEUED and answers 201.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, t *mvp.Task, dry bool) error {
	now := s.Clock.Now().UTC()
	t.State, t.CreatedAt, t.UpdatedAt = mvp.StateQueued, now, now
	t.ID = NewTaskID(t.Workload, now, 0)
	if err := s.checkUser(r.Context(), t, nil); err != nil {
		return err
	}
	deps, err := s.checkNames(r.Context(), t, nil)
	if err != nil {
		return err
	}
	if dry {
		return s.dryRun(w, r, t, deps)
	}
	if err := refuseFailedAfterOK(t, deps); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if i > 0 {
			t.ID = NewTaskID(t.Workload, now, i) // a fresh id: nothing can depend on it
		}
		err = s.Store.CreateTask(r.Context(), t)
		if !errors.Is(err, mvp.ErrConflict) || i >= 16 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	s.crash("api_after_insert")
	s.Logger.Info("task submitted", "task_id", t.ID, "owner", t.Owner, "workload", t.Workload, "nnodes", t.NNodes,
		"n_gpus_per_node", t.GPUsPerNode, "priority", t.Priority)
	mvp.ObserverOr(s.Observer).TaskSubmitted(t.Workload)
	if s.Wake != nil {
		s.Wake()
	}
	w.Header().Set("Location", "/api/v2/tasks/"+t.ID)
	writeJSON(w, http.StatusCreated, s.created(r.Context(), t))
	return nil
}

// Created is the answer to a submit or a resubmit: the new task, and a warning when it cannot start on the
// cluster as it is (it is queued all the same: nodes may join) or resumes from a folder with no checkpoint.
type Created struct {
	*mvp.Task
	Warning string `json:"warning,omitempty"`
}

func (s *Server) created(ctx context.Context, t *mvp.Task) any {
	if w := s.warning(ctx, t); w != "" {
		return Created{Task: t, Warning: w}
	}
	return t
}

// warning is what a submit's answer warns of (the task is taken all the same): a gang that cannot start on the
// cluster as the scheduler last saw it, and a resume from a folder with no checkpoint; "" for none.
func (s *Server) warning(ctx context.Context, t *mvp.Task) string {
	var ws []string
	if s.NeverFits != nil {
		if why, never := s.NeverFits(t); never {
			if detail, ok := strings.CutPrefix(why, "can never fit on this cluster: "); ok {
				ws = append(ws, fmt.Sprintf("queued, but it cannot start on the cluster as it is now: %s. It "+
					"starts if such nodes join; mvp cancel %s drops it", detail, t.ID))
			} else {
				ws = append(ws, fmt.Sprintf("queued, but it cannot start on the nodes alive now: %s; mvp cancel %s "+
					"drops it", why, t.ID))
			}
		}
	}
	if w := s.resumeWarning(ctx, t); w != "" {
		ws = append(ws, w)
	}
	return strings.Join(ws, ". Also, ")
}

// checkNames checks what a task names as its caller may: its dependencies (whose states it returns), the task it
// resumes from and its secrets must exist and be the caller's. replaces (may be nil) is a task canceled as t is
// stored (a schedule's overlap replace): see checkResumeFrom.
func (s *Server) checkNames(ctx context.Context, t, replaces *mvp.Task) (map[string]mvp.State, error) {
	deps, err := s.checkDependencies(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := s.checkResumeFrom(ctx, t, replaces); err != nil {
		return nil, err
	}
	if err := s.checkSecrets(ctx, t); err != nil {
		return nil, err
	}
	return deps, nil
}

// AdmitScheduled checks a task a schedule is about to queue as a submission of its owner (t.Owner) is checked:
// the owner must still be a configured user (or the operator), the owner's max_priority and max_queued apply, and the dependencies, resume_from and secrets it names must
// still be the owner's (a secret's name can change hands after the schedule was made). replaces, when not nil, is
// the previous task an overlap-replace run cancels as it stores t: while it waits it leaves the owner's waiting
// tasks as t joins them, so it is not counted against max_queued, nor as a writer of the checkpoint folder t
// resumes from (it has no run; the transaction that stores t cancels it before it checks the folder's writers).
func (s *Server) AdmitScheduled(ctx context.Context, t, replaces *mvp.Task) error {
	c := mvp.OwnerCaller(t.Owner)
	if !c.Operator && s.user(c) == nil {
		// Without the user there are no limits to apply, and nobody but the operator sees the tasks.
		return mvp.Errorf(mvp.CodeForbidden, "owner", "the schedule's owner %q is no longer a user in v2.auth.users; "+
			"the operator can delete the schedule, or add the user back", t.Owner)
	}
	ctx = mvp.WithCaller(ctx, c)
	if !c.Operator {
		// A run that makes no task says why in last_outcome, which the operator reads too (mvp schedule list shows
		// everyone's): a missing secret is named as the user's, with --owner USER to store it, which either may give.
		ctx = context.WithValue(ctx, requesterKey{}, mvp.Caller{Operator: true})
	}
	if err := s.checkUser(ctx, t, replaces); err != nil {
		return err
	}
	deps, err := s.checkNames(ctx, t, replaces)
	if err != nil {
		return err
	}
	return refuseFailedAfterOK(t, deps)
}

// refuseFailedAfterOK refuses (409) a task whose after_ok names a task that already ended FAILED or CANCELED: it
// could never run, and the scheduler would cancel it at its first look (a dry run still answers with the verdict
// dependency_failed). deps are the dependencies' states as checkDependencies read them.
func refuseFailedAfterOK(t *mvp.Task, deps map[string]mvp.State) error {
	i := scheduler.FailedAfterOK(t, deps)
	if i < 0 {
		return nil
	}
	id := t.AfterOK[i]
	return mvp.Errorf(mvp.CodeConflict, fmt.Sprintf("after_ok[%d]", i), "task %s already ended %s, and after_ok runs "+
		"this task only after it succeeds, so it could never run; name it in after_any to run once it has ended "+
		"whatever its outcome, or resubmit %s (mvp resubmit) and depend on the new task", id, deps[id], id)
}

// checkUser makes the caller the task's owner and applies their limits: a priority above max_priority is refused
// (refused rather than lowered, so that nobody's task silently runs at a priority they did not ask for; a jobspec
// that names none gets the default, lowered to max_priority), a gang larger than max_gpus is refused (it could
// never start), and a submit past max_queued waiting tasks is refused with 429 (not counting replaces, a waiting
// task of the owner's that is canceled as t is stored; may be nil).
func (s *Server) checkUser(ctx context.Context, t, replaces *mvp.Task) error {
	c := mvp.CallerOf(ctx)
	t.Owner = c.Name
	if err := s.checkCaps(ctx, t); err != nil {
		return err
	}
	u := s.user(c)
	if u != nil && u.MaxQueued > 0 {
		t.MaxWaiting = u.MaxQueued // counted again where the task is inserted: this read answers early, not for sure
		n, err := s.Store.CountWaiting(ctx, u.Name)
		if err != nil {
			return err
		}
		if replaces != nil && replaces.State.Waiting() && mvp.OwnerName(replaces.Owner) == u.Name {
			n--
		}
		if n >= u.MaxQueued {
			return mvp.TooManyWaiting(u.Name, n, u.MaxQueued)
		}
	}
	return nil
}

// checkCaps applies the caller's caps to a prepared task: a priority above max_priority is refused, a jobspec that
// names no priority gets the default lowered to it; a gang larger than max_gpus is refused.
func (s *Server) checkCaps(ctx context.Context, t *mvp.Task) error {
	u := s.user(mvp.CallerOf(ctx))
	if u == nil {
		return nil
	}
	if gang := t.NNodes * t.GPUsPerNode; u.MaxGPUs > 0 && gang > u.MaxGPUs {
		// It would wait for ever with "quota": its own gang passes the cap with nothing else of the user's live.
		field := "n_gpus_per_node"
		if t.GPUsPerNode <= u.MaxGPUs {
			field = "nnodes" // each node's share is within the cap: the node count is what to lower
		}
		return mvp.Errorf(mvp.CodeInvalid, field, "this task's gang takes %d GPUs (nnodes %d × "+
			"n_gpus_per_node %d), more than %s's max_gpus %d allows at once: it could never start; ask for %s or "+
			"fewer, or ask the operator for a higher max_gpus", gang, t.NNodes, t.GPUsPerNode, u.Name, u.MaxGPUs, gpuCount(u.MaxGPUs))
	}
	if t.Priority <= u.MaxPriority {
		return nil
	}
	if !t.PriorityDefaulted {
		return mvp.Errorf(mvp.CodeInvalid, "priority", "priority %d is above %s's max_priority %d; ask for %d or less",
			t.Priority, u.Name, u.MaxPriority, u.MaxPriority)
	}
	t.Priority = u.MaxPriority
	return lowerSpecPriority(t)
}

// gpuCount is "1 GPU" or "n GPUs".
func gpuCount(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// lowerSpecPriority writes t.Priority into the effective spec of a task prepared from a jobspec (a Ray-door task's
// is Ray's request, which has no priority).
func lowerSpecPriority(t *mvp.Task) error {
	if info, ok := t.Workload.Info(); ok && info.RayDoor {
		return nil
	}
	return editSpec(t, func(spec *jobspec.Spec) { spec.Priority = &t.Priority })
}

// editSpec changes t's effective spec (what its Ray job is built from) by edit.
func editSpec(t *mvp.Task, edit func(*jobspec.Spec)) error {
	var spec jobspec.Spec
	if err := json.Unmarshal(t.SpecJSON, &spec); err != nil {
		return fmt.Errorf("decode the effective spec: %w", err)
	}
	edit(&spec)
	b, err := json.Marshal(&spec)
	if err != nil {
		return fmt.Errorf("encode the effective spec: %w", err)
	}
	t.SpecJSON = b
	return nil
}

// NewTaskID makes mvp2-<workload>-<YYYYMMDD>-<HHMMSS>-<4 hex>. The 4 hex digits count up in this process from a
// random start (idSeq), so that the ids one process makes within a second do not collide (up to 65,536 of them)
// and follow one another: a new task's id, and its events', then go at the end of their indexes instead of at a
// random place among that second's (random digits collided about once in 25 submissions at 5,000 a second, each
// costing another insert, and scattered each commit's rows over a dozen more pages: BENCHMARKS.md, "Task ids
// that follow one another"). After many collisions in one second (another process's ids of that second, say)
// the part grows to 8 random hex digits.
func NewTaskID(w mvp.Workload, now time.Time, try int) string {
	stamp := now.UTC().Format("20060102-150405")
	if try >= 8 {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return fmt.Sprintf("mvp2-%s-%s-%s", w, stamp, hex.EncodeToString(b))
	}
	return fmt.Sprintf("mvp2-%s-%s-%04x", w, stamp, uint16(idSeq.Add(1)))
}

// idSeq counts the task ids this process has made, from a random start so that a restarted mvp is unlikely to
// make the ids it made before it stopped in the same second.
var idSeq = func() *atomic.Uint32 {
	var b [2]byte
	_, _ = rand.Read(b[:])
	var n atomic.Uint32
	n.Store(uint32(b[0])<<8 | uint32(b[1]))
	return &n
}()

// Verdicts of a dry run.
const (
	VerdictFitsNow    = "fits_now"
	VerdictWaits      = "waits_for_resources"
	VerdictNeverFits  = "never_fits"
	VerdictRayUnknown = "cluster_unreadable"
	// VerdictWaitsDeps: the task would wait for its dependencies (after_ok, after_any) to end.
	VerdictWaitsDeps = "waits_for_dependencies"
	// VerdictDepFailed: an after_ok dependency already failed; the task would be canceled at once.
	VerdictDepFailed = "dependency_failed"
)

func (s *Server) dryRun(w http.ResponseWriter, r *http.Request, t *mvp.Task, deps map[string]mvp.State) error {
	payload, err := s.Build(t, 1)
	if err != nil {
		return err
	}
	verdict, reason := VerdictRayUnknown, ""
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		return err
	}
	if snap.Cluster == nil {
		reason = "the cluster could not be read"
		if jd := (*scheduler.ErrJobServerDown)(nil); errors.As(snap.ClusterErr, &jd) {
			reason = jd.Error() // the cluster reads; Ray's job server, where the task would go, does not answer
		} else if snap.ClusterErr != nil {
			reason += ": " + snap.ClusterErr.Error()
		}
	} else {
		snap.Queue = append(snap.Queue, t)
		if snap.Deps == nil {
			snap.Deps = map[string]mvp.State{}
		}
		for id, st := range deps {
			snap.Deps[id] = st
		}
		verdict, reason = VerdictWaits, "waiting behind tasks already queued"
		for _, a := range scheduler.Decide(s.Clock.Now(), snap, s.Policy) {
			switch a := a.(type) {
			case scheduler.Submit:
				if a.Task == t {
					verdict, reason = VerdictFitsNow, fmt.Sprintf("would be submitted now on node(s) %s", strings.Join(a.Nodes, ", "))
				}
			case *scheduler.Wait:
				if a.Task == t {
					reason = a.Reason
					if a.Never() {
						verdict = VerdictNeverFits
					}
					if strings.HasPrefix(a.Reason, scheduler.DependencyReasonPrefix) {
						verdict = VerdictWaitsDeps
					}
				}
			case scheduler.DependencyFailed:
				if a.Task == t {
					verdict, reason = VerdictDepFailed, a.Reason
				}
			}
		}
	}
	held := false
	if s.SharedRoot != nil {
		// The loop writes a task's folder before it sends it to Ray, and holds every task it would start while
		// shared_root cannot be written (as GET /api/v2/queue says, HoldForSharedRoot): this one would not be
		// submitted now, and no start can be estimated while the tasks ahead of it are held too.
		if why := s.SharedRoot(); why != nil {
			held = true
			if verdict == VerdictFitsNow {
				verdict, reason = VerdictWaits, scheduler.SharedRootHold(why)
			}
		}
	}
	admission := map[string]any{"verdict": verdict, "reason": reason}
	if snap.Cluster != nil && !held && verdict != VerdictNeverFits && verdict != VerdictDepFailed {
		v := scheduler.ExplainFor(s.Clock.Now(), snap, s.Policy, func(x *mvp.Task) bool { return x == t })
		est, e := estStart(v, t)
		admission["est_start"] = est
		if e != nil && e.ExpiresBeforeStart {
			// The user can still change it: submitted as it is, the task would end MAX_QUEUED_EXCEEDED first.
			admission["queued_until"], admission["expires_before_start"] = e.QueuedUntil, true
			admission["reason"] = reason + scheduler.ExpiryNote(*est, *e.QueuedUntil)
		}
	}
	answer := map[string]any{
		"dry_run":        true,
		"effective_spec": t.SpecJSON,
		"ray_submission": payload,
		"admission":      admission,
	}
	if w := s.resumeWarning(r.Context(), t); w != "" {
		answer["warning"] = w
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}

// estStart is when the queue's forecast v starts t: the view's time when the next pass would start it, its
// entry's estimate otherwise (nil: unknown); and t's entry, if it waits.
func estStart(v scheduler.QueueView, t *mvp.Task) (*time.Time, *scheduler.QueueEntry) {
	if slices.Contains(v.Starting, t.ID) {
		return &v.At, nil
	}
	for i := range v.Queue {
		if e := &v.Queue[i]; e.TaskID == t.ID {
			return e.EstStart, e
		}
	}
	return nil, nil
}

// queue answers the whole picture of the queue as the policy sees it now: per-node free GPUs, the reservation and
// every waiting task in order with its position, reason code and sentence, and estimated start.
func (s *Server) queue(w http.ResponseWriter, r *http.Request) error {
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		return err
	}
	c := mvp.CallerOf(r.Context())
	var v scheduler.QueueView
	if c.Operator {
		v = scheduler.Explain(s.Clock.Now(), snap, s.Policy)
	} else { // the forecast runs until the user's own tasks are placed: the others' estimates are not shown
		v = ownView(scheduler.ExplainFor(s.Clock.Now(), snap, s.Policy, func(t *mvp.Task) bool { return c.Owns(t.Owner) }), snap, c)
	}
	if s.SharedRoot != nil {
		if why := s.SharedRoot(); why != nil {
			v = scheduler.HoldForSharedRoot(v, snap, why)
		}
	}
	answer := struct {
		scheduler.QueueView
		ClusterError string `json:"cluster_error,omitempty"`
		// Scheduler says that the scheduler's pass under way waits (as /healthz's scheduler does): the tasks
		// listed as starting start when it ends.
		Scheduler string `json:"scheduler,omitempty"`
	}{QueueView: v}
	if snap.ClusterErr != nil {
		answer.ClusterError = snap.ClusterErr.Error()
	}
	if s.Health != nil {
		answer.Scheduler = s.passWaits(s.Health())
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}

// ownView keeps, of the queue's picture, what a user may see: their own tasks (with their positions and ranks
// among everyone's), the nodes, and the reservation only when they hold it.
func ownView(v scheduler.QueueView, snap scheduler.Snapshot, c mvp.Caller) scheduler.QueueView {
	owner := map[string]string{}
	for _, t := range snap.Queue {
		owner[t.ID] = t.Owner
	}
	mine := func(id string) bool { return c.Owns(owner[id]) }
	q := v.Queue[:0:0]
	for _, e := range v.Queue {
		if c.Owns(e.Owner) {
			if e.YieldsTo != "" && !mine(e.YieldsTo) {
				e.YieldsTo = "(another user's task)"
			}
			q = append(q, e)
		}
	}
	v.Queue = q
	st := []string{}
	for _, id := range v.Starting {
		if mine(id) {
			st = append(st, id)
		}
	}
	v.Starting = st
	rs := []scheduler.Reservation{}
	for _, r := range v.Reservations {
		if mine(r.TaskID) {
			rs = append(rs, r)
		}
	}
	v.Reservations = rs
	return v
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	t.FillTimeLeft(s.Clock.Now())
	s.SayWhyWaiting([]*mvp.Task{t})
	if c := mvp.CallerOf(r.Context()); !c.Operator && len(t.Resubmits) == len(t.ResubmitOwners) {
		var own []string
		for k, id := range t.Resubmits {
			if c.Owns(t.ResubmitOwners[k]) {
				own = append(own, id) // another's resubmit of this task (an operator's, from before) is not shown
			}
		}
		t.Resubmits = own
	}
	writeJSON(w, http.StatusOK, TaskDetail{Task: t, JobSpec: t.JobSpecYAML, EffectiveSpec: t.SpecJSON})
	return nil
}

// SayWhyWaiting gives each waiting task of tasks the reason it waits now, and each task with a Ray job the outage
// of Ray (RayOutage) while Ray cannot be read. While the scheduler cannot read Ray, its
// stored reason is the one the last pass that could decide wrote ("waiting for GPUs…", say), and nothing is
// admitted until Ray can be read again, as GET /api/v2/queue says with cluster_unknown. The stored reason is
// untouched (writing every waiting task's at each outage would cost a write per task); it is shown again once Ray
// is back.
//
// A QUEUED task no pass has decided on yet has no stored reason: it is given scheduler.NextLook, and why that
// look is late when the pass under way waits (passWaits).
func (s *Server) SayWhyWaiting(tasks []*mvp.Task) {
	var h scheduler.Health
	if s.Health != nil {
		h = s.Health()
	}
	if s.Health == nil || h.RayOK || h.LastTick.IsZero() {
		why := scheduler.NextLook
		if stuck := s.passWaits(h); stuck != "" {
			why += "; " + stuck
		}
		for _, t := range tasks {
			if t.State == mvp.StateQueued && t.PendingReason == "" {
				t.PendingReason = why
			}
		}
		return
	}
	why := "Ray cannot be read, so nothing is admitted until it can"
	if h.RayError != "" {
		why += ": " + h.RayError
	}
	if h.RayDownSince != nil {
		why += " (since " + h.RayDownSince.UTC().Format(time.RFC3339) + ")"
	}
	outage := ""
	if h.RayError != "" {
		outage += "; " + h.RayError
	}
	if h.RayDownSince != nil {
		outage += " (since " + h.RayDownSince.UTC().Format(time.RFC3339) + ")"
	}
	live := "Ray cannot be read, so this state is what Ray last said: mvp follows the run again once Ray answers " +
		"(a run that ended meanwhile is concluded then)" + outage
	sending := "Ray cannot be read, so this attempt's submission waits: it is sent, or looked up in Ray if it was " +
		"sent, once Ray answers" + outage
	for _, t := range tasks {
		switch {
		case t.State.Waiting():
			t.PendingReason = why
		case t.State == mvp.StateSubmitting:
			t.RayOutage = sending
		case t.State.Active():
			t.RayOutage = live
		}
	}
}

// TaskDetail is the answer to GET of one task: the task, and what was submitted (the list leaves these out).
type TaskDetail struct {
	*mvp.Task
	// JobSpec is the body as submitted; EffectiveSpec the spec with the cluster's defaults applied.
	JobSpec       string          `json:"jobspec"`
	EffectiveSpec json.RawMessage `json:"effective_spec,omitempty"`
}

func (s *Server) task(r *http.Request) (*mvp.Task, error) {
	id := r.PathValue("task_id")
	if !taskfs.TaskIDPattern.MatchString(id) {
		// A Ray door job is known to its Ray user by its submission id: name the task id (as the web page leads
		// to the task), to a caller who may see the task.
		if t, err := s.Store.TaskBySubmissionID(r.Context(), id); err == nil && mvp.CallerOf(r.Context()).Owns(t.Owner) {
			return nil, mvp.Errorf(mvp.CodeNotFound, "task_id", "no task %q: that is the Ray submission id of a "+
				"job sent through the Ray door, whose task id is %s: use that", clip(id), t.ID)
		}
		// <task_id>--aNN, as every driver log's first line and Ray's dashboard name an attempt's job.
		if task, no, ok := mvp.ParseSubmissionID(id); ok {
			if t, err := s.Store.GetTask(r.Context(), task); err == nil && mvp.CallerOf(r.Context()).Owns(t.Owner) {
				return nil, mvp.Errorf(mvp.CodeNotFound, "task_id", "no task %q: that is the Ray submission id of "+
					"attempt %d of task %s: use %s (its log: mvp logs %s --attempt %d)", clip(id), no, t.ID, t.ID, t.ID, no)
			}
		}
		return nil, mvp.Errorf(mvp.CodeNotFound, "task_id", "no task %q (task ids look like mvp2-ppo-20251223-143201-7f3a)", clip(id))
	}
	t, err := s.Store.GetTask(r.Context(), id)
	if errors.Is(err, mvp.ErrNotFound) {
		return nil, mvp.Errorf(mvp.CodeNotFound, "task_id", "no task %q", id)
	}
	if err == nil && !mvp.CallerOf(r.Context()).Owns(t.Owner) {
		return nil, notYours("", "task", id)
	}
	return t, err
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := mvp.TaskFilter{State: mvp.State(q.Get("state")), Workload: mvp.Workload(q.Get("workload")), Cursor: q.Get("cursor")}
	if f.State != "" && !f.State.Valid() {
		return mvp.Errorf(mvp.CodeInvalid, "state", "unknown state %q; one of %v", clip(string(f.State)), mvp.States)
	}
	if f.Workload != "" && !f.Workload.Valid() {
		return mvp.Errorf(mvp.CodeInvalid, "workload", "unknown workload %q; one of %s", clip(string(f.Workload)), mvp.WorkloadNames())
	}
	if c := mvp.CallerOf(r.Context()); !c.Operator {
		if o := q.Get("owner"); o != "" && o != c.Name {
			return mvp.Errorf(mvp.CodeForbidden, "owner", "owner=%s: a user lists only their own tasks (drop owner=, or "+
				"give owner=%s)", clip(o), c.Name)
		}
		f.Owner = c.Name // a user lists their own tasks
	} else if o := q.Get("owner"); o != "" {
		f.Owner = o
	}
	var err error
	if f.Limit, err = intParam(r, "limit", 50, 1, 500); err != nil {
		return err
	}
	tasks, next, err := s.Store.ListTasks(r.Context(), f)
	if err != nil {
		return err
	}
	if len(tasks) == 0 && f.Cursor == "" && f.Owner != "" {
		if err := s.anOwner(r.Context(), f.Owner); err != nil {
			return err
		}
	}
	if tasks == nil {
		tasks = []*mvp.Task{}
	}
	s.SayWhyWaiting(tasks)
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks, "next_cursor": next})
	return nil
}

// anOwner refuses a listing's owner= that names no one: not the operator, no user of v2.auth.users, and the owner
// of no task kept (a user since removed from the config still owns theirs). A typo listed nothing, as if the user
// had no tasks.
func (s *Server) anOwner(ctx context.Context, o string) error {
	if o == mvp.Operator || s.user(mvp.Caller{Name: o}) != nil {
		return nil
	}
	owned, _, err := s.Store.ListTasks(ctx, mvp.TaskFilter{Owner: o, Limit: 1})
	if err != nil || len(owned) > 0 {
		return err
	}
	names := []string{mvp.Operator}
	for _, u := range s.Users {
		names = append(names, u.Name)
	}
	return mvp.Errorf(mvp.CodeInvalid, "owner", "owner=%s is no user of v2.auth.users, nor the operator, and owns no "+
		"task: the users are %s (mvp users)", clip(o), strings.Join(names, ", "))
}

func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	evs, next, err := s.Store.Events(r.Context(), t.ID, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []*mvp.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs, "next_cursor": next})
	return nil
}

// cancelTask cancels the task named in the path (see Cancel).
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	if t, err = s.cancel(r.Context(), t, "api"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// Cancel cancels a task as POST /api/v2/tasks/{task_id}/cancel does, recording by (who asked) in its
// CANCEL_REQUESTED event. A task that already ended is a conflict.
func (s *Server) Cancel(ctx context.Context, taskID, by string) (*mvp.Task, error) {
	t, err := s.Store.GetTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return s.cancel(ctx, t, by)
}

// cancel ends a waiting task at once; for a task with a Ray job it records the cancel first (so the scheduler
// never revives it) and then stops the job. The attempt ends STOPPED when Ray says so.
func (s *Server) cancel(ctx context.Context, t *mvp.Task, by string) (*mvp.Task, error) {
	var err error
	for i := 0; ; i++ {
		if t.State.Terminal() {
			return nil, mvp.Errorf(mvp.CodeConflict, "state", "task %s is already %s; only waiting or running tasks can be canceled", t.ID, t.State)
		}
		err = s.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: t.State, To: mvp.StateCanceled,
			At: s.Clock.Now(), EventType: mvp.EventCancelRequested, EventPayload: map[string]any{"by": by}})
		if !errors.Is(err, mvp.ErrConflict) || i >= 5 {
			break
		}
		if t, err = s.Store.GetTask(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	// by is the way in (api, web, ray door, a schedule); the caller, when a request made it, is who.
	args := []any{"task_id", t.ID, "by", by, "was", t.State}
	if c := mvp.CallerOf(ctx); c.Name != "" {
		args = append(args, "caller", c.Name)
	}
	s.Logger.Info("task canceled", args...)
	s.crash("cancel_before_stop")
	if t.LatestAttemptNo > 0 && t.State.Active() {
		sid := mvp.SubmissionID(t.ID, t.LatestAttemptNo)
		if scheduler.StopTooSoon(s.Build, t, t.Latest(), s.Clock.Now()) {
			// A shell that may not have started its driver yet: the scheduler stops the job once it has.
			s.Logger.Info("stop of a job just started left to the scheduler", "task_id", t.ID, "submission_id", sid)
		} else if err := s.Ray.StopJob(ctx, sid); err != nil && !errors.Is(err, mvp.ErrJobNotFound) {
			s.Logger.Warn("stop job on cancel; the scheduler will retry", "task_id", t.ID, "err", err)
		}
	}
	if s.Wake != nil {
		s.Wake()
	}
	return s.Store.GetTask(ctx, t.ID)
}

// MaxFollowsPerUser is how many logs one named user may follow at once (GET …/logs?follow=true): each follow
// holds a goroutine that reads the database every poll, and a stream from Ray's node agent while its attempt runs,
// for as long as its connection stays open. One more is refused (429); the operator's follows are not counted.
const MaxFollowsPerUser = 32

// LogEndTrailer is the trailer that says why a followed log's stream ended: LogEndEnded (the attempt ended) or
// LogEndStopping (the server is stopping; follow again once it is back).
const (
	LogEndTrailer  = "X-Mvp-Log-End"
	LogEndEnded    = "ended"
	LogEndStopping = "server-stopping"
	// LogEndCut ends a log (followed or not) of which only part could be sent: the rest could not be read, or is
	// lost (an ended attempt whose Ray job is gone, of which only the copy made while it ran is kept).
	LogEndCut = "cut-short"
	// LogWhyTrailer says, in a sentence, why a log ended LogEndCut.
	LogWhyTrailer = "X-Mvp-Log-Why"
	// LogAttemptHeader names the attempt whose log the answer holds: a follower of the latest attempt learns which
	// one it followed (its successor may already be submitted when the stream ends).
	LogAttemptHeader = "X-Mvp-Log-Attempt"
)

// beginFollow counts a follow of a named user's, refusing one past MaxFollowsPerUser (CodeTooMany); done ends it.
// The operator's follows (the web page's among them) are not counted.
func (s *Server) beginFollow(c mvp.Caller) (done func(), err error) {
	if c.Operator {
		return func() {}, nil
	}
	s.followsMu.Lock()
	defer s.followsMu.Unlock()
	if s.follows[c.Name] >= MaxFollowsPerUser {
		return nil, mvp.Errorf(mvp.CodeTooMany, "follow", "%s follows %d logs already, as many as a user may at once; "+
			"end one (mvp logs -f) and follow again", c.Name, MaxFollowsPerUser)
	}
	if s.follows == nil {
		s.follows = map[string]int{}
	}
	s.follows[c.Name]++
	return func() {
		s.followsMu.Lock()
		defer s.followsMu.Unlock()
		if s.follows[c.Name]--; s.follows[c.Name] <= 0 {
			delete(s.follows, c.Name)
		}
	}, nil
}

// stopping returns the channel Shutdown closes.
func (s *Server) stopping() chan struct{} {
	s.stopOnce.Do(func() { s.stopped = make(chan struct{}) })
	return s.stopped
}

// Shutdown ends the log follows at once (each would otherwise hold the HTTP server's shutdown for its whole grace),
// each telling its client that the server is stopping. Register it with http.Server.RegisterOnShutdown.
func (s *Server) Shutdown() { s.closeOnce.Do(func() { close(s.stopping()) }) }

// taskLogs answers an attempt's driver log: the copy in the task folder once the attempt ended, Ray's live copy
// before. With follow=true it streams new lines until the attempt ends.
func (s *Server) taskLogs(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		return err
	}
	follow = follow && r.Method != http.MethodHead // a HEAD waits for nothing (see below)
	// offset: the log from that byte on (a follower that was cut off asks again from where it stopped).
	off, err := intParam(r, "offset", 0, 0, MaxLogOffset)
	if err != nil {
		return err
	}
	offset := int64(off)
	if follow {
		done, err := s.beginFollow(mvp.CallerOf(r.Context()))
		if err != nil {
			return err
		}
		defer done()
		s.Logger.Debug("log follow begins", "task_id", t.ID)
	}
	n := t.LatestAttemptNo
	if r.URL.Query().Has("attempt") {
		if n, err = intParam(r, "attempt", 0, 1, 999); err != nil {
			return err
		}
	} else if follow {
		// Following a task that has not started yet (`mvp logs -f` right after a submit): wait for its first
		// attempt, or its end without one (then the answer below says so).
		for t.LatestAttemptNo == 0 && !t.State.Terminal() {
			select {
			case <-r.Context().Done():
				return nil
			case <-s.stopping():
				w.Header().Set("Retry-After", "2") // mvp logs -f asks again once mvp is back
				return mvp.Errorf(mvp.CodeUnavailable, "", "the server is stopping (a restart?) and task %s has no "+
					"attempt yet: follow it again once the server is back", t.ID)
			case <-time.After(s.LogPoll):
			}
			if t, err = s.Store.GetTask(r.Context(), t.ID); err != nil {
				return err
			}
		}
		n = t.LatestAttemptNo
	}
	if n == 0 || n > t.LatestAttemptNo {
		if n == 0 && t.State.Terminal() {
			return mvp.Errorf(mvp.CodeNotFound, "attempt", "task %s ended %s before any attempt was sent to Ray: "+
				"there is no log (mvp events %s says why)", t.ID, t.State, t.ID)
		}
		if n == 0 {
			return mvp.Errorf(mvp.CodeNotFound, "attempt", "task %s has no attempt yet (it is %s): no log", t.ID, t.State)
		}
		return mvp.Errorf(mvp.CodeNotFound, "attempt", "task %s has no attempt %d (latest is %d)", t.ID, n, t.LatestAttemptNo)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Trailer", LogEndTrailer+", "+LogWhyTrailer)
	w.Header().Set(LogAttemptHeader, strconv.Itoa(n))
	if r.Method == http.MethodHead {
		// The headers alone: neither the log read (a copy from Ray) nor, with follow, a stream held open to the
		// attempt's end for a body that is thrown away.
		return nil
	}
	var sent int64 // bytes of this answer
	for {
		began := time.Now()
		cw := &errWriter{w: w}
		var wrote int64
		var done, streamed bool
		if follow {
			wrote, done, streamed, err = s.followLog(r.Context(), t.ID, n, offset+sent, flushWriter{cw, w})
		} else {
			wrote, done, err = s.copyLog(r.Context(), t.ID, n, offset+sent, cw)
		}
		if cw.err != nil {
			return nil // the client went away
		}
		if err != nil && sent == 0 && wrote == 0 && !errors.As(err, new(lostLogError)) {
			// Nothing was sent: the answer is an error, in the one JSON shape, without the log's headers set above
			// (a client took the attempt header and the declared trailer for an attempt's empty log).
			for _, h := range []string{"Content-Type", "X-Content-Type-Options", "Trailer", LogAttemptHeader} {
				w.Header().Del(h)
			}
			return err
		}
		if wrote > 0 {
			sent += wrote
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil && (!follow || done) {
			// Some of the log was sent, and the rest could not be read (Ray cut its copy short): the answer says
			// so, rather than end as if the log were whole. A follower of a running attempt reads on at its next
			// poll instead.
			s.Logger.Warn("log read cut short", "task_id", t.ID, "attempt_no", n, "offset", offset, "bytes_sent", sent, "err", err)
			w.Header().Set(LogEndTrailer, LogEndCut)
			w.Header().Set(LogWhyTrailer, mvp.Clip(strings.Join(strings.Fields(err.Error()), " "), 1000))
			return nil
		}
		if !follow {
			return nil
		}
		if done {
			w.Header().Set(LogEndTrailer, LogEndEnded)
			return nil
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-s.stopping():
			w.Header().Set(LogEndTrailer, LogEndStopping)
			return nil
		case <-time.After(s.followPoll(began, streamed)):
		}
	}
}

// followPoll is how long a follower waits before it reads an attempt's log again: a log slow to copy is copied
// less often; after a stream from Ray (followLog), which lasted as long as it lasted, a poll's interval.
func (s *Server) followPoll(began time.Time, streamed bool) time.Duration {
	if streamed {
		return s.LogPoll
	}
	return max(s.LogPoll, time.Since(began))
}

// flushWriter flushes the answer after every write, so that a follower sees each line as it comes.
type flushWriter struct {
	w io.Writer
	r http.ResponseWriter
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		if fl, ok := f.r.(http.Flusher); ok {
			fl.Flush()
		}
	}
	return n, err
}

// followLog writes attempt n's log from its byte skip on to w as it grows. While the attempt runs (its driver's
// node known, or RUNNING: Ray tells the node) it follows the log in one stream from Ray (mvp.LogFollower: the
// node's agent reads the file once and then only what is appended; a copy per poll made it read the whole file
// again at every poll, for every follower) until the attempt ends, then writes the rest as copyLog gives it. It
// returns the bytes written, done once the attempt ended and its log was written whole, and streamed when a
// stream ran (the caller polls again after one poll's interval). Otherwise, or when Ray gives no stream, it is
// one copyLog.
func (s *Server) followLog(ctx context.Context, id string, n int, skip int64, w io.Writer) (wrote int64, done, streamed bool, err error) {
	f, ok := s.Ray.(mvp.LogFollower)
	if !ok || s.NoLogStreams {
		wrote, done, err = s.copyLog(ctx, id, n, skip, w)
		return wrote, done, false, err
	}
	t, err := s.Store.GetTask(ctx, id)
	if err != nil {
		return 0, true, false, err
	}
	a := t.Attempt(n)
	if a == nil || a.RayStatus.Terminal() || a.DriverNodeID == "" && a.RayStatus != mvp.RayRunning {
		// Not running yet (without a driver node, until mvp saw it run: Ray has none to give either).
		wrote, done, err = s.copyLog(ctx, id, n, skip, w)
		return wrote, done, false, err
	}
	fctx, cancel := context.WithCancel(ctx)
	ended := make(chan bool, 1)
	go func() {
		ended <- s.awaitAttemptEnd(fctx, id, n)
		cancel()
	}()
	sw := &skipWriter{skip: skip, w: w}
	_, ferr := f.FollowJobLog(fctx, a.RaySubmissionID, a.DriverNodeID, s.LogPoll, sw)
	cancel()
	end := <-ended
	switch {
	case end:
		// The rest, from the kept copy once there, else the file on the driver's node (the stream may have
		// stopped short of the driver's last bytes).
		m, done, err := s.copyLog(ctx, id, n, skip+sw.written, w)
		return sw.written + m, done, true, err
	case ctx.Err() != nil:
		return sw.written, false, true, nil
	case ferr != nil && sw.written == 0 && sw.skip == skip && !errors.Is(ferr, context.Canceled):
		// No stream (the file is not on the node's agent, or the agent is gone): this time, a copy, which falls
		// back to the job server's.
		s.Logger.Debug("log follow: no stream from Ray; copying instead", "task_id", id, "attempt_no", n, "err", ferr)
		wrote, done, err = s.copyLog(ctx, id, n, skip, w)
		return wrote, done, false, err
	}
	if ferr != nil && !errors.Is(ferr, context.Canceled) {
		// Ray 2.60 cuts a stream after 300 s: routine, hence Info.
		s.Logger.Info("log follow: Ray's stream ended; following again", "task_id", id, "attempt_no", n,
			"bytes_sent", skip+sw.written, "err", ferr)
	}
	return sw.written, false, true, nil
}

// awaitAttemptEnd reports true once attempt n of task id has ended as the store holds it (read every LogPoll),
// false when ctx is done or the server stops first.
func (s *Server) awaitAttemptEnd(ctx context.Context, id string, n int) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.stopping():
			return false
		case <-time.After(s.LogPoll):
		}
		t, err := s.Store.GetTask(ctx, id)
		if err != nil {
			continue // read again at the next poll (ctx done ends it above)
		}
		if a := t.Attempt(n); a != nil && a.RayStatus.Terminal() {
			return true
		}
	}
}

// errWriter remembers the first error of the writer it wraps (the client's connection).
type errWriter struct {
	w   io.Writer
	err error
}

func (c *errWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil // an empty write would send the answer's status and headers, before an error is known
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// skipWriter drops the first skip bytes written to it and passes the rest on, counting them.
type skipWriter struct {
	skip, written int64
	w             io.Writer
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip >= int64(n) {
		s.skip -= int64(n)
		return n, nil
	}
	p = p[s.skip:]
	s.skip = 0
	m, err := s.w.Write(p)
	s.written += int64(m)
	if err != nil {
		return n - len(p) + m, err
	}
	return n, nil
}

// readLog returns the log of attempt n and whether the attempt has ended (no more lines will come).
func (s *Server) readLog(ctx context.Context, id string, n int) (string, bool, error) {
	var b strings.Builder
	_, ended, err := s.copyLog(ctx, id, n, 0, &b)
	return b.String(), ended, err
}

// copyLog writes the log of attempt n from its byte skip on to w, streamed (never held whole), and returns the
// bytes written and whether the attempt has ended (no more lines will come). A failure of Ray's copy after some
// bytes were written is returned with their count: the caller has sent them, and the rest is missing.
func (s *Server) copyLog(ctx context.Context, id string, n int, skip int64, w io.Writer) (int64, bool, error) {
	t, err := s.Store.GetTask(ctx, id)
	if err != nil {
		return 0, true, err
	}
	a := t.Attempt(n)
	if a == nil {
		return 0, true, mvp.Errorf(mvp.CodeNotFound, "attempt", "no attempt %d", n)
	}
	ended := a.RayStatus.Terminal()
	if ended && a.LogKept {
		// The folder holds the whole log only once it is kept; before, it may hold the running log's last copy.
		m, err := s.Files.CopyLog(id, n, skip, w)
		if err == nil {
			return m, true, nil
		}
		if m > 0 {
			// Cut short part way: copying again from elsewhere would write those bytes twice.
			return m, true, mvp.Errorf(mvp.CodeUnavailable, "", "the kept copy of the log was cut short: %v", err)
		}
	}
	// The file on the driver's node, byte for byte (the job server's copy fails on a byte that is not UTF-8).
	sw := &skipWriter{skip: skip, w: w}
	_, err = s.Ray.CopyJobLog(ctx, a.RaySubmissionID, a.DriverNodeID, sw)
	if err != nil {
		if sw.written > 0 {
			return sw.written, ended, mvp.Errorf(mvp.CodeUnavailable, "", "Ray's copy of the log was cut short: %v", err)
		}
		if m, ferr := s.Files.CopyLog(id, n, skip, w); ferr == nil {
			if ended && (m > 0 || skip > 0) && errors.Is(err, mvp.ErrJobNotFound) {
				// The copy made while it ran (log_kept is false): what the driver wrote after it went with the job,
				// also when the reader already has the whole copy and more (a follower of Ray's stream).
				return m, ended, lostLogError{fmt.Sprintf("attempt %d ended (%s) and Ray no longer has its job: this "+
					"is the copy mvp made while it ran (every v2.ray.log_copy_s); what its driver wrote after that "+
					"copy is lost", n, a.FailureKind)}
			}
			if ended && !errors.Is(err, mvp.ErrJobNotFound) {
				// Ray has the job but its log cannot be read now: the copy made while it ran is not the whole log
				// (served as whole, a follower ended without the run's last lines, often its traceback).
				return m, ended, mvp.Errorf(mvp.CodeUnavailable, "", "attempt %d ended, and Ray's log of it cannot be "+
					"read now (%v): this is the copy mvp made while it ran (every v2.ray.log_copy_s); ask again for the "+
					"rest", n, err)
			}
			return m, ended, nil
		} else if m > 0 {
			return m, ended, mvp.Errorf(mvp.CodeUnavailable, "", "Ray's log could not be read (%v), and the folder's copy "+
				"was cut short: %v", err, ferr)
		}
		if errors.Is(err, mvp.ErrJobNotFound) {
			if !ended && (t.State.Waiting() || t.State == mvp.StateSubmitting) {
				return 0, false, nil // not sent to Ray yet
			}
			if ended && !t.State.Terminal() {
				// Ended with no job in Ray (it failed before or as it was sent, or Ray lost it while PENDING) while
				// its task goes on: a log lost, as for a follower told so and following on to the next attempt.
				// (Taken for "not ended" by the task's state, a follow of it hung until the next attempt was sent,
				// then failed on a 404.)
				why := fmt.Sprintf("attempt %d ended (%s) with no log: Ray holds no job for it and mvp kept none", n, a.FailureKind)
				if a.Message != "" {
					why += ": " + a.Message
				}
				return 0, true, lostLogError{why}
			}
			if ended && a.Message != "" {
				// Ray holds no job for it (it failed before or as it was sent, or Ray lost it): its end says why.
				return 0, true, mvp.Errorf(mvp.CodeNotFound, "attempt", "no log is kept for attempt %d, and Ray "+
					"holds no job for it; it ended %s: %s", n, a.FailureKind, a.Message)
			}
			return 0, true, mvp.Errorf(mvp.CodeNotFound, "attempt", "no log is kept for attempt %d", n)
		}
		return 0, ended, mvp.Errorf(mvp.CodeUnavailable, "", "Ray's log could not be read: %v", err)
	}
	return sw.written, ended, nil
}

// lostLogError is copyLog's error after it wrote an ended attempt's running copy, the rest of whose log went with
// its Ray job: the logs API ends such an answer cut-short, saying this; to the Ray door it is raycompat.ErrLogLost
// (its logs answer gives the copy, its tail is dropped).
type lostLogError struct{ why string }

func (e lostLogError) Error() string { return e.why }

// Is makes a lost log raycompat.ErrLogLost, the door's word for it.
func (e lostLogError) Is(target error) bool { return target == raycompat.ErrLogLost }

// MaxLogOffset bounds a log request's offset (1 TiB: no driver log is longer).
const MaxLogOffset = 1 << 40

// boolParam reads a true/false query parameter: absent is false; given without a value (?dry_run, ?dry_run=) is
// refused, since it was meant as true and read as false (a dry run queued the task).
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" && !r.URL.Query().Has(name) {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, mvp.Errorf(mvp.CodeInvalid, name, "%s must be true or false, got %q: write %s=true or %s=false",
			name, clip(v), name, name)
	}
	return b, nil
}

func intParam(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" && !r.URL.Query().Has(name) {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, mvp.Errorf(mvp.CodeInvalid, name, "%s must be an integer from %d to %d, got %q", name, min, max, clip(v))
	}
	return n, nil
}

// readAll reads the request's body up to MaxBodyBytes: past that it is CodeTooLarge, and a body that breaks off
// is CodeInvalid.
func (s *Server) readAll(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, mvp.Errorf(mvp.CodeTooLarge, "", "the body is larger than %d bytes", s.MaxBodyBytes)
		}
		return nil, mvp.Errorf(mvp.CodeInvalid, "", "reading the body failed: %v", err)
	}
	return body, nil
}

// decodeJSON decodes body, one JSON value with only v's fields and nothing after it, into v.
func decodeJSON(body []byte, v any) error {
	if k := duplicateKey(body); k != "" {
		return fmt.Errorf("key %q is given twice", clip(k))
	}
	if mvp.LoneSurrogate(body) {
		return errLoneSurrogate
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return mvp.JSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value in the body")
	}
	return nil
}

// errLoneSurrogate is decodeJSON's refusal of a string that escapes half of a UTF-16 surrogate pair alone. It
// names no part of the value (a secret's).
var errLoneSurrogate = errors.New("a string " + mvp.LoneSurrogateWhy)

// duplicateKey returns a key given twice in one JSON object of body ("" when none, or when body is not JSON:
// decoding says so). Go's decoder keeps the last of them silently, as the jobspec's YAML does not. At the top level,
// where keys are a struct's fields, which Go's decoder matches in any case, keys that differ only in case are the
// same key; deeper, keys are data and compared exactly.
func duplicateKey(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		keys   map[string]bool
		object bool
		key    bool // the next string token of an object is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.object {
					top.key = true // this value ends; a key comes next
				}
				stack = append(stack, &level{keys: map[string]bool{}, object: d == '{', key: d == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top == nil || !top.object {
			continue
		}
		if top.key {
			k, _ := tok.(string)
			seen := k
			if len(stack) == 1 {
				seen = strings.ToLower(k)
			}
			if top.keys[seen] {
				return k
			}
			top.keys[seen] = true
		}
		top.key = !top.key
	}
}

// clip shortens user text echoed in an error.
func clip(s string) string { return mvp.Clip(s, 80) }

// TokenFromEnv reads the token from the named variable; with generate it makes one when the variable is empty
// and says so (the caller prints it once).
func TokenFromEnv(name string, generate bool) (token string, generated bool, err error) {
	if t := strings.TrimSpace(os.Getenv(name)); t != "" {
		if len(t) < 16 {
			return "", false, fmt.Errorf("the token in $%s is shorter than 16 characters", name)
		}
		for _, r := range t {
			if r <= ' ' || r > '~' {
				return "", false, fmt.Errorf("the token in $%s holds %q: a token is printable ASCII without blanks "+
					"(it is sent in an HTTP header; a variable read from a file of two lines holds a newline)", name, r)
			}
		}
		return t, false, nil
	}
	if !generate {
		return "", false, fmt.Errorf("no API token: set $%s (v2.auth.token_env), or start with --dev-generate-token", name)
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(b), true, nil
}
