package raycompat

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestTailOfACutLogIsNotClosedAsComplete: the job has ended; reading its log fails part way (Ray's copy
// cut short, 503). The door's logs answer aborts the response so Ray's client fails; the tail instead sends a
// normal close (1000), which Ray's client (sdk.py tail_job_logs: raises only on 1006) takes as the whole log.
func TestTailOfACutLogIsNotClosedAsComplete(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0901", "cut", mvp.StateFailed, &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed})
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		CopyLogFrom: func(_ context.Context, _ string, _ int, skip int64, w io.Writer) (int64, bool, error) {
			if skip > 0 {
				return 0, true, mvp.Errorf(mvp.CodeUnavailable, "", "Ray's log could not be read")
			}
			n, _ := io.WriteString(w, "epoch 1\n")
			return int64(n), true, mvp.Errorf(mvp.CodeUnavailable, "", "Ray's copy of the log was cut short")
		}}
	if _, st := tailToItsEnd(t, serveDoor(t, d), "cut"); st != -1 {
		t.Errorf("a log cut short ended the tail with close status %d (Ray's client takes it as the whole log); "+
			"want the connection dropped (1006), as the logs answer is aborted", st)
	}
}

// TestPutDoesNotWriteThroughASymlinkedFolder: Prune refuses a packages folder that a job replaced by a
// symlink (TestPruneDoesNotFollowASymlinkedFolder), but Put (MkdirAll, CreateTemp, Rename) writes through it:
// the upload lands, and replaces a file of that name, wherever the link points on mvp's host.
func TestPutDoesNotWriteThroughASymlinkedFolder(t *testing.T) {
	elsewhere := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ray_packages")
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	p := Packages{Dir: dir, Key: []byte("k"), Guard: &sync.RWMutex{}}
	err := p.Put(PackageProtocol, pkgD, []byte("PK\x03\x04 wheel"))
	if exists(filepath.Join(elsewhere, pkgD)) {
		t.Errorf("Put through a symlinked packages folder wrote %s (err %v); want it refused as Prune refuses it",
			filepath.Join(elsewhere, pkgD), err)
	}
}

// TestARebuiltWheelIsUploadedAgain: a wheel's package name is its file name (Ray: "already effectively
// content-addressed"), so a wheel rebuilt under the same version has the same name. Ray keeps it only while a job
// or its 600 s temporary reference holds it; the door says it keeps it for v2.ray.package_retention_s (a week)
// after the last check, and each check (Has) renews that: the client never uploads the rebuilt wheel, and every
// later job runs the old code. Here: uploaded an hour ago, no task names it; the client's check still says 200.
func TestARebuiltWheelIsUploadedAgain(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	put(t, p, pkgD, time.Now().Add(-time.Hour))  // v1 of mvpwheel-0.1, last used an hour ago
	ok, err := p.Has(PackageProtocol, pkgD, nil) // `ray job submit --runtime-env-json '{"py_modules":["dist/mvpwheel-0.1-...whl"]}'` with a rebuilt wheel
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Errorf("a wheel no task names, last used an hour ago (past Ray's 600 s reference), is said kept: the "+
			"client skips uploading the rebuilt %s and the job runs the old one", pkgD)
	}
}

// TestAnOldWheelATaskStillNamesIsKept: Ray keeps a package while a job holds it, so a wheel a waiting task names
// stays kept past WheelReference (that task runs what its user uploaded), and a zip, named by its content's hash,
// stays kept whatever its age.
func TestAnOldWheelATaskStillNamesIsKept(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	put(t, p, pkgD, time.Now().Add(-time.Hour))
	asked := 0
	ok, err := p.Has(PackageProtocol, pkgD, func() (bool, error) { asked++; return true, nil })
	if !ok || err != nil || asked != 1 {
		t.Errorf("a wheel a waiting task names: kept %v, err %v, asked %d; want kept", ok, err, asked)
	}
	// A check is not a use (TestACheckDoesNotRenewAWheelsReference): asked again, and no longer named, not kept.
	if ok, err := p.Has(PackageProtocol, pkgD, func() (bool, error) { asked++; return false, nil }); ok || err != nil || asked != 2 {
		t.Errorf("a wheel checked just now that no task names any more: kept %v, err %v, asked %d; want not kept, asked again", ok, err, asked)
	}
	put(t, p, pkgA, time.Now().Add(-time.Hour))
	if ok, err := p.Has(PackageProtocol, pkgA, func() (bool, error) { return false, nil }); !ok || err != nil {
		t.Errorf("a working_dir package (named by its hash) an hour old: kept %v, err %v; want kept", ok, err)
	}
}

// TestACheckDoesNotRenewAWheelsReference: Ray's 600 s reference to an uploaded package counts from the upload, and
// its client checks before every submission. When each check renewed the door's, a user who submits more often
// than every 10 minutes never had a rebuilt wheel of the same version uploaded again: every job ran the old code.
func TestACheckDoesNotRenewAWheelsReference(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	uploaded := time.Now().Add(-8 * time.Minute).Truncate(time.Second)
	put(t, p, pkgD, uploaded)
	if ok, err := p.Has(PackageProtocol, pkgD, nil); !ok || err != nil {
		t.Fatalf("a wheel uploaded 8 minutes ago: kept %v, err %v; want kept (within Ray's 600 s)", ok, err)
	}
	info, err := os.Stat(filepath.Join(p.Dir, pkgD))
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime().Equal(uploaded) {
		t.Errorf("a check moved the wheel's last use from %s to %s: its 600 s would count from each check, and "+
			"a rebuilt wheel submitted every few minutes is never uploaded again", uploaded, info.ModTime())
	}
	// Nor does a submission that names it, at the door (Used) or to Ray (Get): while its task lives, Has asks named,
	// as Ray keeps a job's packages.
	p.Used([]string{PackageProtocol + "://" + pkgD})
	if info, err = os.Stat(filepath.Join(p.Dir, pkgD)); err != nil || !info.ModTime().Equal(uploaded) {
		t.Errorf("a submission at the door naming the wheel moved its last use from %s to %v (err %v); want it kept "+
			"as uploaded", uploaded, info.ModTime(), err)
	}
	if _, ok, err := p.Get(PackageProtocol + "://" + pkgD); !ok || err != nil {
		t.Fatalf("Get of a kept wheel: ok %v, err %v", ok, err)
	}
	if info, err = os.Stat(filepath.Join(p.Dir, pkgD)); err != nil || !info.ModTime().Equal(uploaded) {
		t.Errorf("a submission naming the wheel moved its last use from %s to %v (err %v); want it kept as uploaded",
			uploaded, info.ModTime(), err)
	}
}

// TestTailOfAJobThatNeverHadALogEndsNormally: an attempt Ray refused (its runtime_env could not be set up, no
// driver ran) has no log, and the logs answer is "" as Ray's is. The tail dropped the connection (1006) as if the
// log had been cut: Ray's client (`ray job logs --follow`) then raised instead of ending as it does against Ray.
func TestTailOfAJobThatNeverHadALogEndsNormally(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0902", "nolog", mvp.StateFailed, &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed})
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		CopyLogFrom: func(context.Context, string, int, int64, io.Writer) (int64, bool, error) {
			return 0, true, mvp.Errorf(mvp.CodeNotFound, "attempt", "no log is kept for attempt 1")
		}}
	frames, st := tailToItsEnd(t, serveDoor(t, d), "nolog")
	if st != websocket.StatusNormalClosure || len(frames) > 0 {
		t.Errorf("the tail of a job that never had a log sent %q and ended with close status %d; want nothing and "+
			"1000, the end of an empty log, as the logs answer is \"\"", frames, st)
	}
}

// TestTailOfALogLostPartWayIsNotClosedAsComplete: a normal close for "no log" is right only when none was sent.
// A tail that sent lines and then finds no log kept (Ray lost the job, head restarted, before mvp kept its copy)
// has lost the rest: dropped, as for a log cut short, so that Ray's client does not take the lines as the whole.
func TestTailOfALogLostPartWayIsNotClosedAsComplete(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0903", "lost", mvp.StateFailed, &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed})
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		CopyLogFrom: func(_ context.Context, _ string, _ int, skip int64, w io.Writer) (int64, bool, error) {
			if skip == 0 {
				n, _ := io.WriteString(w, "epoch 1\n")
				return int64(n), false, nil // Ray's copy, the job not seen ended yet
			}
			return 0, true, mvp.Errorf(mvp.CodeNotFound, "attempt", "no log is kept for attempt 1")
		}}
	if _, st := tailToItsEnd(t, serveDoor(t, d), "lost"); st != -1 {
		t.Errorf("a log lost after its first lines ended the tail with close status %d (Ray's client takes it "+
			"as the whole log); want the connection dropped (1006)", st)
	}
}

// TestAWheelNearItsReferencesEndIsUploadedAgain: a check no longer renews a wheel, and Prune may delete one
// unused for package_retention_s, whose least is Ray's 600 s. A wheel said kept at 599 s and named by a submission
// a moment later could be pruned before the door's task names it, and the job sent to Ray without it. A wheel is
// said kept only until WheelMargin before its 600 s end: past that the client uploads it again.
func TestAWheelNearItsReferencesEndIsUploadedAgain(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}}
	put(t, p, pkgD, time.Now().Add(-WheelReference+WheelMargin/2))
	if ok, err := p.Has(PackageProtocol, pkgD, nil); ok || err != nil {
		t.Errorf("a wheel within %s of its 600 s end, named by no task: kept %v, err %v; want it uploaded again", WheelMargin/2, ok, err)
	}
}

// TestTailOfALostLogIsNotClosedAsComplete: the usual shape of a log lost with its Ray job is the copy mvp made while
// it ran (every v2.ray.log_copy_s), shorter than what the tail already sent from Ray's stream: the read from there
// gives nothing more and says the rest is lost (ErrLogLost). The tail closed normally, and Ray's client took the
// lines it had as the whole log. The logs answer still gives the copy, as before.
func TestTailOfALostLogIsNotClosedAsComplete(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0904", "lostcopy", mvp.StateFailed, &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed})
	d := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		CopyLogFrom: func(_ context.Context, _ string, _ int, skip int64, w io.Writer) (int64, bool, error) {
			if skip == 0 {
				n, _ := io.WriteString(w, "epoch 1\n")
				return int64(n), false, nil // as Ray's stream gave it while the job ran
			}
			return 0, true, fmt.Errorf("%w: attempt 1 ended and Ray no longer has its job", ErrLogLost)
		}}
	if _, st := tailToItsEnd(t, serveDoor(t, d), "lostcopy"); st != -1 {
		t.Errorf("a log lost with its Ray job ended the tail with close status %d; want the connection dropped (1006)", st)
	}
	// A door of its own: the first one's handler may still be reading its CopyLogFrom.
	d2 := &Door{Store: db, Logger: slog.New(slog.DiscardHandler), LogPoll: 10 * time.Millisecond,
		CopyLogFrom: func(_ context.Context, _ string, _ int, _ int64, w io.Writer) (int64, bool, error) {
			n, _ := io.WriteString(w, "epoch 1\n")
			return int64(n), true, fmt.Errorf("%w: the rest went with the job", ErrLogLost)
		}}
	resp, err := http.Get(serveDoor(t, d2).URL + "/api/jobs/lostcopy/logs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "epoch 1") {
		t.Errorf("the logs answer of a lost log: %d %s; want 200 with the copy", resp.StatusCode, b)
	}
}

// TestATailWaitingOnALostLogDoesNotLogEachPoll: a task whose attempt's log was lost with its Ray job waits to run
// again; its tail reads the ended attempt each poll meanwhile and logged "log not readable yet" every second, for
// each open tail, for as long as the task waited.
func TestATailWaitingOnALostLogDoesNotLogEachPoll(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0905", "waiting", mvp.StatePendingResources, &mvp.Attempt{No: 1, RayStatus: mvp.RayFailed})
	var mu sync.Mutex
	var logged strings.Builder
	d := &Door{Store: db, LogPoll: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logged.Write(p)
		}), nil)),
		CopyLogFrom: func(context.Context, string, int, int64, io.Writer) (int64, bool, error) { return 0, true, nil },
		FollowLogFrom: func(context.Context, string, int, int64, io.Writer) (int64, bool, bool, error) {
			return 0, true, false, fmt.Errorf("%w: attempt 1 ended and Ray no longer has its job", ErrLogLost)
		}}
	srv := serveDoor(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/jobs/waiting/logs/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, _, _ = c.Read(ctx) // nothing comes; the task waits (ctx ends the read)
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logged.String(), "not readable"); n > 1 {
		t.Errorf("a tail waiting on a lost log logged %d times in 300 ms:\n%.600s", n, logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
