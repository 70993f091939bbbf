package service_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestALogIsReadFromAnOffset: GET …/logs?offset=N answers the log from byte N on, copied or followed, running or
// ended (what `mvp logs -f` asks for when it follows on after a restart of mvp); a bad offset is 400, one past
// the end an empty log.
func TestALogIsReadFromAnOffset(t *testing.T) {
	ray := servicetest.NewRay()
	id := "mvp2-ppo-20251223-143201-0b1e"
	m, at, att := runningInRay(t, ray, id)
	ctx, db, sub, c := context.Background(), m.Store(), att.RaySubmissionID, m.Client()
	ray.AddLog(sub, "step 1\nstep 2\n")
	head := int64(len("log of " + sub + "\nstep 1\n"))
	var b bytes.Buffer
	if _, err := c.LogsFrom(ctx, id, 1, head, false, &b); err != nil || b.String() != "step 2\n" {
		t.Fatalf("running log from %d: %q, %v; want %q", head, b.String(), err, "step 2\n")
	}
	got := &signalWriter{at: "step 2", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { _, err := c.LogsFrom(ctx, id, 1, head, true, got); done <- err }()
	select {
	case <-got.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the follow from the offset sent nothing")
	}
	ray.AddLog(sub, "step 3\n")
	end := at.Add(time.Second)
	up := *att
	up.RayStatus, up.EndTime = mvp.RaySucceeded, &end
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: end, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	ray.Set(sub, mvp.RaySucceeded)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow did not end with the attempt")
	}
	if got.String() != "step 2\nstep 3\n" {
		t.Errorf("followed from %d: %q, want %q", head, got.String(), "step 2\nstep 3\n")
	}
	b.Reset()
	if _, err := c.LogsFrom(ctx, id, 1, head+7, false, &b); err != nil || b.String() != "step 3\n" {
		t.Errorf("ended log from %d: %q, %v; want %q", head+7, b.String(), err, "step 3\n")
	}
	b.Reset()
	if _, err := c.LogsFrom(ctx, id, 1, 1<<20, false, &b); err != nil || b.Len() != 0 {
		t.Errorf("log from past its end: %q, %v; want nothing", b.String(), err)
	}
	for _, bad := range []string{"-1", "x", "", "1099511627777"} {
		resp, err := c.Do(ctx, "GET", "/api/v2/tasks/"+id+"/logs", map[string][]string{"offset": {bad}}, nil, "")
		var se *api.StatusError
		if err == nil {
			resp.Body.Close()
		}
		if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Detail.Message, "offset must be") {
			t.Errorf("offset=%q: %v; want 400 saying what an offset must be", bad, err)
		}
	}
}
