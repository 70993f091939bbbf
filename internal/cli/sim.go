package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/sim"
)

// simLines are the usages of sim (the replay), sim gen and sim bound.
var simLines = map[string]string{
	"sim": `mvp sim --trace FILE.csv --nodes N --gpus-per-node G [--cpus-per-node C] [--policy NAME[,NAME...]|all] [--config FILE]
        [--fair-share=true|false] [--only-user U] [--max-running N] [-o table|json]
  replay a trace through the scheduler's Decide with a simulated clock (no Ray); --policy all runs every policy,
  a comma-separated list those;
  the trace's optional user and priority columns set each task's owner and priority`,
	"gen": `mvp sim gen --jobs N --nodes N --gpus-per-node G --load L [--seed S] [--flood-load F] -o FILE.csv
  write a trace shaped like published GPU-cluster traces (specs/sim.md); with --flood-load, a two-team trace:
  team steady at load L, team flood submitting load F's worth in the first tenth of the span`,
	"bound": `mvp sim bound --trace FILE.csv --nodes N --gpus-per-node G --max-wait-s W [--config FILE]
  lower bounds every policy is held to: the mean wait if whole-cluster jobs start within W, the makespan`,
}

var simUsage = "usage:\n" + subUsages(simLines["sim"], simLines["gen"], simLines["bound"])

func runSim(ctx context.Context, args []string, env Env) error {
	err := runSimVerb(ctx, args, env)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

func runSimVerb(ctx context.Context, args []string, env Env) error {
	if len(args) > 0 && args[0] == "gen" {
		return runSimGen(ctx, args[1:], env)
	}
	if len(args) > 0 && args[0] == "bound" {
		return runSimBound(args[1:], env)
	}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+simLines["sim"]+"\n  (mvp sim gen makes a trace, mvp sim bound bounds it: mvp sim gen -h, mvp sim bound -h)")
	trace := fs.String("trace", "", "the trace (CSV with a header: arrival_s, nnodes, n_gpus_per_node, duration_s[, max_runtime_s])")
	nodes := fs.Int("nodes", 0, "nodes in the simulated cluster")
	gpus := fs.Int("gpus-per-node", 0, "GPUs per node")
	cpus := fs.Float64("cpus-per-node", 0, "CPUs per node; 0: CPUs are not modelled (gangs ask for GPUs only)")
	policy := fs.String("policy", scheduler.DefaultPolicy, "policy: "+strings.Join(scheduler.PolicyNames, ", ")+
		"; all; or a comma-separated list of them")
	cfgPath := fs.String("config", "", "dev.yaml whose v2 settings to use (default: the built-in defaults)")
	maxRunning := fs.Int("max-running", 0, "max_running_tasks; 0: no bound")
	fair := fs.String("fair-share", "", "true or false: fair share on or off (default: the config's v2.scheduler.fair_share)")
	onlyUser := fs.String("only-user", "", "replay only this user's jobs (the cluster to themselves)")
	out := fs.String("o", "table", "output: table or json")
	if err := fs.Parse(args); err != nil {
		return flagError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), simUsage)}
	}
	if *trace == "" {
		return usageError{fmt.Errorf("--trace, --nodes and --gpus-per-node are required\n%s", simUsage)}
	}
	for _, err := range []error{atLeast("--nodes", *nodes, 1), atLeast("--gpus-per-node", *gpus, 1),
		atLeast("--max-running", *maxRunning, 0)} {
		if err != nil {
			return err
		}
	}
	if err := (sim.Config{Nodes: *nodes, GPUsPerNode: *gpus}).Check(nil); err != nil {
		return usageError{fmt.Errorf("--nodes, --gpus-per-node: %w", err)} // before the trace is read
	}
	if !(*cpus >= 0) {
		return usageError{fmt.Errorf("--cpus-per-node must be 0 (CPUs not modelled) or more, not %g", *cpus)}
	}
	if *out != "table" && *out != "json" {
		return usageError{fmt.Errorf("-o must be table or json, not %q", *out)}
	}
	names := strings.Split(*policy, ",")
	if *policy == "all" {
		names = scheduler.PolicyNames
	}
	for _, n := range names {
		if n == "" || !scheduler.ValidPolicy(n) {
			return usageError{fmt.Errorf("--policy %q: %q is not one of %s (or all, or a comma-separated list)",
				*policy, n, strings.Join(scheduler.PolicyNames, ", "))}
		}
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	jobs, err := readTrace(*trace)
	if err != nil {
		return err
	}
	if *onlyUser != "" {
		jobs = slices.DeleteFunc(jobs, func(j sim.Job) bool { return j.Owner() != *onlyUser })
		if len(jobs) == 0 {
			return usageError{fmt.Errorf("the trace has no job of user %q", *onlyUser)}
		}
	}
	base := service.PolicyOf(cfg)
	base.MaxRunning, base.GangWait = *maxRunning, 0
	switch *fair {
	case "":
	case "true", "false":
		base.FairShare = *fair == "true"
	default:
		return usageError{fmt.Errorf("--fair-share must be true or false, not %q", *fair)}
	}
	if *cpus <= 0 {
		base.CPUsPerGPU, base.Driver, base.Drivers = nil, nil, nil
	}
	var results []*sim.Result
	for _, name := range names {
		p := base
		p.Name = name
		res, err := sim.Run(ctx, jobs, sim.Config{Nodes: *nodes, GPUsPerNode: *gpus, CPUsPerNode: *cpus, Policy: p})
		if err != nil {
			return fmt.Errorf("%s: %w", *trace, err)
		}
		results = append(results, res)
	}
	if *out == "json" {
		enc := json.NewEncoder(env.Stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return printSim(env.Stdout, results)
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Parse([]byte("{}"))
	}
	return config.Load(path)
}

// printSim prints one row per policy, waits in hours.
func printSim(w io.Writer, rs []*sim.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tJOBS\tMEAN WAIT\tP50\tP95\tMAX WAIT\tGPU UTIL\tMAKESPAN\tDECIDES\tDECIDE MAX")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.1f %%\t%s\t%d\t%.1f ms\n", r.Policy, r.Jobs, hours(r.MeanWaitS),
			hours(r.P50WaitS), hours(r.P95WaitS), hours(r.MaxWaitS), 100*r.GPUUtilisation, hours(r.MakespanS),
			r.DecideCalls, r.DecideMaxMs)
		for _, u := range r.Users {
			fmt.Fprintf(tw, "  user %s\t%d\t%s\t\t%s\t\t%.1f %% of GPU time\t\t\t\n", u.User, u.Jobs, hours(u.MeanWaitS),
				hours(u.P95WaitS), 100*u.GPUShare)
		}
	}
	return tw.Flush()
}

func hours(s float64) string { return fmt.Sprintf("%.2f h", s/3600) }

func runSimGen(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("sim gen", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+simLines["gen"])
	jobs := fs.Int("jobs", 0, "jobs in the trace")
	nodes := fs.Int("nodes", 0, "nodes of the cluster the trace is made for")
	gpus := fs.Int("gpus-per-node", 0, "GPUs per node")
	load := fs.Float64("load", 0, "offered load: GPU-seconds asked ÷ GPU-seconds the cluster offers over the arrivals")
	seed := fs.Uint64("seed", 1, "random seed: the same seed gives the same trace")
	floodLoad := fs.Float64("flood-load", 0, "a two-team trace: team flood submits this load's worth in the first tenth of the span")
	out := fs.String("o", "", "file to write (\"-\": standard output)")
	if err := fs.Parse(args); err != nil {
		return flagError{err}
	}
	if *out == "" {
		return usageError{fmt.Errorf("-o FILE is required\n%s", simUsage)}
	}
	start := time.Now()
	gc := sim.GenConfig{Jobs: *jobs, Nodes: *nodes, GPUsPerNode: *gpus, Load: *load, Seed: *seed}
	var trace []sim.Job
	var err error
	if *floodLoad != 0 {
		trace, err = sim.GenerateTeams(ctx, gc, *floodLoad)
	} else {
		trace, err = sim.Generate(ctx, gc)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return usageError{err}
	}
	if *out == "-" {
		return sim.WriteCSV(ctxWriter{ctx, env.Stdout}, trace)
	}
	if err := writeWhole(ctx, *out, trace); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Fprintf(env.Stderr, "wrote %d jobs to %s in %s\n", len(trace), *out, time.Since(start).Round(time.Millisecond))
	return nil
}

func runSimBound(args []string, env Env) error {
	fs := flag.NewFlagSet("sim bound", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+simLines["bound"])
	trace := fs.String("trace", "", "the trace")
	nodes := fs.Int("nodes", 0, "nodes in the simulated cluster")
	gpus := fs.Int("gpus-per-node", 0, "GPUs per node")
	maxWait := fs.Float64("max-wait-s", -1, "the longest wait allowed to a whole-cluster job, in seconds")
	cfgPath := fs.String("config", "", "dev.yaml whose v2 settings to use (default: the built-in defaults)")
	if err := fs.Parse(args); err != nil {
		return flagError{err}
	}
	if *trace == "" {
		return usageError{fmt.Errorf("--trace, --nodes, --gpus-per-node and --max-wait-s are required\n%s", simUsage)}
	}
	for _, err := range []error{atLeast("--nodes", *nodes, 1), atLeast("--gpus-per-node", *gpus, 1)} {
		if err != nil {
			return err
		}
	}
	if err := (sim.Config{Nodes: *nodes, GPUsPerNode: *gpus}).Check(nil); err != nil {
		return usageError{fmt.Errorf("--nodes, --gpus-per-node: %w", err)}
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-wait-s" })
	if !given {
		return usageError{fmt.Errorf("--max-wait-s is required: the longest wait allowed to a whole-cluster job, in seconds\n%s", simUsage)}
	}
	if !(*maxWait >= 0) || math.IsInf(*maxWait, 0) {
		return usageError{fmt.Errorf("--max-wait-s must be a number of seconds, 0 or more, not %g\n%s", *maxWait, simUsage)}
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	jobs, err := readTrace(*trace)
	if err != nil {
		return err
	}
	sc := sim.Config{Nodes: *nodes, GPUsPerNode: *gpus, Policy: service.PolicyOf(cfg)}
	if err := sc.Check(jobs); err != nil {
		return fmt.Errorf("%s: %w", *trace, err)
	}
	b := sim.LowerBounds(jobs, sc, *maxWait)
	return json.NewEncoder(env.Stdout).Encode(b)
}

// atLeast refuses flag name's value v below least, naming it.
func atLeast(name string, v, least int) error {
	if v < least {
		return usageError{fmt.Errorf("%s must be at least %d, not %d\n%s", name, least, v, simUsage)}
	}
	return nil
}

// writeWhole writes trace to path. A new or regular file is written beside it and renamed over it once whole (a
// new one with the mode os.Create gives, an old one keeping its own), so an interrupted or failed write leaves no
// half trace under that name; anything else (a device, a pipe, a link to one: -o /dev/stdout) is written to
// directly.
func writeWhole(ctx context.Context, path string, trace []sim.Job) error {
	fi, statErr := os.Stat(path)
	if statErr == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := sim.WriteCSV(ctxWriter{ctx, f}, trace); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(path), os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666) // 0666 less the umask, as os.Create
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	if err := sim.WriteCSV(ctxWriter{ctx, f}, trace); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if statErr == nil {
		if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return os.Rename(tmp, path)
}

// ctxWriter stops a long write once ctx ends (Ctrl-C).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.w.Write(p)
}

// readTrace reads a trace CSV; errors name the file.
func readTrace(path string) ([]sim.Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("read the trace: %w", err)} // the command names a file it cannot read
	}
	defer f.Close()
	jobs, err := sim.ReadCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}
