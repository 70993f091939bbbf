package service_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

const ppo1x4 = "workload: ppo\nnnodes: 1\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"

// TestMetricsScrape scrapes a running service's /metrics as Prometheus does and parses the exposition: two 1×4
// tasks on one 4-GPU node, the first admitted (Ray holds it PENDING), the second waiting.
func TestMetricsScrape(t *testing.T) {
	m := servicetest.Start(t, nil)
	ctx := context.Background()
	if code, _ := servicetest.Scrape(t, m.URL(), ""); code != 401 {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code, _ := servicetest.Scrape(t, m.URL(), "not-the-token-0123456789"); code != 403 {
		t.Errorf("/metrics with a wrong token: %d, want 403", code)
	}
	c := m.Client()
	var ids []string
	for range 2 {
		raw, err := c.Submit(ctx, []byte(ppo1x4), false)
		if err != nil {
			t.Fatal(err)
		}
		var task mvp.Task
		if err := json.Unmarshal(raw, &task); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	var got servicetest.Metrics
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
		if code != 200 {
			t.Fatalf("/metrics with the token: %d", code)
		}
		got = fams
		sub, _ := got.Value(t, "mvp_tasks", "state", "SUBMITTED", "workload", "ppo")
		wait, _ := got.Value(t, "mvp_tasks", "state", "PENDING_RESOURCES", "workload", "ppo")
		if sub == 1 && wait == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks never reached SUBMITTED + PENDING_RESOURCES: %v submitted, %v waiting", sub, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"mvp_tasks_submitted_total", []string{"workload", "ppo"}, 2},
		{"mvp_tasks_submitted_total", []string{"workload", "sft"}, 0},
		{"mvp_tasks_admitted_total", []string{"workload", "ppo"}, 1},
		{"mvp_tasks", []string{"state", "QUEUED", "workload", "ppo"}, 0},
		{"mvp_queue_depth", []string{"workload", "ppo"}, 1},
		{"mvp_node_gpus", []string{"node_id", "w1"}, 4},
		{"mvp_node_gpus_free", []string{"node_id", "w1"}, 4}, // the fixed view: the fake Ray holds nothing
		{"mvp_cluster_view_source", []string{"source", "probe"}, 1},
		{"mvp_cluster_view_source", []string{"source", "dashboard"}, 0},
	}
	for _, w := range want {
		if v, ok := got.Value(t, w.name, w.labels...); !ok || v != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
	for _, name := range []string{"mvp_scheduler_pass_duration_seconds", "mvp_sqlite_writes_per_commit"} {
		if n, ok := got.Value(t, name); !ok || n < 1 {
			t.Errorf("%s: %v samples (present %v), want some", name, n, ok)
		}
	}
	if v, ok := got.Value(t, "mvp_queue_oldest_wait_seconds", "workload", "ppo"); !ok || v < 0 || v > 60 {
		t.Errorf("mvp_queue_oldest_wait_seconds{ppo} = %v (present %v)", v, ok)
	}
	if _, ok := got.Value(t, "mvp_cluster_view_age_seconds"); !ok {
		t.Errorf("mvp_cluster_view_age_seconds is missing")
	}
	if _, ok := got.Value(t, "go_goroutines"); !ok {
		t.Errorf("the Go runtime's metrics are missing")
	}
}

func TestMetricsPublicAndOff(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Metrics.Public = true
	m := servicetest.Start(t, &service.Main{Config: cfg})
	if code, fams := servicetest.Scrape(t, m.URL(), ""); code != 200 || fams["mvp_tasks"] == nil {
		t.Errorf("public /metrics without the token: %d, %d families", code, len(fams))
	}
	off := servicetest.Config(t)
	no := false
	off.V2.Metrics.Enabled = &no
	m = servicetest.Start(t, &service.Main{Config: off})
	if code, _ := servicetest.Scrape(t, m.URL(), m.APIToken()); code != 404 {
		t.Errorf("/metrics with the metrics off: %d, want 404", code)
	}
}

// TestMetricsCountEverySubmission: mvp_tasks_submitted_total counts every task mvp accepted and stored, whichever
// door it came in by; tasks made by a schedule, by the Ray Jobs door and by a resubmit were not counted.
func TestMetricsCountEverySubmission(t *testing.T) {
	m := servicetest.Start(t, nil)
	ctx := context.Background()
	c := m.Client()
	raw, err := c.Submit(ctx, []byte(ppo1x4), false)
	if err != nil {
		t.Fatal(err)
	}
	var first mvp.Task
	if err := json.Unmarshal(raw, &first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Resubmit(ctx, first.ID, api.ResubmitRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.JSON(ctx, "POST", "/ray/api/jobs/", nil, []byte(`{"entrypoint":"echo hi","submission_id":"door-1"}`),
		"application/json", nil); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(map[string]any{"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, "model_path": "/m",
		"train_file": "/t", "val_file": "/v"})
	if _, _, err := c.CreateSchedule(ctx, api.ScheduleRequest{Name: "often", Cron: "@every 1s", Overlap: mvp.OverlapQueue, JobSpec: spec}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ids, err := m.Store().ScheduleTasks(ctx, "", "often", time.Time{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schedule made no task")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.DeleteSchedule(ctx, "often"); err != nil {
		t.Fatal(err)
	}
	page, _, err := c.List(ctx, "", "", 100, "")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]float64{}
	for _, task := range page.Tasks {
		stored[string(task.Workload)]++
	}
	_, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
	for _, w := range []string{"ppo", "ray_job"} {
		if v, _ := fams.Value(t, "mvp_tasks_submitted_total", "workload", w); v != stored[w] {
			t.Errorf("mvp_tasks_submitted_total{workload=%q} = %v; %v such tasks are stored", w, v, stored[w])
		}
	}
}

// /healthz's degraded sentences (ray, scheduler, database, shared_root) had no metric: a full database disk or an
// unmounted shared_root held every task while /metrics showed nothing an alert could fire on but a queue that
// grew (and no HTTP error counter). mvp_health_degraded{component} is 1 exactly while /healthz has that sentence.
// Found in the SRE walk-through.
func TestHealthIsInTheMetrics(t *testing.T) {
	cfg := servicetest.Config(t)
	m := servicetest.Start(t, &service.Main{Config: cfg})
	degraded := func() map[string]float64 {
		code, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		out := map[string]float64{}
		for _, c := range []string{"ray", "scheduler", "database", "shared_root"} {
			v, ok := fams.Value(t, "mvp_health_degraded", "component", c)
			if !ok {
				v = -1 // absent
			}
			out[c] = v
		}
		return out
	}
	all0 := map[string]float64{"ray": 0, "scheduler": 0, "database": 0, "shared_root": 0}
	var got map[string]float64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got = degraded(); maps.Equal(got, all0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mvp_health_degraded on a healthy service: %v, want every component present and 0", got)
		}
	}
	jobs := filepath.Join(cfg.SharedRoot, "jobs")
	if err := os.Rename(jobs, jobs+".aside"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(jobs+".aside", jobs)
	if got := degraded(); got["shared_root"] != 1 || got["database"] != 0 {
		t.Errorf("mvp_health_degraded with shared_root unmounted: %v, want shared_root 1", got)
	}
}

// TestHTTPRequestsAreCounted: every request to the API's and the Ray door's routes is timed by route pattern (never
// the path, which holds task ids), method and status, so that an SRE sees the rate of submits, of 4xx and 5xx, and
// how long answers take.
func TestHTTPRequestsAreCounted(t *testing.T) {
	m := servicetest.Start(t, nil)
	ctx := context.Background()
	c := m.Client()
	if _, err := c.Submit(ctx, []byte(ppo1x4), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "mvp2-ppo-20251223-143201-ffff"); err == nil {
		t.Fatal("a task that does not exist was found")
	}
	_, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
	for _, want := range []struct {
		route, method, code string
	}{
		{"/api/v2/tasks", "POST", "201"},
		{"/api/v2/tasks/{task_id}", "GET", "404"},
	} {
		if n, ok := fams.Value(t, "mvp_http_request_duration_seconds", "route", want.route, "method", want.method,
			"code", want.code); !ok || n != 1 {
			t.Errorf("mvp_http_request_duration_seconds{route=%q,method=%q,code=%q}: %v requests (present %v), want 1",
				want.route, want.method, want.code, n, ok)
		}
	}
	for _, s := range fams.Series("mvp_http_request_duration_seconds") {
		for _, l := range s.GetLabel() {
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "mvp2-") {
				t.Errorf("a route label holds a task id: %q", l.GetValue())
			}
		}
	}
}
