// Package ray talks to Ray: a small typed client of the Job REST API (on go-resty), and the probe that reads the
// cluster's live per-node availability through a long-lived Python child.
package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/go-resty/resty/v2"

	"github.com/mvp2/mvp/internal/mvp"
)

// Options configure a Client.
type Options struct {
	// DashboardURL is Ray's Job server, e.g. http://127.0.0.1:8265.
	DashboardURL string
	// Token is Ray's auth token (RAY_AUTH_MODE=token clusters); empty for none. Never logged.
	Token string
	// Timeout bounds one call. Default 10 s.
	Timeout time.Duration
	Logger  *slog.Logger
	// HTTPClient replaces the default transport (tests).
	HTTPClient *http.Client
	// Observer is told each call's endpoint, outcome and duration; nil for none.
	Observer mvp.Observer
	// MaxLogStreams bounds the log streams (FollowJobLog) open at once; 0 for no bound. Each holds one of the
	// requests Ray's state API serves at once (RAY_STATE_SERVER_MAX_HTTP_REQUEST, 100 by default) for as long as
	// it lasts; a follow past the bound is refused at once with ErrRayBusy (its caller copies the log instead).
	MaxLogStreams int
}

// MaxLogCopies bounds the copies of driver logs from Ray's state API (CopyJobLog) in flight at once for readers
// of logs; one more waits for a place. With Options.MaxLogStreams it keeps mvp's own reads within Ray's state API
// limit, so that many readers of logs (a follower past MaxLogStreams copies the log at every poll) leave room for
// Ray's other clients.
const MaxLogCopies = 16

// MaxSchedulerLogCopies bounds the scheduler's own copies (a context marked mvp.WithSchedulerRead), which have
// places of their own: its pass waits for its copy, and it waited behind readers' copies of long logs.
const MaxSchedulerLogCopies = 2

// Client is the Job REST API client. It implements mvp.RayClient.
type Client struct {
	r   *resty.Client
	log *slog.Logger
	obs mvp.Observer
	// stream reads answers too long for one call's timeout (CopyJobLog): the same transport, no overall
	// timeout (the caller's context bounds it); token is sent on it as on r.
	stream *http.Client
	follow *http.Client // stream's, without a bound on the wait for the answer's headers (FollowJobLog)
	token  string

	// streams holds a place for each log stream open (nil: no bound); copies for each reader's log copy in flight,
	// ownCopies for each of the scheduler's.
	streams, copies, ownCopies chan struct{}

	mu          sync.Mutex
	lastWarning string // the last incomplete-list warning logged
}

var _ mvp.RayClient = (*Client)(nil)

// New makes a Client. Reads (GET) are retried briefly on connection errors; a submit is never retried here:
// the caller looks the job up by its submission id first, so that a timeout can never make two jobs.
func New(o Options) *Client {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var r *resty.Client
	if o.HTTPClient != nil {
		r = resty.NewWithClient(o.HTTPClient)
	} else {
		r = resty.New()
	}
	r.SetBaseURL(strings.TrimRight(o.DashboardURL, "/")).SetTimeout(o.Timeout).SetDebug(false).
		SetLogger(discardLogger{}).
		SetRetryCount(2).SetRetryWaitTime(100 * time.Millisecond).SetRetryMaxWaitTime(time.Second).
		AddRetryCondition(func(resp *resty.Response, err error) bool {
			return err != nil && resp != nil && resp.Request != nil && resp.Request.Method == http.MethodGet
		})
	if o.Token != "" {
		r.SetAuthToken(o.Token)
	}
	// The stream's answer must begin within a call's timeout; its body may take as long as its context allows.
	tr := r.GetClient().Transport
	if t, ok := tr.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = o.Timeout
		tr = t
	} else if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = o.Timeout
		tr = t
	}
	stream := &http.Client{Transport: tr, CheckRedirect: r.GetClient().CheckRedirect, Jar: r.GetClient().Jar}
	// A followed log's answer begins only with the file's first chunk (Ray 2.60's state_head awaits it before it
	// sends its headers): a running driver that has printed nothing yet must not fail the follow after a call's
	// timeout. Its context (the reader, the attempt's end, mvp's stop) bounds it instead.
	follow := &http.Client{Transport: tr, CheckRedirect: stream.CheckRedirect, Jar: stream.Jar}
	if t, ok := tr.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 0
		follow.Transport = t
	}
	c := &Client{r: r, log: o.Logger, obs: mvp.ObserverOr(o.Observer), stream: stream, follow: follow, token: o.Token,
		copies: make(chan struct{}, MaxLogCopies), ownCopies: make(chan struct{}, MaxSchedulerLogCopies)}
	if o.MaxLogStreams > 0 {
		c.streams = make(chan struct{}, o.MaxLogStreams)
	}
	return c
}

type discardLogger struct{}

func (discardLogger) Errorf(string, ...any) {}
func (discardLogger) Warnf(string, ...any)  {}
func (discardLogger) Debugf(string, ...any) {}

func jobPath(id string, suffix string) string { return "/api/jobs/" + url.PathEscape(id) + suffix }

// call runs a request and maps transport errors and statuses to mvp errors. endpoint names the call for the
// Observer (a fixed name such as "get_job", never the path, which holds a job id).
func (c *Client) call(ctx context.Context, endpoint, method, path string, body, out any) (*resty.Response, error) {
	start := time.Now()
	resp, outcome, err := c.do(ctx, method, path, body, out)
	c.obs.RayCall(endpoint, outcome, time.Since(start))
	return resp, err
}

// do runs one request and says how it ended: one of the mvp.Outcome constants.
func (c *Client) do(ctx context.Context, method, path string, body, out any) (*resty.Response, string, error) {
	req := c.r.R().SetContext(ctx)
	if body != nil {
		req.SetHeader("Content-Type", "application/json").SetBody(body)
	}
	resp, err := req.Execute(method, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, mvp.OutcomeCanceled, ctx.Err()
		}
		hint := ""
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			// Running but slow (a head under load) is the other reading of a timeout.
			hint = fmt.Sprintf(", or is it slower than v2.ray.request_timeout_s (%s)?", c.r.GetClient().Timeout)
		}
		return nil, mvp.OutcomeUnreachable, fmt.Errorf("%s %s: %w (%s; is Ray's dashboard running at %s? `address` in dev.yaml%s)",
			method, path, mvp.ErrRayUnavailable, scrub(err.Error()), redacted(c.r.BaseURL), hint)
	}
	switch code := resp.StatusCode(); {
	case code < 300:
		if out != nil {
			if err := json.Unmarshal(resp.Body(), out); err != nil {
				return resp, mvp.OutcomeServerError, fmt.Errorf("%s %s: %w (undecodable answer: %v; it began %q: is "+
					"`address` in dev.yaml Ray's dashboard, or does a proxy or login page answer there?)", method, path,
					mvp.ErrRayUnavailable, err, clipBody(resp.Body()))
			}
		}
		return resp, mvp.OutcomeOK, nil
	case code == http.StatusNotFound && strings.Contains(string(resp.Body()), "does not exist"):
		// Ray's own answer for an unknown job ("Job X does not exist"). Any other 404 (a proxy's page while the
		// head is not ready, a wrong address) is not a verdict on the job: taken for one, live attempts would be
		// judged lost and submitted again while they run.
		return resp, mvp.OutcomeNotFound, fmt.Errorf("%s %s: %w", method, path, mvp.ErrJobNotFound)
	case code == http.StatusNotFound:
		return resp, mvp.OutcomeServerError, fmt.Errorf("%s %s: %w (HTTP 404 that is not Ray's job server's: %s; "+
			"check `address` in dev.yaml, and what answers in front of the dashboard)", method, path, mvp.ErrRayUnavailable,
			lastLine(resp.Body()))
	case stateAPIFull(code, resp.Body()):
		return resp, mvp.OutcomeBusy, fmt.Errorf("%s %s: %w: %w (HTTP %d: %s)", method, path, mvp.ErrRayUnavailable, mvp.ErrRayBusy,
			code, lastLine(resp.Body()))
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		// Not taken now (an overloaded dashboard, or a proxy in front of it): no verdict on the request. A submit
		// so answered is looked up and sent again with the same id, not failed as the user's error.
		return resp, mvp.OutcomeServerError, fmt.Errorf("%s %s: %w (HTTP %d: %s)", method, path, mvp.ErrRayUnavailable, code,
			lastLine(resp.Body()))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return resp, mvp.OutcomeAuth, fmt.Errorf("%s %s: %w (Ray answered %d: check the Ray token in v2.ray.token_env)", method, path,
			mvp.ErrRayUnavailable, code)
	case code >= 400 && strings.Contains(string(resp.Body()), "submission_id") &&
		strings.Contains(string(resp.Body()), "already exists"):
		// 500 when the head relays its job agent's answer (measured, ray-facts.md), 400 when the job manager
		// answers itself: either way the job exists.
		return resp, mvp.OutcomeExists, fmt.Errorf("%s %s: %w", method, path, mvp.ErrJobExists)
	case code >= 500 && agentRefusal.Match(resp.Body()):
		// Ray's head relays its job agent's 400 (the job manager's ValueError or TypeError on this request: an
		// entrypoint_label_selector it refuses, say) as a 500 whose traceback says so: a verdict on the request,
		// which no retry changes. Taken for an outage, that one submission was posted again on every pass, and the
		// pass it held read as the job server being down: nothing else was admitted or followed.
		return resp, mvp.OutcomeRefused, fmt.Errorf("%s %s: %w", method, path, &mvp.Error{Code: mvp.CodeInvalid,
			Message: fmt.Sprintf("Ray's job agent refused the request (HTTP 400, relayed by the head as %d): %s", code,
				lastLine(resp.Body()))})
	case code >= 500 && strings.Contains(string(resp.Body()), "non-terminal state"):
		return resp, mvp.OutcomeConflict, fmt.Errorf("%s %s: %w", method, path, &mvp.Error{Code: mvp.CodeConflict, Message: "the job is still running"})
	case code >= 500:
		return resp, mvp.OutcomeServerError, fmt.Errorf("%s %s: %w (HTTP %d: %s)", method, path, mvp.ErrRayUnavailable, code, lastLine(resp.Body()))
	default:
		return resp, mvp.OutcomeRefused, fmt.Errorf("%s %s: %w", method, path, &mvp.Error{Code: mvp.CodeInvalid,
			Message: fmt.Sprintf("Ray refused the request (HTTP %d): %s", code, lastLine(resp.Body()))})
	}
}

// stateAPIFull reports whether an answer is Ray's state API refusing a request for its limit of requests in
// progress (RAY_STATE_SERVER_MAX_HTTP_REQUEST): 429 in Ray 2.60 (state_head.py limit_handler_), 500 in older
// Rays, both saying "Max number of in-progress requests".
func stateAPIFull(code int, body []byte) bool {
	return code >= 400 && bytes.Contains(body, []byte("Max number of in-progress requests"))
}

// agentRefusal finds, in a 5xx's traceback, the RuntimeError Ray's head raises for its job agent's 400
// (JobAgentSubmissionClient._raise_error in Ray's job_head.py: "Request failed with status code 400: …").
var agentRefusal = regexp.MustCompile(`RuntimeError: Request failed with status code 400\b`)

// redacted is a URL with any password in it replaced, for messages.
func redacted(raw string) string {
	if r := RedactedURL(raw); r != "" {
		return r
	}
	return "the configured address"
}

// RedactedURL is raw with any password in it replaced, for a message that names the address; "" when raw is not a
// URL (the message then names the setting only).
func RedactedURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return ""
}

// scrub keeps tokens out of error text.
func scrub(s string) string {
	if i := strings.Index(s, "Bearer "); i >= 0 {
		return s[:i] + "Bearer <redacted>"
	}
	return s
}

// lastLine is the last line of an error answer that says something: a line without a letter or digit is passed
// over (Ray's head relays its job agent's traceback in a RuntimeError whose message ends with a line holding only
// "."; taken for the last line, a log that Ray cannot decode read "HTTP 500: ." instead of the UnicodeDecodeError).
func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	for rest := s; rest != ""; {
		line := rest
		if i := strings.LastIndex(rest, "\n"); i >= 0 {
			line, rest = rest[i+1:], rest[:i]
		} else {
			rest = ""
		}
		if line = strings.TrimSpace(line); strings.IndexFunc(line, func(r rune) bool {
			return unicode.IsLetter(r) || unicode.IsDigit(r)
		}) >= 0 {
			s = line
			break
		}
	}
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return mvp.Clip(s, 300) // between characters: a cut inside one made the error text not UTF-8
}

// SubmitJob posts a job. Ray's "already exists" answer is mvp.ErrJobExists.
func (c *Client) SubmitJob(ctx context.Context, s *mvp.JobSubmission) error {
	_, err := c.call(ctx, "submit_job", http.MethodPost, "/api/jobs/", s, nil)
	if err != nil {
		return fmt.Errorf("submit job %s: %w", s.SubmissionID, err)
	}
	return nil
}

// GetJob returns Ray's view of a job.
func (c *Client) GetJob(ctx context.Context, id string) (*mvp.JobInfo, error) {
	var info mvp.JobInfo
	if _, err := c.call(ctx, "get_job", http.MethodGet, jobPath(id, ""), nil, &info); err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return &info, nil
}

// ListJobs returns every job Ray's job server keeps, with its metadata (GET /api/jobs/). Its cost grows with the
// jobs kept: call it seldom.
func (c *Client) ListJobs(ctx context.Context) ([]*mvp.JobInfo, error) {
	var out []*mvp.JobInfo
	if _, err := c.call(ctx, "list_jobs", http.MethodGet, "/api/jobs/", nil, &out); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// StopJob asks Ray to stop a job.
func (c *Client) StopJob(ctx context.Context, id string) error {
	if _, err := c.call(ctx, "stop_job", http.MethodPost, jobPath(id, "/stop"), nil, nil); err != nil {
		return fmt.Errorf("stop job %s: %w", id, err)
	}
	return nil
}

// DeleteJob removes a finished job from Ray's job server.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	if _, err := c.call(ctx, "delete_job", http.MethodDelete, jobPath(id, ""), nil, nil); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// CopyJobLog writes a job's whole driver log to w, byte for byte, and returns how many bytes it wrote. With the
// driver's node known, it streams Ray's file job-driver-<submission id>.log from that node through Ray's state
// API (GET /api/v0/logs/file?node_id=…&filename=…&lines=-1): nothing is held in memory, on either side, and bytes
// that are not UTF-8 come through (the job server's /api/jobs/<id>/logs decodes the whole file as UTF-8 in
// memory: it answers 500 for one byte that is not, and a log of hundreds of MB took its node's agent past
// 14 GB, walk-through 16). When the node is not known (the driver never started) or the file is absent there
// (streamLogFile), it falls back to JobLogs, only then and only if nothing was written yet; a copy cut short is
// an error, so that the caller drops what it wrote. ctx bounds the whole copy (the per-call timeout does not).
func (c *Client) CopyJobLog(ctx context.Context, id, driverNodeID string, w io.Writer) (int64, error) {
	if driverNodeID == "" {
		// Ray's answer says all when the job has no driver yet: the job server's copy of a job Ray does not hold
		// is the same 404, and of a job without a driver (its agent's address is set with its node) is empty
		// (job_head.get_logs). A follower polls a pending attempt every second: one call, not two.
		node, err := c.driverNode(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("logs of job %s: %w", id, err)
		}
		if node == "" {
			return 0, nil
		}
		driverNodeID = node
	}
	if driverNodeID != "" {
		n, absent, err := c.streamLogFile(ctx, id, driverNodeID, w)
		if n > 0 || !absent || ctx.Err() != nil {
			if err != nil {
				return n, fmt.Errorf("logs of job %s: %w", id, err)
			}
			return n, nil
		}
		c.log.Debug("driver log file not on its node's agent; reading the job server's copy", "submission_id", id, "err", err)
	}
	logs, err := c.JobLogs(ctx, id)
	if err != nil {
		return 0, err
	}
	n, err := io.WriteString(w, logs)
	return int64(n), err
}

// streamLogFile copies the driver log file of job id from node to w. absent is true when the state API has no
// such file to give: its node's agent is gone ("Agent for node id … doesn't exist", HTTP 500), it answers 404, or
// it sent nothing (Ray 2.60 answers 200 with no bytes for a file that is not there). Any other failure is err
// with absent false: the job server's copy is not tried then (it is read by the same agent, decoded whole).
func (c *Client) streamLogFile(ctx context.Context, id, node string, w io.Writer) (n int64, absent bool, err error) {
	places := c.copies
	if mvp.SchedulerRead(ctx) {
		places = c.ownCopies
	}
	select {
	case places <- struct{}{}:
		defer func() { <-places }()
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	q := url.Values{"node_id": {node}, "filename": {driverLogFile(id)}, "lines": {"-1"}}
	// Ray bounds the whole stream by the request's timeout (30 s when none is given, then it closes the stream part
	// way): the copy's own bound is given instead.
	if dl, ok := ctx.Deadline(); ok {
		q.Set("timeout", strconv.Itoa(max(int(time.Until(dl).Seconds()), 1)))
	} else {
		q.Set("timeout", strconv.Itoa(int(LogFileTimeout.Seconds())))
	}
	return c.getLog(ctx, c.stream, "file", "log_file", q, w)
}

// driverNode is the node Ray says job id's driver runs on, for a read of its log before mvp recorded it (right
// after the driver started); "" when the driver has not started. An error is Ray's (not found, or it cannot say
// now): the job server, read by the same head, would not tell more, and it holds a log whole in memory.
func (c *Client) driverNode(ctx context.Context, id string) (string, error) {
	info, err := c.GetJob(ctx, id)
	if err != nil {
		return "", err
	}
	return info.DriverNodeID, nil
}

// driverLogFile is the name of job id's driver log in its node's log folder.
func driverLogFile(id string) string { return "job-driver-" + id + ".log" }

// FollowJobLog writes job id's driver log file, from its first byte, to w and goes on writing what the driver
// appends to it, as Ray's state API streams it (`/api/v0/logs/stream`: the node's agent reads the file once, then
// looks for new bytes every interval), until ctx is done (its error is returned) or Ray ends the stream (nil, or
// what cut it). Ray 2.60 ignores the state API's timeout for a stream and cuts it after 300 s. A follower that
// copied the whole file at every poll made the agent read it all again each time, a cost that grows with the log
// and with every follower. driverNodeID "" is asked of Ray.
func (c *Client) FollowJobLog(ctx context.Context, id, driverNodeID string, interval time.Duration, w io.Writer) (int64, error) {
	if driverNodeID == "" {
		node, err := c.driverNode(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("follow the log of job %s: %w", id, err)
		}
		if node == "" {
			return 0, fmt.Errorf("follow the log of job %s: its driver has not started", id)
		}
		driverNodeID = node
	}
	if c.streams != nil {
		select {
		case c.streams <- struct{}{}:
			defer func() { <-c.streams }()
		default:
			return 0, fmt.Errorf("follow the log of job %s: %w: %w (mvp has %d log streams from Ray open, as many as "+
				"v2.ray.max_log_streams allows: read it by copies)", id, mvp.ErrRayUnavailable, mvp.ErrRayBusy, cap(c.streams))
		}
	}
	q := url.Values{"node_id": {driverNodeID}, "filename": {driverLogFile(id)}, "lines": {"-1"},
		"interval": {strconv.FormatFloat(max(interval, 100*time.Millisecond).Seconds(), 'f', -1, 64)}}
	n, absent, err := c.getLog(ctx, c.follow, "stream", "log_stream", q, w)
	switch {
	case ctx.Err() != nil:
		return n, ctx.Err()
	case err != nil:
		return n, fmt.Errorf("follow the log of job %s: %w", id, err)
	case absent:
		return 0, fmt.Errorf("follow the log of job %s: %w (its node's agent has no file %s)", id, mvp.ErrRayUnavailable, driverLogFile(id))
	}
	return n, nil
}

// getLog copies a log the state API serves as media (file or stream) with the query q to w; endpoint names the
// call in the metrics. absent is true when the state API has no such file to give (streamLogFile).
func (c *Client) getLog(ctx context.Context, hc *http.Client, media, endpoint string, q url.Values, w io.Writer) (n int64, absent bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.r.BaseURL, "/")+"/api/v0/logs/"+media+"?"+q.Encode(), nil)
	if err != nil {
		return 0, false, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	start := time.Now()
	outcome := mvp.OutcomeOK
	defer func() { c.obs.RayCall(endpoint, outcome, time.Since(start)) }()
	resp, err := hc.Do(req)
	if err != nil {
		outcome = mvp.OutcomeUnreachable
		if ctx.Err() != nil {
			outcome = mvp.OutcomeCanceled
			return 0, false, ctx.Err()
		}
		return 0, false, fmt.Errorf("%w (%s)", mvp.ErrRayUnavailable, scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		outcome = mvp.OutcomeServerError
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if stateAPIFull(resp.StatusCode, body) {
			outcome = mvp.OutcomeBusy
			return 0, false, fmt.Errorf("%w: %w (the state API answered HTTP %d: %s)", mvp.ErrRayUnavailable, mvp.ErrRayBusy,
				resp.StatusCode, lastLine(body))
		}
		gone := resp.StatusCode == http.StatusNotFound || strings.Contains(string(body), "doesn't exist")
		return 0, gone, fmt.Errorf("%w (the state API answered HTTP %d: %s)", mvp.ErrRayUnavailable, resp.StatusCode, lastLine(body))
	}
	dw := &sinkWriter{w: w}
	n, err = io.Copy(dw, resp.Body)
	switch {
	case dw.err != nil:
		return n, false, dw.err // the caller's writer (its disk, its client) failed: not Ray's doing
	case err != nil:
		outcome = mvp.OutcomeServerError
		if ctx.Err() != nil {
			outcome = mvp.OutcomeCanceled
			return n, false, fmt.Errorf("copy of the driver log cut short after %d bytes: %w", n, ctx.Err())
		}
		return n, false, fmt.Errorf("copy of the driver log cut short after %d bytes: %w (%s)", n, mvp.ErrRayUnavailable, scrub(err.Error()))
	}
	return n, n == 0, nil
}

// sinkWriter remembers the first error of the writer a copy writes to, so that it is told apart from the source's.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// LogFileTimeout is the bound CopyJobLog gives Ray's state API when its context has no deadline.
const LogFileTimeout = 5 * time.Minute

// JobLogs returns a job's whole driver log.
func (c *Client) JobLogs(ctx context.Context, id string) (string, error) {
	var out struct {
		Logs string `json:"logs"`
	}
	if _, err := c.call(ctx, "job_logs", http.MethodGet, jobPath(id, "/logs"), nil, &out); err != nil {
		return "", fmt.Errorf("logs of job %s: %w", id, err)
	}
	return out.Logs, nil
}

// UploadPackage puts a runtime_env package into Ray's GCS as Ray's own client does: PUT
// /api/packages/<protocol>/<name> with the archive as the raw body and no Content-Type. uri is
// <protocol>://<name> (gcs://_ray_pkg_<hex>.zip).
func (c *Client) UploadPackage(ctx context.Context, uri string, data []byte) error {
	protocol, name, ok := strings.Cut(uri, "://")
	if !ok || protocol == "" || name == "" || strings.Contains(name, "/") {
		return mvp.Errorf(mvp.CodeInvalid, "runtime_env", "upload package: %q is not a package URI like gcs://_ray_pkg_<hex>.zip", uri)
	}
	path := "/api/packages/" + url.PathEscape(protocol) + "/" + url.PathEscape(name)
	start := time.Now()
	outcome, err := c.upload(ctx, uri, path, data)
	c.obs.RayCall("upload_package", outcome, time.Since(start))
	return err
}

// upload PUTs one package and says how it ended (an mvp.Outcome constant).
func (c *Client) upload(ctx context.Context, uri, path string, data []byte) (string, error) {
	resp, err := c.r.R().SetContext(ctx).SetBody(data).Execute(http.MethodPut, path)
	if err != nil {
		if ctx.Err() != nil {
			return mvp.OutcomeCanceled, ctx.Err()
		}
		return mvp.OutcomeUnreachable, fmt.Errorf("upload package %s: %w (%s)", uri, mvp.ErrRayUnavailable, scrub(err.Error()))
	}
	switch code := resp.StatusCode(); {
	case code == http.StatusOK:
		return mvp.OutcomeOK, nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return mvp.OutcomeAuth, fmt.Errorf("upload package %s: %w (HTTP %d: %s)", uri, mvp.ErrRayUnavailable, code, lastLine(resp.Body()))
	case code >= 500:
		return mvp.OutcomeServerError, fmt.Errorf("upload package %s: %w (HTTP %d: %s)", uri, mvp.ErrRayUnavailable, code, lastLine(resp.Body()))
	default:
		return mvp.OutcomeRefused, fmt.Errorf("upload package %s: %w", uri, &mvp.Error{Code: mvp.CodeInvalid,
			Message: fmt.Sprintf("Ray refused the package (HTTP %d): %s", code, lastLine(resp.Body()))})
	}
}

// Version checks that the Job server answers.
func (c *Client) Version(ctx context.Context) (string, error) {
	var out struct {
		RayVersion string `json:"ray_version"`
	}
	if _, err := c.call(ctx, "version", http.MethodGet, "/api/version", nil, &out); err != nil {
		return "", fmt.Errorf("ray version: %w", err)
	}
	return out.RayVersion, nil
}

// ClusterStatus is the lagging fallback view from the dashboard's /api/cluster_status (usage by node), with node
// liveness from /api/v0/nodes and the placement groups from Ray's state API (/api/v0/placement_groups), so that
// reservations and the stuck-gang watchdog work on it as on the live probe's. It marks the view Source "dashboard".
func (c *Client) ClusterStatus(ctx context.Context) (*mvp.ClusterView, error) {
	var st struct {
		Data struct {
			ClusterStatus struct {
				LoadMetricsReport struct {
					UsageByNode map[string]map[string][]float64 `json:"usageByNode"`
				} `json:"loadMetricsReport"`
			} `json:"clusterStatus"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, "cluster_status", http.MethodGet, "/api/cluster_status", nil, &st); err != nil {
		return nil, fmt.Errorf("cluster status: %w", err)
	}
	var nodes struct {
		Data struct {
			Result struct {
				Result []struct {
					NodeID    string             `json:"node_id"`
					State     string             `json:"state"`
					IsHead    bool               `json:"is_head_node"`
					IP        string             `json:"node_ip"`
					Resources map[string]float64 `json:"resources_total"`
				} `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, "list_nodes", http.MethodGet, "/api/v0/nodes?detail=1", nil, &nodes); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	v := &mvp.ClusterView{At: time.Now(), Source: "dashboard"}
	for _, n := range nodes.Data.Result.Result {
		node := mvp.Node{ID: n.NodeID, Alive: n.State == "ALIVE", IsHead: n.IsHead, IP: n.IP, Total: n.Resources,
			Available: map[string]float64{}}
		usage, reported := st.Data.ClusterStatus.LoadMetricsReport.UsageByNode[n.NodeID]
		for k, total := range n.Resources {
			// A node whose usage is not in the reading yet (for a few seconds after it joins) counts as full:
			// what it holds is unknown.
			if reported {
				node.Available[k] = total
			} else {
				node.Available[k] = 0
			}
		}
		for res, ut := range usage {
			if len(ut) == 2 {
				node.Available[snake(res)] = ut[1] - ut[0]
			}
		}
		v.Nodes = append(v.Nodes, node)
	}
	groups, err := c.placementGroups(ctx)
	if err != nil {
		return nil, err
	}
	// The state API answers from the GCS at once; the usage lags it by a few seconds. A group counted as placed
	// (CREATED, or PREPARED: its bundles held on their nodes) has its gang's reservation dropped, so it is listed
	// only once the usage shows it on its nodes.
	usage := st.Data.ClusterStatus.LoadMetricsReport.UsageByNode
	for _, g := range groups {
		if !g.Placed() || inUsage(usage, g) {
			v.Groups = append(v.Groups, g.PlacementGroup)
		}
	}
	return v, nil
}

// inUsage reports whether the usage reading shows the group on every node that holds one of its bundles: Ray adds
// a resource bundle_group_<id> to each such node, which the dashboard camelCases (bundleGroup<ID in mixed case>).
func inUsage(usage map[string]map[string][]float64, g placementGroup) bool {
	want := "bundlegroup" + strings.ToLower(g.ID)
	has := func(node map[string][]float64) bool {
		for res := range node {
			if strings.ToLower(res) == want {
				return true
			}
		}
		return false
	}
	if len(g.nodes) == 0 {
		for _, node := range usage {
			if has(node) {
				return true
			}
		}
		return false
	}
	for _, id := range g.nodes {
		if !has(usage[id]) {
			return false
		}
	}
	return true
}

// maxStateListLimit is the most rows Ray's state API returns in one answer (its RAY_MAX_LIMIT_FROM_API_SERVER
// default); without a limit it returns 100.
const maxStateListLimit = 10000

// placementGroupsQuery asks for every placement group that is not REMOVED (Ray keeps removed ones for a while;
// the probe leaves them out too), with detail for bundles and scheduling state.
var placementGroupsQuery = "/api/v0/placement_groups?" + url.Values{
	"detail": {"1"}, "limit": {fmt.Sprint(maxStateListLimit)},
	"filter_keys": {"state"}, "filter_predicates": {"!="}, "filter_values": {"REMOVED"},
}.Encode()

// placementGroup is a group as the state API gives it, with the nodes its bundles are on.
type placementGroup struct {
	mvp.PlacementGroup
	nodes []string
}

// placementGroups reads the placement groups from Ray's state API, in the probe's shape (the state API has no
// strategy; it stays empty). An answer cut short (more groups than the limit, or the GCS answering in part) is
// used as it is, with a warning: a group left out only makes its gang look unplaced, which holds more GPUs back.
func (c *Client) placementGroups(ctx context.Context) ([]placementGroup, error) {
	var out struct {
		Data struct {
			Result struct {
				Total                 int    `json:"total"`
				NumAfterTruncation    int    `json:"num_after_truncation"`
				NumFiltered           int    `json:"num_filtered"`
				PartialFailureWarning string `json:"partial_failure_warning"`
				Result                []struct {
					ID           string `json:"placement_group_id"`
					CreatorJobID string `json:"creator_job_id"`
					State        string `json:"state"`
					Bundles      []struct {
						UnitResources map[string]float64 `json:"unit_resources"`
						NodeID        string             `json:"node_id"`
					} `json:"bundles"`
					Stats struct {
						SchedulingState string `json:"scheduling_state"`
					} `json:"stats"`
				} `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, "list_placement_groups", http.MethodGet, placementGroupsQuery, nil, &out); err != nil {
		return nil, fmt.Errorf("placement groups: %w", err)
	}
	r := out.Data.Result
	var warn []string
	if r.PartialFailureWarning != "" {
		warn = append(warn, "Ray answered in part: "+r.PartialFailureWarning)
	}
	if len(r.Result) < r.NumFiltered {
		warn = append(warn, fmt.Sprintf("Ray returned %d of %d placement groups (its limit)", len(r.Result), r.NumFiltered))
	}
	if r.NumAfterTruncation < r.Total {
		warn = append(warn, fmt.Sprintf("the GCS gave %d of its %d placement groups", r.NumAfterTruncation, r.Total))
	}
	c.warnOnce(strings.Join(warn, "; "))
	groups := make([]placementGroup, 0, len(r.Result))
	for _, g := range r.Result {
		if g.State == "REMOVED" {
			continue
		}
		pg := placementGroup{PlacementGroup: mvp.PlacementGroup{ID: g.ID, CreatorJobID: g.CreatorJobID, State: g.State,
			SchedulingState: g.Stats.SchedulingState, Bundles: make([]map[string]float64, 0, len(g.Bundles))}}
		for _, b := range g.Bundles {
			pg.Bundles = append(pg.Bundles, b.UnitResources)
			if b.NodeID != "" && !slices.Contains(pg.nodes, b.NodeID) {
				pg.nodes = append(pg.nodes, b.NodeID)
			}
		}
		groups = append(groups, pg)
	}
	return groups, nil
}

// warnOnce logs a warning about the placement group list when it differs from the last one (not every tick).
func (c *Client) warnOnce(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if msg == c.lastWarning {
		return
	}
	c.lastWarning = msg
	if msg != "" {
		c.log.Warn("the dashboard's placement group list is incomplete; gangs left out count as unplaced", "warning", msg)
	}
}

// snake maps the dashboard's camelCased resource names back to Ray's (workerNode → worker_node; GPU stays GPU).
func snake(s string) string {
	if strings.ToUpper(s) == s {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' && i > 0 {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clipBody is the start of an answer, for a message.
func clipBody(b []byte) string { return mvp.Clip(strings.TrimSpace(string(b)), 120) }
