package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestListTakesAWorkloadInAnyCase: `mvp list --state queued` was taken (states are upper-cased) while `mvp list
// --workload PPO` was refused by the server (found by a user's-eye drill): workloads are lower case, and the CLI
// takes either case for both.
func TestListTakesAWorkloadInAnyCase(t *testing.T) {
	m := servicetest.Start(t, nil)
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": servicetest.Token}[k]
	}}
	if code := Run(context.Background(), []string{"list", "--workload", "PPO", "--state", "queued"}, env); code != 0 {
		t.Errorf("mvp list --workload PPO --state queued: exit %d\n%s", code, errb.String())
	}
}
