package raycompat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// PruneEvery is how often RunPrune looks for packages to delete.
const PruneEvery = time.Hour

// PrunePackages deletes the packages the door keeps that were last used longer than retention ago and that no
// task still to run (waiting, or with an attempt in flight) names, and returns how many it deleted and their
// bytes. A task that ended keeps nothing: a resubmit of it after its packages are pruned is submitted to Ray
// without them (Ray then refuses the job's runtime_env, unless it still holds the package itself), so the user
// submits the job again with Ray's client, which uploads them again.
func (d *Door) PrunePackages(ctx context.Context, retention time.Duration) (int, int64, error) {
	// The tasks in flight first: one that moves from the queue into flight between the two reads is missed by
	// both, but its submission has just used (touched) its packages; the other way round, a run requeued between
	// them would be missed with packages last used when it was submitted, perhaps longer ago than the retention.
	active, err := d.Store.Active(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	waiting, err := d.Store.Runnable(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	var door []*mvp.Task
	for _, t := range slices.Concat(active, waiting) {
		if info, _ := t.Workload.Info(); !info.RayDoor {
			continue
		}
		// The queue's tasks carry no spec: it is read for each.
		_, spec, err := d.Store.TaskSpec(ctx, t.ID)
		if mvp.ErrorCode(err) == mvp.CodeNotFound {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
		}
		door = append(door, &mvp.Task{ID: t.ID, Workload: t.Workload, SpecJSON: spec})
	}
	return d.Packages.Prune(d.Clock.Now().Add(-retention), PackagesInUse(door))
}

// RunPrune runs PrunePackages now and every PruneEvery until ctx ends, logging what it deleted and why it could
// not.
func (d *Door) RunPrune(ctx context.Context, retention time.Duration) {
	t := time.NewTicker(PruneEvery)
	defer t.Stop()
	for {
		n, bytes, err := d.PrunePackages(ctx, retention)
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			d.Logger.Warn("prune Ray packages; will try again", "dir", d.Packages.Dir, "err", err)
		case n > 0:
			d.Logger.Info("pruned Ray packages no task still to run names", "dir", d.Packages.Dir, "packages", n,
				"bytes", bytes, "unused_for", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
