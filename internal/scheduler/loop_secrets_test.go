package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/taskfs"
)

// recordingRay is the harness's fake Ray that also keeps what each submission carried.
type recordingRay struct {
	*fakeRay
	mu   sync.Mutex
	sent []*mvp.JobSubmission
}

func (r *recordingRay) SubmitJob(ctx context.Context, s *mvp.JobSubmission) error {
	r.mu.Lock()
	r.sent = append(r.sent, s)
	r.mu.Unlock()
	return r.fakeRay.SubmitJob(ctx, s)
}

func (r *recordingRay) envOf(no int) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sent {
		if strings.HasSuffix(s.SubmissionID, fmt.Sprintf("--a%02d", no)) {
			env, _ := s.RuntimeEnv["env_vars"].(map[string]any)
			return env
		}
	}
	return nil
}

func (h *harness) secretTask() *mvp.Task {
	h.t.Helper()
	n++
	t := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", n), Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 2, JobSpecYAML: "x", SpecJSON: []byte(`{"secrets": {"WANDB_API_KEY": "wandb"}}`),
		CreatedAt: h.clock.t, UpdatedAt: h.clock.t}
	if err := h.db.CreateTask(context.Background(), t); err != nil {
		h.t.Fatal(err)
	}
	return t
}

// TestLoopInjectsSecrets: a secret reaches Ray only in the submission the loop sends: never the payload in the
// task folder, the events or the attempt; a rotated secret reaches the next attempt; a deleted one fails the task
// at its next submit with a reason naming it, and Ray never gets that attempt.
func TestLoopInjectsSecrets(t *testing.T) {
	h := newHarness(t)
	rr := &recordingRay{fakeRay: h.ray}
	h.loop.Ray = rr
	vault, err := secrets.New(h.db, []byte("0123456789abcdef0123456789abcdef"), "MVP_TEST_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.loop.Secrets = vault.ValuesOf
	ctx := context.Background()
	const first, second = "first-secret-value-1111", "second-secret-value-2222"
	if _, _, err := vault.Put(ctx, "", "wandb", first); err != nil {
		t.Fatal(err)
	}
	task := h.secretTask()
	h.tick()
	if env := rr.envOf(1); env["WANDB_API_KEY"] != first {
		t.Fatalf("attempt 1 sent env %v", env)
	}
	// Ray loses the job: the INFRA retry is built again, with the rotated value.
	if _, _, err := vault.Put(ctx, "", "wandb", second); err != nil {
		t.Fatal(err)
	}
	rr.fakeRay.mu.Lock()
	rr.fakeRay.jobs[task.ID+"--a01"].Status = mvp.RayRunning
	rr.fakeRay.mu.Unlock()
	h.tick()
	rr.fakeRay.mu.Lock()
	delete(rr.fakeRay.jobs, task.ID+"--a01")
	rr.fakeRay.mu.Unlock()
	h.tick()
	if env := rr.envOf(2); env["WANDB_API_KEY"] != second {
		t.Fatalf("attempt 2 sent env %v", env)
	}
	// The secret is deleted; Ray loses the job again: attempt 3 fails at submit.
	if err := vault.Delete(ctx, "", "wandb"); err != nil {
		t.Fatal(err)
	}
	rr.fakeRay.mu.Lock()
	delete(rr.fakeRay.jobs, task.ID+"--a02")
	rr.fakeRay.mu.Unlock()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "wandb") || !strings.Contains(got.ErrorSummary, "has no secret(s) wandb") {
		t.Fatalf("after the secret was deleted: %s %q", got.State, got.ErrorSummary)
	}
	if a := got.Attempts[2]; a.FailureKind != mvp.FailureUserError || a.RayStatus != mvp.RayFailed {
		t.Errorf("attempt 3: %+v", a)
	}
	if rr.envOf(3) != nil {
		t.Errorf("attempt 3 reached Ray")
	}
	// No value anywhere but in what was sent to Ray.
	dir, _ := taskfs.FS{Root: h.root}.TaskDir(task.ID)
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), first) || strings.Contains(string(b), second) {
				t.Errorf("%s holds a secret value", p)
			}
		}
		return nil
	})
	evs, _, _ := h.db.Events(ctx, task.ID, "", 1000)
	for _, e := range evs {
		if strings.Contains(string(e.Payload), first) || strings.Contains(string(e.Payload), second) {
			t.Errorf("event %s holds a secret value", e.Type)
		}
	}
	for _, a := range got.Attempts {
		if strings.Contains(a.Message, first) || strings.Contains(a.Message, second) {
			t.Errorf("attempt %d's message holds a secret value", a.No)
		}
	}
}

// TestLoopSecretsOff: a task naming secrets on a server without secret storage fails at submit, saying why.
func TestLoopSecretsOff(t *testing.T) {
	h := newHarness(t)
	task := h.secretTask()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "v2.secrets.key_env") || h.ray.submits != 0 {
		t.Errorf("%s %q, %d submits", got.State, got.ErrorSummary, h.ray.submits)
	}
}

// TestLoopRedactsRayAnswers: when Ray refuses a submission with an answer that echoes the payload, the attempt's
// message and the task's summary hold no secret value.
func TestLoopRedactsRayAnswers(t *testing.T) {
	h := newHarness(t)
	vault, _ := secrets.New(h.db, []byte("0123456789abcdef0123456789abcdef"), "MVP_TEST_KEY", nil)
	h.loop.Secrets = vault.ValuesOf
	const value = "echoed-secret-value-3333"
	if _, _, err := vault.Put(context.Background(), "", "wandb", value); err != nil {
		t.Fatal(err)
	}
	h.ray.submitErr = func(string) error { return fmt.Errorf("invalid runtime_env {WANDB_API_KEY: %s}", value) }
	task := h.secretTask()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || strings.Contains(got.ErrorSummary, value) || strings.Contains(got.Attempts[0].Message, value) ||
		!strings.Contains(got.ErrorSummary, "<redacted>") {
		t.Errorf("%s %q / %q", got.State, got.ErrorSummary, got.Attempts[0].Message)
	}
}

// As an attempt that cannot be built again: one whose secret was deleted while its POST's answer was lost is not
// failed within the submit grace, since the lost POST can still make the job.
func TestLoopWaitsTheSubmitGraceBeforeFailingAResubmitWithoutItsSecret(t *testing.T) {
	h := newHarness(t) // SubmitGrace 1 min
	h.loop.Secrets = func(context.Context, string, []string) (map[string]string, error) {
		return map[string]string{"wandb": "value-0000000000000"}, nil
	}
	h.ray.submitErr = func(string) error { return mvp.ErrRayUnavailable } // the answer is lost; no job yet
	task := h.secretTask()
	h.tick()
	h.ray.submitErr = nil
	h.loop.Secrets = func(context.Context, string, []string) (map[string]string, error) {
		return nil, mvp.Errorf(mvp.CodeInvalid, "secrets", "secret wandb does not exist")
	}
	h.clock.t = h.clock.t.Add(10 * time.Second)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateSubmitting {
		t.Fatalf("failed within the submit grace: %s %q", got.State, got.ErrorSummary)
	}
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if got := h.get(task.ID); got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "wandb") {
		t.Fatalf("after the grace: %s %q", got.State, got.ErrorSummary)
	}
}

// TestLoopFailsATaskWhoseSecretsMakeItsRuntimeEnvTooLongForRay: Ray hands the job its runtime_env in one
// environment variable, with every non-ASCII character escaped to six bytes, and Linux refuses one past 128 KiB. A
// secret's value (up to 64 KiB) is put in at each submission, after the jobspec was measured: one of 60,000 bytes
// of é is about 180 KiB as Ray hands it, and the job failed at start in Ray. It now fails at submit, saying why,
// without reaching Ray and without the value in what it says.
func TestLoopFailsATaskWhoseSecretsMakeItsRuntimeEnvTooLongForRay(t *testing.T) {
	h := newHarness(t)
	vault, err := secrets.New(h.db, []byte("0123456789abcdef0123456789abcdef"), "MVP_TEST_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.loop.Secrets = vault.ValuesOf
	value := strings.Repeat("é", 30000)
	if _, _, err := vault.Put(context.Background(), "", "wandb", value); err != nil {
		t.Fatal(err)
	}
	task := h.secretTask()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateFailed || !strings.Contains(got.ErrorSummary, "128 KiB") || h.ray.submits != 0 {
		t.Fatalf("a secret too long for Ray's environment variable: %s %q, %d submits; want FAILED at submit, saying so",
			got.State, got.ErrorSummary, h.ray.submits)
	}
	if strings.Contains(got.ErrorSummary, value[:100]) {
		t.Errorf("the task's summary holds the secret's value")
	}
}
