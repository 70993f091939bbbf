package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/scheduler"
)

// TestQueueShowsDownNodesWhenNoGPUNodeIsAlive: `mvp nodes forget` says "mvp queue lists the nodes that are
// down"; when every GPU node is down (the cluster's only GPU node died) none is alive to list, and the down ones
// were not printed either: the ids to forget were nowhere in the table.
func TestQueueShowsDownNodesWhenNoGPUNodeIsAlive(t *testing.T) {
	q := &scheduler.QueueView{Policy: "xfchain", ClusterKnown: true,
		DownNodes: []scheduler.NodeDown{{NodeID: "9f3c0ffee", TotalGPUs: 8}},
		Queue: []scheduler.QueueEntry{{TaskID: "mvp2-ppo-20261203-210538-485f", Owner: "alice", Priority: 50,
			Position: 1, Code: "nodes_down", Reason: "would fit only with GPU nodes that are down"}}}
	var b bytes.Buffer
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "9f3c0ffee") {
		t.Errorf("mvp queue with every GPU node down does not name the down node:\n%s", b.String())
	}
}
