package scheduler_test

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// After a GPU node dies, a gang that needs it waits for it with nodes_down, naming the node, not as a gang that
// can never fit; once a node of that size is alive again (Ray gives a restarted node a new id, and lists the old
// one as dead, with no resources), it starts. A restarted mvp knows the node from the record its database keeps.
func TestLoopAGangWaitsForANodeThatDied(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.tick() // the loop sees both alive

	h.view.Nodes[1] = mvp.Node{ID: "w2", Alive: false, IP: "10.0.0.2", Total: map[string]float64{}, Available: map[string]float64{}}
	gang := h.gangOf(2, 4)
	h.tick()
	got := h.get(gang.ID)
	if got.State != mvp.StatePendingResources || !strings.Contains(got.PendingReason, "waiting for GPU nodes that are down") || !strings.Contains(got.PendingReason, "node w2 at 10.0.0.2, 4 GPU") {
		t.Fatalf("the gang after w2 died: %s %v", got.State, got.PendingReason)
	}
	if why, never := h.loop.NeverFits(gang); !never || !strings.Contains(why, "down") {
		t.Errorf("NeverFits for a submit's warning: %q %v", why, never)
	}
	snap, err := h.loop.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Cluster.Down) != 1 || snap.Cluster.Down[0].ID != "w2" || snap.Cluster.Down[0].Total["GPU"] != 4 {
		t.Errorf("a reader's snapshot: down %+v", snap.Cluster.Down)
	}

	// A restarted mvp (a new loop on the same database) knows w2 from the earlier process's record: the gang still
	// waits for it. It read "can never fit", as for a gang larger than the cluster.
	fresh := h.newLoop()
	h.loop = fresh
	h.tick()
	if got := h.get(gang.ID); !strings.Contains(got.PendingReason, "waiting for GPU nodes that are down") ||
		!strings.Contains(got.PendingReason, "node w2 at 10.0.0.2, 4 GPU") {
		t.Errorf("after a restart: %v", got.PendingReason)
	}
	if why, never := h.loop.NeverFits(gang); !never || !strings.Contains(why, "down") {
		t.Errorf("NeverFits after a restart: %q %v", why, never)
	}

	// w2 comes back under a new id: the gang starts.
	h.view.Nodes = append(h.view.Nodes, worker4("w2-again"))
	h.tick()
	if got := h.get(gang.ID); got.State != mvp.StateSubmitting && got.State != mvp.StateSubmitted {
		t.Fatalf("once a node is back: %s %v", got.State, got.PendingReason)
	}
}

// A node that rejoined under a new id leaves its old entry dead in Ray's table: with as many GPU nodes alive as
// ever, nothing is down, and a gang larger than the cluster never fits.
func TestLoopANodeBackUnderANewIDIsNotDown(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes = []mvp.Node{worker4("w1"), worker4("w2")}
	h.tick()
	h.view.Nodes[1] = mvp.Node{ID: "w2", Alive: false, Total: map[string]float64{}, Available: map[string]float64{}}
	h.tick()
	h.view.Nodes = append(h.view.Nodes, worker4("w3"))
	gang := h.gangOf(3, 4)
	h.tick()
	if got := h.get(gang.ID); !strings.HasPrefix(got.PendingReason, "can never fit") {
		t.Errorf("a 3-node gang on 2 alive nodes, one dead entry left by a restart: %v", got.PendingReason)
	}
}

// Two GPU nodes die and one comes back under a new id, at its old address: the node that is down is the other
// one, whatever Ray's order of its table. Counted as down, the node that came back made an 8 GPU × 2 gang wait
// for it (nodes_down, naming it) on a cluster whose only node down has 4 GPUs: it can never fit.
func TestLoopANodeBackAtItsAddressIsNotTheOneDown(t *testing.T) {
	h := newHarness(t)
	big := func(id string) mvp.Node {
		n := worker4(id)
		n.Total = map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100}
		n.Available = map[string]float64{"GPU": 8, "CPU": 96, "worker_node": 100}
		n.IP = "10.0.0.1"
		return n
	}
	small := worker4("w2")
	small.IP = "10.0.0.2"
	h.view.Nodes = []mvp.Node{small, big("w1")}
	h.tick()
	dead := func(id, ip string) mvp.Node {
		return mvp.Node{ID: id, Alive: false, IP: ip, Total: map[string]float64{}, Available: map[string]float64{}}
	}
	h.view.Nodes = []mvp.Node{dead("w2", "10.0.0.2"), dead("w1", "10.0.0.1"), big("w1-again")}
	gang := h.gangOf(2, 8)
	h.tick()
	if got := h.get(gang.ID); !strings.HasPrefix(got.PendingReason, "can never fit") {
		t.Errorf("an 8 GPU × 2 gang with only a 4 GPU node down: %v", got.PendingReason)
	}
	four := h.gangOf(2, 4)
	h.tick()
	if got := h.get(four.ID); got.State != mvp.StatePendingResources || !strings.Contains(got.PendingReason, "node w2 at 10.0.0.2, 4 GPU") {
		t.Errorf("a 4 GPU × 2 gang: %s %v", got.State, got.PendingReason)
	}
}
