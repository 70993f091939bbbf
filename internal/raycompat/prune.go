package raycompat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// PruneEvery is how often RunPrune looks for packages to delete.
const PruneEvery = time.Hour

// PrunePackages deletes the packages the door keeps that were last used longer than retention ago and that no
// task still to run (waiting, being submitted, or in flight) names, and returns how many it deleted and their
// bytes. A task that ended keeps nothing: a resubmit of it after its packages are pruned is submitted to Ray
// without them (Ray then refuses the job's runtime_env, unless it still holds the package itself), so the user
// submits the job again with Ray's client, which uploads them again.
func (d *Door) PrunePackages(ctx context.Context, retention time.Duration) (int, int64, error) {
	inUse, err := d.packagesInUse(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	return d.Packages.Prune(ctx, d.Clock.Now().Add(-retention), inUse)
}

// packagesInUse is the names of the packages that the Ray-door tasks still to run (waiting, being submitted, in
// flight) name.
func (d *Door) packagesInUse(ctx context.Context) (map[string]bool, error) {
	var specs []json.RawMessage
	for _, w := range mvp.WorkloadTable {
		if !w.RayDoor {
			continue
		}
		s, err := d.Store.UnendedSpecs(ctx, w.Name)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	return PackagesInUse(specs), nil
}

// RunPrune runs PrunePackages now and every PruneEvery until ctx ends, logging what it deleted and why it could
// not.
func (d *Door) RunPrune(ctx context.Context, retention time.Duration) {
	t := time.NewTicker(PruneEvery)
	defer t.Stop()
	for {
		n, bytes, err := d.PrunePackages(ctx, retention)
		if n > 0 {
			d.Logger.Info("pruned Ray packages no task still to run names", "dir", d.Packages.Dir, "packages", n,
				"bytes", bytes, "unused_for", retention.String())
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			d.Logger.Warn("prune Ray packages; will try again", "dir", d.Packages.Dir, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
