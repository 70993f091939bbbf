package sim

import (
	"bytes"
	"container/heap"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/scheduler"
)

// textbookFIFO is a first-come-first-served gang simulator written from the definition, independent of Decide:
// at every moment a job arrives or ends, jobs start strictly in arrival order while the first waiting one fits;
// a job of n × g takes g GPUs on each of n distinct nodes, chosen as Ray places verl's groups (most free GPUs
// first, ties by node number). It returns each job's start in nanoseconds.
func textbookFIFO(jobs []Job, nodes, gpus int) []int64 {
	free := make([]int, nodes)
	for k := range free {
		free[k] = gpus
	}
	type running struct {
		end   int64
		job   int
		nodes []int
	}
	var run []running
	start := make([]int64, len(jobs))
	var queue []int
	next := 0
	for next < len(jobs) || len(queue) > 0 || len(run) > 0 {
		now := int64(math.MaxInt64)
		if next < len(jobs) {
			now = nanos(jobs[next].ArrivalS)
		}
		for _, r := range run {
			now = min(now, r.end)
		}
		keep := run[:0]
		for _, r := range run {
			if r.end == now {
				for _, k := range r.nodes {
					free[k] += jobs[r.job].GPUsPerNode
				}
			} else {
				keep = append(keep, r)
			}
		}
		run = keep
		for next < len(jobs) && nanos(jobs[next].ArrivalS) == now {
			queue = append(queue, next)
			next++
		}
		for len(queue) > 0 {
			j := jobs[queue[0]]
			order := make([]int, nodes)
			for k := range order {
				order[k] = k
			}
			slices.SortStableFunc(order, func(a, b int) int { return free[b] - free[a] })
			var chosen []int
			for _, k := range order {
				if len(chosen) < j.NNodes && free[k] >= j.GPUsPerNode {
					chosen = append(chosen, k)
				}
			}
			if len(chosen) < j.NNodes {
				break
			}
			for _, k := range chosen {
				free[k] -= j.GPUsPerNode
			}
			start[queue[0]] = now
			run = append(run, running{end: now + nanos(j.DurationS), job: queue[0], nodes: chosen})
			queue = queue[1:]
		}
	}
	return start
}

func randomTrace(rng *rand.Rand, n, nodes, gpus int) []Job {
	jobs := make([]Job, n)
	t := 0.0
	for i := range jobs {
		// Coarse times so that arrivals and ends often coincide (the tie rules are tested too).
		t += float64(rng.IntN(4) * 30)
		nn := 1
		if rng.IntN(5) == 0 {
			nn = 1 + rng.IntN(nodes)
		}
		g := 1 + rng.IntN(gpus)
		d := float64(30 * (1 + rng.IntN(40)))
		jobs[i] = Job{Line: i + 2, ArrivalS: t, NNodes: nn, GPUsPerNode: g, DurationS: d, MaxRuntimeS: int(d) * (1 + rng.IntN(3))}
	}
	return jobs
}

func TestFIFOEqualsTextbookSimulator(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes, gpus := 1+rng.IntN(4), []int{1, 2, 4, 8}[rng.IntN(4)]
		jobs := randomTrace(rng, 200, nodes, gpus)
		want := textbookFIFO(jobs, nodes, gpus)
		res, err := Run(context.Background(), jobs, Config{Nodes: nodes, GPUsPerNode: gpus, Policy: scheduler.Policy{Name: scheduler.PolicyFIFO}})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := range jobs {
			if got := nanos(res.StartS[i]); got != want[i] {
				t.Fatalf("seed %d (%d×%d GPUs): job %d (%d×%d, arrives %gs) starts at %gs, textbook FIFO says %gs",
					seed, nodes, gpus, i, jobs[i].NNodes, jobs[i].GPUsPerNode, jobs[i].ArrivalS, res.StartS[i], float64(want[i])/1e9)
			}
		}
	}
}

func TestRunMetrics(t *testing.T) {
	// One node of 2 GPUs. A (2 GPUs, 100 s) at 0; B (1 GPU, 50 s) at 10: waits until 100; C (1 GPU, 10 s) at 20:
	// under fifo waits behind B until 100 too (both fit then).
	jobs := []Job{{ArrivalS: 0, NNodes: 1, GPUsPerNode: 2, DurationS: 100, MaxRuntimeS: 100},
		{ArrivalS: 10, NNodes: 1, GPUsPerNode: 1, DurationS: 50, MaxRuntimeS: 60},
		{ArrivalS: 20, NNodes: 1, GPUsPerNode: 1, DurationS: 10, MaxRuntimeS: 10}}
	res, err := Run(context.Background(), jobs, Config{Nodes: 1, GPUsPerNode: 2, Policy: scheduler.Policy{Name: scheduler.PolicyFIFO}})
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxWaitS != 90 || res.MeanWaitS != (0+90+80)/3.0 || res.P50WaitS != 80 || res.P95WaitS != 90 {
		t.Errorf("waits: %+v", res)
	}
	// Busy: 2×100 + 50 + 10 = 260 GPU-s over 2 GPUs × (150 − 0) s.
	if res.MakespanS != 150 || math.Abs(res.GPUUtilisation-260.0/300) > 1e-9 {
		t.Errorf("makespan %g utilisation %g", res.MakespanS, res.GPUUtilisation)
	}
	if res.DecideCalls != 6 { // arrivals at 0, 10, 20; ends at 100 (A), 110 (C), 150 (B)
		t.Errorf("decide calls %d, want one per distinct moment a job arrives or ends (6)", res.DecideCalls)
	}
}

func TestRunStopsAtDeclaredRuntime(t *testing.T) {
	jobs := []Job{{ArrivalS: 0, NNodes: 1, GPUsPerNode: 1, DurationS: 500, MaxRuntimeS: 100},
		{ArrivalS: 0, NNodes: 1, GPUsPerNode: 1, DurationS: 10, MaxRuntimeS: 10}}
	res, err := Run(context.Background(), jobs, Config{Nodes: 1, GPUsPerNode: 1, Policy: scheduler.Policy{Name: scheduler.PolicyFIFO}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StartS[1] != 100 || res.MakespanS != 110 {
		t.Errorf("the overstaying job must be stopped at its max_runtime_s: starts %v makespan %g", res.StartS, res.MakespanS)
	}
}

func TestRunNeverFits(t *testing.T) {
	jobs := []Job{{Line: 7, ArrivalS: 0, NNodes: 3, GPUsPerNode: 1, DurationS: 10}}
	_, err := Run(context.Background(), jobs, Config{Nodes: 2, GPUsPerNode: 4, Policy: scheduler.Policy{Name: scheduler.PolicyFIFO}})
	if err == nil || !strings.Contains(err.Error(), "line 7") || !strings.Contains(err.Error(), "never") {
		t.Errorf("got %v", err)
	}
}

// A backfilling policy lets a short job pass a blocked gang that FIFO makes it wait behind.
func TestBackfillBeatsFIFO(t *testing.T) {
	jobs := []Job{
		{ArrivalS: 0, NNodes: 1, GPUsPerNode: 4, DurationS: 1000, MaxRuntimeS: 1000}, // holds node 1
		{ArrivalS: 1, NNodes: 2, GPUsPerNode: 4, DurationS: 100, MaxRuntimeS: 100},   // needs both nodes: waits
		{ArrivalS: 2, NNodes: 1, GPUsPerNode: 4, DurationS: 500, MaxRuntimeS: 600},   // ends before 1000: backfills
		{ArrivalS: 3, NNodes: 1, GPUsPerNode: 4, DurationS: 900, MaxRuntimeS: 2000},  // would delay the gang
	}
	for _, c := range []struct {
		policy string
		starts []float64
	}{
		{scheduler.PolicyFIFO, []float64{0, 1000, 1100, 1100}},
		{scheduler.PolicyEASY, []float64{0, 1000, 2, 1100}},
		{scheduler.PolicyXFBF, []float64{0, 1000, 2, 1100}},
		{scheduler.PolicySJF, []float64{0, 1402, 2, 502}}, // the gang is passed by a job it then waits for
	} {
		res, err := Run(context.Background(), jobs, Config{Nodes: 2, GPUsPerNode: 4, Policy: scheduler.Policy{Name: c.policy}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.StartS, c.starts) {
			t.Errorf("%s: starts %v, want %v", c.policy, res.StartS, c.starts)
		}
	}
}

// A task held twice in a row at one instant for gangs that call started (so its stored reason did not change and
// Decide returned no Wait for it the second time) starts at that instant, as mvp's next pass would once the gangs
// are placed: not at the next arrival or end. 4 nodes × 4 GPUs; at 0 a 1-GPU and a 2-GPU job take two nodes (3 and
// 2 GPUs left); at 10 a 2 × 4 gang takes the empty two, and a 1 × 3 job and a 1-GPU job wait, Ray may put either on
// the gang's nodes; the gang placed, the 1 × 3 job starts on the node with 3 free and the 1-GPU one waits again, Ray
// may put it there first; that placed, it starts on the node with 2 free, still at 10.
func TestATaskHeldTwiceForGangsBeingPlacedStartsAtThatInstant(t *testing.T) {
	jobs := []Job{
		{Line: 2, ArrivalS: 0, NNodes: 1, GPUsPerNode: 1, DurationS: 1000, MaxRuntimeS: 1000},
		{Line: 3, ArrivalS: 0, NNodes: 1, GPUsPerNode: 2, DurationS: 1000, MaxRuntimeS: 1000},
		{Line: 4, ArrivalS: 10, NNodes: 2, GPUsPerNode: 4, DurationS: 100, MaxRuntimeS: 100},
		{Line: 5, ArrivalS: 10, NNodes: 1, GPUsPerNode: 3, DurationS: 100, MaxRuntimeS: 100},
		{Line: 6, ArrivalS: 10, NNodes: 1, GPUsPerNode: 1, DurationS: 100, MaxRuntimeS: 100},
	}
	for _, name := range scheduler.PolicyNames {
		res, err := Run(context.Background(), jobs, Config{Nodes: 4, GPUsPerNode: 4, Policy: scheduler.Policy{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []float64{0, 0, 10, 10, 10}; !slices.Equal(res.StartS, want) {
			t.Errorf("%s: starts %v, want %v", name, res.StartS, want)
		}
	}
}

func TestReadCSV(t *testing.T) {
	good := "user,arrival_s,nnodes,n_gpus_per_node,duration_s\nbob,10,1,2,30\nann,5,2,8,60.5\n"
	jobs, err := ReadCSV(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ArrivalS != 5 || jobs[0].Line != 3 || jobs[0].NNodes != 2 || jobs[0].MaxRuntimeS != 0 ||
		jobs[1].DurationS != 30 {
		t.Errorf("got %+v", jobs)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"arrival_s,nnodes,duration_s\n1,1,1\n", `no column "n_gpus_per_node"`},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n1,1,1,1\n2,1,x,1\n", `line 3, column n_gpus_per_node: "x" is not a number`},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n1,1.5,1,1\n", "line 2, column nnodes: \"1.5\" is not a whole number"},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n-1,1,1,1\n", "line 2, column arrival_s"},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s,max_runtime_s\n1,1,1,1,0\n", "line 2, column max_runtime_s"},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n1,1,1\n", "line 2, column duration_s: missing value"},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n", "no jobs"},
	} {
		_, err := ReadCSV(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestGenerate(t *testing.T) {
	cfg := GenConfig{Jobs: 5000, Nodes: 16, GPUsPerNode: 8, Load: 0.7, Seed: 3}
	a, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(context.Background(), cfg)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two traces")
	}
	var work float64
	one := 0
	for _, j := range a {
		work += j.DurationS * float64(j.NNodes*j.GPUsPerNode)
		if j.NNodes*j.GPUsPerNode == 1 {
			one++
		}
		if j.MaxRuntimeS < int(j.DurationS) || j.NNodes > 16 || j.GPUsPerNode > 8 {
			t.Fatalf("bad job %+v", j)
		}
	}
	load := work / (128 * a[len(a)-1].ArrivalS)
	if load < 0.6 || load > 0.8 {
		t.Errorf("offered load %.2f, asked 0.7", load)
	}
	if share := float64(one) / float64(len(a)); share < 0.65 || share > 0.75 {
		t.Errorf("1-GPU share %.2f", share)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, a); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(&buf)
	if err != nil || len(back) != len(a) || back[10].MaxRuntimeS != a[10].MaxRuntimeS {
		t.Errorf("round trip: %v", err)
	}
	small, _ := Generate(context.Background(), GenConfig{Jobs: 2000, Nodes: 2, GPUsPerNode: 4, Load: 0.8, Seed: 1})
	for _, j := range small {
		if j.NNodes*j.GPUsPerNode > 8 {
			t.Fatalf("a job larger than the cluster: %+v", j)
		}
	}
	if _, err := Generate(context.Background(), GenConfig{Jobs: 10, Nodes: 1, GPUsPerNode: 1, Load: 0}); err == nil {
		t.Error("load 0 accepted")
	}
}

// runHeap must pop in (end, job) order.
func TestRunHeapOrder(t *testing.T) {
	h := &runHeap{}
	for _, r := range []*run{{job: 2, end: 5}, {job: 1, end: 5}, {job: 3, end: 1}} {
		heap.Push(h, r)
	}
	var got []int
	for h.Len() > 0 {
		got = append(got, heap.Pop(h).(*run).job)
	}
	if !slices.Equal(got, []int{3, 1, 2}) {
		t.Errorf("got %v", got)
	}
}

func TestLowerBounds(t *testing.T) {
	// 1 node × 2 GPUs. The whole-cluster job W (arrives 0, runs 100) must start by 50. Jobs of 1 GPU, 1 s arrive
	// at 10, 20, 30 and 60. The best start is just after 30: only the job at 60 waits, 70 s; mean 70/5.
	jobs := []Job{{ArrivalS: 0, NNodes: 1, GPUsPerNode: 2, DurationS: 100}, {ArrivalS: 10, NNodes: 1, GPUsPerNode: 1, DurationS: 1},
		{ArrivalS: 20, NNodes: 1, GPUsPerNode: 1, DurationS: 1}, {ArrivalS: 30, NNodes: 1, GPUsPerNode: 1, DurationS: 1},
		{ArrivalS: 60, NNodes: 1, GPUsPerNode: 1, DurationS: 1}}
	cfg := Config{Nodes: 1, GPUsPerNode: 2}
	if b := LowerBounds(jobs, cfg, 50); b.WholeClusterJobs != 1 || math.Abs(b.MeanWaitS-14) > 1e-6 {
		t.Errorf("bound %+v, want mean 14", b)
	}
	// Allowed to wait only 5 s: the best start is 0 (the others wait 90, 80, 70, 40: 280 s until W ends). Then
	// the four 1-GPU jobs share 2 GPUs: the k-th to end cannot end before max(k × 1 GPU-s ÷ 2, 1 s) after 100, so
	// the 3rd and 4th wait 0.5 s and 1 s more: 281.5/5 (a real schedule: 90, 80, 71, 41).
	if b := LowerBounds(jobs, cfg, 5); math.Abs(b.MeanWaitS-56.3) > 1e-9 || b.RunOnlyMeanWaitS != 56 {
		t.Errorf("bound %+v, want mean 56.3 (56 until W ends)", b)
	}
	// Makespan: 204 GPU-s over 2 GPUs is 102 s, more than W's own end at 100.
	if b := LowerBounds(jobs, cfg, 5); b.MakespanS != 102 || b.GPUUtilisation != 1 {
		t.Errorf("makespan %+v", b)
	}
}

// TestLowerBoundsHoldForEveryPolicy replays random traces with whole-cluster jobs under every policy and checks
// that the mean-wait bound, given the longest wait the policy let a whole-cluster job have, is never above the
// mean wait the policy got, and the makespan bound never above its makespan.
func TestLowerBoundsHoldForEveryPolicy(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		nodes, gpus := 1+rng.IntN(3), []int{1, 2, 4}[rng.IntN(3)]
		jobs := randomTrace(rng, 150, nodes, gpus)
		for i := range jobs {
			if rng.IntN(12) == 0 {
				jobs[i].NNodes, jobs[i].GPUsPerNode = nodes, gpus
			}
		}
		for _, name := range scheduler.PolicyNames {
			cfg := Config{Nodes: nodes, GPUsPerNode: gpus, Policy: scheduler.Policy{Name: name}}
			res, err := Run(context.Background(), jobs, cfg)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, name, err)
			}
			w := 0.0
			for i, j := range jobs {
				if j.NNodes*j.GPUsPerNode == nodes*gpus {
					w = max(w, res.StartS[i]-j.ArrivalS)
				}
			}
			b := LowerBounds(jobs, cfg, w)
			if b.MeanWaitS > res.MeanWaitS+1e-9 || b.RunOnlyMeanWaitS > b.MeanWaitS {
				t.Errorf("seed %d (%d×%d) %s: bound %g (run only %g) above the mean wait %g it got with whole-cluster waits ≤ %g",
					seed, nodes, gpus, name, b.MeanWaitS, b.RunOnlyMeanWaitS, res.MeanWaitS, w)
			}
			if b.MakespanS > res.MakespanS+1e-9 {
				t.Errorf("seed %d %s: makespan bound %g above %g", seed, name, b.MakespanS, res.MakespanS)
			}
		}
	}
}

// TestSizesAreBounded: a billion nodes ran the machine out of memory building them, a GPU count near MaxInt64
// overflowed into a utilisation of -600 %, and the generator did the same with a billion jobs or wrote +Inf
// arrivals. Sizes past the bounds are refused with the bound.
func TestSizesAreBounded(t *testing.T) {
	jobs := []Job{{Line: 2, NNodes: 1, GPUsPerNode: 1, DurationS: 10, MaxRuntimeS: 10}}
	for _, c := range []Config{{Nodes: MaxNodes + 1, GPUsPerNode: 8}, {Nodes: 2, GPUsPerNode: MaxGPUsPerNode + 1},
		{Nodes: 2, GPUsPerNode: 8, CPUsPerNode: math.Inf(1)}, {Nodes: 2, GPUsPerNode: 8, CPUsPerNode: math.NaN()}} {
		if _, err := Run(context.Background(), jobs, c); err == nil {
			t.Errorf("Run %+v: accepted", c)
		}
	}
	for _, g := range []GenConfig{{Jobs: MaxJobs + 1, Nodes: 4, GPUsPerNode: 8, Load: 0.7},
		{Jobs: 5, Nodes: MaxNodes + 1, GPUsPerNode: 8, Load: 0.7}, {Jobs: 5, Nodes: 4, GPUsPerNode: MaxGPUsPerNode + 1, Load: 0.7}} {
		if _, err := Generate(context.Background(), g); err == nil {
			t.Errorf("Generate %+v: accepted", g)
		}
	}
}

// TestGenerateRefusesWhatItCannotWrite: a load so low that the arrivals span more than a trace may hold was
// written anyway and refused by the replay; a flood worth many times the steady team's jobs had no bound (23 GB
// and killed, walk-through 13). Both are refused, naming the flag to change.
func TestGenerateRefusesWhatItCannotWrite(t *testing.T) {
	_, err := Generate(context.Background(), GenConfig{Jobs: 1000, Nodes: 1, GPUsPerNode: 1, Load: 0.00001, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "--load") {
		t.Errorf("a span past 1e9 s: %v", err)
	}
	if jobs, err := Generate(context.Background(), GenConfig{Jobs: 1000, Nodes: 1, GPUsPerNode: 1, Load: 0.01, Seed: 1}); err != nil {
		t.Errorf("a low load whose span fits: %v", err)
	} else if last := jobs[len(jobs)-1].ArrivalS; last > maxTraceSeconds {
		t.Errorf("last arrival %g", last)
	}
	_, err = GenerateTeams(context.Background(), GenConfig{Jobs: 1000, Nodes: 16, GPUsPerNode: 8, Load: 0.0004, Seed: 1}, 10)
	if err == nil || !strings.Contains(err.Error(), "--flood-load") {
		t.Errorf("a flood of millions of jobs: %v", err)
	}
}
