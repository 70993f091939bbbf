// Package ray talks to Ray: a small typed client of the Job REST API (on go-resty), and the probe that reads the
// cluster's live per-node availability through a long-lived Python child.
package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

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
}

// Client is the Job REST API client. It implements mvp.RayClient.
type Client struct {
	r   *resty.Client
	log *slog.Logger
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
	return &Client{r: r, log: o.Logger}
}

type discardLogger struct{}

func (discardLogger) Errorf(string, ...any) {}
func (discardLogger) Warnf(string, ...any)  {}
func (discardLogger) Debugf(string, ...any) {}

func jobPath(id string, suffix string) string { return "/api/jobs/" + url.PathEscape(id) + suffix }

// call runs a request and maps transport errors and statuses to mvp errors.
func (c *Client) call(ctx context.Context, method, path string, body, out any) (*resty.Response, error) {
	req := c.r.R().SetContext(ctx)
	if body != nil {
		req.SetHeader("Content-Type", "application/json").SetBody(body)
	}
	resp, err := req.Execute(method, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w (%s)", method, path, mvp.ErrRayUnavailable, scrub(err.Error()))
	}
	switch code := resp.StatusCode(); {
	case code < 300:
		if out != nil {
			if err := json.Unmarshal(resp.Body(), out); err != nil {
				return resp, fmt.Errorf("%s %s: %w (undecodable answer: %v)", method, path, mvp.ErrRayUnavailable, err)
			}
		}
		return resp, nil
	case code == http.StatusNotFound:
		return resp, fmt.Errorf("%s %s: %w", method, path, mvp.ErrJobNotFound)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return resp, fmt.Errorf("%s %s: %w (Ray answered %d: check the Ray token in v2.ray.token_env)", method, path,
			mvp.ErrRayUnavailable, code)
	case code >= 500 && strings.Contains(string(resp.Body()), "already exists"):
		return resp, fmt.Errorf("%s %s: %w", method, path, mvp.ErrJobExists)
	case code >= 500 && strings.Contains(string(resp.Body()), "non-terminal state"):
		return resp, fmt.Errorf("%s %s: %w", method, path, &mvp.Error{Code: mvp.CodeConflict, Message: "the job is still running"})
	case code >= 500:
		return resp, fmt.Errorf("%s %s: %w (HTTP %d: %s)", method, path, mvp.ErrRayUnavailable, code, lastLine(resp.Body()))
	default:
		return resp, fmt.Errorf("%s %s: %w", method, path, &mvp.Error{Code: mvp.CodeInvalid,
			Message: fmt.Sprintf("Ray refused the request (HTTP %d): %s", code, lastLine(resp.Body()))})
	}
}

// scrub keeps tokens out of error text.
func scrub(s string) string {
	if i := strings.Index(s, "Bearer "); i >= 0 {
		return s[:i] + "Bearer <redacted>"
	}
	return s
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// SubmitJob posts a job. Ray's "already exists" answer is mvp.ErrJobExists.
func (c *Client) SubmitJob(ctx context.Context, s *mvp.JobSubmission) error {
	_, err := c.call(ctx, http.MethodPost, "/api/jobs/", s, nil)
	if err != nil {
		return fmt.Errorf("submit job %s: %w", s.SubmissionID, err)
	}
	return nil
}

// GetJob returns Ray's view of a job.
func (c *Client) GetJob(ctx context.Context, id string) (*mvp.JobInfo, error) {
	var info mvp.JobInfo
	if _, err := c.call(ctx, http.MethodGet, jobPath(id, ""), nil, &info); err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return &info, nil
}

// StopJob asks Ray to stop a job.
func (c *Client) StopJob(ctx context.Context, id string) error {
	if _, err := c.call(ctx, http.MethodPost, jobPath(id, "/stop"), nil, nil); err != nil {
		return fmt.Errorf("stop job %s: %w", id, err)
	}
	return nil
}

// DeleteJob removes a finished job from Ray's job server.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	if _, err := c.call(ctx, http.MethodDelete, jobPath(id, ""), nil, nil); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// JobLogs returns a job's whole driver log.
func (c *Client) JobLogs(ctx context.Context, id string) (string, error) {
	var out struct {
		Logs string `json:"logs"`
	}
	if _, err := c.call(ctx, http.MethodGet, jobPath(id, "/logs"), nil, &out); err != nil {
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
	resp, err := c.r.R().SetContext(ctx).SetBody(data).Execute(http.MethodPut, path)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("upload package %s: %w (%s)", uri, mvp.ErrRayUnavailable, scrub(err.Error()))
	}
	switch code := resp.StatusCode(); {
	case code == http.StatusOK:
		return nil
	case code >= 500 || code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("upload package %s: %w (HTTP %d: %s)", uri, mvp.ErrRayUnavailable, code, lastLine(resp.Body()))
	default:
		return fmt.Errorf("upload package %s: %w", uri, &mvp.Error{Code: mvp.CodeInvalid,
			Message: fmt.Sprintf("Ray refused the package (HTTP %d): %s", code, lastLine(resp.Body()))})
	}
}

// Version checks that the Job server answers.
func (c *Client) Version(ctx context.Context) (string, error) {
	var out struct {
		RayVersion string `json:"ray_version"`
	}
	if _, err := c.call(ctx, http.MethodGet, "/api/version", nil, &out); err != nil {
		return "", fmt.Errorf("ray version: %w", err)
	}
	return out.RayVersion, nil
}

// ClusterStatus is the lagging fallback view from the dashboard's /api/cluster_status (usage by node), with node
// liveness from /api/v0/nodes. It marks the view Source "dashboard".
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
	if _, err := c.call(ctx, http.MethodGet, "/api/cluster_status", nil, &st); err != nil {
		return nil, fmt.Errorf("cluster status: %w", err)
	}
	var nodes struct {
		Data struct {
			Result struct {
				Result []struct {
					NodeID    string             `json:"node_id"`
					State     string             `json:"state"`
					IsHead    bool               `json:"is_head_node"`
					Resources map[string]float64 `json:"resources_total"`
				} `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, http.MethodGet, "/api/v0/nodes?detail=1", nil, &nodes); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	v := &mvp.ClusterView{At: time.Now(), Source: "dashboard"}
	for _, n := range nodes.Data.Result.Result {
		node := mvp.Node{ID: n.NodeID, Alive: n.State == "ALIVE", IsHead: n.IsHead, Total: n.Resources,
			Available: map[string]float64{}}
		for k, total := range n.Resources {
			node.Available[k] = total
		}
		for res, ut := range st.Data.ClusterStatus.LoadMetricsReport.UsageByNode[n.NodeID] {
			if len(ut) == 2 {
				node.Available[snake(res)] = ut[1] - ut[0]
			}
		}
		v.Nodes = append(v.Nodes, node)
	}
	return v, nil
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
