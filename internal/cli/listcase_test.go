package cli

import (
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestListTakesAWorkloadInAnyCase: `mvp list --state queued` was taken (states are upper-cased) while `mvp list
// --workload PPO` was refused by the server (found by a user's-eye drill): workloads are lower case, and the CLI
// takes either case for both.
func TestListTakesAWorkloadInAnyCase(t *testing.T) {
	m := servicetest.Start(t, nil)
	runAt(t, m.URL())(servicetest.Token, "", 0, "list", "--workload", "PPO", "--state", "queued")
}
