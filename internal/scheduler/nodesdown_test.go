package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// A gang that fits only with GPU nodes that are down waits for them (nodes_down, naming them), not for ever
// (never_fits); one that would not fit even with them still never fits. Neither holds a reservation: there is no
// declared end to plan a node's return by.
func TestAGangThatNeedsANodeThatIsDownWaitsForIt(t *testing.T) {
	c := cluster(worker("n1", 4, 48))
	dead := mvp.Node{ID: "n2dead0123456789", Alive: false, IP: "10.0.0.2", Total: map[string]float64{}}
	c.Nodes = append(c.Nodes, dead)
	c.Down = []mvp.Node{{ID: dead.ID, IP: dead.IP, Total: map[string]float64{"GPU": 4, "CPU": 48, "worker_node": 100}}}
	two := task(mvp.WorkloadPPO, 2, 4, mvp.StateQueued)
	three := task(mvp.WorkloadPPO, 3, 4, mvp.StateQueued)
	small := task(mvp.WorkloadPPO, 1, 2, mvp.StateQueued)
	for _, pol := range []string{PolicyFIFO, PolicyEASY, DefaultPolicy} {
		acts := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{two, three, small}}, named(pol))
		w := waitOf(acts, two)
		if w == nil || w.Code() != CodeNodesDown || w.Never() || w.EstStart() != nil ||
			!strings.Contains(w.Reason, "1 of 1 alive GPU node(s) are that large, and 1 more that mvp saw alive are down now (node n2dead012345 at 10.0.0.2, 4 GPU)") {
			t.Errorf("%s: the 2 × 4 gang: %+v", pol, w)
		}
		if w := waitOf(acts, three); w == nil || w.Code() != CodeNeverFits || !w.Never() {
			t.Errorf("%s: the 3 × 4 gang: %+v", pol, w)
		}
		if !slices.Contains(summary(acts), "submit:"+small.ID) {
			t.Errorf("%s: the small task behind them did not start: %v", pol, summary(acts))
		}
		v := Explain(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{two, three, small}}, named(pol))
		if len(v.DownNodes) != 1 || v.DownNodes[0].NodeID != dead.ID || v.DownNodes[0].TotalGPUs != 4 || len(v.Reservations) != 0 {
			t.Errorf("%s: explained: down %+v, reservations %+v", pol, v.DownNodes, v.Reservations)
		}
		var codes []string
		for _, q := range v.Queue {
			codes = append(codes, string(q.Code))
		}
		if strings.Join(codes, " ") != "nodes_down never_fits" {
			t.Errorf("%s: queue codes %v", pol, codes)
		}
	}
	// Without the memory of the node, the same gang never fits.
	c.Down = nil
	if w := waitOf(Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{two}}, named(DefaultPolicy)), two); w == nil || w.Code() != CodeNeverFits {
		t.Errorf("no node down: %+v", w)
	}
}

// The queue lists its entries in position order: a task waiting for nodes that are down comes before one that
// never fits (positions), and is listed so, whatever their order in the queue.
func TestExplainListsNodesDownBeforeNeverFitsInPositionOrder(t *testing.T) {
	c := cluster(worker("n1", 4, 48))
	dead := mvp.Node{ID: "n2dead0123456789", Alive: false, IP: "10.0.0.2", Total: map[string]float64{}}
	c.Nodes = append(c.Nodes, dead)
	c.Down = []mvp.Node{{ID: dead.ID, IP: dead.IP, Total: map[string]float64{"GPU": 4, "CPU": 48, "worker_node": 100}}}
	three := task(mvp.WorkloadPPO, 3, 4, mvp.StateQueued) // queued first: never fits
	two := task(mvp.WorkloadPPO, 2, 4, mvp.StateQueued)   // nodes_down
	for _, pol := range []string{PolicyFIFO, PolicyEASY, DefaultPolicy} {
		v := Explain(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{three, two}}, named(pol))
		var got []string
		for _, q := range v.Queue {
			got = append(got, fmt.Sprintf("#%d %s", q.Position, q.Code))
		}
		if strings.Join(got, ", ") != "#1 nodes_down, #2 never_fits" {
			t.Errorf("%s: queue %v", pol, got)
		}
	}
}

// TestANeverFitsReasonSaysTheClusterHasTooFewNodes: a 4 × 4 gang on two 4-GPU workers was told "2 of 2 alive GPU
// node(s) are that large", which reads as if size were the problem; it is the number of nodes (found in a user
// walk-through). One with nodes too small still says how large they are.
func TestANeverFitsReasonSaysTheClusterHasTooFewNodes(t *testing.T) {
	c := cluster(worker("n1", 4, 48), worker("n2", 4, 48))
	many := task(mvp.WorkloadPPO, 4, 4, mvp.StateQueued)
	large := task(mvp.WorkloadPPO, 1, 8, mvp.StateQueued)
	acts := Decide(t0, Snapshot{Cluster: c, Queue: []*mvp.Task{many, large}}, named(DefaultPolicy))
	if w := waitOf(acts, many); w == nil || w.Code() != CodeNeverFits ||
		!strings.Contains(w.Reason, "needs 4 node(s) with 4 GPU and 12 CPU each; the cluster has 2 alive GPU node(s)") {
		t.Errorf("the 4 × 4 gang: %+v", w)
	}
	if w := waitOf(acts, large); w == nil || w.Code() != CodeNeverFits ||
		!strings.Contains(w.Reason, "0 of 2 alive GPU node(s) are that large (they have at most 4 GPU") {
		t.Errorf("the 1 × 8 task: %+v", w)
	}
}
