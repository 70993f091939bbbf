package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// setUsage makes -h of fs (and a flag error) print head, then under "flags:" each flag the verb takes, on w: the one
// form of every verb's help. hidden are flags the verb defines only to refuse them with a reason (logs' -o): not
// listed, since the verb does not take them.
func setUsage(fs *flag.FlagSet, w io.Writer, head string, hidden ...string) {
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(w, head)
		listed := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		listed.SetOutput(w)
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(hidden, f.Name) {
				listed.Var(f.Value, f.Name, f.Usage)
				listed.Lookup(f.Name).DefValue = f.DefValue // the default, not a value given before -h
				n++
			}
		})
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			listed.PrintDefaults()
		}
	}
}

// SetUsage gives fs, the flags of the verb serve or doctor (wired in from outside), mvp's help: "usage: …" with an
// example, then its flags, on w, as every verb's -h and `mvp help VERB` print it.
func SetUsage(fs *flag.FlagSet, w io.Writer, verb string) { setUsage(fs, w, "usage: "+verbHelp[verb]) }

// parentHelp is the end of the help of a verb whose flags belong to its subcommands (secrets, schedule, bench).
func parentHelp(verb string) string {
	return fmt.Sprintf("\n\nmvp %s SUBCOMMAND -h (or mvp help %s SUBCOMMAND) shows a subcommand's flags.", verb, verb)
}

// subUsages are the usages of a verb's subcommands, one under the other, each indented under "usage:".
func subUsages(usages ...string) string {
	for i, u := range usages {
		usages[i] = "  " + strings.ReplaceAll(u, "\n", "\n  ")
	}
	return strings.Join(usages, "\n")
}

// given says whether the flag name was on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
