package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// DefaultWatchEvery is how often a ClusterWatch reads the cluster while it is armed.
const DefaultWatchEvery = 100 * time.Millisecond

// ClusterWatch wakes the loop the moment the cluster changes while a task waits and an attempt is live: a Ray job
// that ends frees its resources (its placement groups go, its driver's entrypoint resources come back), so the
// next task is admitted at once instead of at the next tick. It reads the live probe, which reads Ray's GCS and
// not the job server, and only while Armed says there is something to wait for; a change costs one extra pass of
// the loop. A reading that fails (or comes from anything but the live probe) is ignored.
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

// Run reads the cluster every Every while armed and wakes the loop when the reading differs from the previous
// one, until ctx ends.
func (w *ClusterWatch) Run(ctx context.Context) {
	every := w.Every
	if every <= 0 {
		every = DefaultWatchEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.Armed() {
			last = "" // the next armed reading is a baseline, not a change
			continue
		}
		v, err := w.Read(ctx)
		if err != nil || v == nil || v.Source != "probe" {
			continue
		}
		fp := Fingerprint(v)
		if last != "" && fp != last {
			w.Wake()
		}
		last = fp
	}
}

// Fingerprint is what a ClusterWatch compares between readings: every node's liveness and availability and every
// placement group's state, in a fixed order; the reading's time is left out.
func Fingerprint(v *mvp.ClusterView) string {
	var b strings.Builder
	nodes := slices.Clone(v.Nodes)
	slices.SortFunc(nodes, func(a, c mvp.Node) int { return strings.Compare(a.ID, c.ID) })
	for _, n := range nodes {
		fmt.Fprintf(&b, "n %s %t", n.ID, n.Alive)
		keys := make([]string, 0, len(n.Available))
		for k := range n.Available {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%g", k, n.Available[k])
		}
		b.WriteByte('\n')
	}
	groups := make([]string, 0, len(v.Groups))
	for _, g := range v.Groups {
		groups = append(groups, "g "+g.ID+" "+g.State+" "+g.SchedulingState)
	}
	slices.Sort(groups)
	b.WriteString(strings.Join(groups, "\n"))
	return b.String()
}
