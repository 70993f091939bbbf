package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mvp2/mvp/internal/loadgen"
	"github.com/mvp2/mvp/internal/loadgen/minimal"
)

// loadSpec never fits a real cluster (16 GPUs on one node), so a load run starts no Ray job.
const loadSpec = "workload: ppo\nnnodes: 1\nn_gpus_per_node: 16\nname: load\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"

// benchLines are the usages of bench's subcommands.
var benchLines = map[string]string{
	"load": "mvp bench load [--clients N] [--duration D] [--submit-share S] [--server-pid PID] [--no-verify]\n" +
		"               [-f job.yaml] [-o table|json]\n" +
		"  load the API at $MVP_ADDR; report throughput and latency (its tasks stay queued: use a server of its own)",
	"minimal-server": "mvp bench minimal-server --listen ADDR --db FILE\n  P1's minimal durable server (make bench)",
	"raw-fsync":      "mvp bench raw-fsync --db FILE [--n N]\n  the disk's rate of one-row transactions (make bench)",
}

var benchUsage = "usage:\n" + subUsages(benchLines["load"], benchLines["minimal-server"], benchLines["raw-fsync"])

func runBench(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return usageError{errors.New("a subcommand is required: load, minimal-server or raw-fsync\n" + benchUsage)}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintln(env.Stderr, benchUsage+parentHelp("bench"))
		return flag.ErrHelp
	case "load":
		return runBenchLoad(ctx, args[1:], env)
	case "minimal-server":
		return runMinimalServer(ctx, args[1:], env)
	case "raw-fsync":
		return runRawFsync(ctx, args[1:], env)
	}
	return usageError{fmt.Errorf("unknown subcommand %q: load, minimal-server or raw-fsync\n%s", args[0], benchUsage)}
}

func runBenchLoad(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("bench load", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+benchLines["load"])
	clients := fs.Int("clients", 64, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	share := fs.Float64("submit-share", 0.5, "share of operations that are submits (1: submits only)")
	file := fs.String("f", "", "jobspec to submit (default: a 1×16 PPO spec, which waits in the queue; the tasks submitted stay on the server: load one of its own, not a shared one)")
	out := fs.String("o", "table", "output: table or json")
	pid := fs.Int("server-pid", 0, "the server's process id: report its CPU time during the run (Linux)")
	noVerify := fs.Bool("no-verify", false, "do not read back the acknowledged submits")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if *share <= 0 || *share > 1 {
		return usageError{fmt.Errorf("--submit-share must be in (0, 1], got %g", *share)}
	}
	// Refused before any request: loadgen takes 0 clients for its default of 64, and a run of no time reports zeros.
	switch {
	case *clients < 1:
		return usageError{fmt.Errorf("--clients must be at least 1, got %d", *clients)}
	case *duration <= 0:
		return usageError{fmt.Errorf("--duration must be above 0, got %s", *duration)}
	case *out != "table" && *out != "json":
		return usageError{fmt.Errorf("-o must be table or json, not %q", *out)}
	case *pid < 0:
		return usageError{fmt.Errorf("--server-pid must be a process id, got %d", *pid)}
	}
	body := []byte(loadSpec)
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return usageError{fmt.Errorf("read jobspec: %w", err)} // the command names a file it cannot read
		}
		body = b
	}
	c := clientOf(env) // MVP_ADDR and MVP_TOKEN read as every client verb reads them
	res, err := loadgen.Run(ctx, loadgen.Options{Addr: c.Addr, Token: c.Token, Clients: *clients,
		Duration: *duration, Spec: body, SubmitShare: *share, ServerPID: *pid, NoVerify: *noVerify})
	if err != nil {
		return err
	}
	if *out == "json" {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintln(env.Stdout, res.Report())
	}
	if res.Missing > 0 {
		return fmt.Errorf("%d acknowledged submits are missing", res.Missing)
	}
	ops, failed := 0, 0
	for _, s := range res.Ops {
		ops, failed = ops+s.Count, failed+s.Errors
	}
	if ops > 0 && failed == ops { // nothing was measured but errors: no success for a script
		first := ""
		if len(res.ErrorSample) > 0 {
			first = ": " + res.ErrorSample[0]
		}
		return fmt.Errorf("every operation (%d) failed%s", ops, first)
	}
	return nil
}

// runMinimalServer serves P1's minimal durable server until ctx ends (make bench stops it with SIGTERM).
func runMinimalServer(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("bench minimal-server", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+benchLines["minimal-server"])
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	db := fs.String("db", "", "SQLite file (created)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if *db == "" {
		return usageError{errors.New("bench minimal-server: --db FILE is required")}
	}
	s, err := minimal.Open(*db)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		s.Close()
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	fmt.Fprintf(env.Stdout, "minimal server on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.Close()
		return err
	}
	batches, inserts := s.Stats()
	fmt.Fprintf(env.Stdout, "minimal server: %d inserts in %d transactions\n", inserts, batches)
	return s.Close()
}

// runRawFsync prints the disk's raw one-row-per-transaction rate.
func runRawFsync(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("bench raw-fsync", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+benchLines["raw-fsync"])
	db := fs.String("db", "", "SQLite file (created)")
	n := fs.Int("n", 2000, "rows, one transaction each")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if *db == "" || *n <= 0 {
		return usageError{errors.New("bench raw-fsync: --db FILE is required and --n must be positive")}
	}
	rate, err := minimal.RawInsertRate(ctx, *db, []byte(loadSpec), *n)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "raw-fsync %.0f rows/s\n", rate)
	return nil
}
