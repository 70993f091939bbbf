package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mvp2/mvp/internal/api"
)

// runUsers is `mvp users`: GET /api/v2/users (the operator's token only).
func runUsers(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("users", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: mvp users [-o table|json|yaml]\n  each user's decayed GPU usage, share, limits, GPUs in use and waiting tasks (operator only)")
	out := fs.String("o", "table", "output: table, json or yaml")
	if err := fs.Parse(args); err != nil {
		return flagError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	l, raw, err := clientOf(env).Users(ctx)
	if err != nil {
		return err
	}
	return render(env.Stdout, *out, raw, func(w io.Writer) error { return printUsers(w, l) })
}

func printUsers(w io.Writer, l *api.UserList) error {
	fs := "off"
	if l.FairShare {
		fs = fmt.Sprintf("on, half-life %s", time.Duration(l.HalfLifeS*float64(time.Second)))
	}
	fmt.Fprintf(w, "fair share %s; starvation bound %s\n", fs, time.Duration(l.StarvationS*float64(time.Second)))
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tUSAGE (GPU·h)\tSHARE\tUSAGE/SHARE\tGPUS IN USE\tMAX GPUS\tWAITING\tMAX QUEUED\tMAX PRIO")
	limit := func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	for _, u := range l.Users {
		name, prio := u.Name, fmt.Sprint(u.MaxPriority)
		share, norm := fmt.Sprint(u.Share), fmt.Sprintf("%.2f", u.NormalizedUsage/3600)
		if u.Removed {
			// No limits and no share: it may not submit at all, and its waiting tasks are held (the share it had is
			// not in the config any more; 1 showed as if it were).
			name, prio, share, norm = name+" (removed)", "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", name, u.UsageGPUSeconds/3600, share, norm,
			u.GPUsInUse, limit(u.MaxGPUs), u.Waiting, limit(u.MaxQueued), prio)
	}
	return tw.Flush()
}

// runNodes is `mvp nodes forget NODE_ID…`: DELETE /api/v2/nodes/{node_id} for each (the operator's token only).
func runNodes(ctx context.Context, args []string, env Env) error {
	const usage = "usage: mvp nodes forget NODE_ID [NODE_ID …] [-o table|json|yaml]\n" +
		"  forget GPU nodes that are down and not coming back (taken out of the cluster on purpose): gangs that fit\n" +
		"  only with them stop waiting for them (nodes_down). mvp queue lists the nodes that are down; a prefix of\n" +
		"  an id that names one node is enough. Operator only."
	if len(args) == 0 || args[0] != "forget" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintln(env.Stderr, usage)
			return flag.ErrHelp
		}
		return usageError{errors.New("a subcommand is needed: forget\n" + usage)}
	}
	fs := flag.NewFlagSet("nodes forget", flag.ContinueOnError)
	setUsage(fs, env.Stderr, usage)
	out := fs.String("o", "table", "output: table, json or yaml")
	if err := fs.Parse(interleave(fs, args[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("name the node(s) to forget\n" + usage)}
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	c := clientOf(env)
	var errs []error
	docs := documents{format: *out} // one YAML document per node, as mvp cancel A B writes
	for _, id := range fs.Args() {
		n, raw, err := c.ForgetNode(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("forget node %s: %w", id, err))
			continue
		}
		if err := docs.render(env.Stdout, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "forgot node %s (%s, %g GPU): gangs that fit only with it no longer wait for it\n",
				n.NodeID, dash(n.IP), n.TotalGPUs)
			return err
		}); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
