package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Client is a typed client of this API, used by the CLI and the end-to-end tests.
type Client struct {
	// Addr is the API's base URL, e.g. http://127.0.0.1:8080.
	Addr  string
	Token string
	HTTP  *http.Client
	// HeaderWait bounds the wait for an answer's status and headers, a followed log's excepted (its headers wait
	// for its first bytes); 0 means DefaultHeaderWait. A server that takes the connection and never answers (a
	// wrong MVP_ADDR on another service's port, a stuck proxy) would otherwise hold a command for ever.
	HeaderWait time.Duration
}

// DefaultHeaderWait is Client.HeaderWait's default: far above what any answer of mvp takes (a submit waits for
// its commit, a queue view for its forecast: milliseconds to a second).
const DefaultHeaderWait = 2 * time.Minute

// errNoAnswer is the cause of a request cut by HeaderWait.
var errNoAnswer = errors.New("no answer within the client's wait")

// cancelOnClose releases a request's context once its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// StatusError is an error answer of the API: its HTTP status and its body. It unwraps to the *mvp.Error the server
// answered (its code read back from the body, or from the status when the body has none), so callers match it as
// they match mvp's own errors: errors.As(err, &e) with e *mvp.Error, or errors.Is(err, mvp.ErrNotFound), which
// holds for any not_found answer.
type StatusError struct {
	Status int
	Detail ErrorDetail
	// RetryAfter is the answer's Retry-After header: the server asks to be asked again later, as mvp does when a
	// stop ends a request that waited (a follow of a task without an attempt yet).
	RetryAfter string
}

// Unwrap returns the answer as an *mvp.Error.
func (e *StatusError) Unwrap() error {
	return &mvp.Error{Code: codeOf(e.Status, e.Detail.Code), Message: e.Detail.Message, Field: e.Detail.Field}
}

// Is reports whether target is an *mvp.Error of the answer's code, such as mvp.ErrNotFound or mvp.ErrConflict.
func (e *StatusError) Is(target error) bool {
	t, ok := target.(*mvp.Error)
	return ok && t.Code == codeOf(e.Status, e.Detail.Code)
}

func (e *StatusError) Error() string {
	msg := e.Detail.Message
	if e.Detail.Field != "" {
		msg = e.Detail.Field + ": " + msg
	}
	return fmt.Sprintf("%s (HTTP %d %s)", msg, e.Status, e.Detail.Code)
}

// noRedirects is the default HTTP client: it does not follow redirects, which Go replays as a GET for a POST or
// DELETE (a submit would read the task list and look like a success). Do turns a redirect into an error.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return noRedirects
}

// NameError is a task id, schedule or secret name that cannot stand in a URL path: "." or "..", which
// url.PathEscape leaves as they are and a URL reads as its own folders (the request would go elsewhere), or an
// empty one (`mvp cancel "$ID"` with ID unset), which leaves an empty segment that the server cleans away
// (/api/v2/tasks//cancel is redirected to /api/v2/tasks/cancel). Do returns it before any request is made.
type NameError struct{ Name string }

// CheckName returns a *NameError for a task id or name that cannot stand in a URL path ("", "." or ".."), else
// nil: what Do refuses before any request, for a caller that checks several names before it sends the first.
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." {
		return &NameError{Name: name}
	}
	return nil
}

func (e *NameError) Error() string {
	if e.Name == "" {
		return "a task id or a name is empty (an unset variable?): give one"
	}
	return fmt.Sprintf("%q is not a task id or a name: \".\" and \"..\" cannot stand in a URL path", e.Name)
}

// Do sends one request and returns the response when its status is 2xx, else a *StatusError; a *NameError, with
// nothing sent, when path has a "." or ".." segment, or, under /api/v2/ (whose paths never end in "/"), an empty one.
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, body []byte, contentType string) (*http.Response, error) {
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			continue // the leading "/", and Ray's paths under /ray/ that end in "/" (/ray/api/jobs/)
		}
		if err := CheckName(seg); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	if rest, ok := strings.CutPrefix(path, "/api/v2/"); ok && slices.Contains(strings.Split(rest, "/"), "") {
		return nil, fmt.Errorf("%s %s: %w", method, path, &NameError{})
	}
	base := strings.TrimRight(c.Addr, "/")
	if strings.HasSuffix(base, "/api/v2") {
		// The API's own path pasted into the address: every request would go to /api/v2/api/v2/….
		return nil, fmt.Errorf("%s %s: MVP_ADDR %s ends in /api/v2: set it to mvp's address without /api/v2 (%s, "+
			"as mvp serve printed it)", method, path, c.Addr, strings.TrimSuffix(base, "/api/v2"))
	}
	if strings.HasSuffix(base, RayPrefix) {
		// The Ray door's address (what Ray's own client is given) pasted into MVP_ADDR: every verb got a bare 404.
		return nil, fmt.Errorf("%s %s: MVP_ADDR %s ends in %s, the address of mvp's door for Ray's own client "+
			"(RAY_ADDRESS); mvp's verbs talk to mvp's address without it: set MVP_ADDR=%s", method, path, c.Addr,
			RayPrefix, strings.TrimSuffix(base, RayPrefix))
	}
	if a, err := url.Parse(base); err != nil || (a.Scheme != "http" && a.Scheme != "https") || a.Host == "" {
		why := "its scheme is not http or https"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%s %s: MVP_ADDR %q is not an address of mvp serve such as http://127.0.0.1:8080 "+
			"(%s)", method, path, c.Addr, why)
	}
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	wait := c.HeaderWait
	if wait <= 0 {
		wait = DefaultHeaderWait
	}
	rctx, cancel := context.WithCancelCause(ctx)
	if q.Get("follow") != "true" {
		timer := time.AfterFunc(wait, func() { cancel(errNoAnswer) })
		defer timer.Stop() // once Do returns, the headers are in: the body is read at the caller's pace
	}
	req, err := http.NewRequestWithContext(rctx, method, u, rd)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err == nil {
		resp.Body = cancelOnClose{resp.Body, func() { cancel(nil) }}
	} else {
		cancel(nil)
	}
	if err != nil {
		switch {
		case errors.Is(context.Cause(rctx), errNoAnswer) && ctx.Err() == nil:
			what := "nothing was changed"
			if method != http.MethodGet && method != http.MethodHead {
				what = "the request may have been carried out; look before repeating it (after a submit: mvp list)"
			}
			return nil, fmt.Errorf("%s %s: the server at %s took the connection but has not answered in %s: is MVP_ADDR "+
				"mvp's address (the URL mvp serve printed), and is mvp serve running well there (its log)? %s", method,
				path, c.Addr, wait, what)
		case ctx.Err() != nil && changes(method, q):
			// Stopped by the caller (Ctrl-C) while it waited: the request may have reached the server whole.
			return nil, fmt.Errorf("%s %s: stopped before the server at %s answered (%w): the request may have been "+
				"carried out; look before repeating it (after a submit: mvp list)", method, path, c.Addr, context.Cause(ctx))
		case errors.As(err, new(*net.DNSError)):
			return nil, fmt.Errorf("%s %s: the host of %s cannot be found (%w): set MVP_ADDR to the address mvp serve "+
				"printed", method, path, c.Addr, err)
		case errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%s %s: nothing answers at %s (%w): is mvp serve running there? (MVP_ADDR)", method, path, c.Addr, err)
		case method != http.MethodGet && method != http.MethodHead &&
			(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
			// The request may have arrived whole and been carried out before the server went away.
			return nil, fmt.Errorf("%s %s: the server closed the connection without answering (%w): the request may have "+
				"been carried out; look before repeating it (after a submit: mvp list)", method, path, err)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			// A read changes nothing. Go's server closes, unanswered, a connection whose request it reads once its
			// shutdown has begun: the usual cause is a stop or restart.
			return nil, fmt.Errorf("%s %s: the server at %s closed the connection without answering (%w): it may be "+
				"stopping or restarting; run the same command again once it is back", method, path, c.Addr, err)
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return nil, &StatusError{Status: resp.StatusCode, Detail: ErrorDetail{Code: "http", Message: fmt.Sprintf(
			"%s %s: the server at %s answered a redirect to %q; mvp's API does not redirect: set MVP_ADDR to the API's "+
				"own address", method, path, c.Addr, resp.Header.Get("Location"))}}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error.Message == "" {
		// Not mvp's answer (its errors all have the shape): another server, such as Ray's dashboard, or a proxy.
		text := strings.TrimSpace(string(b))
		if r := []rune(text); len(r) > 200 {
			text = string(r[:200]) + "…"
		}
		eb.Error = ErrorDetail{Code: "http", Message: fmt.Sprintf("%s %s: the server at %s answered %q, not as mvp's "+
			"API answers: is MVP_ADDR mvp's address (the URL mvp serve printed, not Ray's dashboard)?", method, path,
			c.Addr, text)}
	}
	return nil, &StatusError{Status: resp.StatusCode, Detail: eb.Error, RetryAfter: resp.Header.Get("Retry-After")}
}

// JSON sends a request and decodes a JSON answer into out (when out is not nil); it also returns the raw body.
func (c *Client) JSON(ctx context.Context, method, path string, q url.Values, body []byte, contentType string, out any) (json.RawMessage, error) {
	resp, err := c.Do(ctx, method, path, q, body, contentType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		// The status came, the body did not: a change the status says was made was made.
		if changes(method, q) {
			return nil, fmt.Errorf("%s %s: the server at %s took the request (HTTP %d) but its answer was cut off "+
				"(%w): it was carried out; look before repeating it (after a submit: mvp list)", method, path, c.Addr,
				resp.StatusCode, err)
		}
		return nil, fmt.Errorf("%s %s: the answer of the server at %s was cut off (%w): it may be stopping or "+
			"restarting; run the same command again once it is back", method, path, c.Addr, err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) { // not JSON at all: another service answered
				text := strings.TrimSpace(string(b))
				if r := []rune(text); len(r) > 120 {
					text = string(r[:120]) + "…"
				}
				return b, fmt.Errorf("decode %s: the server at %s answered HTTP %d with %q, not JSON as mvp's API "+
					"answers (%w): is MVP_ADDR mvp's address (the URL mvp serve printed)?", path, c.Addr,
					resp.StatusCode, text, err)
			}
			return b, fmt.Errorf("decode %s: %w", path, err)
		}
	}
	return b, nil
}

// Submit posts a jobspec (YAML or JSON).
func (c *Client) Submit(ctx context.Context, spec []byte, dryRun bool) (json.RawMessage, error) {
	q := url.Values{}
	if dryRun {
		q.Set("dry_run", "true")
	}
	return c.JSON(ctx, "POST", "/api/v2/tasks", q, spec, "application/yaml", nil)
}

// Get returns a task.
func (c *Client) Get(ctx context.Context, id string) (*mvp.Task, json.RawMessage, error) {
	var t mvp.Task
	raw, err := c.JSON(ctx, "GET", "/api/v2/tasks/"+url.PathEscape(id), nil, nil, "", &t)
	return &t, raw, err
}

// TaskPage is a page of tasks.
type TaskPage struct {
	Tasks      []*mvp.Task `json:"tasks"`
	NextCursor string      `json:"next_cursor"`
}

// List returns a page of tasks.
func (c *Client) List(ctx context.Context, state, workload string, limit int, cursor string) (*TaskPage, json.RawMessage, error) {
	return c.ListOwned(ctx, state, workload, "", limit, cursor)
}

// ListOwned returns a page of the tasks of owner ("" for every task the caller may see; a user may name only
// themselves).
func (c *Client) ListOwned(ctx context.Context, state, workload, owner string, limit int, cursor string) (*TaskPage, json.RawMessage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": state, "workload": workload, "owner": owner, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p TaskPage
	raw, err := c.JSON(ctx, "GET", "/api/v2/tasks", q, nil, "", &p)
	return &p, raw, err
}

// Queue returns the queue as the scheduling policy sees it now (GET /api/v2/queue).
func (c *Client) Queue(ctx context.Context) (*scheduler.QueueView, json.RawMessage, error) {
	var v scheduler.QueueView
	raw, err := c.JSON(ctx, "GET", "/api/v2/queue", nil, nil, "", &v)
	return &v, raw, err
}

// Cancel cancels a task.
func (c *Client) Cancel(ctx context.Context, id string) (*mvp.Task, json.RawMessage, error) {
	var t mvp.Task
	raw, err := c.JSON(ctx, "POST", "/api/v2/tasks/"+url.PathEscape(id)+"/cancel", nil, nil, "", &t)
	return &t, raw, err
}

// EventPage is a page of events.
type EventPage struct {
	Events     []*mvp.Event `json:"events"`
	NextCursor string       `json:"next_cursor"`
}

// Events returns a page of a task's events.
func (c *Client) Events(ctx context.Context, id, cursor string, limit int) (*EventPage, json.RawMessage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p EventPage
	raw, err := c.JSON(ctx, "GET", "/api/v2/tasks/"+url.PathEscape(id)+"/events", q, nil, "", &p)
	return &p, raw, err
}

// Logs copies an attempt's log to w (attempt 0 means the latest); with follow it streams until the attempt ends.
func (c *Client) Logs(ctx context.Context, id string, attempt int, follow bool, w io.Writer) error {
	_, err := c.LogsOf(ctx, id, attempt, follow, w)
	return err
}

// LogsOf is Logs, and returns the attempt whose log it copied, as the server names it (LogAttemptHeader; 0 from a
// server that does not).
func (c *Client) LogsOf(ctx context.Context, id string, attempt int, follow bool, w io.Writer) (n int, err error) {
	return c.LogsFrom(ctx, id, attempt, 0, follow, w)
}

// ErrFollowCut is in LogsFrom's error when a followed log stopped before its attempt ended, the connection cut or
// the server stopping (a restart): what was copied to w is the log's first bytes, whole, and asking again from
// where they end (offset) follows on.
var ErrFollowCut = errors.New("the follow stopped before the attempt ended")

// LogsFrom is LogsOf from byte offset of the log on; from a server from before offset= it reads the log from its
// start and drops the bytes before offset.
func (c *Client) LogsFrom(ctx context.Context, id string, attempt int, offset int64, follow bool, w io.Writer) (n int, err error) {
	q := url.Values{}
	if attempt > 0 {
		q.Set("attempt", strconv.Itoa(attempt))
	}
	if offset > 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	if follow {
		q.Set("follow", "true")
	}
	path := "/api/v2/tasks/" + url.PathEscape(id) + "/logs"
	resp, err := c.Do(ctx, "GET", path, q, nil, "")
	var se *StatusError
	if offset > 0 && errors.As(err, &se) && se.Status == http.StatusBadRequest && se.Detail.Field == "offset" {
		// A server from before offset= (400 "unknown query parameter"): the log from its start, less its first bytes.
		q.Del("offset")
		w = &skipWriter{skip: offset, w: w}
		resp, err = c.Do(ctx, "GET", path, q, nil, "")
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, _ = strconv.Atoi(resp.Header.Get(LogAttemptHeader))
	if _, err = io.Copy(w, resp.Body); err != nil {
		cut := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
		if follow && cut {
			return n, fmt.Errorf("the connection to the server was cut before the attempt of %s ended (%w; the server "+
				"went away?): run the same command again once it is back to follow on: %w", id, err, ErrFollowCut)
		}
		if cut {
			return n, fmt.Errorf("the log of %s was cut off in transit (%w): what was printed is incomplete; run the "+
				"same command again", id, err)
		}
		return n, err
	}
	if why := resp.Trailer.Get(LogWhyTrailer); resp.Trailer.Get(LogEndTrailer) == LogEndCut && why != "" {
		return n, fmt.Errorf("the log of %s is incomplete: %s%w", id, why, ErrLogIncomplete)
	}
	if resp.Trailer.Get(LogEndTrailer) == LogEndCut {
		return n, fmt.Errorf("the log of %s was cut short: the server could not read the rest from Ray (see its log); "+
			"run the same command again", id)
	}
	if follow && resp.Trailer.Get(LogEndTrailer) == LogEndStopping {
		return n, fmt.Errorf("the server is stopping (a restart?) before the attempt of %s ended: run the same command "+
			"again once it is back to follow on: %w", id, ErrFollowCut)
	}
	return n, nil
}

// ErrLogIncomplete marks the error of a log answer that ended cut-short with the server's reason (its text adds
// nothing): a log lost with its Ray job, or one Ray or the kept copy could not give to its end. A follower of a task
// that runs again says it and follows on.
var ErrLogIncomplete = incompleteLog{}

type incompleteLog struct{}

func (incompleteLog) Error() string { return "" }

// ResultList is a task's result files.
type ResultList struct {
	TaskID    string           `json:"task_id"`
	Files     []mvp.ResultFile `json:"files"`
	Truncated bool             `json:"truncated"`
	// Skipped counts the files not listed because their names cannot be asked for (a backslash, a control
	// character, bytes that are not UTF-8).
	Skipped int `json:"skipped"`
}

// Results lists the files under a task's results folder.
func (c *Client) Results(ctx context.Context, id string) (*ResultList, json.RawMessage, error) {
	var l ResultList
	raw, err := c.JSON(ctx, "GET", "/api/v2/tasks/"+url.PathEscape(id)+"/results", nil, nil, "", &l)
	return &l, raw, err
}

// ResultFile copies one result file (its path relative to the results folder, as listed) to w.
func (c *Client) ResultFile(ctx context.Context, id, path string, w io.Writer) error {
	if err := taskfs.CheckResultPath(path); err != nil {
		return err // the server refuses it too; the router would first redirect "..", and the message get lost
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	rpath := "/api/v2/tasks/" + url.PathEscape(id) + "/results/" + strings.Join(segs, "/")
	resp, err := c.Do(ctx, "GET", rpath, nil, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: result file %s stopped after %d bytes (%w): what was written is incomplete; fetch "+
			"it again", rpath, path, n, err)
	}
	return nil
}

// Resubmit makes a new task from a task's stored effective spec, with the changes and resume of req.
func (c *Client) Resubmit(ctx context.Context, id string, req ResubmitRequest) (*mvp.Task, json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	var t mvp.Task
	raw, err := c.JSON(ctx, "POST", "/api/v2/tasks/"+url.PathEscape(id)+"/resubmit", nil, body, "application/json", &t)
	return &t, raw, err
}

// ResubmitDryRun answers what Resubmit would do (the effective spec, the Ray payload, the admission verdict)
// without storing anything.
func (c *Client) ResubmitDryRun(ctx context.Context, id string, req ResubmitRequest) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return c.JSON(ctx, "POST", "/api/v2/tasks/"+url.PathEscape(id)+"/resubmit", url.Values{"dry_run": {"true"}}, body, "application/json", nil)
}

// PutSecret stores or replaces one of the caller's secrets.
func (c *Client) PutSecret(ctx context.Context, name, value string) (*mvp.SecretInfo, json.RawMessage, error) {
	return c.PutSecretOf(ctx, "", name, value)
}

// PutSecretOf stores or replaces owner's secret name (the operator may name a user; "" is the caller).
func (c *Client) PutSecretOf(ctx context.Context, owner, name, value string) (*mvp.SecretInfo, json.RawMessage, error) {
	body, err := json.Marshal(map[string]string{"value": value})
	if err != nil {
		return nil, nil, err
	}
	var s mvp.SecretInfo
	raw, err := c.JSON(ctx, "PUT", "/api/v2/secrets/"+url.PathEscape(name), ownerQuery(owner), body, "application/json", &s)
	return &s, raw, err
}

// ownerQuery is ?owner=owner, or none for "".
func ownerQuery(owner string) url.Values {
	if owner == "" {
		return nil
	}
	return url.Values{"owner": {owner}}
}

// SecretList is the stored secrets' names and times.
type SecretList struct {
	Secrets []mvp.SecretInfo `json:"secrets"`
}

// Secrets lists the caller's secrets (the operator's: everyone's), never their values.
func (c *Client) Secrets(ctx context.Context) (*SecretList, json.RawMessage, error) {
	return c.SecretsOf(ctx, "")
}

// SecretsOf lists owner's secrets ("": the caller's; the operator's: everyone's).
func (c *Client) SecretsOf(ctx context.Context, owner string) (*SecretList, json.RawMessage, error) {
	var l SecretList
	raw, err := c.JSON(ctx, "GET", "/api/v2/secrets", ownerQuery(owner), nil, "", &l)
	return &l, raw, err
}

// DeleteSecret deletes one of the caller's secrets.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.DeleteSecretOf(ctx, "", name)
}

// DeleteSecretOf deletes owner's secret name (the operator may name a user; "" is the caller).
func (c *Client) DeleteSecretOf(ctx context.Context, owner, name string) error {
	resp, err := c.Do(ctx, "DELETE", "/api/v2/secrets/"+url.PathEscape(name), ownerQuery(owner), nil, "")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// UserList is GET /api/v2/users.
type UserList struct {
	Users       []UserView `json:"users"`
	FairShare   bool       `json:"fair_share"`
	HalfLifeS   float64    `json:"half_life_s"`
	StarvationS float64    `json:"starvation_s"`
}

// Users reads every user's limits, share and usage (operator only).
func (c *Client) Users(ctx context.Context) (*UserList, json.RawMessage, error) {
	var l UserList
	raw, err := c.JSON(ctx, "GET", "/api/v2/users", nil, nil, "", &l)
	return &l, raw, err
}

// ForgetNode forgets a GPU node that is down (DELETE /api/v2/nodes/{node_id}, the operator's token only).
func (c *Client) ForgetNode(ctx context.Context, id string) (*ForgottenNode, json.RawMessage, error) {
	var n ForgottenNode
	raw, err := c.JSON(ctx, "DELETE", "/api/v2/nodes/"+url.PathEscape(id), nil, nil, "", &n)
	return &n, raw, err
}

// changes reports whether a request may change what the server holds: not a read, not a dry run.
func changes(method string, q url.Values) bool {
	return method != http.MethodGet && method != http.MethodHead && q.Get("dry_run") != "true"
}
