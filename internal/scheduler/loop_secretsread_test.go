package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAFailedReadOfTheSecretsDoesNotFailTheTask: a task's secrets are read from the database at each submit. A
// secret that is gone, does not open, or secret storage being off is a verdict on the task (FAILED, USER_ERROR); a
// read of the database that fails (an I/O error) is not: it failed the task for good, though nothing was wrong
// with it and Ray was never called. The attempt stays SUBMITTING and is sent at a later pass, once, with the same id.
func TestAFailedReadOfTheSecretsDoesNotFailTheTask(t *testing.T) {
	h := newHarness(t)
	broken := true
	h.loop.Secrets = func(_ context.Context, _ string, names []string) (map[string]string, error) {
		if broken {
			return nil, fmt.Errorf("read secrets: %w", mvp.Errorf(mvp.CodeUnavailable, "", "database I/O error on mvp.sqlite3: disk I/O error"))
		}
		return map[string]string{"wandb": "value-1111"}, nil
	}
	task := h.secretTask()
	h.tick()
	got := h.get(task.ID)
	if got.State != mvp.StateSubmitting || h.ray.submits != 0 {
		t.Fatalf("after a failed read of its secrets: %s (%s), %d submits; want SUBMITTING, none sent",
			got.State, got.ErrorSummary, h.ray.submits)
	}
	broken = false
	h.tick()
	got = h.get(task.ID)
	if got.State != mvp.StateSubmitted || len(got.Attempts) != 1 || h.ray.submits != 1 {
		t.Fatalf("once the secrets read: %s, %d attempts, %d submits; want SUBMITTED, 1, 1", got.State, len(got.Attempts), h.ray.submits)
	}
}
