//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestMetricsLive scrapes `mvp serve`'s /metrics against the real cluster: 401 without the token; a task counted
// by state as it runs and ends, the submission and admission counters, Ray call histograms by endpoint and
// outcome, and per-node GPU gauges equal to what the cluster itself reports.
func TestMetricsLive(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	if code, _ := servicetest.Scrape(t, s.c.Addr, ""); code != 401 {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	scrape := func() servicetest.Metrics {
		code, m := servicetest.Scrape(t, s.c.Addr, s.token)
		if code != 200 {
			t.Fatalf("/metrics with the token: %d", code)
		}
		return m
	}
	value := func(m servicetest.Metrics, name string, labels ...string) float64 {
		v, _ := m.Value(t, name, labels...)
		return v
	}
	before := value(scrape(), "mvp_tasks_submitted_total", "workload", "ppo")
	task := s.submit(spec("ppo", 1, 2, 3))
	if got := value(scrape(), "mvp_tasks_submitted_total", "workload", "ppo"); got != before+1 {
		t.Errorf("mvp_tasks_submitted_total{ppo} went from %v to %v after a submit", before, got)
	}
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	waitFor(t, 30*time.Second, "the running task counted", func() (bool, string) {
		m := scrape()
		run, adm := value(m, "mvp_tasks", "state", "RUNNING", "workload", "ppo"), value(m, "mvp_tasks_admitted_total", "workload", "ppo")
		return run == 1 && adm == 1, fmt.Sprintf("running %v, admitted %v", run, adm)
	})
	s.waitState(task.ID, mvp.StateSucceeded, 90*time.Second)
	waitIdle(t)
	// Once the cluster is idle, mvp's per-node view must match the cluster's own (read through the probe here).
	waitFor(t, 30*time.Second, "mvp's GPU gauges equal to the cluster's", func() (bool, string) {
		m := scrape()
		if value(m, "mvp_tasks", "state", "SUCCEEDED", "workload", "ppo") != 1 ||
			value(m, "mvp_attempts_ended_total", "failure_kind", "none") < 1 {
			return false, "the ended task and attempt are not counted yet"
		}
		nodes := workers(t)
		for _, n := range nodes {
			total, ok1 := m.Value(t, "mvp_node_gpus", "node_id", n.ID)
			free, ok2 := m.Value(t, "mvp_node_gpus_free", "node_id", n.ID)
			if !ok1 || !ok2 || total != n.Total["GPU"] || free != n.Available["GPU"] {
				return false, fmt.Sprintf("node %s: mvp says %v/%v free, the cluster %v/%v", n.ID, free, total,
					n.Available["GPU"], n.Total["GPU"])
			}
		}
		if len(m.Series("mvp_node_gpus")) < len(nodes) {
			return false, fmt.Sprintf("%d node series for %d workers", len(m.Series("mvp_node_gpus")), len(nodes))
		}
		return true, ""
	})
	m := scrape()
	for _, c := range []struct{ endpoint, outcome string }{{"submit_job", "ok"}, {"get_job", "ok"}, {"log_file", "ok"}} {
		if n := value(m, "mvp_ray_request_duration_seconds", "endpoint", c.endpoint, "outcome", c.outcome); n < 1 {
			t.Errorf("mvp_ray_request_duration_seconds{endpoint=%q,outcome=%q}: %v calls observed", c.endpoint, c.outcome, n)
		}
	}
	for _, se := range m.Series("mvp_ray_request_duration_seconds") {
		if servicetest.Label(se, "outcome") == "" || servicetest.Label(se, "endpoint") == "" {
			t.Errorf("a Ray call series without endpoint or outcome: %v", se)
		}
	}
	if value(m, "mvp_cluster_view_source", "source", "probe") != 1 {
		t.Errorf("the cluster view is not the live probe's")
	}
	if age, ok := m.Value(t, "mvp_cluster_view_age_seconds"); !ok || age > 10 {
		t.Errorf("mvp_cluster_view_age_seconds %v (present %v) with a 0.5 s tick", age, ok)
	}
	if n := value(m, "mvp_scheduler_pass_duration_seconds"); n < 2 {
		t.Errorf("%v scheduler passes observed", n)
	}
}

// TestDoctorLive runs `mvp doctor` against the real cluster. This machine has no NVIDIA library, so the GPU
// count comes from RAY_GPUS_PER_WORKER. Every node of the test cluster runs on this machine, so the doctor's
// default (this machine's addresses) finds both workers: Ray reports a node's address as the machine's own
// interface address, not the --node-ip-address=127.0.0.1 it was started with.
func TestDoctorLive(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "dev.yaml")
	shared := t.TempDir() // as mvp makes it on its machine: this node sees <shared_root>/jobs
	if err := os.Mkdir(filepath.Join(shared, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "address: "+env.dashboard+"\nshared_root: "+shared+"\n")
	doctor := func(gpus string) (*doctorReport, int, string) {
		cmd := exec.Command(env.bin, "doctor", "--config", cfg, "-o", "json")
		cmd.Env = append(os.Environ(), "RAY_GPUS_PER_WORKER="+gpus)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var r doctorReport
		if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
			t.Fatalf("doctor -o json: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
		return &r, code, stdout.String()
	}
	nodes := workers(t)
	perWorker := fmt.Sprint(nodes[0].Total["GPU"])
	r, code, out := doctor(perWorker)
	gpuChecks := 0
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
		if c.Name == "ray_gpus" {
			gpuChecks++
		}
	}
	if code != 0 || gpuChecks != len(nodes) || r.GPUsFrom != "RAY_GPUS_PER_WORKER" || r.NVMLError == "" {
		v, _ := rayc.ClusterStatus(ctxT(t))
		var ips []string
		for _, n := range v.Nodes {
			ips = append(ips, n.ID[:8]+"@"+n.IP)
		}
		t.Errorf("exit %d, %d GPU checks for %d workers (Ray's nodes: %v):\n%s", code, gpuChecks, len(nodes), ips, out)
	}
	_, code, out = doctor("8")
	if code != 1 || !strings.Contains(out, "restart the worker with --num-gpus=8") {
		t.Errorf("with 8 GPUs configured: exit %d\n%s", code, out)
	}
}

type doctorReport struct {
	NVMLError string `json:"nvml_error"`
	GPUsFrom  string `json:"gpus_from"`
	Checks    []struct {
		Name, Detail string
		OK           bool
	} `json:"checks"`
}
