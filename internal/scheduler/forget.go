package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// ForgetNode forgets a GPU node that is down: the operator's word that it is not coming back (a node taken out of
// the cluster on purpose, which Ray keeps in its table as dead until its GCS restarts). mvp remembers the GPU
// nodes it saw alive, and a gang that fits only with nodes that are down waits as nodes_down for them, restarts of
// mvp included; once its node is forgotten, such a gang is never_fits (it still waits: nodes may join), and the
// most GPU nodes seen alive at once, which bounds the nodes waited for, is one less. A forgotten node that comes
// back is seen alive again as any new node. id is the node's id, or a prefix of it that names one node (mvp queue
// and the queue's down_nodes show the ids). It returns the node forgotten.
func (l *Loop) ForgetNode(ctx context.Context, id string) (mvp.Node, error) {
	if id == "" {
		return mvp.Node{}, mvp.Errorf(mvp.CodeInvalid, "node_id", "name the node to forget by its id (mvp queue lists the nodes that are down)")
	}
	view, err := l.Cluster.ReadCluster(ctx)
	if err != nil {
		return mvp.Node{}, fmt.Errorf("forget node %s: read the cluster, to tell whether it is down: %w", id, err)
	}
	l.mu.Lock()
	if !l.nodesLoaded {
		l.mu.Unlock()
		return mvp.Node{}, mvp.Errorf(mvp.CodeUnavailable, "", "mvp has not read the GPU nodes it knows yet (its first pass has not ended): try again in a moment")
	}
	var match []string
	for known := range l.nodesAlive {
		if known == id || strings.HasPrefix(known, id) {
			match = append(match, known)
		}
	}
	slices.Sort(match)
	switch {
	case len(match) == 0:
		l.mu.Unlock()
		return mvp.Node{}, mvp.Errorf(mvp.CodeNotFound, "node_id", "mvp knows no GPU node %q: it remembers the GPU nodes it "+
			"saw alive, and mvp queue lists those that are down", mvp.Clip(id, 80))
	case len(match) > 1 && !slices.Contains(match, id):
		l.mu.Unlock()
		return mvp.Node{}, mvp.Errorf(mvp.CodeInvalid, "node_id", "%q is the start of %d nodes' ids (%s): give more of it",
			mvp.Clip(id, 80), len(match), strings.Join(match, ", "))
	case len(match) > 1:
		match = []string{id}
	}
	node := l.nodesAlive[match[0]]
	for _, n := range view.Nodes {
		if n.ID == node.ID && n.Alive {
			l.mu.Unlock()
			return mvp.Node{}, mvp.Errorf(mvp.CodeConflict, "node_id", "node %s is alive in Ray: only a node that is down can be "+
				"forgotten (take it out of the cluster first: ray stop on that node)", node.ID)
		}
	}
	delete(l.nodesAlive, node.ID)
	l.mostGPUNodes = max(0, l.mostGPUNodes-1)
	l.knownDirty = true
	most := l.mostGPUNodes
	l.mu.Unlock()
	if err := l.saveKnownNodes(ctx, l.Clock.Now()); err != nil { // the next pass tries again
		return node, fmt.Errorf("node %s is forgotten by this mvp, but the record of it could not be written (a restart "+
			"before a pass records it would remember the node again): %w", node.ID, err)
	}
	l.Logger.Info("a GPU node that is down was forgotten", "node_id", node.ID, "ip", node.IP, "most_gpu_nodes", most)
	l.Wake()
	return node, nil
}
