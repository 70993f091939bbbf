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
	// The flag package writes only its error line to the output (the usage below writes to w itself): it gets
	// mvp's prefix, as every other mistake in a command does, and mvp's words.
	fs.SetOutput(flagErrorWriter{w: w, fs: fs})
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

// flagErrorWriter writes the flag package's error line as "mvp VERB: …", and a value it could not read in mvp's
// words: `invalid value "abc" for flag -attempt: parse error` says --attempt must be a whole number. Its other
// lines ("flag provided but not defined: -x", "flag needs an argument: -f") keep their words.
type flagErrorWriter struct {
	w  io.Writer
	fs *flag.FlagSet
}

func (f flagErrorWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if rest, ok := strings.CutPrefix(line, "invalid value "); ok {
		if i := strings.LastIndex(rest, " for flag -"); i > 0 {
			value, name, why := rest[:i], rest[i+len(" for flag -"):], ""
			if j := strings.Index(name, ": "); j > 0 {
				name, why = name[:j], name[j+2:]
			}
			mine := ""
			if fl := f.fs.Lookup(name); fl != nil && (why == "parse error" || why == "value out of range") {
				if g, ok := fl.Value.(flag.Getter); ok {
					switch g.Get().(type) {
					case int, int64, uint, uint64:
						mine = "must be a whole number"
						if why == "value out of range" {
							mine = "is out of range"
						}
					case float64:
						mine = "must be a number"
					}
				}
			}
			if mine != "" {
				line = fmt.Sprintf("%s %s, got %s", dashes(name), mine, value)
			}
		}
	}
	if _, err := fmt.Fprintf(f.w, "mvp %s: %s\n", f.fs.Name(), line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// dashes writes a flag as mvp's help does: -f, --attempt.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
