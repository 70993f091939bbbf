package raycompat

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

const (
	pkgA = "_ray_pkg_0123456789abcdef.zip"
	pkgB = "_ray_pkg_fedcba9876543210.zip"
	pkgC = "_ray_pkg_00112233445566778899aabbccddeeff00112233.tar.gz"
)

// put keeps a package and sets its last use to at.
func put(t *testing.T, p Packages, name string, at time.Time) {
	t.Helper()
	if err := p.Put(PackageProtocol, name, []byte("zip of "+name)); err != nil {
		t.Fatal(err)
	}
	backdate(t, filepath.Join(p.Dir, name), at)
}

func backdate(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Prune deletes what was last used before the cutoff and no task still to run names; it keeps what is in use or
// recent, and anything that is not a package's file or an upload's; it deletes a symlink in a package's place
// without following it, and an upload's file left behind.
func TestPruneDeletesOnlyPackagesUnusedAndNamedByNoTask(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	now := time.Now()
	old, cutoff := now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	put(t, p, pkgA, old) // unused: deleted
	put(t, p, pkgB, old) // named by a task still to run: kept
	put(t, p, pkgC, now) // used recently: kept
	other := filepath.Join(p.Dir, "notes.txt")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	backdate(t, other, old)
	upload := filepath.Join(p.Dir, uploadPrefix+"123")
	if err := os.WriteFile(upload, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	backdate(t, upload, old)
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("mvp's host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(p.Dir, "_ray_pkg_aaaaaaaaaaaaaaaa.zip")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(p.Dir, "_ray_pkg_bbbbbbbbbbbbbbbb.zip")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	backdate(t, dir, old)
	// A symlink's own time: Lchtimes is not in os; a link made now is recent, so it is checked with a later cutoff.
	fiA, _ := os.Stat(filepath.Join(p.Dir, pkgA))

	n, bytes, err := p.Prune(cutoff, map[string]bool{pkgB: true})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || bytes != fiA.Size() {
		t.Errorf("pruned %d packages, %d bytes; want 1 (%s), %d bytes", n, bytes, pkgA, fiA.Size())
	}
	for path, want := range map[string]bool{filepath.Join(p.Dir, pkgA): false, filepath.Join(p.Dir, pkgB): true,
		filepath.Join(p.Dir, pkgC): true, other: true, upload: false, link: true, dir: true, outside: true} {
		if exists(path) != want {
			t.Errorf("%s: exists %v after the prune, want %v", filepath.Base(path), !want, want)
		}
	}
	if _, _, err := p.Prune(now.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if exists(link) || !exists(outside) || !exists(dir) {
		t.Errorf("a symlink in a package's place must be deleted, never followed (link %v, its target %v); a folder kept (%v)",
			exists(link), exists(outside), exists(dir))
	}
}

// A package a client was just told is kept (Has), that mvp just uploaded to Ray for a submission (Get), or that a
// submission just named (Used) counts as used now, however long it lay unused before.
func TestAPackageJustUsedIsNotPruned(t *testing.T) {
	now := time.Now()
	for name, use := range map[string]func(p Packages) error{
		"Has": func(p Packages) error {
			ok, err := p.Has(PackageProtocol, pkgA)
			if err == nil && !ok {
				err = errors.New("Has says the package is not kept")
			}
			return err
		},
		"Get": func(p Packages) error {
			_, ok, err := p.Get(PackageProtocol + "://" + pkgA)
			if err == nil && !ok {
				err = errors.New("Get says the package is not kept")
			}
			return err
		},
		"Used": func(p Packages) error { p.Used([]string{PackageProtocol + "://" + pkgA}); return nil },
	} {
		p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
		put(t, p, pkgA, now.Add(-48*time.Hour))
		if err := use(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n, _, err := p.Prune(now.Add(-24*time.Hour), nil); err != nil || n != 0 || !exists(filepath.Join(p.Dir, pkgA)) {
			t.Errorf("%s: a package just used was pruned (%d, %v)", name, n, err)
		}
	}
}

// The door's prune keeps the packages of its tasks still to run (waiting, or with an attempt in flight), read from
// a real store, and deletes those of ended tasks once unused for the retention; a jobspec task naming the same URI
// (not a door task) keeps nothing.
func TestTheDoorPrunesPackagesOfEndedTasksOnly(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	for _, name := range []string{pkgA, pkgB, pkgC} {
		put(t, p, name, now.Add(-30*24*time.Hour))
	}
	mk := func(id string, w mvp.Workload, state mvp.State, spec string) {
		t.Helper()
		task := &mvp.Task{ID: id, Workload: w, State: mvp.StateQueued, SubmissionID: id, Driver: map[string]float64{},
			SpecJSON: []byte(spec), CreatedAt: now, UpdatedAt: now}
		if w != mvp.WorkloadRayJob {
			task.NNodes, task.GPUsPerNode = 1, 1
		}
		if err := db.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		if state != mvp.StateQueued {
			if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateQueued, To: state}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("mvp2-ray_job-20251223-143201-0001", mvp.WorkloadRayJob, mvp.StateQueued,
		`{"entrypoint":"x","runtime_env":{"working_dir":"gcs://`+pkgA+`"}}`)
	mk("mvp2-ray_job-20251223-143201-0002", mvp.WorkloadRayJob, mvp.StateCanceled,
		`{"entrypoint":"x","runtime_env":{"working_dir":"gcs://`+pkgB+`"}}`)
	mk("mvp2-ppo-20251223-143201-0003", mvp.WorkloadPPO, mvp.StateQueued,
		`{"runtime_env":{"working_dir":"gcs://`+pkgC+`"}}`)
	d := &Door{Store: db, Packages: p, Clock: mvp.SystemClock{}, Logger: slog.New(slog.DiscardHandler)}
	n, _, err := d.PrunePackages(ctx, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || !exists(filepath.Join(p.Dir, pkgA)) || exists(filepath.Join(p.Dir, pkgB)) || exists(filepath.Join(p.Dir, pkgC)) {
		t.Errorf("pruned %d; kept: queued door task's %v (want true), canceled one's %v (want false), jobspec task's %v (want false)",
			n, exists(filepath.Join(p.Dir, pkgA)), exists(filepath.Join(p.Dir, pkgB)), exists(filepath.Join(p.Dir, pkgC)))
	}
}
