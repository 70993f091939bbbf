package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/mvp2/mvp/internal/mvp"
)

// runVersion is `mvp version`: which build this binary is (no server is asked).
func runVersion(args []string, env Env) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	setUsage(fs, env.Stderr, "usage: mvp version [-o table|json|yaml]\n  the git commit this binary was built from, and its Go version")
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
	b := mvp.Build()
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return render(env.Stdout, *out, raw, func(w io.Writer) error {
		when := ""
		if b.Time != "" {
			when = " of " + b.Time
		}
		_, err := fmt.Fprintf(w, "mvp %s%s, %s\n", b.Short(), when, b.GoVersion)
		return err
	})
}
