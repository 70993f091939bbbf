package cli

import (
	"context"
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
		if u.Removed {
			name, prio = name+" (removed)", "-" // no limits: it may not submit at all
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%g\t%.2f\t%d\t%s\t%d\t%s\t%s\n", name, u.UsageGPUSeconds/3600, u.Share,
			u.NormalizedUsage/3600, u.GPUsInUse, limit(u.MaxGPUs), u.Waiting, limit(u.MaxQueued), prio)
	}
	return tw.Flush()
}
