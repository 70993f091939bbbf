package scheduler

import (
	"context"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// DefaultWatchEvery is how often a ClusterWatch reads the cluster while it is armed.
const DefaultWatchEvery = 100 * time.Millisecond

// ClusterWatch wakes the loop the moment resources free up while a task waits and an attempt is live: a Ray job
// that ends frees its resources (its placement groups go, its driver's entrypoint resources come back), so the
// next task is admitted at once instead of at the next tick. It reads the live probe, which reads Ray's GCS and
// not the job server, and only while Armed says there is something to wait for. Only a reading with more free
// (see Freed) wakes the loop: a job starting takes resources and wakes nothing, so that the extra passes, each of
// which asks Ray's job server about the live attempts as a tick does, stay about one per job that ends. A reading
// that fails (or comes from anything but the live probe) is ignored.
type ClusterWatch struct {
	// Read is one live reading of the cluster (the probe's, without the dashboard's fallback).
	Read func(ctx context.Context) (*mvp.ClusterView, error)
	// Armed reports whether a change could let the loop do something (Loop.Armed).
	Armed func() bool
	// Wake asks the loop for a pass (Loop.Wake).
	Wake func()
	// Every is the period of the readings while armed; 0 means DefaultWatchEvery.
	Every time.Duration
}

// Run reads the cluster every Every while armed and wakes the loop when a reading shows resources freed since the
// previous one, until ctx ends.
func (w *ClusterWatch) Run(ctx context.Context) {
	every := w.Every
	if every <= 0 {
		every = DefaultWatchEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last *mvp.ClusterView
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.Armed() {
			last = nil // the next armed reading is a baseline, not a change
			continue
		}
		v, err := w.Read(ctx)
		if err != nil || v == nil || v.Source != "probe" {
			continue
		}
		if last != nil && Freed(last, v) {
			w.Wake()
		}
		last = v
	}
}

// Freed reports whether cur shows resources freed since prev: a node alive in cur that was not (or was not there)
// in prev, or more of some resource available on an alive node.
func Freed(prev, cur *mvp.ClusterView) bool {
	before := make(map[string]*mvp.Node, len(prev.Nodes))
	for i := range prev.Nodes {
		before[prev.Nodes[i].ID] = &prev.Nodes[i]
	}
	for _, n := range cur.Nodes {
		if !n.Alive {
			continue
		}
		p := before[n.ID]
		if p == nil || !p.Alive {
			return true
		}
		for res, avail := range n.Available {
			if avail > p.Available[res] {
				return true
			}
		}
	}
	return false
}
