package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/mvp2/mvp/internal/mvp"
)

// GenConfig is what a generated trace is made for.
type GenConfig struct {
	Jobs        int
	Nodes       int
	GPUsPerNode int
	// Load is the offered load: the jobs' GPU-seconds ÷ (the cluster's GPUs × the span of the arrivals).
	Load float64
	Seed uint64
}

// The generator's parameters. Each follows the shape the published GPU-cluster traces report; the sources are
// Helios (Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters",
// SC'21), Philly (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
// USENIX ATC'19) and PAI (Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale
// Heterogeneous GPU Clusters", NSDI'22); user run-time estimates follow Mu'alem & Feitelson (IEEE TPDS 12(6),
// 2001) and Tsafrir, Etsion & Feitelson ("Modeling User Runtime Estimates", JSSPP 2005). The exact numbers are
// this project's choice within those shapes (the papers give distributions as figures, not as fitted
// parameters); docs in specs/sim.md.
var (
	// gpuMix is the share of jobs by total GPUs asked. All three traces: most jobs ask for one GPU (Helios,
	// Philly, PAI), a minority for 2–8 GPUs on one node, and a thin tail for multi-node gangs, which hold most of
	// the GPU time (Helios; Philly's large jobs).
	gpuMix = []struct {
		gpus  int
		share float64
	}{{1, 0.70}, {2, 0.10}, {4, 0.08}, {8, 0.07}, {16, 0.025}, {32, 0.015}, {64, 0.007}, {128, 0.003}}
	// durationMedianS and durationSigma: run times are log-normal, heavy-tailed over minutes to days (Helios,
	// Philly, PAI all report a long tail and a median of minutes to tens of minutes); larger jobs run longer
	// (Helios, Philly), modelled as a median growing with GPUs^durationGPUExp.
	durationMedianS = 15 * 60.0
	durationSigma   = 1.8
	durationGPUExp  = 0.4
	durationMinS    = 30.0
	durationMaxS    = 14 * 86400.0
	// diurnalAmplitude: arrivals follow a daily cycle (Helios and PAI report day-time peaks of submissions),
	// rate ∝ 1 + A·sin(2π·t/day) (peak/trough = (1+A)/(1-A) = 3).
	diurnalAmplitude = 0.5
	// overestimateF is the f-model of user estimates (Mu'alem & Feitelson): declared = duration × U(1, f); the
	// declared value is then rounded up to one of the round limits users pick (Tsafrir et al.: estimates cluster
	// on a few round values).
	overestimateF = 3.0
	roundLimitsS  = []int{5 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 86400,
		2 * 86400, 3 * 86400, 7 * 86400, 14 * 86400}
)

// Generate makes a trace of cfg.Jobs jobs for a cluster of cfg.Nodes × cfg.GPUsPerNode GPUs at offered load
// cfg.Load. The same config gives the same trace. Sizes larger than the cluster are left out of the mix (the
// shares of the others renormalised): a team does not submit jobs its cluster can never run.
func Generate(ctx context.Context, cfg GenConfig) ([]Job, error) {
	if err := checkCluster(cfg.Nodes, cfg.GPUsPerNode); err != nil {
		return nil, err
	}
	switch {
	case cfg.Jobs < 1 || cfg.Jobs > MaxJobs:
		return nil, fmt.Errorf("--jobs must be from 1 to %d (got %d)", MaxJobs, cfg.Jobs)
	case !(cfg.Load > 0) || cfg.Load > 10:
		return nil, fmt.Errorf("--load must be in (0, 10] (got %g)", cfg.Load)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d7670))
	capacity := cfg.Nodes * cfg.GPUsPerNode
	jobs := make([]Job, cfg.Jobs)
	var work float64 // GPU-seconds
	var mixTotal float64
	for _, m := range gpuMix {
		if m.gpus <= capacity {
			mixTotal += m.share
		}
	}
	for i := range jobs {
		if i%65536 == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		gpus := pickGPUs(rng.Float64()*mixTotal, capacity)
		j := &jobs[i]
		j.Priority = mvp.DefaultPriority // the operator's jobs at the priority a trace without one gives
		if gpus <= cfg.GPUsPerNode {
			j.NNodes, j.GPUsPerNode = 1, gpus
		} else {
			j.NNodes, j.GPUsPerNode = (gpus+cfg.GPUsPerNode-1)/cfg.GPUsPerNode, cfg.GPUsPerNode
			j.NNodes = min(j.NNodes, cfg.Nodes)
		}
		median := durationMedianS * math.Pow(float64(j.NNodes*j.GPUsPerNode), durationGPUExp)
		d := median * math.Exp(durationSigma*rng.NormFloat64())
		d = math.Round(min(max(d, durationMinS), durationMaxS))
		j.DurationS = d
		j.MaxRuntimeS = declare(d, 1+(overestimateF-1)*rng.Float64())
		work += d * float64(j.NNodes*j.GPUsPerNode)
	}
	// Arrivals: a Poisson process whose rate follows the day, over the span that makes the offered load cfg.Load.
	span := work / (cfg.Load * float64(capacity))
	if span > maxTraceSeconds {
		return nil, fmt.Errorf("at --load %g these %d jobs would arrive over %.3g s, more than a trace may span (%g s): "+
			"raise --load or lower --jobs", cfg.Load, cfg.Jobs, span, float64(maxTraceSeconds))
	}
	arr := make([]float64, len(jobs))
	for i := range arr {
		arr[i] = diurnalInverse(rng.Float64()*cumulative(span), span)
	}
	sort.Float64s(arr)
	for i := range jobs {
		jobs[i].ArrivalS = math.Round(arr[i]*10) / 10
		jobs[i].Line = i + 2
	}
	return jobs, nil
}

// pickGPUs picks a size from the mix of sizes up to capacity; u is uniform over their total share.
func pickGPUs(u float64, capacity int) int {
	for _, m := range gpuMix {
		if m.gpus > capacity {
			continue
		}
		if u < m.share {
			return m.gpus
		}
		u -= m.share
	}
	return 1
}

// declare is the max_runtime_s a user gives for a run of d seconds: d × factor, rounded up to a round limit.
func declare(d, factor float64) int {
	want := int(math.Ceil(d * factor))
	if k, _ := slices.BinarySearch(roundLimitsS, want); k < len(roundLimitsS) {
		return roundLimitsS[k]
	}
	return want
}

const day = 86400.0

// cumulative is the integral of the diurnal rate 1 + A·sin(2πt/day) from 0 to t.
func cumulative(t float64) float64 {
	return t + diurnalAmplitude*day/(2*math.Pi)*(1-math.Cos(2*math.Pi*t/day))
}

// diurnalInverse finds t in [0, span] with cumulative(t) = c (cumulative is increasing: bisection).
func diurnalInverse(c, span float64) float64 {
	lo, hi := 0.0, span
	for k := 0; k < 60 && hi-lo > 1e-3; k++ {
		mid := (lo + hi) / 2
		if cumulative(mid) < c {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Team names of GenerateTeams.
const (
	TeamSteady = "steady"
	TeamFlood  = "flood"
)

// floodWindow is the part of the steady team's span over which the flooding team submits its whole sweep.
const floodWindow = 0.1

// A flood is a sweep: many alike one-node jobs of a whole node each, run times log-normal around sweepMedianS
// (sweepSigma), declared as Generate declares.
const (
	sweepMedianS = 2 * 3600.0
	sweepSigma   = 0.5
)

// GenerateTeams makes a two-team trace: team "steady" submits cfg.Jobs jobs steadily at offered load cfg.Load
// (as Generate), and team "flood" submits a sweep worth floodLoad of the cluster over the same span (one-node jobs
// of a whole node, run times around 2 h), all of it in the first tenth of the span.
func GenerateTeams(ctx context.Context, cfg GenConfig, floodLoad float64) ([]Job, error) {
	if !(floodLoad > 0) || floodLoad > 10 {
		return nil, fmt.Errorf("--flood-load must be in (0, 10] (got %g)", floodLoad)
	}
	steady, err := Generate(ctx, cfg)
	if err != nil {
		return nil, err
	}
	span := steady[len(steady)-1].ArrivalS
	rng := rand.New(rand.NewPCG(cfg.Seed+1, 0x666c6f6f64))
	jobs := make([]Job, 0, len(steady))
	for _, j := range steady {
		j.User, j.Priority = TeamSteady, 50
		jobs = append(jobs, j)
	}
	want := floodLoad * float64(cfg.Nodes*cfg.GPUsPerNode) * span // GPU-seconds
	// A sweep job's mean run is sweepMedianS·e^(σ²/2) (log-normal): refuse a flood of more jobs than a trace may
	// hold before making them.
	if n := want / (sweepMedianS * math.Exp(sweepSigma*sweepSigma/2) * float64(cfg.GPUsPerNode)); float64(len(jobs))+n > MaxJobs {
		return nil, fmt.Errorf("--flood-load %g over the steady team's span of %.3g s would make about %.3g flood jobs, "+
			"more than a trace may hold (%d): lower --flood-load, or raise --load so that the span is shorter",
			floodLoad, span, n, MaxJobs)
	}
	for work := 0.0; work < want; {
		if len(jobs)%65536 == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		d := math.Round(min(max(sweepMedianS*math.Exp(sweepSigma*rng.NormFloat64()), 600), 12*3600))
		j := Job{NNodes: 1, GPUsPerNode: cfg.GPUsPerNode, DurationS: d, User: TeamFlood, Priority: 50,
			MaxRuntimeS: declare(d, 1+(overestimateF-1)*rng.Float64()),
			ArrivalS:    math.Round(rng.Float64()*floodWindow*span*10) / 10}
		jobs = append(jobs, j)
		work += d * float64(cfg.GPUsPerNode)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	for i := range jobs {
		jobs[i].Line = i + 2
	}
	return jobs, nil
}
