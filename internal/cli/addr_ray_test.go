package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestAnAddressOfTheRayDoorSaysToDropRay: MVP_ADDR set to the Ray door's address (the one Ray's own client is
// given, ending in /ray) got a bare 404 from every verb; a user's-eye drill found it. The CLI now says to leave
// /ray out.
func TestAnAddressOfTheRayDoorSaysToDropRay(t *testing.T) {
	m := servicetest.Start(t, nil)
	for _, addr := range []string{m.URL() + "/ray", m.URL() + "/ray/"} {
		for _, args := range [][]string{{"list"}, {"get", "mvp2-ppo-20251223-143201-7f3a"}, {"queue"}} {
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
				return map[string]string{"MVP_ADDR": addr, "MVP_TOKEN": servicetest.Token}[k]
			}}
			code := Run(context.Background(), args, env)
			if code != 1 || !strings.Contains(errb.String(), "ends in /ray") || !strings.Contains(errb.String(), "set MVP_ADDR="+m.URL()+"\n") || !strings.Contains(errb.String(), m.URL()) {
				t.Errorf("MVP_ADDR=%s mvp %v: exit %d\n%s", addr, args, code, errb.String())
			}
		}
	}
}
