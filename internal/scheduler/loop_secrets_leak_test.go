package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
	"github.com/mvp2/mvp/internal/secrets"
)

// TestLoopRefusesASecretThatChangedHands: a task names a secret its owner held at submit; alice then deletes hers
// and bob stores his under that name. The submission must not carry bob's value: the task fails without reaching
// Ray, saying why (the loop used to open whatever secret had the name, whoever owned it; names are now each
// owner's own, so alice's task looks for hers only).
func TestLoopRefusesASecretThatChangedHands(t *testing.T) {
	h := newHarness(t)
	rr := &recordingRay{fakeRay: h.ray}
	h.loop.Ray = rr
	vault, _ := secrets.New(h.db, []byte("0123456789abcdef0123456789abcdef"), "MVP_TEST_KEY", nil)
	h.loop.Secrets = vault.ValuesOf
	alice := mvp.WithCaller(context.Background(), mvp.Caller{Name: "alice"})
	bob := mvp.WithCaller(context.Background(), mvp.Caller{Name: "bob"})
	if _, _, err := vault.Put(alice, "alice", "wandb", "alice-value"); err != nil {
		t.Fatal(err)
	}
	n++
	task := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Owner: "alice", Workload: mvp.WorkloadPPO,
		State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "x",
		SpecJSON: []byte(`{"secrets": {"WANDB_API_KEY": "wandb"}}`), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	// While the task waits (or between two attempts), alice deletes her secret and bob stores his under the name.
	if err := vault.Delete(alice, "alice", "wandb"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := vault.Put(bob, "bob", "wandb", "BOB-PRIVATE-VALUE"); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if env := rr.envOf(1); env["WANDB_API_KEY"] == "BOB-PRIVATE-VALUE" {
		t.Fatalf("alice's task was sent bob's secret: %v", env)
	}
	if got := h.get(task.ID); got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "alice has no secret(s) wandb") ||
		!strings.Contains(got.ErrorSummary, "mvp secrets put wandb --owner alice") {
		t.Fatalf("alice's task is %s (%q), want FAILED saying alice has no secret wandb and how to store hers", got.State, got.ErrorSummary)
	}
}

// TestLoopKeepsSecretsOutOfARefusalEvenEscapedOrCut: Ray refuses a submission with an answer that echoes its
// runtime_env. The Ray client keeps the answer's last line cut at 300 bytes, and a JSON or repr echo escapes
// quotes: an exact-match redaction missed both, and the value reached the task's error summary and events.
func TestLoopKeepsSecretsOutOfARefusalEvenEscapedOrCut(t *testing.T) {
	for name, c := range map[string]struct {
		value string
		echo  func(env map[string]any) string
		leak  string
	}{
		"cut at 300 bytes": {value: "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
			echo: func(env map[string]any) string {
				return "ValueError: invalid runtime_env: {'env_vars': {" + strings.Repeat("'MVP_X': '/shared/jobs/x', ", 10)[:220] +
					"'HF_TOKEN': '" + env["HF_TOKEN"].(string) + "'}}"
			},
			leak: "hf_AbCdEfGhIjKlMnOp"},
		"JSON-escaped": {value: `{"type": "service_account", "private_key": "k3y"}`,
			echo: func(env map[string]any) string {
				b, _ := json.Marshal(env["HF_TOKEN"])
				return "ValueError: invalid runtime_env: HF_TOKEN=" + string(b)
			},
			leak: `private_key\": \"k3y`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var s mvp.JobSubmission
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &s)
				env, _ := s.RuntimeEnv["env_vars"].(map[string]any)
				w.WriteHeader(400)
				io.WriteString(w, "Traceback (most recent call last):\n  ...\n"+c.echo(env)+"\n")
			}))
			defer srv.Close()
			rc := ray.New(ray.Options{DashboardURL: srv.URL})
			h := newHarness(t)
			vault, _ := secrets.New(h.db, []byte("0123456789abcdef0123456789abcdef"), "MVP_TEST_KEY", nil)
			h.loop.Secrets = vault.ValuesOf
			if _, _, err := vault.Put(context.Background(), "", "hf", c.value); err != nil {
				t.Fatal(err)
			}
			h.ray.submitErr = func(id string) error {
				// what the real client answers for that Ray reply
				return rc.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: id,
					RuntimeEnv: map[string]any{"env_vars": map[string]any{"HF_TOKEN": c.value}}})
			}
			n++
			task := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Workload: mvp.WorkloadPPO,
				State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "x",
				SpecJSON: []byte(`{"secrets": {"HF_TOKEN": "hf"}}`), CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
			if err := h.db.CreateTask(context.Background(), task); err != nil {
				t.Fatal(err)
			}
			h.tick()
			got := h.get(task.ID)
			evs, _, _ := h.db.Events(context.Background(), task.ID, "", 100)
			var all strings.Builder
			all.WriteString(got.ErrorSummary)
			for _, a := range got.Attempts {
				all.WriteString(a.Message)
			}
			for _, e := range evs {
				all.Write(e.Payload)
			}
			t.Logf("summary: %s", got.ErrorSummary)
			if strings.Contains(all.String(), c.leak) || strings.Contains(all.String(), strings.ReplaceAll(c.leak, `\"`, `\\\"`)) {
				t.Fatalf("secret text reached the task's record: %s", got.ErrorSummary)
			}
		})
	}
}
