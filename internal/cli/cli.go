// Package cli is the mvp command line: the client verbs that talk to the API, and the dispatch to `serve`.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Env is what the CLI reads of its surroundings.
type Env struct {
	Stdout, Stderr io.Writer
	// Stdin is where `mvp secrets put` reads a value; nil means none.
	Stdin  io.Reader
	Getenv func(string) string
	// Serve runs `mvp serve` with its arguments; its usage (-h) and flag errors go to stderr.
	Serve func(ctx context.Context, args []string, stderr io.Writer) error
	// Doctor runs `mvp doctor` with its arguments; its usage (-h) and flag errors go to stderr.
	Doctor func(ctx context.Context, args []string, stderr io.Writer) error
}

const usage = `mvp — a durable queue with gang GPU admission in front of a Ray cluster.

Usage:
  mvp serve --config configs/dev.yaml          run the API and the scheduler
  mvp submit -f job.yaml [-e key=value …] [--dry-run | --wait [--timeout D]]
  mvp get TASK_ID
  mvp list [--state S] [--workload W] [--owner USER] [--limit N] [--cursor C]
  mvp queue                                     the queue in policy order: owner, priority, rank, reason, estimated start
  mvp users                                     (operator) each user's decayed GPU usage, share, limits, GPUs in use
  mvp nodes forget NODE_ID [NODE_ID …]          (operator) stop waiting for GPU nodes that are down for good
  mvp logs TASK_ID [-f] [--attempt N]
  mvp cancel TASK_ID [TASK_ID …]
  mvp wait TASK_ID [TASK_ID …] [--timeout D]    until each has ended: exit 0 all SUCCEEDED, 3 one did not, 4 timeout
  mvp events TASK_ID [--limit N] [--cursor C]
  mvp schedule create NAME --cron EXPR -f job.yaml [--timezone TZ] [--overlap skip|queue|replace] [-e key=value …]
  mvp schedule list | get NAME | pause NAME | resume NAME | delete NAME [--owner USER]   recurring tasks
  mvp results TASK_ID [--get PATH [-o FILE]]     list the task's result files, or fetch one
  mvp resubmit TASK_ID [-e key=value …] [--resume] [--dry-run]   a new task from the task's stored spec
  mvp secrets list | put NAME [--from-file F] | delete NAME [--owner USER]   write-only secrets (put reads the value from stdin)
  mvp bench load [--clients N] [--duration D] [--submit-share S] [-f job.yaml]   load the API; report throughput and latency
                                                (its tasks stay queued on that server: use a server of its own)
  mvp bench minimal-server --listen ADDR --db FILE | raw-fsync --db FILE [--n N]   P1's yardsticks (make bench)
  mvp doctor [--config dev.yaml] [--gpus N] [--num-gpus]      this node's GPUs (NVML) and its readiness as a Ray worker
  mvp backup [--config dev.yaml] [--db-path P] FILE            a consistent copy of mvp's database, safe while it runs
  mvp sim --trace FILE.csv --nodes N --gpus-per-node G [--policy NAME|all] [-o json]   replay a trace (no Ray)
  mvp sim gen --jobs N --nodes N --gpus-per-node G --load L [--seed S] -o FILE.csv     make a trace
  mvp sim bound --trace FILE.csv --nodes N --gpus-per-node G --max-wait-s W       lower bounds any policy is held to
  mvp version                                   the git commit this binary was built from

The client verbs talk to the API at $MVP_ADDR (default http://127.0.0.1:8080) with the token in $MVP_TOKEN (the
operator's, or a named user's: a user sees and acts on their own tasks, schedules and secrets only).
Every client verb takes -o table|json|yaml (json is the API's own answer); logs prints the log as it is.
mvp VERB [SUBCOMMAND] -h (or mvp help VERB [SUBCOMMAND]) shows its usage and flags.

Example:
  export MVP_ADDR=http://127.0.0.1:8080 MVP_TOKEN=...
  mvp submit -f configs/examples/ppo.yaml -e nnodes=1 -e env.WANDB_MODE=offline
  mvp logs -f mvp2-ppo-20251223-143201-7f3a
`

// Run runs the command line and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage) // no verb: a usage error (exit 2), as the spec's exit codes say
		return 2
	}
	if args[0] == "help" && len(args) > 1 {
		// mvp help submit: submit's own usage and flags; mvp help schedule create: create's. Asked for, it goes to
		// stdout, as `mvp help`'s does (`mvp help submit | less`); a refusal (an unknown verb) to stderr.
		var b bytes.Buffer
		quiet := env
		quiet.Stdout, quiet.Stderr = &b, &b
		code := Run(ctx, append(slices.Clone(args[1:]), "-h"), quiet)
		w := env.Stdout
		if code != 0 {
			w = env.Stderr
		}
		_, _ = b.WriteTo(w)
		return code
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.Stdout, usage)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	verb, rest := args[0], args[1:]
	// What mvp says on stderr echoes what the user typed (an -e, a name, a flag) and the fields the server names
	// from it: shown with control characters escaped, so that an escape sequence pasted in cannot drive the terminal.
	env.Stderr = terminalSafe{env.Stderr}
	var err error
	switch verb {
	case "serve":
		err = env.Serve(ctx, rest, env.Stderr)
	case "submit", "get", "list", "queue", "logs", "cancel", "events", "results", "resubmit":
		err = runClient(ctx, verb, rest, env)
	case "wait":
		err = runWait(ctx, rest, env)
	case "secrets":
		err = runSecrets(ctx, rest, env)
	case "bench":
		err = runBench(ctx, rest, env)
	case "doctor":
		if env.Doctor == nil {
			err = errors.New("not available in this build")
			break
		}
		err = env.Doctor(ctx, rest, env.Stderr)
	case "sim":
		err = runSim(ctx, rest, env)
	case "schedule":
		err = runSchedule(ctx, rest, env)
	case "users":
		err = runUsers(ctx, rest, env)
	case "nodes":
		err = runNodes(ctx, rest, env)
	case "backup":
		err = runBackup(ctx, rest, env)
	case "version":
		err = runVersion(rest, env)
	default:
		fmt.Fprintf(env.Stderr, "mvp: unknown command %q\n\n%s", verb, usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.As(err, new(flagError)) {
		return 2 // the flag package said what is wrong, with the usage
	}
	if code := waitExit(err); code != 0 {
		fmt.Fprintf(env.Stderr, "mvp %s: %v\n", verb, err) // a wait's end that is not a success: not mvp's refusal
		return code
	}
	if err != nil {
		var se *api.StatusError
		if errors.As(err, &se) && se.Status == http.StatusUnauthorized && strings.TrimSpace(env.Getenv("MVP_TOKEN")) == "" {
			err = fmt.Errorf("%w: no token was sent; set MVP_TOKEN to your API token", err)
		} else if errors.As(err, &se) && se.Status == http.StatusForbidden && se.Detail.Field == "" &&
			strings.HasPrefix(se.Detail.Message, "the token is not valid") {
			if tok := strings.TrimSpace(env.Getenv("MVP_TOKEN")); len(tok) > 7 && strings.EqualFold(tok[:7], "bearer ") {
				err = fmt.Errorf("%w: MVP_TOKEN begins with %q, which mvp adds itself: set it to the token alone, "+
					"without \"Bearer \"", err, tok[:7])
			} else {
				err = fmt.Errorf("%w: the server at MVP_ADDR takes no such token; set MVP_TOKEN to yours (a named "+
					"user's token stops working when the operator has rotated it or removed the user: ask the operator "+
					"for the current one; a local make run, without MVP_INTERNAL_TOKEN set, prints a new token at each "+
					"start)", err)
			}
		}
		fmt.Fprintf(env.Stderr, "mvp %s: %v\n", verb, err)
		var ue usageError
		var ne *api.NameError
		if errors.As(err, &ue) || errors.As(err, &ne) {
			return 2 // a name that cannot be asked for, found before any request
		}
		return 1
	}
	return 0
}

type usageError struct{ error }

// flagError is a usage error the flag package has already printed, with the verb's usage: not printed again.
type flagError struct{ error }

// Unwrap lets errors.Is see a flag.ErrHelp inside.
func (e flagError) Unwrap() error { return e.error }

// Usage marks err as a usage error (exit status 2), for the verbs wired in from outside (serve, doctor).
func Usage(err error) error { return usageError{err} }

// FlagError marks err, from the Parse of a FlagSet given SetUsage, as a usage error (exit status 2) that the flag
// package has already printed with the usage: Run does not print it again.
func FlagError(err error) error { return flagError{err} }

// Unwrap lets errors.Is see a flag.ErrHelp inside (--help of a verb is not a usage error).
func (e usageError) Unwrap() error { return e.error }

var verbHelp = map[string]string{
	"submit": "mvp submit -f job.yaml [-e key=value …] [--dry-run | --wait [--timeout D]]\n  e.g. mvp submit -f configs/examples/ppo.yaml -e nnodes=1 -e env.WANDB_MODE=offline --dry-run",
	"wait": "mvp wait TASK_ID [TASK_ID …] [--timeout D]\n  e.g. mvp wait mvp2-ppo-20251223-143201-7f3a --timeout 12h" +
		"\n  (exit 0: every task SUCCEEDED; 3: all ended, at least one FAILED or CANCELED; 4: --timeout passed first;\n  130: interrupted, the tasks go on)",
	"get":      "mvp get TASK_ID\n  e.g. mvp get mvp2-ppo-20251223-143201-7f3a -o json",
	"list":     "mvp list [--state S] [--workload W] [--owner USER] [--limit N] [--cursor C]\n  e.g. mvp list --state PENDING_RESOURCES",
	"queue":    "mvp queue\n  e.g. mvp queue -o json",
	"logs":     "mvp logs TASK_ID [-f] [--attempt N]\n  the attempt's log, printed as it is (no -o)\n  e.g. mvp logs -f mvp2-ppo-20251223-143201-7f3a",
	"cancel":   "mvp cancel TASK_ID [TASK_ID …]\n  e.g. mvp cancel mvp2-ppo-20251223-143201-7f3a",
	"events":   "mvp events TASK_ID [--limit N] [--cursor C]\n  e.g. mvp events mvp2-ppo-20251223-143201-7f3a -o yaml",
	"resubmit": "mvp resubmit TASK_ID [-e key=value …] [--resume] [--dry-run]\n  e.g. mvp resubmit mvp2-ppo-20251223-143201-7f3a --resume -e overrides=trainer.total_epochs=2\n  the next segment of a running training, started once it ends: mvp resubmit mvp2-ppo-20251223-143201-7f3a --resume -e after_any=mvp2-ppo-20251223-143201-7f3a",
	"serve": "mvp serve [--config configs/dev.yaml] [--db-path P] [--log-level L] [--shutdown-grace D] …\n" +
		"  run the API and the scheduler in the foreground until SIGTERM or SIGINT\n" +
		"  e.g. mvp serve --config configs/dev.yaml --log-level debug",
	"doctor": "mvp doctor [--config dev.yaml] [--gpus N] [--node-ip IP] [--num-gpus] [-o text|json]\n" +
		"  this node's GPUs (NVML) and its readiness as a Ray worker (exit 1: a check failed)\n" +
		"  e.g. mvp doctor --config configs/dev.yaml --node-ip 10.0.0.5",
	"results": "mvp results TASK_ID [--get PATH [-o FILE]]\n  e.g. mvp results mvp2-ppo-20251223-143201-7f3a --get a01/summary.json -o summary.json" +
		"\n  (with --get, -o names the file to write, default standard output)",
}

// onceFlag is a text flag that may be given once: the flag package keeps the last of two, and a second -f would drop
// the first jobspec without a word.
type onceFlag struct {
	v   *string
	set bool
	// takes ends the refusal of a second value: what the flag takes (default: one jobspec).
	takes string
}

func (o *onceFlag) String() string {
	if o.v == nil {
		return ""
	}
	return *o.v
}

// Set takes the value, refusing a second one.
func (o *onceFlag) Set(v string) error {
	if o.set {
		takes := o.takes
		if takes == "" {
			takes = "it takes one jobspec; run the command once for each"
		}
		return fmt.Errorf("given twice (%q, then %q): %s", *o.v, v, takes)
	}
	*o.v, o.set = v, true
	return nil
}

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

func runClient(ctx context.Context, verb string, args []string, env Env) error {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	var hidden []string
	if verb == "logs" {
		hidden = []string{"o"} // defined to refuse it saying why: the log is printed as it is
	}
	setUsage(fs, env.Stderr, "usage: "+verbHelp[verb], hidden...)
	out := fs.String("o", "table", "output: table, json or yaml")
	if verb == "results" {
		fs.Lookup("o").Usage = "output: table (the default), json or yaml; with --get, the file to write (default: standard output)"
		fs.Lookup("o").DefValue = "" // the usage says both defaults: the flag package would add (default "table")
	}
	var (
		file     = new(string)
		sets     setFlags
		dry      = new(bool)
		follow   = new(bool)
		attempt  = new(int)
		state    = new(string)
		workload = new(string)
		limit    = new(int)
		cursor   = new(string)
		owner    = new(string)
		getPath  = new(string)
		resume   = new(bool)
		wait     = new(bool)
		timeout  durationFlag
	)
	switch verb {
	case "submit":
		fs.Var(&onceFlag{v: file}, "f", "the jobspec `file` (YAML or JSON); - reads standard input")
		fs.Var(&sets, "e", "set a jobspec field by its path before sending, e.g. -e nnodes=1 -e env.WANDB_MODE=offline (repeatable)")
		fs.BoolVar(dry, "dry-run", false, "validate and show the effective spec, the Ray payload, the admission verdict and the estimated start; store nothing")
		fs.BoolVar(wait, "wait", false, "then wait until the task ends, as mvp wait does (exit 0 SUCCEEDED, 3 FAILED or CANCELED)")
		fs.Var(&timeout, "timeout", "with --wait: give up waiting after this `duration` (e.g. 90m, 12h; exit 4; the task stays queued or running); 0 waits as long as it takes")
	case "logs":
		fs.BoolVar(follow, "f", false, "follow: stream new lines until the attempt ends")
		fs.IntVar(attempt, "attempt", 0, "attempt number (default: the latest)")
	case "list":
		// Each once: the flag package keeps a repeated flag's last value, which listed one state as if it were all.
		one := "a list takes one; list each in turn"
		fs.Var(&onceFlag{v: state, takes: one}, "state", "only tasks in this `state`")
		fs.Var(&onceFlag{v: workload, takes: one}, "workload", "only tasks of this `workload`")
		fs.Var(&onceFlag{v: owner, takes: one}, "owner", "only this `user`'s tasks (the operator's token; operator for the operator's own)")
		fs.IntVar(limit, "limit", 0, "page size (1..500)")
		fs.StringVar(cursor, "cursor", "", "next_cursor of the previous page")
	case "events":
		fs.IntVar(limit, "limit", 0, "page size (1..1000)")
		fs.StringVar(cursor, "cursor", "", "next_cursor of the previous page")
	case "resubmit":
		fs.Var(&sets, "e", "change a field of the stored spec by its path, e.g. -e nnodes=1 -e overrides=trainer.total_epochs=2 (repeatable)")
		fs.BoolVar(resume, "resume", false, "continue from the task's checkpoints (resume_from; verl's trainer.resume_mode=auto)")
		fs.BoolVar(dry, "dry-run", false, "show the effective spec, the Ray payload, the admission verdict and the estimated start; store nothing")
	case "results":
		fs.StringVar(getPath, "get", "", "fetch this file (its path as listed, e.g. a01/summary.json); -o FILE writes it there")
	}
	if err := fs.Parse(interleave(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	var bad error
	fs.Visit(func(f *flag.Flag) { // given, but outside what the API takes (0 is not "not given")
		switch {
		case f.Name == "attempt" && (*attempt < 1 || *attempt > 999):
			bad = fmt.Errorf("--attempt must be from 1 to 999, got %d", *attempt)
		case f.Name == "state" && !mvp.State(strings.ToUpper(*state)).Valid():
			bad = fmt.Errorf("--state must be one of %s, got %q", stateNames(), *state)
		case f.Name == "limit" && *limit < 1:
			bad = fmt.Errorf("--limit must be at least 1, got %d", *limit)
		case f.Name == "limit" && verb == "list" && *limit > 500, f.Name == "limit" && verb == "events" && *limit > 1000:
			bad = fmt.Errorf("--limit must be at most %d, got %d (page on with --cursor)", map[string]int{"list": 500,
				"events": 1000}[verb], *limit)
		}
	})
	if bad != nil {
		return usageError{bad}
	}
	if verb == "results" && *getPath != "" {
		if fs.NArg() != 1 {
			return usageError{fmt.Errorf("need exactly one TASK_ID\nusage: %s", verbHelp[verb])}
		}
		outFile := ""
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "o" {
				outFile = *out
			}
		})
		if err := taskfs.CheckResultPath(*getPath); err != nil {
			return usageError{err}
		}
		if outFile == "json" || outFile == "yaml" || outFile == "table" {
			return usageError{fmt.Errorf("with --get, -o names the file to write, not a format (the file is sent as "+
				"it is): leave -o out to print it, or write -o ./%s for a file named %s", outFile, outFile)}
		}
		return getResult(ctx, clientOf(env), fs.Arg(0), *getPath, outFile, env.Stdout)
	}
	if verb == "logs" && given(fs, "o") { // before checkOutput, whose "table, json or yaml" logs does not take
		return usageError{fmt.Errorf("-o does not apply to logs: the log is printed as it is")}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	switch verb {
	case "submit", "list", "queue":
		if fs.NArg() != 0 {
			return usageError{fmt.Errorf("unexpected argument %q\nusage: %s", fs.Arg(0), verbHelp[verb])}
		}
	case "cancel":
		if fs.NArg() == 0 {
			return usageError{fmt.Errorf("name at least one TASK_ID\nusage: %s", verbHelp[verb])}
		}
	default:
		if fs.NArg() != 1 {
			return usageError{fmt.Errorf("need exactly one TASK_ID\nusage: %s", verbHelp[verb])}
		}
	}
	c := clientOf(env)

	switch verb {
	case "submit":
		if *file == "" {
			return usageError{fmt.Errorf("-f job.yaml is required\nusage: %s", verbHelp[verb])}
		}
		if *dry && *wait {
			return usageError{fmt.Errorf("--dry-run stores nothing, so there is nothing to --wait for: give one of them")}
		}
		timed := false
		fs.Visit(func(f *flag.Flag) { timed = timed || f.Name == "timeout" })
		if timed && !*wait {
			return usageError{fmt.Errorf("--timeout bounds --wait: give --wait too, or leave --timeout out")}
		}
		if timeout < 0 {
			return usageError{fmt.Errorf("--timeout must be 0 (no limit) or more, got %s", time.Duration(timeout))}
		}
		body, err := readSpec(*file, sets)
		if err != nil {
			return err
		}
		raw, err := c.Submit(ctx, body, *dry)
		if err != nil {
			return relined(err, *file, sets, len(sets) > 0)
		}
		if *dry {
			warnCreated(env.Stderr, raw) // what the submit would be warned of
			return render(env.Stdout, *out, raw, func(w io.Writer) error { return printDryRun(w, raw) })
		}
		var t mvp.Task
		if err := json.Unmarshal(raw, &t); err != nil || t.ID == "" {
			// Not mvp's answer (something else listens at MVP_ADDR, or a proxy answered): nothing is known to be
			// submitted, so this is no success.
			return fmt.Errorf("the server at %s accepted the submit but its answer names no task_id (%q): is "+
				"MVP_ADDR the address of mvp serve?", c.Addr, clipAnswer(raw))
		}
		warnCreated(env.Stderr, raw)
		if *wait {
			return submitAndWait(ctx, c, raw, &t, time.Duration(timeout), *out, env.Stdout, env.Stderr)
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\t%s\n", t.ID, t.State)
			return err
		})
	case "get":
		t, raw, err := c.Get(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printTask(w, t) })
	case "cancel":
		if fs.NArg() > 1 {
			return cancelMany(ctx, c, fs.Args(), *out, env.Stdout, env.Stderr)
		}
		t, raw, err := c.Cancel(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printTask(w, t) })
	case "list":
		*state = strings.ToUpper(*state)       // states are upper case; `--state running` means RUNNING
		*workload = strings.ToLower(*workload) // and workloads lower case: `--workload PPO` means ppo
		p, raw, err := c.ListOwned(ctx, *state, *workload, *owner, *limit, *cursor)
		if err != nil {
			return err
		}
		// The queue's picture adds each waiting task's position, reason and estimated start; without it (an
		// older server) the list is shown as stored.
		q, _, qerr := c.Queue(ctx)
		if qerr != nil {
			q = nil
		}
		next := listArgs{state: *state, workload: *workload, owner: *owner, limit: *limit}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printList(w, p, q, next) })
	case "queue":
		q, raw, err := c.Queue(ctx)
		if err != nil {
			return err
		}
		var why queueNotes // the API's, beside the scheduler's picture
		_ = json.Unmarshal(raw, &why)
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printQueue(w, q, why) })
	case "events":
		p, raw, err := c.Events(ctx, fs.Arg(0), *cursor, *limit)
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printEvents(w, fs.Arg(0), *limit, p) })
	case "logs":
		if *follow && *attempt == 0 {
			// The server holds a followed log until the first attempt starts, which can take days: say so, or the
			// command looks hung. (A look that fails is left to the log's own request to report.)
			if t, _, err := c.Get(ctx, fs.Arg(0)); err == nil && t.Latest() == nil && t.State.Waiting() {
				why := ""
				if t.PendingReason != "" {
					why = " (" + t.PendingReason + ")"
				}
				fmt.Fprintf(env.Stderr, "mvp logs: %s is %s%s: following its first attempt when it starts (Ctrl-C to "+
					"stop)\n", fs.Arg(0), t.State, why)
			}
		}
		if !*follow {
			return c.Logs(ctx, fs.Arg(0), *attempt, false, env.Stdout)
		}
		followed, err := followAttempt(ctx, c, fs.Arg(0), *attempt, env.Stdout, env.Stderr)
		if *attempt == 0 && (err == nil || errors.Is(err, api.ErrLogIncomplete) && ctx.Err() == nil) {
			err = followOn(ctx, c, fs.Arg(0), followed, err, env.Stdout, env.Stderr)
		}
		if err != nil && ctx.Err() != nil {
			// Ctrl-C or SIGTERM: not the server's refusal (exit 1) but an interrupt, as mvp wait's.
			return exitCode{ExitInterrupted, fmt.Sprintf("interrupted: stopped following; the task goes on: %s "+
				"(mvp cancel stops it)", fs.Arg(0))}
		}
		return err
	case "resubmit":
		if err := checkSets(sets); err != nil {
			return err
		}
		if *dry {
			raw, err := c.ResubmitDryRun(ctx, fs.Arg(0), api.ResubmitRequest{Set: sets, Resume: *resume})
			if err != nil {
				return err
			}
			warnCreated(env.Stderr, raw) // what the resubmit would be warned of
			return render(env.Stdout, *out, raw, func(w io.Writer) error { return printDryRun(w, raw) })
		}
		t, raw, err := c.Resubmit(ctx, fs.Arg(0), api.ResubmitRequest{Set: sets, Resume: *resume})
		if err != nil {
			return err
		}
		warnCreated(env.Stderr, raw)
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\t%s\t(resubmitted from %s)\n", t.ID, t.State, t.OriginID)
			return err
		})
	case "results":
		l, raw, err := c.Results(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printResults(w, l) })
	}
	return nil
}

// clipAnswer is the start of an answer, for an error message.
func clipAnswer(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// clientOf is the API client of $MVP_ADDR (default http://127.0.0.1:8080) with $MVP_TOKEN (trimmed). An address given as
// host:port, without its scheme, is taken as http://host:port, as curl takes it.
func clientOf(env Env) *api.Client {
	addr := strings.TrimSpace(env.Getenv("MVP_ADDR"))
	if addr == "" {
		addr = "http://127.0.0.1:8080"
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	// A token read from a file keeps its line end ("$(cat f)" keeps the \r of a CRLF file), which no HTTP header
	// may hold: the white space around it is no part of it.
	return &api.Client{Addr: addr, Token: strings.TrimSpace(env.Getenv("MVP_TOKEN"))}
}

// getResult writes one result file to outFile ("" or "-": standard output). The file is written in full or not
// at all: into a temporary file beside it, renamed once the download completed.
func getResult(ctx context.Context, c *api.Client, id, path, outFile string, stdout io.Writer) error {
	if outFile == "" || outFile == "-" {
		return c.ResultFile(ctx, id, path, stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(outFile), "."+filepath.Base(outFile)+".*")
	if err != nil {
		// A file the command names that cannot be written, found before any request. The temporary file's name
		// is not one the user gave: the cause is said without it.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("its folder %s: %w", filepath.Dir(outFile), pe.Err)
		}
		return usageError{fmt.Errorf("write %s: %w", outFile, err)}
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", outFile, err)
	}
	if err := c.ResultFile(ctx, id, path, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%w (%s was not written)", err, outFile)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", outFile, err)
	}
	if err := os.Rename(tmp.Name(), outFile); err != nil {
		return fmt.Errorf("write %s: %w", outFile, err)
	}
	return nil
}

func printResults(w io.Writer, l *api.ResultList) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tATTEMPT\tSIZE\tMODIFIED")
	for _, f := range l.Files {
		m := f.ModTime
		att := "-"
		if f.AttemptNo > 0 {
			att = fmt.Sprint(f.AttemptNo)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", safe(f.Path), att, f.Size, ts(&m))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.Truncated {
		fmt.Fprintln(w, "\n(more files than listed)")
	}
	if l.Skipped > 0 {
		fmt.Fprintf(w, "\n(%d files not listed: their names hold a backslash, a control character or bytes that are "+
			"not UTF-8, and cannot be asked for; rename them in the job)\n", l.Skipped)
	}
	return nil
}

// interleave lets flags come after positional arguments (mvp logs ID -f).
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") {
				if f := fs.Lookup(name); f != nil {
					if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
						if i+1 < len(args) {
							flags = append(flags, args[i+1])
							i++
						}
					}
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

// followPoll is how often `mvp logs -f` looks for a requeued task's next attempt.
var followPoll = 2 * time.Second

// followOutage is how long `mvp logs -f` waits for mvp to answer again (a restart).
var followOutage = 2 * time.Minute

// followHeld is how long an answer of a followed log that ends without a byte of the log must have been held for
// the server to count as back: one that ends at once (a server that stops every follow as it begins) is the same
// outage going on.
var followHeld = 2 * time.Second

// followAttempt copies attempt n's log to w (0: the latest when the answer begins) and follows it until the
// attempt ends; it returns the attempt followed (0 if the server did not name it). A restart of mvp on the way (the
// stream cut, or ended by the server's stop, or the server's wait for a first attempt ended so; then refused
// connections or 503 until it is back; or a 429 while the server still counts a cut follow) is waited out for up to
// followOutage, said on w2, and the log asked for again from the byte where it stopped, so that nothing is printed
// twice or left out (LogsFrom: also from a server from before offset=). A first answer that is refused or fails
// otherwise is returned as it is.
func followAttempt(ctx context.Context, c *api.Client, id string, n int, w, w2 io.Writer) (int, error) {
	cw := &countingWriter{w: w}
	var downSince time.Time
	for {
		began, from := time.Now(), cw.n
		got, err := c.LogsFrom(ctx, id, n, cw.n, true, cw)
		if n == 0 {
			n = got
		}
		// The server fed or held this request (a wait for the first attempt): it was up until it ended.
		served := cw.n > from || time.Since(began) >= followHeld
		var se *api.StatusError
		switch {
		case err == nil:
			if cw.before != nil { // back after an outage, with nothing more of the log
				fmt.Fprintf(w2, "mvp logs: mvp answers again; attempt %d of %s has ended\n", n, id)
			}
			return n, nil
		case ctx.Err() != nil || cw.err != nil:
			return n, err // stopped by the user, or the reader is gone: nothing to follow on for
		case n == 0 && cw.n > 0:
			return n, err // the server did not name the attempt printed: there is none to ask for from an offset
		case wentAway(err) && (downSince.IsZero() || served):
			downSince = time.Now() // an outage begins
			cw.before = func() { fmt.Fprintf(w2, "mvp logs: mvp answers again; following on\n") }
			why := "mvp stopped"
			if !errors.Is(err, api.ErrFollowCut) && !stopping(err) {
				why = "the connection was cut"
			}
			if cw.n > 0 {
				fmt.Fprintf(w2, "mvp logs: attempt %d of %s had not ended when %s (a restart?): following on from "+
					"where it stopped once mvp answers again, for up to %s (Ctrl-C to stop)\n", n, id, why, followOutage)
			} else {
				fmt.Fprintf(w2, "mvp logs: %s (a restart?) before the log of %s began: following it once mvp answers "+
					"again, for up to %s (Ctrl-C to stop)\n", why, id, followOutage)
			}
		case downSince.IsZero() || !(serverAway(err) || tooMany(err)):
			return n, err
		case time.Since(downSince) > followOutage:
			// Said as it was: mvp back but answering 503 (Ray's log cannot be read) is not mvp gone.
			why := "mvp did not answer"
			if errors.As(err, &se) {
				why = "mvp answered this, not the log,"
			} else if wentAway(err) {
				why = "mvp ended each answer as it began"
			}
			again := fmt.Sprintf("mvp logs -f %s", id)
			if n > 0 {
				again += fmt.Sprintf(" --attempt %d", n)
			}
			return n, fmt.Errorf("%w: %s for %s; run %s again later (it prints the log from its start)", err, why,
				followOutage, again)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// endedHow says how an ended attempt ended: its failure kind, else Ray's status.
func endedHow(a *mvp.Attempt) string {
	if a.FailureKind != mvp.FailureNone {
		return string(a.FailureKind)
	}
	return string(a.RayStatus)
}

// wentAway reports whether err says the server went away in the middle of a request it had taken: a followed log
// cut or ended by a stop, a wait ended by a stop (a 503 asking to be asked again later), or a connection closed
// without an answer. A refused connection is not: nothing took the request.
func wentAway(err error) bool {
	return errors.Is(err, api.ErrFollowCut) || stopping(err) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// serverAway reports whether err says the server went away or is stopping rather than refused the request: a cut
// or stopped follow, a refused or cut connection, a 503.
func serverAway(err error) bool {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusServiceUnavailable
	}
	return wentAway(err) || errors.Is(err, syscall.ECONNREFUSED)
}

// tooMany reports whether err is a 429: asked again after a cut, a user at the limit of follows may still have the
// cut follow counted by a server that has not noticed the cut yet.
func tooMany(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status == http.StatusTooManyRequests
}

// stopping reports whether err is the server's answer that it is stopping (a 503 asking to be asked again later).
func stopping(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status == http.StatusServiceUnavailable && se.RetryAfter != ""
}

// countingWriter counts the bytes written through it and keeps the first write error (the reader's terminal or
// pipe gone: nothing to follow on for). before, if set, runs once before the next write.
type countingWriter struct {
	w      io.Writer
	n      int64
	err    error
	before func()
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if f := c.before; f != nil && len(p) > 0 {
		c.before = nil
		f()
	}
	m, err := c.w.Write(p)
	c.n += int64(m)
	if err != nil && c.err == nil {
		c.err = err
	}
	return m, err
}

// followOn follows a task's next attempts after the one followed ended, until the task ends: an attempt that
// failed and was requeued (a lost race for GPUs, a lost node) is not the task's end, and a stream that stopped on
// its traceback read as if it were. followed is the attempt the first stream followed (0: not known). It says on w2
// why it goes on.
func followOn(ctx context.Context, c *api.Client, id string, followed int, incomplete error, w, w2 io.Writer) error {
	// incomplete is the followed attempt's log's (cut short, or lost with its Ray job): said on stderr as the task
	// goes on (say), and the command's error if the task ends with that attempt (end), said once.
	said := false
	say := func() {
		if incomplete != nil && !said {
			fmt.Fprintf(w2, "mvp logs: %v\n", incomplete)
			said = true
		}
	}
	end := func() error {
		if incomplete != nil && said {
			return fmt.Errorf("the log of attempt %d of %s is incomplete (said above)%w", followed, id, api.ErrLogIncomplete)
		}
		return incomplete
	}
	announced := 0
	var downSince time.Time
	for {
		t, _, err := c.Get(ctx, id)
		if err != nil {
			// Between attempts nothing streams: a restart of mvp (refused, cut, or 503 while it stops) is waited out.
			var se *api.StatusError
			if ctx.Err() != nil || (errors.As(err, &se) && se.Status != http.StatusServiceUnavailable) {
				say()
				return err
			}
			if downSince.IsZero() {
				downSince = time.Now()
				fmt.Fprintf(w2, "mvp logs: mvp at %s does not answer (%v): restarting? Still waiting for the next attempt "+
					"of %s, for up to %s (Ctrl-C to stop)\n", c.Addr, err, id, followOutage)
			} else if time.Since(downSince) > followOutage {
				say()
				return fmt.Errorf("%w: mvp did not answer for %s; run mvp logs -f %s again once it does", err, followOutage, id)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(followPoll):
			}
			continue
		}
		downSince = time.Time{}
		last := t.Latest()
		if last == nil {
			return end()
		}
		if followed == 0 {
			// A server that does not name the attempt it streamed (LogAttemptHeader): the latest one now, which is
			// wrong when its successor was submitted before this look.
			followed = last.No
		}
		if last.No == followed && t.State.Terminal() {
			if t.State != mvp.StateSucceeded && announced != last.No {
				// Not a run that simply finished: say how (each attempt before it was said as it ended).
				say()
				fmt.Fprintf(w2, "mvp logs: attempt %d ended (%s); the task is %s\n", last.No, endedHow(last), t.State)
			}
			return end()
		}
		if last.No != followed { // a newer attempt: its log, even if it has ended meanwhile (then the task's end)
			say()
			why := ""
			if a := t.Attempt(followed); announced != followed && a != nil && (a.EndTime != nil || a.FailureKind != mvp.FailureNone) {
				// Not said yet (its successor came in the pass that ended it): why the task goes on.
				why = fmt.Sprintf("attempt %d ended (%s); the task is %s: ", followed, endedHow(a), t.State)
			}
			followed = last.No
			fmt.Fprintf(w2, "mvp logs: %sfollowing attempt %d\n", why, last.No)
			_, incomplete = followAttempt(ctx, c, id, last.No, w, w2)
			said = false
			if incomplete != nil && (ctx.Err() != nil || !errors.Is(incomplete, api.ErrLogIncomplete)) {
				return incomplete
			}
			continue
		}
		if last.EndTime == nil && last.FailureKind == mvp.FailureNone {
			return end() // still running: the stream ended for a reason Logs has said
		}
		if announced != last.No {
			say()
			announced = last.No
			fmt.Fprintf(w2, "mvp logs: attempt %d ended (%s); the task is %s and will run again: following its "+
				"next attempt when it starts (Ctrl-C to stop)\n", last.No, endedHow(last), t.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// readSpec reads the jobspec; with -e settings it decodes, sets the fields and re-encodes as YAML.
func readSpec(path string, sets []string) ([]byte, error) {
	var body []byte
	var err error
	if path == "-" {
		body, err = io.ReadAll(io.LimitReader(os.Stdin, 8<<20))
	} else {
		body, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("read jobspec: %w", err)} // the command names a file it cannot read
	}
	if len(sets) == 0 {
		return body, nil
	}
	// What is sent is an edited copy: check the file's shape first, with its own line numbers (a field given twice
	// or a second document is gone from the copy).
	if err := jobspec.CheckShape(body, jobspec.DefaultLimits); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	doc, err := decodeSpec(body)
	if err != nil {
		return nil, fmt.Errorf("%s: not a YAML mapping: %w", path, err)
	}
	if err := checkSets(sets); err != nil {
		return nil, err
	}
	for _, s := range sets {
		k, v, _ := strings.Cut(s, "=")
		if err := jobspec.SetPath(doc, k, v); err != nil {
			return nil, usageError{fmt.Errorf("-e %s: %w", s, err)}
		}
	}
	return yaml.Marshal(doc)
}

// checkSets refuses an -e that is not key=value, a usage error found before any request (submit and resubmit alike).
func checkSets(sets []string) error {
	for _, s := range sets {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return usageError{fmt.Errorf("-e %q: want key=value, e.g. -e nnodes=1", s)}
		}
	}
	return nil
}

// lineRef is how the server's jobspec errors cite a line: "(line 9)", or "line 9:" at the start.
var lineRef = regexp.MustCompile(`\(line \d+\)|^line \d+:`)

// relined makes a jobspec error about a copy of the file (with -e, or a schedule's jobspec sent as JSON:
// re-encoded, keys sorted, comments gone) cite the file: the line of the field's key in the file, or the -e that
// set it; without either, no line at all. A copy that is not edited (edited false) is the file: err is left as is.
func relined(err error, path string, sets []string, edited bool) error {
	var e *api.StatusError
	if !edited || !errors.As(err, &e) || !lineRef.MatchString(e.Detail.Message) {
		return err
	}
	field := strings.TrimPrefix(e.Detail.Field, "jobspec.") // a schedule's jobspec
	top := field
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	ref := ""
	for _, s := range sets { // the last -e that set the field (or a map or list holding it) is the one that took effect
		if k, _, _ := strings.Cut(s, "="); field != "" && (k == field || strings.HasPrefix(field, k+".") || strings.HasPrefix(field, k+"[")) {
			ref = fmt.Sprintf("(as -e %s set it)", s)
		}
	}
	if ref == "" && top != "" && path != "-" {
		if b, rerr := os.ReadFile(path); rerr == nil {
			var doc yaml.Node
			if yaml.Unmarshal(b, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
				m := doc.Content[0].Content
				for i := 0; i+1 < len(m); i += 2 {
					if m[i].Value == top {
						ref = fmt.Sprintf("(line %d of %s)", m[i].Line, path)
					}
				}
			}
		}
	}
	e.Detail.Message = strings.TrimSpace(strings.ReplaceAll(lineRef.ReplaceAllStringFunc(e.Detail.Message, func(m string) string {
		if strings.HasPrefix(m, "(") {
			return ref
		}
		if ref == "" {
			return ""
		}
		return ref + ":"
	}), "  ", " "))
	return err
}

// checkOutput refuses an -o other than table, json or yaml, before any request is made.
func checkOutput(format string) error {
	if format != "table" && format != "json" && format != "yaml" {
		return usageError{fmt.Errorf("-o must be table, json or yaml, not %q", format)}
	}
	return nil
}

// render writes the API's answer raw as -o asks: json is the answer itself, indented; yaml the same document in
// YAML's block style. Neither goes through Go values: a number is written as the API sent it (a jobspec keeps
// env: {TORCH_VERSION: 2.10} as written, and float64 would have shown 2.1, and 12345678901234567 …568).
func render(w io.Writer, format string, raw json.RawMessage, table func(io.Writer) error) error {
	switch format {
	case "json":
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			_, err = w.Write(raw)
			return err
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	case "yaml":
		var doc yaml.Node
		// JSON is YAML, once written so that YAML's reader takes what JSON carries raw (a DEL in a run's progress
		// name would fail the listing).
		if err := yaml.Unmarshal(mvp.JSONForYAML(raw), &doc); err != nil {
			return err
		}
		blockStyle(&doc)
		b, err := yaml.Marshal(&doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return table(w)
}

// blockStyle drops the flow style and quotes JSON wrote n with, so that the encoder writes block YAML and quotes
// only a string that would read as something else (yaml.v3 does so for a !!str whose plain text resolves to
// another tag: "2.10" stays a string, 2.10 a number).
func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && yaml11NotString(n.Value) {
		// yaml.v3 resolves as YAML 1.2 does, where these are strings; PyYAML (YAML 1.1, which reads Ray's and
		// verl's configs and many users' scripts) reads "on" as true and "1:20" as 80.
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// base60 is a YAML 1.1 sexagesimal number (1:20 is 80, 1:20.5 is 80.5).
var base60 = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$`)

// yaml11NotString reports whether a YAML 1.1 reader takes s, written plain, for something other than a string: a
// bool (y, no, on, OFF…) or a sexagesimal number. YAML 1.2 (yaml.v3) reads both as strings and leaves them plain.
func yaml11NotString(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return base60.MatchString(s)
}

// stateNames lists mvp's states for a usage message: "QUEUED, PENDING_RESOURCES, …" (any case is taken).
func stateNames() string {
	names := make([]string, len(mvp.States))
	for i, st := range mvp.States {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// driverText is what a task's Ray driver takes, by resource name in order: "CPU=2, GPU=1".
func driverText(d map[string]float64) string {
	parts := make([]string, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, safe(k)+"="+strconv.FormatFloat(d[k], 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}

func ts(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST") // the zone named: the machine's, not the server's
}

func printTask(w io.Writer, t *mvp.Task) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	created := t.CreatedAt
	owner := mvp.OwnerName(t.Owner)
	fmt.Fprintf(tw, "task_id:\t%s\nworkload:\t%s\nname:\t%s\nstate:\t%s\nowner:\t%s\npriority:\t%d\ngang:\t%s\ncreated_at:\t%s\n",
		t.ID, t.Workload, safe(t.Name), t.State, owner, t.Priority, t.Gang(), ts(&created))
	if len(t.Driver) > 0 {
		fmt.Fprintf(tw, "driver:\t%s\n", driverText(t.Driver))
	}
	if t.SubmissionID != "" { // a task of the Ray door: the id Ray's client knows it by
		door := "Ray door"
		if t.DoorDeleted {
			door += "; deleted there"
		}
		fmt.Fprintf(tw, "submission_id:\t%s (%s)\n", safe(t.SubmissionID), door)
	}
	if t.PendingReason != "" {
		fmt.Fprintf(tw, "pending_reason:\t%s\n", safe(t.PendingReason))
	}
	if t.RayOutage != "" {
		fmt.Fprintf(tw, "ray_outage:\t%s\n", safe(t.RayOutage))
	}
	if t.NextRunAt != nil {
		fmt.Fprintf(tw, "next_run_at:\t%s\n", ts(t.NextRunAt))
	}
	if t.ErrorSummary != "" {
		fmt.Fprintf(tw, "error_summary:\t%s\n", safe(t.ErrorSummary))
	}
	if t.MaxRuntimeS > 0 {
		fmt.Fprintf(tw, "max_runtime_s:\t%d%s\n", t.MaxRuntimeS, left(t.RuntimeLeftS))
	}
	if t.MaxQueuedS > 0 {
		note := left(t.QueuedLeftS)
		if t.State.Waiting() && t.LatestAttemptNo > 0 && t.QueuedLeftS == nil {
			note = " (no longer applies: the task has run)" // the API leaves queued_left_s out for such a task
		}
		fmt.Fprintf(tw, "max_queued_s:\t%d%s\n", t.MaxQueuedS, note)
	}
	if t.OriginID != "" {
		fmt.Fprintf(tw, "resubmitted_from:\t%s\n", t.OriginID)
	}
	if len(t.Resubmits) > 0 {
		fmt.Fprintf(tw, "resubmits:\t%s\n", strings.Join(t.Resubmits, ", "))
	}
	if t.ResumeFrom != "" {
		fmt.Fprintf(tw, "resume_from:\t%s (its checkpoints)\n", t.ResumeFrom)
	}
	if len(t.AfterOK) > 0 {
		fmt.Fprintf(tw, "after_ok:\t%s\n", strings.Join(t.AfterOK, ", "))
	}
	if len(t.AfterAny) > 0 {
		fmt.Fprintf(tw, "after_any:\t%s\n", strings.Join(t.AfterAny, ", "))
	}
	if t.HeartbeatTimeoutS > 0 {
		fmt.Fprintf(tw, "heartbeat:\tevery %d s at least\n", t.HeartbeatTimeoutS)
	}
	if t.Progress != nil {
		fmt.Fprintf(tw, "progress:\t%s (attempt %d, %s)\n", progressText(t.Progress, true), t.Progress.AttemptNo,
			ts(&t.Progress.UpdatedAt))
	}
	tw.Flush()
	if len(t.Attempts) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "ATTEMPT\tSUBMISSION ID\tRAY STATUS\tFAILURE\tSTART\tEND\tEXIT")
		for _, a := range t.Attempts {
			exit := "-"
			if a.ExitCode != nil {
				exit = fmt.Sprint(*a.ExitCode)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.No, a.RaySubmissionID, dash(string(a.RayStatus)),
				dash(string(a.FailureKind)), ts(a.StartTime), ts(a.EndTime), exit)
		}
		return tw.Flush()
	}
	return nil
}

// left renders seconds left, when known: " (1h2m3s left)".
func left(s *int) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf(" (%s left)", time.Duration(*s)*time.Second)
}

// listArgs are the filters and page size of `mvp list`, which its next page's command repeats.
type listArgs struct {
	state, workload, owner string
	limit                  int
}

// command is `mvp list` with these filters and the cursor of the next page (a cursor is a place in the whole list,
// not the filter: without them the command lists every task after that place).
func (a listArgs) command(cursor string) string {
	var b strings.Builder
	b.WriteString("mvp list")
	for _, f := range []struct{ flag, v string }{{"state", a.state}, {"workload", a.workload}, {"owner", a.owner}} {
		if f.v != "" {
			fmt.Fprintf(&b, " --%s %s", f.flag, shellWord(f.v))
		}
	}
	if a.limit > 0 {
		fmt.Fprintf(&b, " --limit %d", a.limit)
	}
	fmt.Fprintf(&b, " --cursor %s", shellWord(cursor))
	return b.String()
}

// shellWord is s as one word of a POSIX shell command: as it is when it holds only characters no shell reads
// specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:=,/+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func printList(w io.Writer, p *api.TaskPage, q *scheduler.QueueView, next listArgs) error {
	entries := map[string]scheduler.QueueEntry{}
	if q != nil {
		for _, e := range q.Queue {
			entries[e.TaskID] = e
		}
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK ID\tOWNER\tPRIO\tSTATE\tWORKLOAD\tGANG\tATTEMPTS\tPROGRESS\tCREATED\tQUEUE\tRANK\tEST START\tREASON")
	for _, t := range p.Tasks {
		c := t.CreatedAt
		reason := t.PendingReason
		if t.ErrorSummary != "" {
			reason = t.ErrorSummary
		}
		pos, rank, est := "-", "-", "-"
		if e, ok := entries[t.ID]; ok && t.State.Waiting() {
			pos, est, reason = fmt.Sprintf("#%d %s", e.Position, e.Code), estText(e), queueReason(e)
			if e.Rank > 0 {
				rank = strconv.Itoa(e.Rank)
			}
		}
		if reason = safe(reason); utf8.RuneCountInString(reason) > 60 {
			reason = string([]rune(reason)[:60]) + "…" // 60 characters: a cut inside one would leave a byte that is not UTF-8
		}
		gang := fmt.Sprintf("%d×%d", t.NNodes, t.GPUsPerNode)
		if t.NNodes == 0 {
			gang = "driver" // a Ray door job that declared no gang: its driver alone takes resources
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, dash(t.Owner), t.Priority,
			t.State, t.Workload, gang, t.LatestAttemptNo, progressText(t.Progress, false), ts(&c), pos,
			rank, est, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range p.Tasks {
		if e, ok := entries[t.ID]; ok && t.State.Waiting() && e.EstStart != nil {
			fmt.Fprintln(w, estimateNote)
			break
		}
	}
	if p.NextCursor != "" {
		fmt.Fprintf(w, "\nmore: %s\n", next.command(p.NextCursor))
	}
	return nil
}

// startedBefore says which of the listed tasks the forecast starts before e (at most three by id, earliest first).
func startedBefore(queue []scheduler.QueueEntry, e scheduler.QueueEntry) string {
	var first []scheduler.QueueEntry
	for _, o := range queue {
		if o.TaskID != e.TaskID && o.TaskID != "" && o.EstStart != nil && o.EstStart.Before(*e.EstStart) {
			first = append(first, o)
		}
	}
	if len(first) == 0 {
		return "after tasks the forecast starts first"
	}
	sort.SliceStable(first, func(i, j int) bool { return first[i].EstStart.Before(*first[j].EstStart) })
	ids := make([]string, 0, 3)
	for _, o := range first[:min(3, len(first))] {
		ids = append(ids, safe(o.TaskID))
	}
	more := ""
	if len(first) > 3 {
		more = fmt.Sprintf(" and %d more", len(first)-3)
	}
	return "after " + strings.Join(ids, ", ") + more + ", which the forecast starts first"
}

// queueNotes is what GET /api/v2/queue says beside the scheduler's picture: cluster_error, why the cluster could
// not be read ("" when it could, or is not known), and scheduler, that the scheduler's pass under way waits.
type queueNotes struct {
	ClusterError string `json:"cluster_error"`
	Scheduler    string `json:"scheduler"`
}

// printQueue renders the queue's picture: nodes, the reservation, then the waiting tasks in policy order, with
// the API's notes beside it.
func printQueue(w io.Writer, q *scheduler.QueueView, notes queueNotes) error {
	clusterErr := notes.ClusterError
	fmt.Fprintf(w, "policy %s at %s\n", q.Policy, ts(&q.At))
	if notes.Scheduler != "" {
		fmt.Fprintf(w, "scheduler: %s\n", safe(notes.Scheduler))
	}
	if !q.ClusterKnown {
		if clusterErr == "" {
			fmt.Fprintln(w, "the cluster could not be read: nothing is admitted until it can")
		} else {
			// Not always the cluster: Ray's job server down while the cluster reads, or a cluster coming back.
			fmt.Fprintln(w, "nothing is admitted for now")
			fmt.Fprintf(w, "  why: %s\n", safe(clusterErr))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	if len(q.Nodes)+len(q.DownNodes) > 0 { // every GPU node down: the ones to wait for or forget are still listed
		// FREE GPU is what the scheduler can give (GPUs of admitted attempts not placed yet count as taken); RAY
		// FREE is Ray's own figure, which lags a submission by seconds.
		fmt.Fprintln(tw, "NODE\tFREE GPU\tRAY FREE\tTOTAL GPU")
		for _, n := range q.Nodes {
			fmt.Fprintf(tw, "%s\t%g\t%g\t%g\n", n.NodeID, n.FreeGPUs, n.RayFreeGPUs, n.TotalGPUs)
		}
		for _, n := range q.DownNodes { // seen alive, down now: a nodes_down task waits for them
			fmt.Fprintf(tw, "%s (down)\t-\t-\t%g\n", n.NodeID, n.TotalGPUs)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	for _, r := range q.Reservations {
		from := "from " + ts(r.Start)
		if r.Start == nil { // the API's null: nothing declared says when those GPUs are free
			from = "(start unknown: no declared run time says when those GPUs are free)"
		}
		fmt.Fprintf(w, "reserved: %s on %s %s", r.TaskID, strings.Join(r.Nodes, ", "), from)
		// The reserved start is what backfill keeps free for it now; the forecast can start it later, when other
		// tasks become startable first: one ahead of it whose owner's quota frees or whose dependency ends, or, under
		// fair share, one ranked behind it now whose owner's charge drops once its running tasks end. The line
		// names those the reader can see (a user sees their own tasks only), rather than guessing which case it is.
		for _, e := range q.Queue {
			if e.TaskID == r.TaskID && r.Start != nil && e.EstStart != nil && e.EstStart.Sub(*r.Start) > time.Second {
				fmt.Fprintf(w, " (backfill keeps these GPUs for it; estimated to start later, at %s, %s)",
					ts(e.EstStart), startedBefore(q.Queue, e))
			}
		}
		fmt.Fprintln(w)
	}
	for _, id := range q.Starting {
		if notes.Scheduler != "" {
			fmt.Fprintf(w, "starting once the pass under way ends: %s\n", id)
		} else {
			fmt.Fprintf(w, "starting now: %s\n", id)
		}
	}
	tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tTASK ID\tOWNER\tPRIO\tRANK\tCODE\tEST START\tREASON")
	for _, e := range q.Queue {
		rank := "-" // not ranked: it never fits, or backs off
		if e.Rank > 0 {
			rank = strconv.Itoa(e.Rank)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.Position, e.TaskID, e.Owner, e.Priority, rank, e.Code,
			estText(e), safe(queueReason(e)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range q.Queue {
		if e.EstStart != nil {
			_, err := fmt.Fprintln(w, estimateNote)
			return err
		}
	}
	return nil
}

// estimateNote says under a table with estimated starts what they assume: each running task counted for its
// declared run (3 days by default) reads as broken beside runs of minutes, unless said.
const estimateNote = "EST START: as if every run lasts its declared max_runtime_s (v2.scheduler.default_max_runtime_s " +
	"when its jobspec gives none); runs that end sooner bring it forward."

// estText is a waiting task's estimated start, marked when its max_queued_s would end it first.
func estText(e scheduler.QueueEntry) string {
	if e.ExpiresBeforeStart {
		return ts(e.EstStart) + " (after its max_queued_s)"
	}
	return ts(e.EstStart)
}

// queueReason is a waiting task's reason with the task it yields to (the API's yields_to) named first.
func queueReason(e scheduler.QueueEntry) string {
	if e.YieldsTo == "" {
		return e.Reason
	}
	return "behind " + e.YieldsTo + ": " + e.Reason
}

// printEvents prints a page of events and, when there are more, the command for the next page with the page
// size it was given (limit, 0 when not given).
func printEvents(w io.Writer, id string, limit int, p *api.EventPage) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tTYPE\tDETAIL")
	for _, e := range p.Events {
		t := e.TS
		var compact bytes.Buffer
		if json.Compact(&compact, e.Payload) != nil {
			compact.Write(e.Payload)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.ID, ts(&t), e.Type, safe(compact.String()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.NextCursor != "" {
		size := ""
		if limit > 0 {
			size = fmt.Sprintf(" --limit %d", limit)
		}
		// the whole command, as mvp list gives
		fmt.Fprintf(w, "\nmore: mvp events %s%s --cursor %s\n", shellWord(id), size, shellWord(p.NextCursor))
	}
	return nil
}

func printDryRun(w io.Writer, raw json.RawMessage) error {
	var d struct {
		Admission struct {
			Verdict, Reason string
			EstStart        *time.Time `json:"est_start"`
		} `json:"admission"`
		Ray mvp.JobSubmission `json:"ray_submission"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	// The entrypoint holds the jobspec's overrides (one line each, but an escape sequence is allowed), and the operator
	// dry-runs a user's resubmit: both are shown escaped, as text a job controls is.
	fmt.Fprintf(w, "verdict:     %s\nreason:      %s\n", d.Admission.Verdict, safe(d.Admission.Reason))
	if bytes.Contains(raw, []byte(`"est_start"`)) { // absent where no start can be: never fits, a failed dependency
		fmt.Fprintf(w, "est. start:  %s\n", ts(d.Admission.EstStart))
	}
	fmt.Fprintf(w, "submission:  %s\nentrypoint:  %s\n", safe(d.Ray.SubmissionID), safe(d.Ray.Entrypoint))
	return nil
}

// progressText renders a task's progress: "42% step 17/40", with its name and metrics when long; "-" for none.
func progressText(p *mvp.Progress, long bool) string {
	if text := p.Text(long); text != "" {
		return safe(text)
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// secretsLines are the usages of secrets' subcommands; secretsNote ends the verb's.
var secretsLines = map[string]string{
	"list": "mvp secrets list [--owner USER]",
	"put": "mvp secrets put NAME [--from-file FILE] [--owner USER]\n" +
		"  reads the value from standard input (or FILE), never from the command line, so that it stays out of\n" +
		"  shell history and process listings; one trailing newline is dropped.\n" +
		"  e.g. mvp secrets put wandb < ~/.wandb-key, then in a jobspec: secrets: {WANDB_API_KEY: wandb}",
	"delete": "mvp secrets delete NAME [--owner USER]",
}

const secretsNote = "Each user's secrets are their own (two users may each have a wandb); a task uses its owner's. The operator\n" +
	"acts on a user's with --owner USER (list: everyone's without it)."

var secretsUsage = "usage:\n" + subUsages(secretsLines["list"], secretsLines["put"], secretsLines["delete"], secretsNote)

// runSecrets is `mvp secrets list|put|delete`.
func runSecrets(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 0 {
			return usageError{errors.New("a subcommand is needed: list, put or delete\n" + secretsUsage)}
		}
		fmt.Fprintln(env.Stderr, secretsUsage+parentHelp("secrets"))
		return flag.ErrHelp
	}
	sub := args[0]
	if secretsLines[sub] == "" {
		return usageError{fmt.Errorf("unknown subcommand %q: list, put or delete\n%s", sub, secretsUsage)}
	}
	fs := flag.NewFlagSet("secrets "+sub, flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+secretsLines[sub]+"\n  "+strings.ReplaceAll(secretsNote, "\n", "\n  "))
	out := fs.String("o", "table", "output: table, json or yaml")
	from := new(string)
	if sub == "put" { // list and delete read no value: --from-file there was taken and ignored
		fs.StringVar(from, "from-file", "", "read the value from this file instead of standard input")
	}
	owner := fs.String("owner", "", "the operator only: act on this user's secrets")
	if err := fs.Parse(interleave(fs, args[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	c := clientOf(env)
	switch {
	case sub == "list" && fs.NArg() == 0:
		l, raw, err := c.SecretsOf(ctx, *owner)
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tOWNER\tCREATED\tUPDATED")
			for _, s := range l.Secrets {
				c, u := s.CreatedAt, s.UpdatedAt
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, mvp.OwnerName(s.Owner), ts(&c), ts(&u))
			}
			return tw.Flush()
		})
	case sub == "put" && fs.NArg() == 1:
		var r io.Reader = env.Stdin
		if *from != "" {
			f, err := os.Open(*from)
			if err != nil {
				return usageError{fmt.Errorf("read the secret: %w", err)} // the command names a file it cannot read
			}
			defer f.Close()
			r = f
		}
		if r == nil {
			return usageError{errors.New("no standard input to read the value from; use --from-file")}
		}
		b, err := io.ReadAll(io.LimitReader(r, mvp.MaxSecretBytes+2))
		if err != nil {
			return fmt.Errorf("read the secret: %w", err)
		}
		value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		info, raw, err := c.PutSecretOf(ctx, *owner, fs.Arg(0), value)
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			u, what := info.UpdatedAt, "stored"
			if info.UpdatedAt.After(info.CreatedAt) {
				what = "replaced"
			}
			_, err := fmt.Fprintf(w, "%s\t%s %s\n", info.Name, what, ts(&u))
			return err
		})
	case sub == "delete" && fs.NArg() == 1:
		if err := c.DeleteSecretOf(ctx, *owner, fs.Arg(0)); err != nil {
			return err
		}
		// The API answers 204 without a body: -o json and yaml show what `mvp schedule delete` shows, not a line of
		// text where a script reads JSON.
		raw, err := json.Marshal(map[string]string{"deleted": fs.Arg(0)})
		if err != nil {
			return fmt.Errorf("secrets delete: %w", err)
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\tdeleted\n", fs.Arg(0))
			return err
		})
	}
	var why string
	switch {
	case sub == "list":
		why = "secrets list takes no argument"
	case sub == "put" && fs.NArg() > 1:
		why = "secrets put takes the NAME only: the value is read from standard input (or --from-file FILE), never " +
			"from the command line, where shell history and process listings keep it"
	default:
		why = fmt.Sprintf("secrets %s takes the NAME of one secret, got %d argument(s)", sub, fs.NArg())
	}
	return usageError{fmt.Errorf("%s\nusage: %s", why, secretsLines[sub])}
}

// terminalSafe writes what it is given with control characters escaped as safe does, line breaks and tabs kept:
// the messages mvp writes on stderr keep their lines, text echoed in them cannot move the cursor or clear the screen.
type terminalSafe struct{ w io.Writer }

// Write writes p with its control characters (but line breaks and tabs) escaped; it reports len(p) written when
// all of it was.
func (t terminalSafe) Write(p []byte) (int, error) {
	lines := strings.Split(string(p), "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, part := range parts {
			parts[j] = safe(part)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	if _, err := io.WriteString(t.w, strings.Join(lines, "\n")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// safe shows text that a job controls (its progress file, the error Ray keeps from its output, its files' names)
// with control characters escaped (\x1b, \n, \u009b): raw, they move the cursor, clear or colour the terminal of
// whoever reads it, or start a fake line in a table.
func safe(s string) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			clean = false // (a real U+FFFD is kept below)
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i]) // a byte that is not UTF-8
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// warnCreated prints the warning of a submit's or resubmit's answer, or of its dry run's (api.Created: the task
// cannot start on the cluster as it is, or resumes from a folder with no checkpoint), on stderr so that the task id
// on stdout stays what scripts read.
func warnCreated(w io.Writer, raw []byte) {
	var c struct {
		Warning string `json:"warning"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", safe(c.Warning))
	}
}
