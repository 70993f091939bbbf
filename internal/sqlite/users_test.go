package sqlite

import (
	"context"
	"path/filepath"
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

// TestSecretNamesArePerOwner: a secret's name is its owner's. Bob's wandb is stored beside alice's (it was
// refused, forbidden, which told bob that alice had one); each is replaced and deleted apart from the other.
func TestSecretNamesArePerOwner(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	put := func(owner, ct string) (bool, error) {
		return db.PutSecret(ctx, &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: "wandb", Owner: owner, CreatedAt: t0,
			UpdatedAt: t0}, Nonce: []byte("n"), Ciphertext: []byte(ct)})
	}
	for _, c := range []struct {
		owner, ct string
		created   bool
	}{{"alice", "a1", true}, {"bob", "b1", true}, {"alice", "a2", false}} {
		if created, err := put(c.owner, c.ct); err != nil || created != c.created {
			t.Errorf("%s puts wandb: created %v, %v; want created %v", c.owner, created, err, c.created)
		}
	}
	for owner, want := range map[string]string{"alice": "a2", "bob": "b1"} {
		got, err := db.SealedSecrets(ctx, owner, []string{"wandb"})
		if err != nil || got["wandb"] == nil || string(got["wandb"].Ciphertext) != want || got["wandb"].Owner != owner {
			t.Errorf("%s's wandb: %+v %v, want %s", owner, got, err, want)
		}
	}
	if err := db.DeleteSecret(ctx, "bob", "wandb"); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListSecrets(ctx)
	if err != nil || len(list) != 1 || list[0].Owner != "alice" {
		t.Errorf("list after bob deleted his: %+v %v", list, err)
	}
}

// TestMigration0016KeepsEverySecret: a database made by migrations 0001–0015 with the operator's and alice's
// secrets is opened by the current code: migration 0016 keys secrets by owner and name and keeps every row as it
// was; afterwards bob can keep a secret of the same name.
func TestMigration0016KeepsEverySecret(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	old, mustExec := oldDatabase(t, path, 16, 1)
	mustExec(`INSERT INTO secrets (name, nonce, ciphertext, created_at, updated_at) VALUES ('hf', x'01', x'02', 3, 4)`)
	mustExec(`INSERT INTO secrets (name, nonce, ciphertext, created_at, updated_at, owner) VALUES ('wandb', x'05', x'06', 7, 8, 'alice')`)
	old.Close()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open the old database: %v", err)
	}
	defer db.Close()
	op, err := db.SealedSecrets(ctx, mvp.Operator, []string{"hf"})
	if err != nil || op["hf"] == nil || string(op["hf"].Nonce) != "\x01" || string(op["hf"].Ciphertext) != "\x02" ||
		op["hf"].CreatedAt.UnixNano() != 3 || op["hf"].UpdatedAt.UnixNano() != 4 {
		t.Errorf("the operator's hf: %+v %v", op["hf"], err)
	}
	al, err := db.SealedSecrets(ctx, "alice", []string{"wandb"})
	if err != nil || al["wandb"] == nil || string(al["wandb"].Ciphertext) != "\x06" || al["wandb"].UpdatedAt.UnixNano() != 8 {
		t.Errorf("alice's wandb: %+v %v", al["wandb"], err)
	}
	if created, err := db.PutSecret(ctx, &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: "wandb", Owner: "bob"},
		Nonce: []byte("n"), Ciphertext: []byte("c")}); err != nil || !created {
		t.Errorf("bob's wandb after the migration: %v %v", created, err)
	}
}
