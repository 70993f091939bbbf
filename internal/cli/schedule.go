package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
)

// scheduleLines are the usages of schedule's subcommands; scheduleNote ends each.
var scheduleLines = map[string]string{
	"create": "mvp schedule create NAME --cron EXPR -f job.yaml [--timezone TZ] [--overlap skip|queue|replace] [-e key=value …]\n" +
		"  e.g. mvp schedule create nightly-eval --cron \"0 2 * * *\" --timezone Europe/Berlin -f configs/examples/ppo.yaml",
	"list":   "mvp schedule list [--owner USER]",
	"get":    "mvp schedule get NAME [--owner USER]",
	"pause":  "mvp schedule pause NAME [--owner USER]",
	"resume": "mvp schedule resume NAME [--owner USER]",
	"delete": "mvp schedule delete NAME [--owner USER]",
}

const scheduleNote = `Each user's schedule names are their own (two users may each have a nightly-eval); the operator acts on a
user's with --owner USER (list: everyone's without it).`

var scheduleUsage = "usage:\n" + subUsages(scheduleLines["create"], scheduleLines["list"],
	"mvp schedule get|pause|resume|delete NAME [--owner USER]", scheduleNote)

// runSchedule is `mvp schedule …`: recurring schedules through /api/v2/schedules.
func runSchedule(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 0 {
			return usageError{errors.New("a subcommand is required: create, list, get, pause, resume or delete\n" + scheduleUsage)}
		}
		fmt.Fprintln(env.Stderr, scheduleUsage+parentHelp("schedule"))
		return flag.ErrHelp
	}
	sub, rest := args[0], args[1:]
	if scheduleLines[sub] == "" {
		return usageError{fmt.Errorf("unknown subcommand %q: create, list, get, pause, resume or delete\n%s", sub, scheduleUsage)}
	}
	fs := flag.NewFlagSet("schedule "+sub, flag.ContinueOnError)
	head := "usage: " + scheduleLines[sub]
	if sub != "create" { // create has no --owner: a schedule is created as the token's user's
		head += "\n  " + strings.ReplaceAll(scheduleNote, "\n", "\n  ")
	}
	setUsage(fs, env.Stderr, head)
	out := fs.String("o", "table", "output: table, json or yaml")
	owner := new(string)
	if sub != "create" {
		fs.StringVar(owner, "owner", "", "the operator only: this user's schedule(s)")
	}
	var (
		cron, tz, overlap, file = new(string), new(string), new(string), new(string)
		sets                    setFlags
	)
	if sub == "create" {
		fs.StringVar(cron, "cron", "", `when to run: 5-field cron ("0 2 * * *") or @hourly, @daily, @every 6h`)
		fs.StringVar(tz, "timezone", "UTC", "IANA time zone the cron expression is read in")
		fs.StringVar(overlap, "overlap", "skip", "when the previous run's task is still live: skip, queue or replace")
		fs.Var(&onceFlag{v: file}, "f", "the jobspec `file` (YAML or JSON); - reads standard input")
		fs.Var(&sets, "e", "set a jobspec field by its path before sending (repeatable)")
	}
	if err := fs.Parse(interleave(fs, rest)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	wantArgs := 1
	if sub == "list" {
		wantArgs = 0
	}
	if fs.NArg() != wantArgs {
		return usageError{fmt.Errorf("schedule %s takes %d argument(s), got %d\nusage: %s", sub, wantArgs, fs.NArg(), scheduleLines[sub])}
	}
	c := clientOf(env) // MVP_ADDR read as every verb reads it (host:port is http://host:port)
	one := func(s *mvp.Schedule, raw json.RawMessage, err error) error {
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printSchedules(w, []*mvp.Schedule{s}, true) })
	}
	switch sub {
	case "create":
		if *cron == "" || *file == "" {
			return usageError{fmt.Errorf("--cron and -f are required\nusage: %s", scheduleLines["create"])}
		}
		spec, err := readSpec(*file, sets)
		if err != nil {
			return err
		}
		js, err := specJSON(spec)
		if err != nil {
			return err
		}
		sc, raw, err := c.CreateSchedule(ctx, api.ScheduleRequest{Name: fs.Arg(0), Cron: *cron, Timezone: *tz,
			Overlap: mvp.Overlap(*overlap), JobSpec: js})
		return one(sc, raw, relined(err, *file, sets, true)) // the jobspec went as JSON: its lines are not the file's
	case "list":
		list, raw, err := c.SchedulesOf(ctx, *owner)
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error { return printSchedules(w, list, false) })
	case "get":
		return one(c.ScheduleOf(ctx, *owner, fs.Arg(0)))
	case "pause", "resume":
		return one(c.SetSchedulePausedOf(ctx, *owner, fs.Arg(0), sub == "pause"))
	case "delete":
		raw, err := c.DeleteScheduleOf(ctx, *owner, fs.Arg(0))
		if err != nil {
			return err
		}
		return render(env.Stdout, *out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "deleted schedule %s (the tasks it made stay)\n", fs.Arg(0))
			return err
		})
	}
	return nil
}

// specJSON turns a YAML or JSON jobspec into the JSON object the schedules API takes. The server checks it as a
// submission; here it only has to be one mapping.
func specJSON(spec []byte) (json.RawMessage, error) {
	if err := jobspec.CheckShape(spec, jobspec.DefaultLimits); err != nil { // the JSON sent is a copy (readSpec)
		return nil, err
	}
	doc, err := decodeSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("the jobspec is not a YAML or JSON mapping: %w", err)
	}
	for k, v := range doc {
		// A number field written as a decimal JSON does not take (+1, 04) goes as its number: sent as text, it was
		// refused ("write +1, not \"+1\""), where the submit of the same file is taken. Any other text goes as it is,
		// for the server to take or refuse as a submit does.
		if s, ok := v.(scalar); ok && jobspec.IntField(k) && s.n.ShortTag() == "!!int" && signedDecimal.MatchString(s.n.Value) {
			if n, err := strconv.ParseInt(s.n.Value, 10, 64); err == nil {
				doc[k] = json.Number(strconv.FormatInt(n, 10))
			}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("the jobspec cannot be sent as JSON: %w", err)
	}
	return b, nil
}

// signedDecimal is an integer's text in decimal digits, with a sign or leading zeros that JSON does not take.
var signedDecimal = regexp.MustCompile(`^[-+]?[0-9]+$`)

func printSchedules(w io.Writer, list []*mvp.Schedule, detail bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOWNER\tCRON\tTIMEZONE\tOVERLAP\tSTATE\tNEXT RUN\tLAST TASK\tMISSED\tLAST OUTCOME")
	for _, s := range list {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		// The cron line is kept as its user wrote it (a carriage return or form feed among its fields parses), and
		// the operator's table lists every user's: shown escaped, as text a job controls is.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, mvp.OwnerName(s.Owner), safe(s.Cron),
			safe(s.Timezone), s.Overlap, state, ts(s.NextRunAt), dash(s.LastTaskID), s.Missed, dash(safe(s.LastOutcome)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if detail && len(list) == 1 && len(list[0].TaskIDs) > 0 {
		_, err := fmt.Fprintf(w, "\ntasks it made (newest first):\n  %s\n", strings.Join(list[0].TaskIDs, "\n  "))
		return err
	}
	return nil
}
