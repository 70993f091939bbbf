package scheduler

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// BenchmarkExplain100k is the queue endpoint's work on the P2 snapshot: the decision plus every waiting task's
// position, code, sentence and estimated start.
func BenchmarkExplain100k(b *testing.B) {
	for _, name := range PolicyNames {
		b.Run(name, func(b *testing.B) {
			snap, _, _, _ := deepQueue()
			p := policy100k(name)
			var v QueueView
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v = Explain(t0, snap, p)
			}
			b.StopTimer()
			estimated := 0
			for _, q := range v.Queue {
				if q.EstStart != nil {
					estimated++
				}
			}
			if len(v.Queue) < 99000 || estimated < 99000 {
				b.Fatalf("%d waiting, %d with an estimate", len(v.Queue), estimated)
			}
		})
	}
}

// BenchmarkExplainDepth is Explain (the forecast of every estimated start) under the default policy over the
// first 100, 1,000 and 10,000 tasks of BenchmarkExplain100k's queue: a queue of about a thousand is forecast
// whole, a deeper one until ForecastBudget is spent.
func BenchmarkExplainDepth(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap, _, _, _ := deepQueue()
			snap.Queue = snap.Queue[:n]
			p := policy100k(DefaultPolicy)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Explain(t0, snap, p)
			}
		})
	}
}

// wideQueue is n nodes of 8 GPUs, empty, and 16 × n one-GPU tasks declaring 10 minutes and more: the forecast
// starts them all, so every Decide it makes walks up to 8 × n running tasks.
func wideQueue(n int) Snapshot {
	var nodes []mvp.Node
	for i := 0; i < n; i++ {
		nodes = append(nodes, mvp.Node{ID: fmt.Sprintf("n%03d", i), Alive: true,
			Total:     map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
			Available: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 1000}})
	}
	queue := make([]*mvp.Task, 16*n)
	for i := range queue {
		queue[i] = &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%05x", i), Workload: mvp.WorkloadPPO,
			State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 1, CreatedAt: t0.Add(time.Duration(i)),
			MaxRuntimeS: 600 + 7*i}
	}
	return Snapshot{Cluster: &mvp.ClusterView{Nodes: nodes}, Queue: queue}
}

// TestForecastCostGrowsWithWhatRuns: ForecastBudget counts only the waiting tasks each Decide visits, not the
// tasks running in the forecast's world, which every Decide also walks (stops, heartbeats, reserveLive, and
// createdGroups scans every placement group for every attempt: quadratic). The budget (1e6 units, "about

// BenchmarkExplainForAUser is a user's view (ExplainFor) of BenchmarkExplainDepth's 1,000-task queue: with no task
// of the user's, and with the first ten tasks in line the user's (the forecast stops once they are placed).
func BenchmarkExplainForAUser(b *testing.B) {
	for _, c := range []struct {
		name string
		mine int
	}{{"none", 0}, {"first-10", 10}} {
		b.Run(c.name, func(b *testing.B) {
			snap, _, _, _ := deepQueue()
			snap.Queue = snap.Queue[:1000]
			mine := map[*mvp.Task]bool{}
			for _, t := range snap.Queue[:c.mine] {
				mine[t] = true
			}
			p := policy100k(DefaultPolicy)
			for i := 0; i < b.N; i++ {
				ExplainFor(t0, snap, p, func(t *mvp.Task) bool { return mine[t] })
			}
		})
	}
}

// BenchmarkExplainWide is Explain on ever wider clusters (wideQueue): what the running tasks cost the forecast.
func BenchmarkExplainWide(b *testing.B) {
	for _, n := range []int{16, 64, 128} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := wideQueue(n)
			p := policy100k(PolicyXFChain)
			for i := 0; i < b.N; i++ {
				Explain(t0, snap, p)
			}
		})
	}
}

// BenchmarkDecide100k is P2: one decision over a 100,000-deep queue on a 16-node cluster of 8 GPUs each. The
// queue mixes gang shapes; the pass must admit everything that fits (reported as admitted/op) and write a reason
// for the rest. Heap in use after the decision is reported as heap-MB and the test process's peak RSS as
// peak-rss-MB; a second pass, with the admitted tasks in flight, must admit nothing (one pass took all that fit).
// Declared runtimes vary (1 minute to a day); half the cluster runs tasks whose declared ends are spread over
// the next day, so backfilling policies compute a reservation and test candidates against it. One sub-benchmark
// per policy.
func BenchmarkDecide100k(b *testing.B) {
	for _, name := range PolicyNames {
		b.Run(name, func(b *testing.B) { benchDecide100k(b, name) })
	}
}

// deepQueue is the snapshot of BenchmarkDecide100k: 100,000 queued tasks of mixed shapes and declared runtimes on
// 16 nodes × 8 GPUs, half of them running a 1×8 task.
func deepQueue() (Snapshot, []*mvp.Task, []ActiveAttempt, *mvp.ClusterView) {
	var nodes []mvp.Node
	for i := 0; i < 16; i++ {
		nodes = append(nodes, mvp.Node{ID: fmt.Sprintf("n%02d", i), Alive: true,
			Total:     map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100},
			Available: map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100}})
	}
	view := &mvp.ClusterView{Nodes: nodes}
	shapes := [][2]int{{1, 1}, {1, 2}, {1, 4}, {2, 8}, {1, 8}}
	queue := make([]*mvp.Task, 100000)
	for i := range queue {
		s := shapes[i%len(shapes)]
		queue[i] = &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%05x", i), Workload: mvp.WorkloadPPO,
			State: mvp.StateQueued, NNodes: s[0], GPUsPerNode: s[1], CreatedAt: t0.Add(time.Duration(i)),
			MaxRuntimeS: 60 + (i*7919)%86400}
	}
	// Half the nodes run one 1×8 task each, started an hour ago, declared to end within the next day.
	var running []ActiveAttempt
	for i := 0; i < 8; i++ {
		n := &view.Nodes[2*i]
		n.Available = map[string]float64{"GPU": 0, "CPU": 71, "worker_node": 99}
		jobID := fmt.Sprintf("%08x", i)
		start := t0.Add(-time.Hour)
		running = append(running, ActiveAttempt{Nodes: []string{n.ID},
			Task: &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-133201-%04x", i), Workload: mvp.WorkloadPPO,
				State: mvp.StateRunning, NNodes: 1, GPUsPerNode: 8, MaxRuntimeS: 3600 * (2 + 3*i)},
			Attempt: &mvp.Attempt{No: 1, RayJobID: jobID, RayStatus: mvp.RayRunning, StartTime: &start, DriverNodeID: n.ID}})
		view.Groups = append(view.Groups, mvp.PlacementGroup{CreatorJobID: jobID, State: "CREATED"})
	}
	return Snapshot{Cluster: view, Queue: queue, Active: running}, queue, running, view
}

// BenchmarkDecide100kFairShare is BenchmarkDecide100k under the default policy with fair share on, the queue
// owned by 4 users in turn with 3 priorities, one user over its quota and all with decayed usage: the cost of
// ranking (priority sort, fair-share merge) and of quotas on top of the policy.
func BenchmarkDecide100kFairShare(b *testing.B) {
	snap, queue, _, _ := deepQueue()
	users := []string{"alice", "bob", "carol", "dave"}
	for i, t := range queue {
		t.Owner, t.Priority = users[i%len(users)], 40+10*(i%3)
	}
	snap.Usage = map[string]float64{"alice": 1e6, "bob": 5e5, "carol": 1e3}
	p := policy100k(DefaultPolicy)
	p.FairShare, p.HalfLife, p.StarvationBound = true, 7*24*time.Hour, 24*time.Hour
	p.Users = map[string]UserLimits{"dave": {MaxGPUs: 8}, "bob": {Share: 2}}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(Decide(t0, snap, p)) == 0 {
			b.Fatal("no actions")
		}
	}
}

func policy100k(name string) Policy {
	return Policy{Name: name, MaxRunning: 0, CPUsPerGPU: map[mvp.Workload]float64{mvp.WorkloadPPO: 3},
		Driver: map[string]float64{"worker_node": 1, "CPU": 1}, DefaultMaxRuntime: 24 * time.Hour,
		// As service.PolicyOf gives it with the defaults: ppo's driver with its TaskRunner's CPU.
		Drivers: map[mvp.Workload]map[string]float64{mvp.WorkloadPPO: {"worker_node": 1, "CPU": 2}}}
}

func benchDecide100k(b *testing.B, policyName string) {
	snap, queue, running, view := deepQueue()
	p := policy100k(policyName)
	runtime.GC()
	var admitted int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		admitted = 0
		for _, a := range Decide(t0, snap, p) {
			if _, ok := a.(Submit); ok {
				admitted++
			}
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	// "Everything that fits, in one pass": the admitted tasks become just-submitted attempts (their GPUs reserved
	// by Decide itself, no placement group visible yet) and a second pass over the rest must admit nothing more.
	var second Snapshot
	second.Cluster = view
	second.Active = append(second.Active, running...)
	admittedIDs := map[string]bool{}
	for _, a := range Decide(t0, snap, p) {
		if s, ok := a.(Submit); ok {
			admittedIDs[s.Task.ID] = true
			at := *s.Task
			at.State = mvp.StateSubmitting
			second.Active = append(second.Active, ActiveAttempt{Task: &at,
				Attempt: &mvp.Attempt{No: s.AttemptNo, RayStatus: mvp.RayUnknown}})
		}
	}
	for _, t := range queue {
		if !admittedIDs[t.ID] {
			second.Queue = append(second.Queue, t)
		}
	}
	for _, a := range Decide(t0, second, p) {
		if s, ok := a.(Submit); ok {
			b.Fatalf("a second pass admitted %s: the first pass left room unused", s.Task.ID)
		}
	}
	b.ReportMetric(float64(admitted), "admitted/op")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(peakRSSMB(), "peak-rss-MB")
	// Everything that fits: 16 nodes × 8 GPUs; FIFO stops at the first task that does not fit.
	if admitted == 0 {
		b.Fatal("nothing admitted")
	}
}

// peakRSSMB is the process's peak resident set (VmHWM) in MiB, or -1 where /proc cannot tell.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) > 0 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return -1
}
