// Package web is mvp's web page at /ui: server-rendered HTML (html/template, embedded) showing the queue in
// order with why each task waits, the GPUs of every node, and each task's attempts, events and live driver log,
// with a cancel button. A login form exchanges the API token for a signed HttpOnly, SameSite=Strict session
// cookie; every form carries the session's CSRF token. The page reads the store and the scheduler's snapshot, and
// hands cancel and log requests to the API's own handler, so the rules for those live in one place.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/recurring"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/taskfs"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// DefaultSessionTTL is how long a login lasts.
const DefaultSessionTTL = 12 * time.Hour

// Server serves the web page. Set its fields, then mount Handler at /ui and /ui/.
type Server struct {
	revokedMu sync.Mutex
	revoked   map[string]time.Time // logoutKey(nonce) → until when a logged-out session could have lived
	// logoutsRead: the logouts Logouts holds from earlier processes are in revoked.
	logoutsRead bool

	Store mvp.Store
	// Logouts, when set, keeps logouts across restarts; without it they are kept in memory only.
	Logouts mvp.LogoutStore
	// Snapshot reads the queue, the live attempts and the cluster as the scheduler sees them.
	Snapshot func(context.Context) (scheduler.Snapshot, error)
	// API is the API's handler; logs and (when the API has it) GET /api/v2/queue are served through it with Token
	// as the bearer token.
	API http.Handler
	// Cancel cancels a task as the API does (api.Server.Cancel); by is recorded in its CANCEL_REQUESTED event.
	Cancel func(ctx context.Context, taskID, by string) (*mvp.Task, error)
	// SayWhyWaiting, when set, gives each waiting task the reason it waits now, as the API's answers do
	// (api.Server.SayWhyWaiting: while Ray cannot be read, that; a task no pass has decided on yet, the next look).
	SayWhyWaiting func([]*mvp.Task)
	// Schedules, when set, lists the recurring schedules on the queue page.
	Schedules mvp.ScheduleStore
	// Token is the API token: the login form's password, and the key the session cookie is signed with.
	Token  string
	Clock  mvp.Clock
	Logger *slog.Logger
	// SessionTTL is how long a login lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
}

var pages = map[string]*template.Template{}

func init() {
	funcs := template.FuncMap{"ts": formatTime, "ago": ago, "deref": func(p *int) int { return *p }, "owner": mvp.OwnerName,
		// secs is a count of seconds as `mvp get` shows it (71h59m51s).
		"secs": func(s int) string { return (time.Duration(s) * time.Second).String() }}
	for _, p := range []string{"login", "dashboard", "task"} {
		pages[p] = template.Must(template.New(p).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html"))
	}
}

// Handler returns the page's handler; it serves paths under /ui.
func (s *Server) Handler() http.Handler {
	if s.SessionTTL == 0 {
		s.SessionTTL = DefaultSessionTTL
	}
	if s.Clock == nil {
		s.Clock = mvp.SystemClock{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(assetFS, "assets")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusSeeOther) })
	mux.HandleFunc("GET /ui/login", s.loginForm)
	mux.HandleFunc("POST /ui/login", s.login)
	mux.HandleFunc("POST /ui/logout", s.authed(s.logout))
	mux.HandleFunc("GET /ui/{$}", s.authed(s.dashboard))
	mux.HandleFunc("GET /ui/tasks/{task_id}", s.authed(s.taskPage))
	mux.HandleFunc("POST /ui/tasks/{task_id}/cancel", s.authed(s.cancel))
	mux.HandleFunc("GET /ui/tasks/{task_id}/log", s.authed(s.log))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	return headers(mux)
}

// headers sets what every answer of the page carries: no caching, no framing, scripts and styles only from
// mvp itself.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) sessions() sessions { return newSessions(s.Token, s.SessionTTL) }

// session is a logged-in request: its CSRF token goes into every form of the page.
type session struct{ nonce, csrf string }

// revoke ends the session with this nonce: its cookie, replayed, no longer opens the page. Sessions are signed,
// not stored, so the ended ones are remembered for as long as they could live (SessionTTL): in memory, and in
// Logouts when it is set, so that a restart does not bring a logged-out cookie back (a new API token ends every
// session anyway). It fails only when Logouts could not record it; the session is ended in this process then.
func (s *Server) revoke(ctx context.Context, nonce string) error {
	now := s.Clock.Now()
	until := now.Add(s.SessionTTL)
	s.revokedMu.Lock()
	for n, u := range s.revoked {
		if now.After(u) {
			delete(s.revoked, n)
		}
	}
	if s.revoked == nil {
		s.revoked = map[string]time.Time{}
	}
	s.revoked[logoutKey(nonce)] = until
	s.revokedMu.Unlock()
	if s.Logouts == nil {
		return nil
	}
	return s.Logouts.AddLogout(ctx, logoutKey(nonce), until)
}

// logoutKey is what a logout is recorded under: a hash of the session's nonce, so that the record alone is of no
// use to anyone who reads the database.
func logoutKey(nonce string) string {
	sum := sha256.Sum256([]byte("mvp web logout v1\x00" + nonce))
	return hex.EncodeToString(sum[:])
}

// isRevoked reports whether the session with this nonce was logged out, in this process or (read once, at the
// first request that needs it) in an earlier one.
func (s *Server) isRevoked(ctx context.Context, nonce string) (bool, error) {
	s.revokedMu.Lock()
	defer s.revokedMu.Unlock()
	if !s.logoutsRead && s.Logouts != nil {
		stored, err := s.Logouts.Logouts(ctx, s.Clock.Now())
		if err != nil {
			return false, err
		}
		if s.revoked == nil {
			s.revoked = map[string]time.Time{}
		}
		for k, u := range stored {
			if u.After(s.revoked[k]) {
				s.revoked[k] = u
			}
		}
	}
	s.logoutsRead = true
	_, ok := s.revoked[logoutKey(nonce)]
	return ok, nil
}

// authed lets a request with a valid session through; a page request without one is sent to the login form, and
// any other is refused. A POST must carry the session's CSRF token.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss := s.sessions()
		var nonce string
		ok := false
		if c, err := r.Cookie(CookieName); err == nil {
			nonce, ok = ss.verify(c.Value, s.Clock.Now())
			if ok {
				revoked, err := s.isRevoked(r.Context(), nonce)
				if err != nil {
					// Fail closed: a session that may have been logged out does not open the page.
					s.Logger.Error("read the web logouts", "err", err)
					http.Error(w, "mvp could not read its database to check this session; try again shortly", http.StatusServiceUnavailable)
					return
				}
				ok = !revoked
			}
		}
		if !ok {
			if r.Method == http.MethodGet && r.URL.Query().Get("fragment") == "" && !strings.HasSuffix(r.URL.Path, "/log") {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in: log in at /ui/login", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			if !ss.checkCSRF(nonce, r.PostFormValue("csrf")) {
				s.Logger.Warn("web form refused: missing or wrong CSRF token", "path", r.URL.Path)
				http.Error(w, "this form is stale or did not come from mvp's page (CSRF token missing or wrong); reload the page and try again", http.StatusForbidden)
				return
			}
		}
		h(w, r, session{nonce: nonce, csrf: ss.csrf(nonce)})
	}
}

type loginView struct {
	CSRF  string
	Error string
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", "layout", loginView{})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !checkToken(r.PostFormValue("token"), s.Token) {
		s.Logger.Warn("web login refused: wrong token", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusForbidden, "login", "layout", loginView{Error: "That is not the operator's API token: " +
			"the page takes only it (the users of v2.auth.users use the CLI and the API with their own tokens)."})
		return
	}
	ss := s.sessions()
	v, err := ss.issue(s.Clock.Now())
	if err != nil {
		s.fail(w, r, fmt.Errorf("issue web session: %w", err))
		return
	}
	http.SetCookie(w, ss.cookie(r, v, int(s.SessionTTL/time.Second)))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, ss session) {
	if err := s.revoke(r.Context(), ss.nonce); err != nil {
		// Ended here, and in memory until mvp restarts: the cookie is cleared all the same.
		s.Logger.Error("record a web logout; the session ends in this process only", "err", err)
	}
	http.SetCookie(w, s.sessions().cookie(r, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// queueRow is one waiting task in queue order.
type queueRow struct {
	Position       int
	Task           *mvp.Task
	Code           string
	Reason         string
	NextRunAt      string
	EstimatedStart string
	YieldsTo       string
}

// nodeView is one node of the GPU map: GPUs[i] is true when GPU i is in use.
type nodeView struct {
	ID, Short         string
	Alive, IsHead     bool
	GPUs              []bool
	GPUFree, GPUTotal float64
	CPUFree, CPUTotal float64
}

type dashboardView struct {
	CSRF          string
	Now           time.Time
	Queue         []queueRow
	Running       []scheduler.ActiveAttempt
	Nodes         []nodeView
	ClusterErr    string
	ClusterSource string
	ClusterAt     time.Time
	Recent        []*mvp.Task
	Schedules     []*mvp.Schedule
	// Reservations are GET /api/v2/queue's: the task each is held for, its nodes and start (nil: unknown).
	Reservations []scheduler.Reservation
}

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	snap, err := s.Snapshot(ctx)
	if err != nil {
		s.fail(w, r, fmt.Errorf("read the scheduler's snapshot: %w", err))
		return
	}
	now := s.Clock.Now()
	v := dashboardView{CSRF: ss.csrf, Now: now, Running: snap.Active}
	extra, free, resv := s.queueExtras(r)
	v.Reservations = resv
	for i, t := range snap.Queue {
		row := queueRow{Position: i + 1, Task: t, Reason: t.PendingReason}
		if t.NextRunAt != nil && t.NextRunAt.After(now) {
			row.NextRunAt = "in " + ago(now, *t.NextRunAt)
		}
		if e, ok := extra[t.ID]; ok {
			row.Code, row.EstimatedStart, row.YieldsTo = e.code, e.estimate, e.yieldsTo
			if e.position > 0 {
				row.Position = e.position
			}
			if e.reason != "" {
				row.Reason = e.reason
			}
		}
		if row.Reason == "" && t.State == mvp.StateQueued {
			row.Reason = scheduler.NextLook
		}
		v.Queue = append(v.Queue, row)
	}
	if extra != nil { // in the policy's order, as mvp queue shows it (the snapshot is in arrival order)
		sort.SliceStable(v.Queue, func(i, j int) bool { return v.Queue[i].Position < v.Queue[j].Position })
	}
	if snap.Cluster != nil {
		v.ClusterSource, v.ClusterAt = snap.Cluster.Source, snap.Cluster.At
		v.Nodes = nodeViews(snap.Cluster, free)
	} else if snap.ClusterErr != nil {
		v.ClusterErr = snap.ClusterErr.Error()
	} else {
		v.ClusterErr = "no reading yet"
	}
	if v.Recent, _, err = s.Store.ListTasks(ctx, mvp.TaskFilter{Limit: 20}); err != nil {
		s.fail(w, r, fmt.Errorf("list recent tasks: %w", err))
		return
	}
	if s.SayWhyWaiting != nil {
		s.SayWhyWaiting(v.Recent)
	}
	if s.Schedules != nil {
		if v.Schedules, err = s.Schedules.ListSchedules(ctx); err != nil {
			s.fail(w, r, fmt.Errorf("list schedules: %w", err))
			return
		}
		for _, sc := range v.Schedules {
			if c, err := recurring.Parse(sc.Cron, sc.Timezone); err == nil {
				sc.NextRunAt = recurring.NextRun(sc, c)
			}
		}
	}
	s.page(w, r, "dashboard", v)
}

// nodeViews draws the GPU map: workers first, then by id; a GPU counts as busy for every whole GPU not available.
// schedFree is what the scheduler can give on each node (GET /api/v2/queue's free_gpus: an admitted attempt whose
// placement groups Ray has not made yet holds its GPUs), used where it names the node, as `mvp queue` shows it;
// elsewhere Ray's own figure, which lags a submission by seconds.
func nodeViews(c *mvp.ClusterView, schedFree map[string]float64) []nodeView {
	var out []nodeView
	for _, n := range c.Nodes {
		total, free := n.Total[scheduler.ResGPU], n.Available[scheduler.ResGPU]
		if f, ok := schedFree[n.ID]; ok {
			free = f
		}
		nv := nodeView{ID: n.ID, Short: shortID(n.ID), Alive: n.Alive, IsHead: n.IsHead, GPUTotal: total,
			GPUFree: free, CPUTotal: n.Total[scheduler.ResCPU], CPUFree: n.Available[scheduler.ResCPU]}
		busy := int(math.Ceil(total - free))
		for i := 0; i < int(total) && i < 64; i++ {
			nv.GPUs = append(nv.GPUs, i < busy)
		}
		out = append(out, nv)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].IsHead != out[j].IsHead {
			return !out[i].IsHead
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// queueExtra is what GET /api/v2/queue says of one waiting task, when the API serves it.
type queueExtra struct {
	position                         int
	code, reason, estimate, yieldsTo string
}

// queueExtras asks the API for its queue view (GET /api/v2/queue, in the API's own type): what it says of each
// waiting task (position, reason code, estimated start, the task yielded to), the GPUs the scheduler can give on
// each node and the reservations. An answer that is not one gives nil, nil, nil: the page then shows the tasks'
// own pending reasons and Ray's free GPUs.
func (s *Server) queueExtras(r *http.Request) (map[string]queueExtra, map[string]float64, []scheduler.Reservation) {
	rec := s.callAPI(r, http.MethodGet, "/api/v2/queue", nil)
	if rec.code != http.StatusOK {
		return nil, nil, nil
	}
	var v scheduler.QueueView
	if json.Unmarshal(rec.body.Bytes(), &v) != nil {
		return nil, nil, nil
	}
	free := make(map[string]float64, len(v.Nodes))
	for _, n := range v.Nodes {
		free[n.NodeID] = n.FreeGPUs
	}
	out := make(map[string]queueExtra, len(v.Queue))
	for _, e := range v.Queue {
		x := queueExtra{position: e.Position, code: string(e.Code), reason: e.Reason, yieldsTo: e.YieldsTo}
		if e.EstStart != nil {
			x.estimate = formatTime(*e.EstStart)
			if e.ExpiresBeforeStart {
				x.estimate += " (after its max_queued_s)"
			}
		}
		out[e.TaskID] = x
	}
	return out, free, v.Reservations
}

type taskView struct {
	CSRF    string
	Now     time.Time
	Task    *mvp.Task
	Events  []*mvp.Event
	Message string
}

func (s *Server) taskPage(w http.ResponseWriter, r *http.Request, ss session) {
	if id := r.PathValue("task_id"); !taskfs.TaskIDPattern.MatchString(id) {
		// A Ray-door job named by its submission id (what its Ray user knows it by): its page is its task's.
		if t, err := s.Store.TaskBySubmissionID(r.Context(), id); err == nil {
			http.Redirect(w, r, "/ui/tasks/"+url.PathEscape(t.ID), http.StatusSeeOther)
			return
		}
	}
	t, ok := s.task(w, r)
	if !ok {
		return
	}
	now := s.Clock.Now()
	t.FillTimeLeft(now)
	if s.SayWhyWaiting != nil {
		s.SayWhyWaiting([]*mvp.Task{t}) // the stored reason is the last pass's: stale while Ray cannot be read
	}
	evs, _, err := s.Store.Events(r.Context(), t.ID, "", 1000)
	if err != nil {
		s.fail(w, r, fmt.Errorf("read events of %s: %w", t.ID, err))
		return
	}
	v := taskView{CSRF: ss.csrf, Now: now, Task: t, Events: evs}
	if r.URL.Query().Get("cancel") == "refused" {
		v.Message = fmt.Sprintf("The cancel was refused: the task is already %s.", t.State)
	}
	s.page(w, r, "task", v)
}

// task reads the task named in the path, answering 404 itself when there is none.
func (s *Server) task(w http.ResponseWriter, r *http.Request) (*mvp.Task, bool) {
	id := r.PathValue("task_id")
	if !taskfs.TaskIDPattern.MatchString(id) {
		http.Error(w, "no such task (task ids look like mvp2-ppo-20251223-143201-7f3a)", http.StatusNotFound)
		return nil, false
	}
	t, err := s.Store.GetTask(r.Context(), id)
	if errors.Is(err, mvp.ErrNotFound) {
		http.Error(w, "no task "+id, http.StatusNotFound)
		return nil, false
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("read task %s: %w", id, err))
		return nil, false
	}
	return t, true
}

// cancel cancels the task (recorded as by "web") and goes back to its page; a task that already ended is
// shown with a note that the cancel was refused.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, _ session) {
	t, ok := s.task(w, r)
	if !ok {
		return
	}
	target := "/ui/tasks/" + t.ID
	if _, err := s.Cancel(r.Context(), t.ID, "web"); err != nil {
		if mvp.ErrorCode(err) != mvp.CodeConflict {
			s.fail(w, r, fmt.Errorf("cancel %s: %w", t.ID, err))
			return
		}
		target += "?cancel=refused"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// log streams the task's driver log from the API (the latest attempt, or ?attempt=N; ?follow=true follows it).
// ?shown=N says the page already shows attempt N's log whole: while N is still the latest attempt, ended, and the
// task waits to run again, the answer is 204 and nothing is read (the page read that log again, whole, every 2 s
// for as long as the task waited: hundreds of MB for a long run, and its view jumped back to the end each time).
func (s *Server) log(w http.ResponseWriter, r *http.Request, _ session) {
	t, ok := s.task(w, r)
	if !ok {
		return
	}
	if shown := r.URL.Query().Get("shown"); shown != "" && shown == strconv.Itoa(t.LatestAttemptNo) && !t.State.Terminal() {
		if a := t.Latest(); a != nil && a.RayStatus.Terminal() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	q := url.Values{}
	for _, k := range []string{"attempt", "follow"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	method := http.MethodGet
	if r.Method == http.MethodHead {
		method = http.MethodHead // the API answers a HEAD of a log with its headers, without following it
	}
	r2 := s.apiRequest(r, method, "/api/v2/tasks/"+r.PathValue("task_id")+"/logs", q)
	s.API.ServeHTTP(w, r2)
}

// apiRequest is a request to the API's handler on behalf of a logged-in user of the page.
func (s *Server) apiRequest(r *http.Request, method, path string, q url.Values) *http.Request {
	r2 := r.Clone(mvp.WithoutCount(r.Context())) // the page's own read: not an API request in the metrics
	r2.Method = method
	r2.URL = &url.URL{Path: path, RawQuery: q.Encode()}
	r2.RequestURI = r2.URL.RequestURI()
	r2.Body = http.NoBody
	r2.ContentLength = 0
	r2.Header = http.Header{}
	r2.Header.Set("Authorization", "Bearer "+s.Token)
	return r2
}

// recorder keeps a whole answer of the API's handler.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (rc *recorder) Header() http.Header { return rc.header }
func (rc *recorder) Write(b []byte) (int, error) {
	if rc.code == 0 {
		rc.code = http.StatusOK
	}
	return rc.body.Write(b)
}
func (rc *recorder) WriteHeader(code int) {
	if rc.code == 0 {
		rc.code = code
	}
}

func (s *Server) callAPI(r *http.Request, method, path string, q url.Values) *recorder {
	rec := &recorder{header: http.Header{}}
	s.API.ServeHTTP(rec, s.apiRequest(r, method, path, q))
	return rec
}

// page renders a page, or only its live part when the page's script asks for it (?fragment=live).
func (s *Server) page(w http.ResponseWriter, r *http.Request, name string, data any) {
	if r.URL.Query().Get("fragment") == "live" {
		s.render(w, r, http.StatusOK, name, "live", data)
		return
	}
	s.render(w, r, http.StatusOK, name, "layout", data)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page, tmpl string, data any) {
	var b bytes.Buffer
	if err := pages[page].ExecuteTemplate(&b, tmpl, data); err != nil {
		s.fail(w, r, fmt.Errorf("render %s/%s: %w", page, tmpl, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.Logger.Error("web page failed", "path", r.URL.Path, "err", err)
	http.Error(w, "internal error (details are in mvp's log)", http.StatusInternalServerError)
}

// formatTime shows a time (time.Time or *time.Time) in UTC to the second; nil or zero shows as "—".
func formatTime(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago is the time between t and now, rounded for people: "42s", "3m10s", "2h05m".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}
