package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAFlagMistakeSaysWhichVerbInMVPsWords: a flag the flag package could not take printed its words alone
// (`invalid value "abc" for flag -attempt: parse error`), without the "mvp VERB:" every other mistake in a command
// begins with (a user's-eye drill found it). The usage still follows, and the exit status stays 2.
func TestAFlagMistakeSaysWhichVerbInMVPsWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "mvp2-ppo-20251223-143201-7f3a", "--attempt", "abc"}, `mvp logs: --attempt must be a whole number, got "abc"`},
		{[]string{"logs", "mvp2-ppo-20251223-143201-7f3a", "--attempt", "99999999999999999999"}, `mvp logs: --attempt is out of range, got "99999999999999999999"`},
		{[]string{"list", "--limit", "1.5"}, `mvp list: --limit must be a whole number, got "1.5"`},
		{[]string{"list", "--nope"}, `mvp list: flag provided but not defined: -nope`},
		{[]string{"submit", "-f"}, `mvp submit: flag needs an argument: -f`},
		{[]string{"secrets", "list", "--bogus"}, `mvp secrets list: flag provided but not defined: -bogus`},
		{[]string{"sim", "--nodes", "two"}, `mvp sim: --nodes must be a whole number, got "two"`},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := Run(context.Background(), c.args, env)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != 2 || first != c.want || !strings.Contains(errb.String(), "usage: mvp ") {
			t.Errorf("mvp %v: exit %d, first line %q; want exit 2, %q and the usage\n%s", c.args, code, first, c.want, errb.String())
		}
	}
}
