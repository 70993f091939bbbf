package doctor

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/mvp2/mvp/internal/mvp"
)

// noNVML is a machine without NVIDIA's library.
func noNVML() nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

type fakeRay struct {
	version string
	err     error
	nodes   []mvp.Node
}

func (f fakeRay) Version(context.Context) (string, error) { return f.version, f.err }
func (f fakeRay) ClusterStatus(context.Context) (*mvp.ClusterView, error) {
	return &mvp.ClusterView{Nodes: f.nodes}, f.err
}

func node(id, ip string, gpus, worker float64) mvp.Node {
	return mvp.Node{ID: id, IP: ip, Alive: true, Total: map[string]float64{"GPU": gpus, "worker_node": worker}}
}

func checks(r *Report) string {
	var out []string
	for _, c := range r.Checks {
		v := "ok"
		if !c.OK {
			v = "FAIL"
		}
		out = append(out, c.Name+"="+v)
	}
	return strings.Join(out, " ")
}

func TestDoctor(t *testing.T) {
	head := mvp.Node{ID: "head", IP: "10.0.0.1", Alive: true, IsHead: true, Total: map[string]float64{"CPU": 0}}
	for _, tc := range []struct {
		name     string
		o        Options
		want     string
		gpus     int
		from     string
		contains string
	}{
		{"an 8-GPU worker that Ray counts right", Options{NVML: dgxh100.New(),
			Ray:     fakeRay{version: "2.60.0", nodes: []mvp.Node{head, node("w1", "10.0.0.2", 8, 100), node("w2", "10.0.0.3", 8, 100)}},
			NodeIPs: []string{"127.0.0.1", "10.0.0.2"}},
			"gpus=ok ray=ok worker_node=ok ray_gpus=ok", 8, "nvml", "8 GPU(s); driver 550.54.15"},
		{"Ray counts fewer GPUs than NVML sees", Options{NVML: dgxh100.New(),
			Ray: fakeRay{version: "2.60.0", nodes: []mvp.Node{node("w1", "10.0.0.2", 4, 100)}}, NodeIPs: []string{"10.0.0.2"}},
			"gpus=ok ray=ok worker_node=ok ray_gpus=FAIL", 8, "nvml", "restart the worker with --num-gpus=8"},
		{"no worker_node resource", Options{NVML: dgxh100.New(),
			Ray: fakeRay{version: "2.60.0", nodes: []mvp.Node{node("w1", "10.0.0.2", 8, 0)}}, NodeIPs: []string{"10.0.0.2"}},
			"gpus=ok ray=ok worker_node=FAIL ray_gpus=ok", 8, "nvml", `--resources='{"worker_node": 100}'`},
		{"no NVML: the configured count, two workers on this machine", Options{NVML: noNVML(), ConfiguredGPUs: 4,
			ConfiguredFrom: "RAY_GPUS_PER_WORKER", Ray: fakeRay{version: "2.60.0", nodes: []mvp.Node{
				{ID: "head", IP: "127.0.0.1", Alive: true, IsHead: true}, node("w1", "127.0.0.1", 4, 100), node("w2", "127.0.0.1", 4, 100)}},
			NodeIPs: []string{"127.0.0.1"}},
			"gpus=ok ray=ok ray_node=ok worker_node=ok ray_gpus=ok worker_node=ok ray_gpus=ok", 4, "RAY_GPUS_PER_WORKER",
			"is not on this machine; using the configured count 4 (RAY_GPUS_PER_WORKER)"},
		{"no NVML and nothing configured", Options{NVML: noNVML()},
			"gpus=FAIL", -1, "", "pass --gpus N or set RAY_GPUS_PER_WORKER"},
		{"Ray down", Options{NVML: dgxh100.New(), Ray: fakeRay{err: mvp.ErrRayUnavailable}, RayAddress: "http://10.0.0.1:8265"},
			"gpus=ok ray=FAIL", 8, "nvml", "http://10.0.0.1:8265 does not answer"},
		{"no Ray node on this machine", Options{NVML: dgxh100.New(),
			Ray: fakeRay{version: "2.60.0", nodes: []mvp.Node{head, node("w1", "10.0.0.2", 8, 100)}}, NodeIPs: []string{"10.0.0.9"}},
			"gpus=ok ray=ok ray_node=FAIL", 8, "nvml", "no alive Ray node has this machine's address (10.0.0.9)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(context.Background(), tc.o)
			if got := checks(r); got != tc.want {
				t.Errorf("checks %s, want %s", got, tc.want)
			}
			if r.GPUs != tc.gpus || r.GPUsFrom != tc.from {
				t.Errorf("GPUs %d from %q, want %d from %q", r.GPUs, r.GPUsFrom, tc.gpus, tc.from)
			}
			if r.OK() != !strings.Contains(tc.want, "FAIL") {
				t.Errorf("OK() = %v", r.OK())
			}
			var b bytes.Buffer
			r.Write(&b)
			if !strings.Contains(b.String(), tc.contains) {
				t.Errorf("the report does not say %q:\n%s", tc.contains, b.String())
			}
		})
	}
}

func TestReportListsTheGPUs(t *testing.T) {
	var b bytes.Buffer
	Run(context.Background(), Options{NVML: dgxh100.New()}).Write(&b)
	if !strings.Contains(b.String(), "GPUs on this node (NVML, driver 550.54.15): 8") ||
		strings.Count(b.String(), "NVIDIA H100 80GB HBM3  81920 MiB") != 8 {
		t.Errorf("%s", b.String())
	}
	b.Reset()
	Run(context.Background(), Options{NVML: noNVML(), ConfiguredGPUs: 2, ConfiguredFrom: "--gpus"}).Write(&b)
	if !strings.Contains(b.String(), "NVIDIA's management library (libnvidia-ml.so.1) is not on this machine") ||
		!strings.Contains(b.String(), "falling back to configuration: 2 GPU(s) (--gpus)") {
		t.Errorf("%s", b.String())
	}
}

func TestGPUCount(t *testing.T) {
	if n, from, err := GPUCount(Options{NVML: dgxh100.New(), ConfiguredGPUs: 2, ConfiguredFrom: "--gpus"}); n != 8 || from != "nvml" || err != nil {
		t.Errorf("with NVML: %d %q %v; NVML wins over configuration", n, from, err)
	}
	if n, from, err := GPUCount(Options{NVML: noNVML(), ConfiguredGPUs: 2, ConfiguredFrom: "--gpus"}); n != 2 || from != "--gpus" || err != nil {
		t.Errorf("without NVML: %d %q %v", n, from, err)
	}
	if _, _, err := GPUCount(Options{NVML: noNVML()}); err == nil || !strings.Contains(err.Error(), "RAY_GPUS_PER_WORKER") {
		t.Errorf("neither: %v", err)
	}
}

// TestDoctorSeesTheSharedRoot: drivers on this node read and write their task folders under shared_root, which mvp
// makes on its own machine (<shared_root>/jobs): a node that does not see it (the shared filesystem not mounted
// there) runs jobs that cannot find their files.
func TestDoctorSeesTheSharedRoot(t *testing.T) {
	shared := t.TempDir()
	r := Run(context.Background(), Options{NVML: dgxh100.New(), SharedRoot: shared})
	if got := checks(r); got != "gpus=ok shared_root=FAIL" {
		t.Errorf("no jobs folder: checks %s", got)
	}
	var b bytes.Buffer
	r.Write(&b)
	if !strings.Contains(b.String(), "mount the shared filesystem") || !strings.Contains(b.String(), shared) {
		t.Errorf("the report does not say what to mount where:\n%s", b.String())
	}
	if err := os.Mkdir(filepath.Join(shared, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := checks(Run(context.Background(), Options{NVML: dgxh100.New(), SharedRoot: shared})); got != "gpus=ok shared_root=ok" {
		t.Errorf("with mvp's jobs folder: checks %s", got)
	}
}

// TestNoNodeHereNamesTheAddressesRayHas: `mvp doctor --node-ip 10.9.9.9` (or a machine whose Ray node registered
// another of its addresses) said "no alive Ray node has this machine's address (10.9.9.9): … or pass --node-ip",
// without the addresses Ray's nodes do have, which are what --node-ip takes.
func TestNoNodeHereNamesTheAddressesRayHas(t *testing.T) {
	r := Run(context.Background(), Options{NVML: dgxh100.New(), NodeIPs: []string{"10.9.9.9"}, Ray: fakeRay{version: "2.60.0",
		nodes: []mvp.Node{{ID: "head", IP: "10.0.0.1", Alive: true, IsHead: true}, node("w1", "10.0.0.2", 8, 100),
			node("w2", "10.0.0.2", 8, 100), {ID: "gone", IP: "10.0.0.7"}}}})
	var b bytes.Buffer
	r.Write(&b)
	if !strings.Contains(b.String(), "Ray's alive nodes have 10.0.0.1, 10.0.0.2") {
		t.Errorf("the report does not name the nodes' addresses:\n%s", b.String())
	}
}

// TestDoctorSaysASharedRootThatCannotBeWritten: with shared_root mounted read-only on a node, `mvp doctor` said
// "ok shared_root: mvp's task folders are visible", while every run there crashed on its first write to its task
// folder (progress.json, metrics.jsonl: OSError [Errno 30] Read-only file system), RUNTIME_ERROR, not retried. A
// node whose drivers cannot write their task folders is not ready. Found in a fault walk-through (a read-only
// tmpfs; the test needs root to mount one, and skips without).
func TestDoctorSaysASharedRootThatCannotBeWritten(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", shared).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", shared).Run() })
	if err := os.Mkdir(filepath.Join(shared, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := checks(Run(context.Background(), Options{NVML: dgxh100.New(), SharedRoot: shared})); got != "gpus=ok shared_root=ok" {
		t.Fatalf("a writable shared_root: checks %s", got)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", shared).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	r := Run(context.Background(), Options{NVML: dgxh100.New(), SharedRoot: shared})
	if got := checks(r); got != "gpus=ok shared_root=FAIL" {
		t.Errorf("a read-only shared_root: checks %s", got)
	}
	var b bytes.Buffer
	r.Write(&b)
	if !strings.Contains(b.String(), "cannot be written") || !strings.Contains(b.String(), filepath.Join(shared, "jobs")) {
		t.Errorf("the report does not say that the task folders cannot be written, and where:\n%s", b.String())
	}
	if entries, _ := os.ReadDir(filepath.Join(shared, "jobs")); len(entries) != 0 {
		t.Errorf("the check left %d file(s) in the jobs folder", len(entries))
	}
}
