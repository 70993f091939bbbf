package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// runAt returns a runner of the CLI against the API at url: mvp args with token tok and stdin, which must exit
// want; it returns what the command printed, stdout then stderr.
func runAt(t *testing.T, url string) func(tok, stdin string, want int, args ...string) string {
	return func(tok, stdin string, want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Getenv: func(k string) string {
			return map[string]string{"MVP_ADDR": url, "MVP_TOKEN": tok}[k]
		}}
		if code := Run(context.Background(), args, env); code != want {
			t.Fatalf("mvp %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
}

// TestOwnerFlagNamesAUsersSecretsAndSchedules: schedule and secret names are each user's own; the operator's
// --owner USER acts on that user's (mvp secrets put/list/delete, mvp schedule list/get/pause/delete), and a user's
// --owner naming someone else is refused.
func TestOwnerFlagNamesAUsersSecretsAndSchedules(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_SECRETS_KEY"
	t.Setenv("MVP_TEST_SECRETS_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	t.Setenv("MVP_TEST_TOKEN_ALICE", "alice-token-0123456789abcdef")
	cfg.V2.Auth.Users = []config.User{{Name: "alice", TokenEnv: "MVP_TEST_TOKEN_ALICE", Share: 1}}
	m := servicetest.Start(t, &service.Main{Config: cfg, Cluster: servicetest.OneNode(4)})
	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := runAt(t, m.URL())
	alice, op := "alice-token-0123456789abcdef", servicetest.Token
	run(alice, "", 0, "schedule", "create", "nightly", "--cron", "0 2 * * *", "-f", job)
	run(op, "", 0, "schedule", "create", "nightly", "--cron", "0 3 * * *", "-f", job) // the operator's own, beside hers
	if got := run(op, "", 0, "schedule", "get", "nightly", "--owner", "alice"); !strings.Contains(got, "0 2 * * *") {
		t.Errorf("the operator's get --owner alice: %s, want hers (0 2 * * *)", got)
	}
	run(op, "", 0, "schedule", "pause", "nightly", "--owner", "alice")
	if got := run(alice, "", 0, "schedule", "get", "nightly"); !strings.Contains(got, "paused") {
		t.Errorf("alice's nightly after the operator paused it: %s", got)
	}
	if got := run(op, "", 0, "schedule", "get", "nightly"); strings.Contains(got, "paused") || !strings.Contains(got, "0 3 * * *") {
		t.Errorf("the operator's own nightly: %s, want it active (0 3 * * *)", got)
	}
	run(op, "", 0, "schedule", "delete", "nightly", "--owner", "alice")
	run(alice, "", 1, "schedule", "get", "nightly")

	if got := run(op, "alice-value\n", 0, "secrets", "put", "wandb", "--owner", "alice"); !strings.Contains(got, "wandb") {
		t.Errorf("secrets put --owner alice: %s", got)
	}
	if got := run(alice, "", 0, "secrets", "list"); !strings.Contains(got, "wandb") || !strings.Contains(got, "alice") {
		t.Errorf("alice's secrets list: %s", got)
	}
	if got := run(op, "", 0, "secrets", "list", "--owner", "alice"); !strings.Contains(got, "wandb") {
		t.Errorf("the operator's secrets list --owner alice: %s", got)
	}
	if got := run(alice, "", 1, "secrets", "list", "--owner", "operator"); !strings.Contains(got, "owner=operator") {
		t.Errorf("alice's list --owner operator: %s, want refused", got)
	}
	run(op, "", 1, "secrets", "delete", "wandb") // the operator has none of its own
	run(op, "", 0, "secrets", "delete", "wandb", "--owner", "alice")
	if got := run(alice, "", 0, "secrets", "list"); strings.Contains(got, "wandb") {
		t.Errorf("alice's secrets after the operator deleted hers: %s", got)
	}
}
