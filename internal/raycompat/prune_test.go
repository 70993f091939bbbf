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
	pkgD = "mvpwheel-0.1-py3-none-any.whl"
	pkgE = "_ray_pkg_1111111111111111.zip"
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

	n, bytes, err := p.Prune(context.Background(), cutoff, map[string]bool{pkgB: true})
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
	if _, _, err := p.Prune(context.Background(), now.Add(time.Hour), nil); err != nil {
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
			ok, err := p.Has(PackageProtocol, pkgA, nil)
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
		if n, _, err := p.Prune(context.Background(), now.Add(-24*time.Hour), nil); err != nil || n != 0 || !exists(filepath.Join(p.Dir, pkgA)) {
			t.Errorf("%s: a package just used was pruned (%d, %v)", name, n, err)
		}
	}
}

// The door's prune keeps the packages of its tasks still to run (waiting, being submitted, or in flight), read from
// a real store, and deletes those of ended tasks once unused for the retention; a jobspec task naming the same URI
// (not a door task) keeps nothing.
func TestTheDoorPrunesPackagesOfEndedTasksOnly(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Now().UTC()
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	for _, name := range []string{pkgA, pkgB, pkgC, pkgD, pkgE} {
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
		from := mvp.StateQueued
		path := map[mvp.State][]mvp.State{mvp.StateSubmitting: {mvp.StateSubmitting},
			mvp.StateRunning: {mvp.StateSubmitting, mvp.StateRunning}, mvp.StateCanceled: {mvp.StateCanceled}}
		for _, to := range path[state] {
			if err := db.Apply(ctx, mvp.Change{TaskID: id, From: from, To: to}); err != nil {
				t.Fatal(err)
			}
			from = to
		}
	}
	mk("mvp2-ray_job-20251223-143201-0001", mvp.WorkloadRayJob, mvp.StateQueued,
		`{"entrypoint":"x","runtime_env":{"working_dir":"gcs://`+pkgA+`"}}`)
	mk("mvp2-ray_job-20251223-143201-0002", mvp.WorkloadRayJob, mvp.StateCanceled,
		`{"entrypoint":"x","runtime_env":{"working_dir":"gcs://`+pkgB+`"}}`)
	mk("mvp2-ppo-20251223-143201-0003", mvp.WorkloadPPO, mvp.StateQueued,
		`{"runtime_env":{"working_dir":"gcs://`+pkgC+`"}}`)
	// Being submitted (its upload to Ray not made yet) and running: both keep theirs.
	mk("mvp2-ray_job-20251223-143201-0004", mvp.WorkloadRayJob, mvp.StateSubmitting,
		`{"entrypoint":"x","runtime_env":{"py_modules":["gcs://`+pkgD+`"]}}`)
	mk("mvp2-ray_job-20251223-143201-0005", mvp.WorkloadRayJob, mvp.StateRunning,
		`{"entrypoint":"x","runtime_env":{"working_dir":"gcs://`+pkgE+`"}}`)
	d := &Door{Store: db, Packages: p, Clock: mvp.SystemClock{}, Logger: slog.New(slog.DiscardHandler)}
	n, _, err := d.PrunePackages(ctx, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(p.Dir, pkgD)) || !exists(filepath.Join(p.Dir, pkgE)) {
		t.Errorf("the package of a task being submitted (%v) or running (%v) was pruned",
			exists(filepath.Join(p.Dir, pkgD)), exists(filepath.Join(p.Dir, pkgE)))
	}
	if n != 2 || !exists(filepath.Join(p.Dir, pkgA)) || exists(filepath.Join(p.Dir, pkgB)) || exists(filepath.Join(p.Dir, pkgC)) {
		t.Errorf("pruned %d; kept: queued door task's %v (want true), canceled one's %v (want false), jobspec task's %v (want false)",
			n, exists(filepath.Join(p.Dir, pkgA)), exists(filepath.Join(p.Dir, pkgB)), exists(filepath.Join(p.Dir, pkgC)))
	}
}

// A job can write on shared_root: with the packages' folder replaced by a symlink, Prune refuses it rather than
// delete old package-named files wherever the link points (a wheel in someone's folder, say).
func TestPruneDoesNotFollowASymlinkedFolder(t *testing.T) {
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, pkgD)
	if err := os.WriteFile(victim, []byte("a wheel of someone's"), 0o644); err != nil {
		t.Fatal(err)
	}
	backdate(t, victim, time.Now().Add(-48*time.Hour))
	dir := filepath.Join(t.TempDir(), "ray_packages")
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	p := Packages{Dir: dir, Guard: &sync.RWMutex{}}
	n, _, err := p.Prune(context.Background(), time.Now(), nil)
	if err == nil || n != 0 || !exists(victim) {
		t.Errorf("prune through a symlinked folder: %d deleted, err %v, the file there exists: %v; want it refused and the file kept",
			n, err, exists(victim))
	}
}
