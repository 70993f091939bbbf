// Package metrics is mvp's Prometheus metrics (github.com/prometheus/client_golang): the instruments the service
// feeds as things happen (it implements mvp.Observer), and collectors that read what lives in the database and
// the latest cluster view at scrape time. Everything is registered on a registry the caller owns, never the global
// one. specs/metrics.md lists every metric.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mvp2/mvp/internal/mvp"
)

// Label values for the cluster view's source; the view's Source field takes one of these.
var viewSources = []string{"probe", "dashboard"}

// Metrics holds mvp's instruments. Its methods are safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	now       func() time.Time
	submitted *prometheus.CounterVec
	admitted  *prometheus.CounterVec
	rayCalls  *prometheus.HistogramVec
	pass      prometheus.Histogram
	batch     prometheus.Histogram
	http      *prometheus.HistogramVec

	mu   sync.Mutex
	view *mvp.ClusterView
}

var _ mvp.Observer = (*Metrics)(nil)

// Options configure New.
type Options struct {
	// Now is the clock the ages are measured with; default time.Now.
	Now func() time.Time
}

// New makes the instruments and registers them, with the collector of the cluster view, on reg.
func New(reg *prometheus.Registry, o Options) (*Metrics, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Metrics{reg: reg, now: o.Now,
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mvp_tasks_submitted_total",
			Help: "Tasks the API accepted and stored, by workload."}, []string{"workload"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mvp_tasks_admitted_total",
			Help: "Attempts the scheduler admitted (recorded in SUBMITTING, then sent to Ray), by workload."}, []string{"workload"}),
		rayCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mvp_ray_request_duration_seconds",
			Help:    "Duration of calls to Ray's Job server (REST), by endpoint and outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"endpoint", "outcome"}),
		pass: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mvp_scheduler_pass_duration_seconds",
			Help:    "Duration of one pass of the scheduler loop (follow live attempts, read the cluster, decide, apply).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mvp_sqlite_writes_per_commit",
			Help:    "Writes committed together in one SQLite transaction (one fsync) by the group-commit writer.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9)}), // 1 … 256, the writer's largest batch
		http: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mvp_http_request_duration_seconds",
			Help:    "Duration of the API's and the Ray door's answers, by route pattern, method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"route", "method", "code"}),
	}
	for _, w := range mvp.Workloads {
		m.submitted.WithLabelValues(string(w))
		m.admitted.WithLabelValues(string(w))
	}
	b := mvp.Build()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mvp_build_info",
		Help: "1, labelled with the build that runs: the git commit (revision, \"unknown\" when not recorded), whether the clone had uncommitted changes, the Go version."},
		[]string{"revision", "modified", "go_version"})
	build.WithLabelValues(b.Revision, fmt.Sprint(b.Modified), b.GoVersion).Set(1)
	for _, c := range []prometheus.Collector{m.submitted, m.admitted, m.rayCalls, m.pass, m.batch, m.http, viewCollector{m}, build} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// CollectStore registers the collector that reads the task and attempt counts from c at each scrape (one grouped
// query); it bounds each reading by timeout.
func (m *Metrics) CollectStore(c mvp.Counter, timeout time.Duration) error {
	if err := m.reg.Register(storeCollector{c: c, now: m.now, timeout: timeout}); err != nil {
		return fmt.Errorf("register store metrics: %w", err)
	}
	return nil
}

// CollectHealth registers the collector of mvp_health_degraded: at each scrape, 1 for each of components that
// degraded (what /healthz says now) reports degraded, 0 for the others. /healthz's sentences had no metric: a full
// database disk or an unmounted shared_root held every task with nothing for an alert to fire on.
func (m *Metrics) CollectHealth(components []string, degraded func() map[string]bool) error {
	c := healthCollector{components: components, degraded: degraded,
		desc: prometheus.NewDesc("mvp_health_degraded",
			"1 while /healthz reports this component degraded (its sentence says why), else 0.", []string{"component"}, nil)}
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("register health metrics: %w", err)
	}
	return nil
}

type healthCollector struct {
	components []string
	degraded   func() map[string]bool
	desc       *prometheus.Desc
}

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.degraded()
	for _, comp := range c.components {
		v := 0.0
		if d[comp] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, comp)
	}
}

// Handler serves the registry in the Prometheus exposition formats. A collector that fails is logged and left
// out; the rest is served.
func (m *Metrics) Handler(logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError,
		ErrorLog: slogPrintln{logger}, Registry: m.reg})
}

type slogPrintln struct{ l *slog.Logger }

func (s slogPrintln) Println(v ...any) { s.l.Warn("metrics", "err", fmt.Sprint(v...)) }

// TaskSubmitted counts a task the API accepted.
func (m *Metrics) TaskSubmitted(w mvp.Workload) { m.submitted.WithLabelValues(string(w)).Inc() }

// TaskAdmitted counts an admission.
func (m *Metrics) TaskAdmitted(w mvp.Workload) { m.admitted.WithLabelValues(string(w)).Inc() }

// RayCall observes one call to Ray's Job server.
func (m *Metrics) RayCall(endpoint, outcome string, d time.Duration) {
	m.rayCalls.WithLabelValues(endpoint, outcome).Observe(d.Seconds())
}

// SchedulerPass observes one scheduler pass.
func (m *Metrics) SchedulerPass(d time.Duration) { m.pass.Observe(d.Seconds()) }

// HTTPRequest times one answer of the API.
func (m *Metrics) HTTPRequest(route, method string, status int, d time.Duration) {
	m.http.WithLabelValues(route, method, strconv.Itoa(status)).Observe(d.Seconds())
}

// WriteBatch observes one group commit.
func (m *Metrics) WriteBatch(n int) { m.batch.Observe(float64(n)) }

// ClusterRead keeps the view the scheduler decides on; the node and view gauges are read from it at scrape time.
func (m *Metrics) ClusterRead(v *mvp.ClusterView) {
	m.mu.Lock()
	m.view = v
	m.mu.Unlock()
}

var (
	nodeGPUsDesc = prometheus.NewDesc("mvp_node_gpus", "GPUs of an alive Ray node, in the latest cluster view the scheduler read.",
		[]string{"node_id"}, nil)
	nodeFreeDesc = prometheus.NewDesc("mvp_node_gpus_free", "GPUs free on an alive Ray node, in the latest cluster view the scheduler read.",
		[]string{"node_id"}, nil)
	viewAgeDesc = prometheus.NewDesc("mvp_cluster_view_age_seconds",
		"Age of the latest cluster view the scheduler read (absent before the first reading).", nil, nil)
	viewSourceDesc = prometheus.NewDesc("mvp_cluster_view_source",
		"1 for the source of the latest cluster view (probe: live; dashboard: the lagging fallback), 0 for the other.",
		[]string{"source"}, nil)
)

// viewCollector exposes the latest cluster view.
type viewCollector struct{ m *Metrics }

func (viewCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeGPUsDesc
	ch <- nodeFreeDesc
	ch <- viewAgeDesc
	ch <- viewSourceDesc
}

func (c viewCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	v := c.m.view
	c.m.mu.Unlock()
	if v == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(viewAgeDesc, prometheus.GaugeValue, max(c.m.now().Sub(v.At).Seconds(), 0))
	for _, s := range viewSources {
		on := 0.0
		if v.Source == s {
			on = 1
		}
		ch <- prometheus.MustNewConstMetric(viewSourceDesc, prometheus.GaugeValue, on, s)
	}
	for _, n := range v.Nodes {
		if !n.Alive {
			continue
		}
		ch <- prometheus.MustNewConstMetric(nodeGPUsDesc, prometheus.GaugeValue, n.Total["GPU"], n.ID)
		ch <- prometheus.MustNewConstMetric(nodeFreeDesc, prometheus.GaugeValue, n.Available["GPU"], n.ID)
	}
}

var (
	tasksDesc = prometheus.NewDesc("mvp_tasks", "Tasks in the database, by state and workload.",
		[]string{"state", "workload"}, nil)
	queueDepthDesc = prometheus.NewDesc("mvp_queue_depth",
		"Tasks waiting in mvp's queue (QUEUED or PENDING_RESOURCES), by workload.", []string{"workload"}, nil)
	oldestWaitDesc = prometheus.NewDesc("mvp_queue_oldest_wait_seconds",
		"Time since the oldest waiting task (QUEUED or PENDING_RESOURCES) was submitted, by workload; 0 when none waits.",
		[]string{"workload"}, nil)
	attemptsDesc = prometheus.NewDesc("mvp_attempts_ended_total",
		"Attempts whose Ray job ended, by failure kind (none: succeeded, or stopped on a cancel).",
		[]string{"failure_kind"}, nil)
)

// storeCollector reads the counts from the database at scrape time.
type storeCollector struct {
	c       mvp.Counter
	now     func() time.Time
	timeout time.Duration
}

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- queueDepthDesc
	ch <- oldestWaitDesc
	ch <- attemptsDesc
}

func (s storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	counts, err := s.c.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(tasksDesc, err)
		return
	}
	now := s.now()
	type key struct {
		st mvp.State
		w  mvp.Workload
	}
	n := map[key]int{}
	depth := map[mvp.Workload]int{}
	oldest := map[mvp.Workload]time.Time{}
	for _, tc := range counts.Tasks {
		n[key{tc.State, tc.Workload}] += tc.N
		if tc.State.Waiting() {
			depth[tc.Workload] += tc.N
			if o, ok := oldest[tc.Workload]; !ok || tc.Oldest.Before(o) {
				oldest[tc.Workload] = tc.Oldest
			}
		}
	}
	for _, w := range mvp.Workloads {
		for _, st := range mvp.States {
			ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n[key{st, w}]), string(st), string(w))
		}
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(depth[w]), string(w))
		wait := 0.0
		if o, ok := oldest[w]; ok {
			wait = max(now.Sub(o).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(oldestWaitDesc, prometheus.GaugeValue, wait, string(w))
	}
	// Every kind, 0 until it happens: a series born at 1 is not counted by increase(), so the first INFRA failure
	// of a database went unalerted.
	ended := map[mvp.FailureKind]int{}
	for _, ac := range counts.EndedAttempts {
		ended[ac.FailureKind] += ac.N
	}
	for _, k := range mvp.FailureKinds {
		kind := string(k)
		if k == mvp.FailureNone {
			kind = "none"
		}
		ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.CounterValue, float64(ended[k]), kind)
	}
}
