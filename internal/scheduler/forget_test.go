package scheduler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestAForgottenNodeIsNotWaitedFor: mvp remembers the GPU nodes it saw alive, so a gang that fits only with one
// that is down waits for it (nodes_down), restarts of mvp included. A node taken out of the cluster on purpose was
// waited for as long as Ray's table kept it (until its GCS restarts), with no way for the operator to say it is not
// coming back. ForgetNode forgets it (the gang is never_fits, and still waits), for restarts of mvp too; it
// refuses a node that is alive, an unknown id, and a prefix of several; a forgotten node that comes back is used.
func TestAForgottenNodeIsNotWaitedFor(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.view.Nodes = []mvp.Node{worker4("w1-aaaa"), worker4("w2-bbbb")}
	h.tick() // both seen alive
	h.view.Nodes[1].Alive, h.view.Nodes[1].Available = false, map[string]float64{}
	gang := h.gangOf(2, 4)
	h.tick()
	code := func() scheduler.WaitCode {
		t.Helper()
		snap, err := h.loop.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range scheduler.Explain(h.clock.t, snap, h.loop.Policy).Queue {
			if e.TaskID == gang.ID {
				return e.Code
			}
		}
		return ""
	}
	if c, got := code(), h.get(gang.ID); c != scheduler.CodeNodesDown || !strings.Contains(got.PendingReason, "down now") {
		t.Fatalf("the gang with a node down: %s, %s %q", c, got.State, got.PendingReason)
	}
	for id, want := range map[string]string{"w1-aaaa": mvp.CodeConflict, "w9": mvp.CodeNotFound, "w": mvp.CodeInvalid, "": mvp.CodeInvalid} {
		if _, err := h.loop.ForgetNode(ctx, id); mvp.ErrorCode(err) != want {
			t.Errorf("forget %q: %v; want %s", id, err, want)
		}
	}
	n, err := h.loop.ForgetNode(ctx, "w2")
	if err != nil || n.ID != "w2-bbbb" || n.Total["GPU"] != 4 {
		t.Fatalf("forget the dead node by a prefix of its id: %+v, %v", n, err)
	}
	h.tick()
	if c, got := code(), h.get(gang.ID); c != scheduler.CodeNeverFits || got.State != mvp.StatePendingResources ||
		!strings.Contains(got.PendingReason, "can never fit") {
		t.Errorf("the gang once the node is forgotten: %s, %s %q", c, got.State, got.PendingReason)
	}
	if _, err := h.loop.ForgetNode(ctx, "w2-bbbb"); mvp.ErrorCode(err) != mvp.CodeNotFound {
		t.Errorf("forget it again: %v; want not found", err)
	}
	h.loop = h.newLoop() // a restart of mvp does not remember it either
	h.tick()
	if c := code(); c != scheduler.CodeNeverFits {
		t.Errorf("the gang after a restart of mvp: %s", c)
	}
	h.view.Nodes[1].Alive, h.view.Nodes[1].Available = true, worker4("x").Available // it comes back
	h.tick()
	if got := h.get(gang.ID); got.State != mvp.StateSubmitted {
		t.Errorf("the gang once the forgotten node is back: %s %q", got.State, got.PendingReason)
	}
}
