package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mvp2/mvp/internal/mvp"
)

var now = time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)

// counts is a fixed mvp.Counter.
type counts struct {
	c   *mvp.Counts
	err error
}

func (f counts) Counts(context.Context) (*mvp.Counts, error) { return f.c, f.err }

func newMetrics(t *testing.T, c mvp.Counter) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CollectStore(c, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectHealth([]string{"ray", "shared_root"}, func() map[string]bool { return map[string]bool{"shared_root": true} }); err != nil {
		t.Fatal(err)
	}
	return reg, m
}

func sample() *mvp.Counts {
	return &mvp.Counts{
		Tasks: []mvp.TaskCount{
			{State: mvp.StateQueued, Workload: mvp.WorkloadPPO, N: 3, Oldest: now.Add(-90 * time.Second)},
			{State: mvp.StatePendingResources, Workload: mvp.WorkloadPPO, N: 2, Oldest: now.Add(-10 * time.Minute)},
			{State: mvp.StateRunning, Workload: mvp.WorkloadPPO, N: 1, Oldest: now.Add(-time.Hour)},
			{State: mvp.StateSucceeded, Workload: mvp.WorkloadSFT, N: 7, Oldest: now.Add(-time.Hour)},
		},
		EndedAttempts: []mvp.AttemptCount{{FailureKind: mvp.FailureNone, N: 7}, {FailureKind: mvp.FailureInfra, N: 2}},
	}
}

// feed observes one of each thing the service reports.
func feed(m *Metrics) {
	m.TaskSubmitted(mvp.WorkloadPPO)
	m.TaskSubmitted(mvp.WorkloadPPO)
	m.TaskAdmitted(mvp.WorkloadPPO)
	m.RayCall("get_job", mvp.OutcomeOK, 3*time.Millisecond)
	m.RayCall("get_job", mvp.OutcomeNotFound, 2*time.Millisecond)
	m.RayCall("submit_job", mvp.OutcomeUnreachable, time.Second)
	m.SchedulerPass(20 * time.Millisecond)
	m.WriteBatch(7)
	m.ClusterRead(&mvp.ClusterView{At: now.Add(-1500 * time.Millisecond), Source: "probe", Nodes: []mvp.Node{
		{ID: "head", Alive: true, IsHead: true, Total: map[string]float64{"CPU": 0}, Available: map[string]float64{}},
		{ID: "w1", Alive: true, Total: map[string]float64{"GPU": 4}, Available: map[string]float64{"GPU": 1}},
		{ID: "w2", Alive: true, Total: map[string]float64{"GPU": 4}, Available: map[string]float64{"GPU": 4}},
		{ID: "dead", Alive: false, Total: map[string]float64{"GPU": 4}, Available: map[string]float64{"GPU": 4}},
	}})
}

func TestNamesFollowPrometheusConventions(t *testing.T) {
	reg, m := newMetrics(t, counts{c: sample()})
	feed(m)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if n, _ := testutil.GatherAndCount(reg); n < 40 {
		t.Errorf("only %d series gathered", n)
	}
}

func TestValues(t *testing.T) {
	reg, m := newMetrics(t, counts{c: sample()})
	feed(m)
	want := `
# HELP mvp_queue_depth Tasks waiting in mvp's queue (QUEUED or PENDING_RESOURCES), by workload.
# TYPE mvp_queue_depth gauge
mvp_queue_depth{workload="grpo"} 0
mvp_queue_depth{workload="ppo"} 5
mvp_queue_depth{workload="ray_job"} 0
mvp_queue_depth{workload="sft"} 0
# HELP mvp_queue_oldest_wait_seconds Time since the oldest waiting task (QUEUED or PENDING_RESOURCES) was submitted, by workload; 0 when none waits.
# TYPE mvp_queue_oldest_wait_seconds gauge
mvp_queue_oldest_wait_seconds{workload="grpo"} 0
mvp_queue_oldest_wait_seconds{workload="ppo"} 600
mvp_queue_oldest_wait_seconds{workload="ray_job"} 0
mvp_queue_oldest_wait_seconds{workload="sft"} 0
# HELP mvp_attempts_ended_total Attempts whose Ray job ended, by failure kind (none: succeeded, or stopped on a cancel).
# TYPE mvp_attempts_ended_total counter
mvp_attempts_ended_total{failure_kind="HEARTBEAT_LOST"} 0
mvp_attempts_ended_total{failure_kind="INFRA"} 2
mvp_attempts_ended_total{failure_kind="INSUFFICIENT_RESOURCES"} 0
mvp_attempts_ended_total{failure_kind="MAX_QUEUED_EXCEEDED"} 0
mvp_attempts_ended_total{failure_kind="MAX_RUNTIME_EXCEEDED"} 0
mvp_attempts_ended_total{failure_kind="RUNTIME_ERROR"} 0
mvp_attempts_ended_total{failure_kind="UNKNOWN"} 0
mvp_attempts_ended_total{failure_kind="USER_ERROR"} 0
mvp_attempts_ended_total{failure_kind="none"} 7
# HELP mvp_tasks_submitted_total Tasks the API accepted and stored, by workload.
# TYPE mvp_tasks_submitted_total counter
mvp_tasks_submitted_total{workload="grpo"} 0
mvp_tasks_submitted_total{workload="ppo"} 2
mvp_tasks_submitted_total{workload="ray_job"} 0
mvp_tasks_submitted_total{workload="sft"} 0
# HELP mvp_tasks_admitted_total Attempts the scheduler admitted (recorded in SUBMITTING, then sent to Ray), by workload.
# TYPE mvp_tasks_admitted_total counter
mvp_tasks_admitted_total{workload="grpo"} 0
mvp_tasks_admitted_total{workload="ppo"} 1
mvp_tasks_admitted_total{workload="ray_job"} 0
mvp_tasks_admitted_total{workload="sft"} 0
# HELP mvp_node_gpus GPUs of an alive Ray node, in the latest cluster view the scheduler read.
# TYPE mvp_node_gpus gauge
mvp_node_gpus{node_id="head"} 0
mvp_node_gpus{node_id="w1"} 4
mvp_node_gpus{node_id="w2"} 4
# HELP mvp_node_gpus_free GPUs free on an alive Ray node, in the latest cluster view the scheduler read.
# TYPE mvp_node_gpus_free gauge
mvp_node_gpus_free{node_id="head"} 0
mvp_node_gpus_free{node_id="w1"} 1
mvp_node_gpus_free{node_id="w2"} 4
# HELP mvp_cluster_view_age_seconds Age of the latest cluster view the scheduler read (absent before the first reading).
# TYPE mvp_cluster_view_age_seconds gauge
mvp_cluster_view_age_seconds 1.5
# HELP mvp_cluster_view_source 1 for the source of the latest cluster view (probe: live; dashboard: the lagging fallback), 0 for the other.
# TYPE mvp_cluster_view_source gauge
mvp_cluster_view_source{source="dashboard"} 0
mvp_cluster_view_source{source="probe"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mvp_queue_depth", "mvp_queue_oldest_wait_seconds",
		"mvp_attempts_ended_total", "mvp_tasks_submitted_total", "mvp_tasks_admitted_total", "mvp_node_gpus",
		"mvp_node_gpus_free", "mvp_cluster_view_age_seconds", "mvp_cluster_view_source"); err != nil {
		t.Error(err)
	}
	tasks := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "mvp_tasks":
			for _, s := range mf.GetMetric() {
				tasks[s.GetLabel()[0].GetValue()+"/"+s.GetLabel()[1].GetValue()] = s.GetGauge().GetValue()
			}
		case "mvp_ray_request_duration_seconds":
			if n := len(mf.GetMetric()); n != 3 {
				t.Errorf("%d Ray call series, want 3 (get_job ok, get_job not_found, submit_job unreachable)", n)
			}
		case "mvp_scheduler_pass_duration_seconds", "mvp_sqlite_writes_per_commit":
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 {
				t.Errorf("%s: %d samples, want 1", mf.GetName(), h.GetSampleCount())
			}
		}
	}
	if len(tasks) != len(mvp.States)*len(mvp.Workloads) {
		t.Errorf("mvp_tasks has %d series, want one per state and workload (%d)", len(tasks), len(mvp.States)*len(mvp.Workloads))
	}
	if tasks["QUEUED/ppo"] != 3 || tasks["SUCCEEDED/sft"] != 7 || tasks["RUNNING/grpo"] != 0 {
		t.Errorf("mvp_tasks %v", tasks)
	}
}

func TestNoClusterViewYet(t *testing.T) {
	reg, _ := newMetrics(t, counts{c: &mvp.Counts{}})
	if n, _ := testutil.GatherAndCount(reg, "mvp_cluster_view_age_seconds", "mvp_node_gpus"); n != 0 {
		t.Errorf("%d cluster series before the first reading, want none", n)
	}
}

// A failing count is reported (a 500 would lose every other metric): the handler serves the rest and logs it.
func TestStoreErrorServesTheRest(t *testing.T) {
	_, m := newMetrics(t, counts{err: errors.New("database is locked")})
	feed(m)
	rec := httptest.NewRecorder()
	m.Handler(slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !strings.Contains(string(body), "mvp_tasks_submitted_total") || strings.Contains(string(body), "mvp_tasks{") {
		t.Errorf("status %d, body:\n%s", rec.Code, body)
	}
}

// TestHealthDegraded: one series per component, 1 for a degraded one, 0 for the others.
func TestHealthDegraded(t *testing.T) {
	reg, _ := newMetrics(t, counts{c: sample()})
	want := `# HELP mvp_health_degraded 1 while /healthz reports this component degraded (its sentence says why), else 0.
# TYPE mvp_health_degraded gauge
mvp_health_degraded{component="ray"} 0
mvp_health_degraded{component="shared_root"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mvp_health_degraded"); err != nil {
		t.Error(err)
	}
}

// TestEveryFailureKindIsPresent: a failure kind's series appeared only with its first ended attempt, at 1, and
// Prometheus' increase() does not count a series' first sample: specs/metrics.md's alert,
// increase(mvp_attempts_ended_total{failure_kind="INFRA"}[1h]), stayed 0 for the first INFRA failure a
// database ever had (and for the first after each new kind). Every kind is present, 0 until it happens, as
// mvp_tasks has every state. Found in the SRE walk-through (a fresh database showed only the kinds seen).
func TestEveryFailureKindIsPresent(t *testing.T) {
	reg, _ := newMetrics(t, counts{c: &mvp.Counts{EndedAttempts: []mvp.AttemptCount{{FailureKind: mvp.FailureNone, N: 3}}}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "mvp_attempts_ended_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	for _, k := range mvp.FailureKinds {
		name, want := string(k), 0.0
		if k == mvp.FailureNone {
			name, want = "none", 3
		}
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("mvp_attempts_ended_total{failure_kind=%q}: %v (present %v), want %v", name, v, ok, want)
		}
	}
}

// TestBuildInfo: one series, 1, labelled with the build that runs (an SRE asks which commit serves).
func TestBuildInfo(t *testing.T) {
	reg, _ := newMetrics(t, counts{c: sample()})
	b := mvp.Build()
	want := fmt.Sprintf(`# HELP mvp_build_info 1, labelled with the build that runs: the git commit (revision, "unknown" when not recorded), whether the clone had uncommitted changes, the Go version.
# TYPE mvp_build_info gauge
mvp_build_info{go_version=%q,modified="%t",revision=%q} 1
`, b.GoVersion, b.Modified, b.Revision)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mvp_build_info"); err != nil {
		t.Error(err)
	}
}
