package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// Exit codes of mvp wait (and mvp submit --wait) beyond the CLI's 0, 1 and 2: a script tells a task that ran and
// failed from a wait that ran out, and both from mvp's own refusal (1).
const (
	// ExitNotSucceeded: every task named ended, at least one of them FAILED or CANCELED.
	ExitNotSucceeded = 3
	// ExitWaitTimeout: --timeout passed before every task named had ended.
	ExitWaitTimeout = 4
	// ExitInterrupted: the wait was interrupted (Ctrl-C, SIGTERM) before every task named had ended; they go on.
	ExitInterrupted = 130
)

// exitCode is an error that carries the exit status Run returns for it (after printing it, when it says anything).
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string { return e.msg }

// waitPoll is how often mvp wait asks after the tasks that have not ended (at least; a round over many tasks
// spaces the next one by ten times its own length, so that a wait on a sweep does not load the server).
var waitPoll = 2 * time.Second

func runWait(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: "+verbHelp["wait"])
	out := fs.String("o", "table", "output: table, or json or yaml (each task's answer as it ends, one document each)")
	var timeout durationFlag
	fs.Var(&timeout, "timeout", "give up after this `duration` (e.g. 90m, 12h; exit 4); 0 waits as long as it takes")
	if err := fs.Parse(interleave(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	if timeout < 0 {
		return usageError{fmt.Errorf("--timeout must be 0 (no limit) or more, got %s", time.Duration(timeout))}
	}
	if fs.NArg() == 0 {
		return usageError{fmt.Errorf("name at least one TASK_ID\nusage: %s", verbHelp["wait"])}
	}
	seen := map[string]bool{}
	var ids []string
	for _, id := range fs.Args() {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return waitTasks(ctx, clientOf(env), ids, time.Duration(timeout), *out, env.Stdout, env.Stderr)
}

// durationFlag is a flag of a Go duration whose refusal says what is wanted: the flag package's own says only
// "parse error", which a number of seconds (--timeout 3600) got without a hint.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		hint := ""
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			hint = fmt.Sprintf(" (%ss for seconds)", s)
		}
		return fmt.Errorf("want a duration with its unit, such as 90m or 12h%s", hint)
	}
	*d = durationFlag(v)
	return nil
}

// waitTasks waits until every task of ids has ended (SUCCEEDED, FAILED or CANCELED: an attempt that failed and was
// put back in the queue is not an end), printing each as it ends. It returns nil when all succeeded, an exitCode
// of ExitNotSucceeded when one did not, and of ExitWaitTimeout when timeout (0: none) passed first. A task mvp does
// not know, or will not show, is mvp's refusal (exit 1) at once. A restart of mvp on the way (refused or cut
// connections, 503) is waited out for up to followOutage, said on w2.
func waitTasks(ctx context.Context, c *api.Client, ids []string, timeout time.Duration, format string, w, w2 io.Writer) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for _, id := range ids {
		if err := api.CheckName(id); err != nil {
			return err // before any request, as mvp cancel refuses it
		}
	}
	left := append([]string(nil), ids...)
	var failed []string
	var downSince time.Time
	docs := documents{format: format}
	for {
		began := time.Now()
		var still []string
		var outage error
		timedOut := func(left []string) error {
			return exitCode{ExitWaitTimeout, fmt.Sprintf("%s passed; %d of %d task(s) had not ended: %s",
				timeout, len(left), len(ids), strings.Join(left, " "))}
		}
		for i, id := range left {
			// A request is bounded by --timeout too: a server that takes the connection and does not answer held
			// the wait past it, to end with exit 1 where --timeout promises 4.
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if !deadline.IsZero() {
				rctx, cancel = context.WithDeadline(ctx, deadline)
			}
			t, raw, err := c.Get(rctx, id)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return interrupted(append(still, left[i:]...))
				}
				if !deadline.IsZero() && !time.Now().Before(deadline) {
					return timedOut(append(still, left[i:]...))
				}
				if !serverAway(err) {
					return fmt.Errorf("%s: %w", id, err)
				}
				outage = err
				still = append(still, left[i:]...) // asked again once mvp answers
				break
			}
			if !t.State.Terminal() {
				still = append(still, id)
				continue
			}
			if t.State != mvp.StateSucceeded {
				failed = append(failed, id)
			}
			if err := docs.render(w, raw, func(w io.Writer) error { return printEnd(w, t) }); err != nil {
				return err
			}
		}
		left = still
		if outage == nil {
			downSince = time.Time{}
		} else if downSince.IsZero() {
			downSince = time.Now()
			fmt.Fprintf(w2, "mvp wait: mvp at %s does not answer (%v): restarting? Waiting for it, for up to %s "+
				"(Ctrl-C to stop)\n", c.Addr, outage, followOutage)
		} else if time.Since(downSince) > followOutage {
			return fmt.Errorf("%w: mvp did not answer for %s; %d task(s) had not ended: %s", outage, followOutage,
				len(left), strings.Join(left, " "))
		}
		if len(left) == 0 {
			if len(failed) > 0 {
				return exitCode{ExitNotSucceeded, fmt.Sprintf("%d of %d task(s) did not succeed: %s", len(failed),
					len(ids), strings.Join(failed, " "))}
			}
			return nil
		}
		pause := max(waitPoll, 10*time.Since(began))
		if !deadline.IsZero() {
			if now := time.Now(); !now.Before(deadline) {
				return timedOut(left)
			} else if d := deadline.Sub(now); d < pause {
				pause = d
			}
		}
		select {
		case <-ctx.Done():
			return interrupted(left)
		case <-time.After(pause):
		}
	}
}

// interrupted is the end of a wait interrupted (Ctrl-C) while the tasks of left had not ended: not "context
// canceled", which read as if they had been, but that they go on.
func interrupted(left []string) error {
	return exitCode{ExitInterrupted, fmt.Sprintf("interrupted: stopped waiting; the task(s) go on: %s (mvp cancel "+
		"stops one)", strings.Join(left, " "))}
}

// printEnd is a task's end in a line: its id and state, and for one that did not succeed, why (the latest
// attempt's failure kind, unless the summary names it already, and the task's error summary), with control
// characters escaped.
func printEnd(w io.Writer, t *mvp.Task) error {
	line := t.ID + "\t" + string(t.State)
	if t.State != mvp.StateSucceeded {
		var why []string
		// The scheduler's summary of a failed attempt names its kind already ("attempt 1: RUNTIME_ERROR: …").
		if a := t.Latest(); a != nil && a.FailureKind != "" && !strings.Contains(t.ErrorSummary, string(a.FailureKind)) {
			why = append(why, string(a.FailureKind))
		}
		if t.ErrorSummary != "" {
			why = append(why, safe(t.ErrorSummary))
		}
		if len(why) > 0 {
			line += "\t" + strings.Join(why, ": ")
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// submitAndWait is mvp submit --wait after the submit: the task's id and state as submit prints them, on stderr
// with -o json or yaml (whose standard output is the end's answer alone), then the wait (timeout 0: no limit).
func submitAndWait(ctx context.Context, c *api.Client, raw json.RawMessage, t *mvp.Task, timeout time.Duration, format string, w, w2 io.Writer) error {
	if format == "table" {
		fmt.Fprintf(w, "%s\t%s\n", t.ID, t.State)
	} else {
		fmt.Fprintf(w2, "mvp submit: %s %s; waiting for it to end\n", t.ID, t.State)
	}
	return waitTasks(ctx, c, []string{t.ID}, timeout, format, w, w2)
}

// waitExit is the exit status of an error of mvp wait's (0 if it carries none).
func waitExit(err error) int {
	var ec exitCode
	if errors.As(err, &ec) {
		return ec.code
	}
	return 0
}

// cancelMany cancels each task of ids in turn (mvp cancel with several: a sweep submitted by mistake), printing a
// line per task canceled (`ID  STATE`; with -o json or yaml its answer, one document each). A task mvp refuses
// to cancel, or a request that fails, is said on w2 with its id and the others are still canceled; the error
// then counts them (exit 1). A task id that cannot stand in a URL path is refused before any request (exit 2).
func cancelMany(ctx context.Context, c *api.Client, ids []string, format string, w, w2 io.Writer) error {
	for _, id := range ids {
		if err := api.CheckName(id); err != nil {
			return fmt.Errorf("nothing canceled: %w", err)
		}
	}
	var failed []string
	docs := documents{format: format}
	for _, id := range ids {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped before %s: %w", id, ctx.Err())
		}
		t, raw, err := c.Cancel(ctx, id)
		if err != nil {
			failed = append(failed, id)
			fmt.Fprintf(w2, "mvp cancel: %s: %v\n", id, err)
			continue
		}
		if err := docs.render(w, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\t%s\n", t.ID, t.State)
			return err
		}); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d task(s) not canceled (said above): %s", len(failed), len(ids), strings.Join(failed, " "))
	}
	return nil
}

// documents renders one answer after another in format, as render does one: a line each in a table, one JSON
// document each, and YAML documents separated by "---".
type documents struct {
	format string
	n      int
}

func (d *documents) render(w io.Writer, raw json.RawMessage, table func(io.Writer) error) error {
	if d.format == "yaml" && d.n > 0 {
		fmt.Fprintln(w, "---")
	}
	d.n++
	return render(w, d.format, raw, table)
}
