package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestOwnersPriorityAndUsage: a task keeps its owner (the operator when it names none) and priority; a user's
// listing and waiting count are theirs; UsageSpans returns the attempts that ran since the given time, with owner
// and gang GPUs, and not the ones that ended before.
func TestOwnersPriorityAndUsage(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	a := newTask(t0)
	a.Owner, a.Priority = "alice", 70
	if err := db.CreateTask(ctx, a); err != nil {
		t.Fatal(err)
	}
	op := create(t, db, t0.Add(time.Second))
	got, err := db.GetTask(ctx, a.ID)
	if err != nil || got.Owner != "alice" || got.Priority != 70 {
		t.Fatalf("alice's task: %+v %v", got, err)
	}
	if got, _ := db.GetTask(ctx, op.ID); got.Owner != mvp.Operator {
		t.Errorf("a task without owner is %q's, want the operator's", got.Owner)
	}
	list, _, err := db.ListTasks(ctx, mvp.TaskFilter{Owner: "alice"})
	if err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Errorf("alice's listing: %v %v", list, err)
	}
	if n, err := db.CountWaiting(ctx, "alice"); err != nil || n != 1 {
		t.Errorf("alice waiting: %d %v", n, err)
	}
	// Two of alice's 1×4 tasks with an attempt each: one ended long ago, one running.
	start, end := t0.Add(-48*time.Hour), t0.Add(-47*time.Hour)
	second := newTask(t0.Add(2 * time.Second))
	second.Owner = "alice"
	if err := db.CreateTask(ctx, second); err != nil {
		t.Fatal(err)
	}
	for _, at := range []struct {
		id         string
		start, end *time.Time
		status     mvp.RayStatus
	}{{a.ID, &start, &end, mvp.RaySucceeded}, {second.ID, &start, nil, mvp.RayRunning}} {
		sid := mvp.SubmissionID(at.id, 1)
		if err := db.Apply(ctx, mvp.Change{TaskID: at.id, From: mvp.StateQueued, To: mvp.StateSubmitting, At: t0,
			NewAttempt: &mvp.Attempt{No: 1, RaySubmissionID: sid, CreatedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		att := &mvp.Attempt{TaskID: at.id, No: 1, RaySubmissionID: sid, RayStatus: at.status, StartTime: at.start,
			EndTime: at.end, CreatedAt: t0}
		if err := db.UpdateAttempt(ctx, "", att, mvp.EventRayStatusSync, nil); err != nil {
			t.Fatal(err)
		}
	}
	spans, err := db.UsageSpans(ctx, t0.Add(-time.Hour))
	if err != nil || len(spans) != 1 || spans[0].Owner != "alice" || spans[0].GPUs != 4 || spans[0].End != nil {
		t.Errorf("spans since an hour ago: %+v %v, want alice's running attempt only", spans, err)
	}
	if spans, _ := db.UsageSpans(ctx, t0.Add(-72*time.Hour)); len(spans) != 2 {
		t.Errorf("spans since 3 days ago: %+v, want both", spans)
	}
}

// TestSecretBelongsToItsOwner: another owner cannot replace a secret (forbidden); its owner can.
func TestSecretBelongsToItsOwner(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	put := func(owner string) error {
		_, err := db.PutSecret(ctx, &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: "wandb", Owner: owner, CreatedAt: t0,
			UpdatedAt: t0}, Nonce: []byte("n"), Ciphertext: []byte("c")})
		return err
	}
	if err := put("alice"); err != nil {
		t.Fatal(err)
	}
	var e *mvp.Error
	if err := put("bob"); !errors.As(err, &e) || e.Code != mvp.CodeForbidden {
		t.Errorf("bob replaces alice's secret: %v, want forbidden", err)
	}
	if err := put("alice"); err != nil {
		t.Errorf("alice replaces her secret: %v", err)
	}
	list, err := db.ListSecrets(ctx)
	if err != nil || len(list) != 1 || list[0].Owner != "alice" {
		t.Errorf("list: %+v %v", list, err)
	}
}
