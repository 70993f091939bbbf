package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/cli"
)

// helpVerbs is every verb and subcommand of mvp; TestEveryVerbOfTheUsageIsWalked keeps it whole.
var helpVerbs = [][]string{
	{"serve"}, {"submit"}, {"get"}, {"list"}, {"queue"}, {"users"}, {"logs"}, {"cancel"}, {"wait"}, {"events"},
	{"results"}, {"resubmit"}, {"doctor"}, {"backup"}, {"version"},
	{"secrets"}, {"secrets", "list"}, {"secrets", "put"}, {"secrets", "delete"},
	{"schedule"}, {"schedule", "create"}, {"schedule", "list"}, {"schedule", "get"}, {"schedule", "pause"},
	{"schedule", "resume"}, {"schedule", "delete"},
	{"bench"}, {"bench", "load"}, {"bench", "minimal-server"}, {"bench", "raw-fsync"},
	{"sim"}, {"sim", "gen"}, {"sim", "bound"},
	{"nodes"}, {"nodes", "forget"},
}

// runMvp runs mvp as main does, with serve and doctor wired, against an API that does not answer, with a context
// already done (nothing a probe starts runs on), in a folder of its own.
func runMvp(args ...string) (code int, stdout, stderr string) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Serve: serveTo, Doctor: doctorTo,
		Getenv: func(k string) string {
			if k == "MVP_ADDR" {
				return "http://127.0.0.1:1"
			}
			return ""
		}}
	code = cli.Run(ctx, args, env)
	return code, out.String(), errb.String()
}

var flagLine = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)(?: ([a-zA-Z]+))?`)

// listedFlags are the flags a help text lists ("  -name type"), with their type word ("" for a bool).
func listedFlags(help string) map[string]string {
	m := map[string]string{}
	for _, sm := range flagLine.FindAllStringSubmatch(help, -1) {
		m[sm[1]] = sm[2]
	}
	return m
}

// TestEveryVerbsHelpIsMvps: `mvp doctor -h` and `mvp serve -h` printed Go's "Usage of doctor:" instead of mvp's
// "usage: mvp doctor …" with an example and "flags:", and `mvp bench -h` exited 2; `mvp help schedule create` was
// `mvp schedule -h`. Every verb's and subcommand's -h is mvp's usage, exit 0, the same as `mvp help VERB …`.
func TestEveryVerbsHelpIsMvps(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, v := range helpVerbs {
		name := strings.Join(v, " ")
		code, out, errb := runMvp(append(slices.Clone(v), "-h")...)
		help := out + errb
		if code != 0 || !strings.HasPrefix(help, "usage:") || strings.Contains(help, "Usage of") ||
			!strings.Contains(help, "mvp "+name) {
			t.Errorf("mvp %s -h: exit %d, want 0 and mvp's own usage naming \"mvp %s\":\n%s", name, code, name, help)
		}
		if len(listedFlags(help)) > 0 && !strings.Contains(help, "\nflags:\n") {
			t.Errorf("mvp %s -h lists flags without the \"flags:\" heading of the other verbs:\n%s", name, help)
		}
		code2, out2, errb2 := runMvp(append([]string{"help"}, v...)...)
		if code2 != code || out2 != help || errb2 != "" { // asked for: on stdout
			t.Errorf("mvp help %s (exit %d) is not mvp %s -h (exit %d):\n%s\n----\n%s", name, code2, name, code, out2+errb2, help)
		}
	}
}

// TestEveryVerbsHelpListsTheFlagsItTakes: `mvp logs -h` listed -o, which logs refuses ("-o does not apply to
// logs"), `mvp secrets list -h` listed --from-file, which list took and ignored, and `mvp sim -h` listed no flag at
// all. Each verb's help lists each flag the verb takes and no other: every flag listed is taken (not "not defined",
// not "does not apply"); every flag of any verb's help that it does not list is refused.
func TestEveryVerbsHelpListsTheFlagsItTakes(t *testing.T) {
	t.Chdir(t.TempDir())
	helps := map[string]map[string]string{}
	all := map[string]bool{}
	for _, v := range helpVerbs {
		_, out, errb := runMvp(append(slices.Clone(v), "-h")...)
		helps[strings.Join(v, " ")] = listedFlags(out + errb)
		for f := range listedFlags(out + errb) {
			all[f] = true
		}
	}
	value := map[string]string{"": "", "duration": "1s", "int": "1", "float": "1", "uint": "1"}
	for _, v := range helpVerbs {
		name := strings.Join(v, " ")
		if len(v) == 1 && slices.Contains([]string{"secrets", "schedule", "bench", "nodes"}, v[0]) {
			// What follows the verb is a subcommand: each subcommand's help lists its flags.
			if len(helps[name]) > 0 {
				t.Errorf("mvp %s -h lists flags, which belong to its subcommands: %v", name, helps[name])
			}
			continue
		}
		for f := range all {
			typ, listed := helps[name][f]
			args := append(slices.Clone(v), "-"+f)
			val, known := value[typ]
			switch {
			case f == "o" && listed && typ != "":
				val = "json"
			case !known || !listed:
				val = "x"
			}
			if val != "" {
				args = append(args, val)
			}
			_, _, errb := runMvp(args...)
			refused := strings.Contains(errb, "flag provided but not defined") ||
				strings.Contains(errb, "-"+f+" does not apply")
			switch {
			case listed && refused:
				t.Errorf("mvp %s -h lists -%s, which mvp %s refuses:\n%s", name, f, name, errb)
			case !listed && !refused:
				t.Errorf("mvp %s takes -%s, which its help does not list (mvp %v said:\n%s)", name, f, args, errb)
			}
		}
	}
}

// TestEveryVerbOfTheUsageIsWalked: the verbs and subcommands `mvp help` names are those the tests above walk.
func TestEveryVerbOfTheUsageIsWalked(t *testing.T) {
	_, out, _ := runMvp("help")
	for _, sm := range regexp.MustCompile(`(?m)^  mvp ([a-z]+)`).FindAllStringSubmatch(out, -1) {
		if !slices.ContainsFunc(helpVerbs, func(v []string) bool { return v[0] == sm[1] }) {
			t.Errorf("mvp help names the verb %q, which helpVerbs does not hold", sm[1])
		}
	}
}

// TestAFlagErrorOfServeAndDoctorIsSaidOnce: `mvp serve --bogus` printed "flag provided but not defined: -bogus",
// the usage, then "mvp serve: flag provided but not defined: -bogus" again; the client verbs say it once.
func TestAFlagErrorOfServeAndDoctorIsSaidOnce(t *testing.T) {
	for _, v := range []string{"serve", "doctor", "get"} {
		code, _, errb := runMvp(v, "--bogus")
		if code != 2 || strings.Count(errb, "flag provided but not defined: -bogus") != 1 || !strings.Contains(errb, "usage: mvp "+v) {
			t.Errorf("mvp %s --bogus: exit %d, want 2, the error once and the usage:\n%s", v, code, errb)
		}
	}
}
