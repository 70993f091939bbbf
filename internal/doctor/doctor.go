// Package doctor is `mvp doctor`: what this node has (its GPUs, read through NVML) and whether it is ready to be
// a worker of the Ray cluster mvp feeds: Ray's Job server reachable, this machine's Ray node alive with the
// worker_node resource, and the GPUs Ray counts equal to the GPUs present. Where NVIDIA's library is missing it
// says so and takes the GPU count from configuration (--gpus, or RAY_GPUS_PER_WORKER).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mvp2/mvp/internal/gpu"
	"github.com/mvp2/mvp/internal/mvp"
)

// WorkerResource is the custom resource every worker node carries (specs/deploy.md); drivers ask for one unit.
const WorkerResource = "worker_node"

// Ray is what the doctor asks Ray: its version (is the Job server there) and the nodes with their resources.
type Ray interface {
	Version(ctx context.Context) (string, error)
	ClusterStatus(ctx context.Context) (*mvp.ClusterView, error)
}

// Options say where to look.
type Options struct {
	// NVML is the machine's NVML (gpu.System()); mocks in tests.
	NVML nvml.Interface
	// ConfiguredGPUs is the GPU count to fall back on without NVML, and ConfiguredFrom where it came from (e.g.
	// "--gpus" or "RAY_GPUS_PER_WORKER"); ConfiguredFrom "" means none was configured.
	ConfiguredGPUs int
	ConfiguredFrom string
	// Ray is Ray's Job server at RayAddress (dev.yaml's address); nil skips the Ray checks.
	Ray        Ray
	RayAddress string
	// NodeIPs are this machine's addresses: the Ray nodes with one of them are this node.
	NodeIPs []string
	// SharedRoot is dev.yaml's shared_root: this node must see mvp's task folders there; "" skips the check.
	SharedRoot string
}

// Check is one verdict.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is what the doctor found.
type Report struct {
	// Inventory is NVML's answer; nil when NVML could not be read (NVMLError says why).
	Inventory *gpu.Inventory `json:"inventory,omitempty"`
	NVMLError string         `json:"nvml_error,omitempty"`
	// GPUs is the count a worker on this node should start with (ray start --num-gpus), from NVML or else from
	// configuration; GPUsFrom says which ("nvml", "--gpus", …); -1 when neither knows.
	GPUs     int     `json:"gpus"`
	GPUsFrom string  `json:"gpus_from"`
	Checks   []Check `json:"checks"`
}

// OK reports whether every check passed.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

func (r *Report) add(name string, ok bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// GPUCount is what a worker should start with: NVML's count, else, where NVIDIA's library is missing, the
// configured one. NVML present but failing (a driver upgraded without a reboot, a GPU fallen off the bus) is an
// error unless --gpus was given for this node (the operator's own word): RAY_GPUS_PER_WORKER, a fleet's default,
// covered it, and the worker joined Ray with GPUs that do not work. It fails, saying what to set or fix, when the
// count is not known.
func GPUCount(o Options) (n int, from string, err error) {
	inv, nerr := gpu.Read(o.NVML)
	return gpuCount(o, inv, nerr)
}

func gpuCount(o Options, inv *gpu.Inventory, nerr error) (int, string, error) {
	if nerr == nil {
		return len(inv.Devices), "nvml", nil
	}
	if !errors.Is(nerr, gpu.ErrNoLibrary) && o.ConfiguredFrom != "--gpus" {
		return -1, "", fmt.Errorf("NVML is on this node but fails (%w): its GPUs cannot be counted, and the configured "+
			"count is for nodes without NVIDIA's library; fix the driver (after a driver upgrade, reboot) and run "+
			"mvp doctor, or, knowing which GPUs work, pass --gpus N for this node (worker.sh: MVP_WORKER_GPUS=N)", nerr)
	}
	if o.ConfiguredFrom != "" {
		return o.ConfiguredGPUs, o.ConfiguredFrom, nil
	}
	return -1, "", fmt.Errorf("%w, and no GPU count is configured: pass --gpus N or set RAY_GPUS_PER_WORKER", nerr)
}

// Run looks at this node and the cluster. It never fails: what is wrong is a failed Check.
func Run(ctx context.Context, o Options) *Report {
	r := &Report{GPUs: -1}
	inv, nerr := gpu.Read(o.NVML)
	if nerr == nil {
		r.Inventory = inv
	} else {
		r.NVMLError = nerr.Error()
	}
	n, from, cerr := gpuCount(o, inv, nerr)
	r.GPUs, r.GPUsFrom = n, from
	switch {
	case nerr == nil:
		r.add("gpus", true, "NVML sees %d GPU(s); driver %s", n, inv.DriverVersion)
	case errors.Is(nerr, gpu.ErrNoLibrary) && cerr == nil:
		r.add("gpus", true, "%v; using the configured count %d (%s)", nerr, n, from)
	case cerr == nil: // NVML fails, and --gpus overrides it for this node: said, still a fault of the node's
		r.add("gpus", false, "NVML is on this node but fails (%v); a worker starts with %d GPU(s) as %s says", nerr, n, from)
	default:
		r.add("gpus", false, "%v", cerr)
	}
	if o.SharedRoot != "" {
		jobs := filepath.Join(o.SharedRoot, "jobs")
		if st, err := os.Stat(jobs); err == nil && st.IsDir() {
			if werr := canWrite(jobs); werr != nil {
				r.add("shared_root", false, "mvp's task folders are visible at %s but cannot be written from this node (%v): "+
					"drivers here write their progress, metrics and checkpoints there, and fail at their first write; "+
					"mount it writable (and with room)", jobs, werr)
			} else {
				r.add("shared_root", true, "mvp's task folders are visible at %s", jobs)
			}
		} else {
			r.add("shared_root", false, "mvp's task folders (%s) are not visible on this node: mount the shared filesystem "+
				"mvp writes them to at %s (shared_root in dev.yaml), or drivers here cannot find their files", jobs, o.SharedRoot)
		}
	}
	if o.Ray == nil {
		return r
	}
	v, err := o.Ray.Version(ctx)
	if err != nil {
		r.add("ray", false, "Ray's Job server at %s does not answer: %v (is the cluster up? is `address` in dev.yaml right?)", o.RayAddress, err)
		return r
	}
	r.add("ray", true, "Ray %s answers at %s", v, o.RayAddress)
	view, err := o.Ray.ClusterStatus(ctx)
	if err != nil {
		r.add("ray_nodes", false, "Ray's node list cannot be read: %v", err)
		return r
	}
	var mine []mvp.Node
	var ips []string // the alive nodes' addresses, which --node-ip takes
	for _, node := range view.Nodes {
		if node.Alive && slices.Contains(o.NodeIPs, node.IP) {
			mine = append(mine, node)
		}
		if node.Alive && !slices.Contains(ips, node.IP) {
			ips = append(ips, node.IP)
		}
	}
	if len(mine) == 0 {
		slices.Sort(ips)
		if len(ips) == 0 {
			ips = []string{"none (no node is alive)"}
		}
		r.add("ray_node", false, "no alive Ray node has this machine's address (%s); Ray's alive nodes have %s: start "+
			"the worker (v2/scripts/worker.sh start), or pass --node-ip with the one that is this node's",
			strings.Join(o.NodeIPs, ", "), strings.Join(ips, ", "))
		return r
	}
	for _, node := range mine {
		name := "node " + short(node.ID) + " (" + node.IP + ")"
		if node.IsHead {
			r.add("ray_node", true, "%s is the Ray head: no worker checks", name)
			continue
		}
		if w := node.Total[WorkerResource]; w > 0 {
			r.add("worker_node", true, "%s has %s: %g", name, WorkerResource, w)
		} else {
			r.add("worker_node", false, "%s has no %s resource: drivers will not run there; start it with --resources='{\"%s\": 100}'",
				name, WorkerResource, WorkerResource)
		}
		rayGPUs := node.Total["GPU"]
		switch {
		case r.GPUs < 0:
			r.add("ray_gpus", false, "%s: Ray counts %g GPU(s); how many this node has is unknown", name, rayGPUs)
		case rayGPUs == float64(r.GPUs):
			r.add("ray_gpus", true, "%s: Ray counts %g GPU(s), as this node has (%s)", name, rayGPUs, r.GPUsFrom)
		default:
			r.add("ray_gpus", false, "%s: Ray counts %g GPU(s) but this node has %d (%s): restart the worker with --num-gpus=%d",
				name, rayGPUs, r.GPUs, r.GPUsFrom, r.GPUs)
		}
	}
	return r
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Write prints the report for people.
func (r *Report) Write(w io.Writer) {
	if r.Inventory != nil {
		fmt.Fprintf(w, "GPUs on this node (NVML, driver %s): %d\n", r.Inventory.DriverVersion, len(r.Inventory.Devices))
		for _, d := range r.Inventory.Devices {
			fmt.Fprintf(w, "  %d  %s  %d MiB  %s\n", d.Index, d.Name, d.MemoryBytes>>20, d.UUID)
		}
	} else {
		fmt.Fprintf(w, "GPUs on this node: unknown to NVML: %s\n", r.NVMLError)
		if r.GPUs >= 0 {
			fmt.Fprintf(w, "  falling back to configuration: %d GPU(s) (%s)\n", r.GPUs, r.GPUsFrom)
		}
	}
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-12s %s\n", mark, c.Name, c.Detail)
	}
}

// canWrite makes and removes a file in dir, as a driver writes in its task folder there.
func canWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".mvp-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.Write([]byte("mvp doctor\n"))
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(werr, cerr, rerr)
}
