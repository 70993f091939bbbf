package service_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/raycompat"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/taskfs"
)

// TestEveryWorkloadSubmitGetBuild walks every workload of mvp.WorkloadTable through the running service: submit
// over HTTP, get it back, and see the scheduler build its Ray submission (the table's module, the task's gang)
// and send it to Ray.
func TestEveryWorkloadSubmitGetBuild(t *testing.T) {
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Ray: ray, Cluster: servicetest.OneNode(len(mvp.WorkloadTable))})
	c := m.Client()
	ctx := context.Background()
	ids := map[string]mvp.WorkloadInfo{}
	for _, info := range mvp.WorkloadTable {
		if info.RayDoor {
			continue // made through the Ray Jobs door, not a jobspec: internal/raycompat's tests walk it
		}
		spec := fmt.Sprintf("workload: %s\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n", info.Name)
		raw, err := c.Submit(ctx, []byte(spec), false)
		if err != nil {
			t.Fatalf("submit %s: %v", info.Name, err)
		}
		var sub mvp.Task
		if err := json.Unmarshal(raw, &sub); err != nil {
			t.Fatal(err)
		}
		got, _, err := c.Get(ctx, sub.ID)
		if err != nil {
			t.Fatalf("get %s: %v", sub.ID, err)
		}
		if got.Workload != info.Name || got.GPUs() != 1 || !taskfs.TaskIDPattern.MatchString(got.ID) ||
			!strings.HasPrefix(got.ID, "mvp2-"+string(info.Name)+"-") {
			t.Errorf("%s: got %+v", info.Name, got)
		}
		ids[got.ID] = info
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(ray.Submissions()) < len(ids) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	subs := ray.Submissions()
	if len(subs) != len(ids) {
		t.Fatalf("%d of %d tasks reached Ray", len(subs), len(ids))
	}
	for _, s := range subs {
		info := ids[s.Metadata["task_id"]]
		if info.Name == "" || s.Metadata["workload"] != string(info.Name) || s.SubmissionID != s.Metadata["task_id"]+"--a01" ||
			!strings.HasPrefix(s.Entrypoint, "exec python3 -m "+info.Module+" ") ||
			!strings.Contains(s.Entrypoint, "trainer.n_gpus_per_node=1") {
			t.Errorf("submission of %s (%s): %+v", s.Metadata["task_id"], info.Name, s)
		}
	}
}

// TestOpenRunClose: Open prints where the API listens, a generated token (and how to keep it across a restart: a
// user walk-through's `mvp logs -f` lost its token to a `make run` restart) and where the metrics are, Run serves until its context ends
// and returns nil, and Close closes the database.
func TestOpenRunClose(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Auth.TokenEnv = "MVP_SERVICE_TEST_TOKEN"
	t.Setenv("MVP_SERVICE_TEST_TOKEN", "")
	var out servicetest.Buffer
	m := &service.Main{Config: cfg, DevGenerateToken: true, Stdout: &out, ShutdownGrace: time.Second,
		Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(4)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^mvp: API listening on (http://127\.0\.0\.1:\d+)\nmvp: web page at http://127\.0\.0\.1:\d+/ui \(log in with the API token\)\nmvp: generated API token \(shown once\): ([0-9a-f]{48})\n` +
		`mvp: a restart without MVP_SERVICE_TEST_TOKEN set generates another, and clients holding this one \(mvp logs -f among them\) get 403: to keep it, start mvp serve again with MVP_SERVICE_TEST_TOKEN set to it\n` +
		`mvp: Prometheus metrics at (http://127\.0\.0\.1:\d+)/metrics \(with the API token; see specs/metrics\.md\)\n$`)
	g := want.FindStringSubmatch(out.String())
	if g == nil || g[1] != m.URL() || g[2] != m.APIToken() || g[3] != m.URL() {
		t.Fatalf("stdout %q; url %s", out.String(), m.URL())
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	if _, _, err := m.Client().List(ctx, "", "", 0, ""); err != nil {
		t.Fatalf("list while running: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if _, _, err := m.Client().List(context.Background(), "", "", 0, ""); err == nil {
		t.Error("the API still answers after Run returned")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := m.Store().GetTask(context.Background(), "mvp2-ppo-20251223-143201-0000"); err == nil || errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("the database is still open after Close: %v", err)
	}
}

// TestOpenFailsCleanly: a port in use fails Open with the address, and leaves nothing open behind it.
func TestOpenFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := servicetest.Config(t)
	cfg.V2.API.Port = ln.Addr().(*net.TCPAddr).Port
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	err = m.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("open on a port in use: %v", err)
	}
	if m.Store() == nil {
		t.Fatal("the database was never opened")
	}
	if _, err := m.Store().GetTask(context.Background(), "mvp2-ppo-20251223-143201-0000"); err == nil || errors.Is(err, mvp.ErrNotFound) {
		t.Errorf("a failed Open left the database open: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close after a failed Open: %v", err)
	}
	if err := (&service.Main{}).Run(context.Background()); err == nil {
		t.Error("Run before Open")
	}
}

// TestOpenNamesTheSettingToChange: a shared_root mvp cannot write was not checked at all (every task's folder was
// then lost, and jobs got an MVP_TASK_DIR that did not exist); a database folder or a port that cannot be used said
// what failed but not which setting to change.
func TestOpenNamesTheSettingToChange(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name string
		set  func(c *config.Config)
		want []string
	}{
		{"shared_root", func(c *config.Config) { c.SharedRoot = filepath.Join(notADir, "shared") }, []string{"shared_root", notADir}},
		{"db_path", func(c *config.Config) { c.V2.SQLite.DBPath = filepath.Join(notADir, "db", "mvp.sqlite3") }, []string{"v2.sqlite.db_path"}},
		{"port", func(c *config.Config) { c.V2.API.Port = ln.Addr().(*net.TCPAddr).Port }, []string{"v2.api.port", ln.Addr().String()}},
	} {
		cfg := servicetest.Config(t)
		tc.set(cfg)
		m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
		err := m.Open(context.Background())
		m.Close()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want an error naming %q", tc.name, err, w)
			}
		}
	}
}

// TestOpenSaysADatabaseFileIsNotOne: a db_path holding something that is not an SQLite database (another file, a
// damaged one) failed with "file is not a database (set v2.sqlite.db_path … to a file in a folder mvp can write)":
// the advice fit a folder mvp cannot write, not this. It now says what the file is not and what to do, and leaves
// the file as it was. Found by running mvp serve on such a file.
func TestOpenSaysADatabaseFileIsNotOne(t *testing.T) {
	cfg := servicetest.Config(t)
	junk := bytes.Repeat([]byte("not sqlite\n"), 500)
	if err := os.WriteFile(cfg.V2.SQLite.DBPath, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	err := m.Open(context.Background())
	m.Close()
	for _, w := range []string{cfg.V2.SQLite.DBPath, "not an SQLite database", "v2.sqlite.db_path", "backup"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("open of a file that is not a database: %v; want it to name %q", err, w)
		}
	}
	if b, _ := os.ReadFile(cfg.V2.SQLite.DBPath); !bytes.Equal(b, junk) {
		t.Errorf("the file was changed (%d bytes, was %d)", len(b), len(junk))
	}
}

// TestFollowingTheLogOfAWaitingTaskWaitsForItsFirstAttempt: `mvp logs -f` right after `mvp submit` (as README shows
// it) failed at once with 404 "no attempt yet" while the task waited. Following now waits for the first attempt
// and streams its log; a task that ends without one still gets the 404.
func TestFollowingTheLogOfAWaitingTaskWaitsForItsFirstAttempt(t *testing.T) {
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Ray: ray, Cluster: servicetest.OneNode(4)})
	ctx := context.Background()
	c := m.Client()
	submit := func(nnodes int) string {
		raw, err := c.Submit(ctx, []byte(fmt.Sprintf("workload: ppo\nnnodes: %d\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n", nnodes)), false)
		if err != nil {
			t.Fatal(err)
		}
		var task mvp.Task
		json.Unmarshal(raw, &task)
		return task.ID
	}
	first, second := submit(1), submit(1) // the second waits for the first's GPUs
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var b bytes.Buffer
		err := c.Logs(ctx, second, 0, true, &b)
		done <- result{b.String(), err}
	}()
	// Each attempt is in the fake Ray before its status is set (servicetest.Ray.WaitJob says why).
	ray.WaitJob(t, mvp.SubmissionID(first, 1))
	ray.Set(first+"--a01", mvp.RaySucceeded) // frees the GPUs
	ray.WaitJob(t, mvp.SubmissionID(second, 1))
	ray.AddLog(second+"--a01", "hello from the second task\n")
	ray.Set(second+"--a01", mvp.RaySucceeded)
	select {
	case r := <-done:
		if r.err != nil || !strings.Contains(r.out, "hello from the second task") {
			t.Fatalf("followed log: %q %v", r.out, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("following did not end after the attempt ended")
	}
	// A task canceled before any attempt (two nodes: it never fits here): the follow ends with the 404.
	third := submit(2)
	go c.Cancel(ctx, third)
	if err := c.Logs(ctx, third, 0, true, io.Discard); mvp.ErrorCode(err) != mvp.CodeNotFound {
		t.Errorf("following a task canceled before its first attempt: %v", err)
	}
	// Asked again once it has ended: it says that the task ended without one, not "no attempt yet" (walk-through
	// 17: "has no attempt yet (it is CANCELED)").
	if err := c.Logs(ctx, third, 0, false, io.Discard); mvp.ErrorCode(err) != mvp.CodeNotFound ||
		!strings.Contains(err.Error(), "ended CANCELED before any attempt") {
		t.Errorf("the log of a task canceled before its first attempt: %v", err)
	}
}

// TestOneServicePerDatabase: nothing kept two mvp serve processes off one database (a second one started by hand,
// or a supervisor's restart while the old process still finished its tick): two loops then judge and write the
// same attempts from stale reads. The second is refused, naming the first's pid and the setting.
func TestOneServicePerDatabase(t *testing.T) {
	cfg := servicetest.Config(t)
	first := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	if err := first.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg2 := *cfg
	cfg2.SharedRoot = t.TempDir()
	second := &service.Main{Config: &cfg2, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	err := second.Open(context.Background())
	second.Close()
	if err == nil || !strings.Contains(err.Error(), "another mvp serve") || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) ||
		!strings.Contains(err.Error(), "v2.sqlite.db_path") {
		t.Fatalf("a second service on the same database: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := &service.Main{Config: &cfg2, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	if err := third.Open(context.Background()); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	third.Close()
}

// `mvp logs -f` open while mvp serve stopped held the stop for the whole shutdown grace (10 s), so a restart
// found the database still in use, and the CLI said only "EOF". A stop ends every follow at once, and the
// follower is told the server stopped: a 503 while it waited for a first attempt, the stream's end marked
// (trailer X-Mvp-Log-End) while it streamed a log. Found in a user walk-through.
func TestAStopEndsLogFollowsAtOnce(t *testing.T) {
	ray := servicetest.NewRay()
	// Go's server closes, unanswered, a connection whose request it reads once its shutdown has begun (the client
	// then says so, TestAReadWhoseAnswerWasLostSaysTheServerWentAway); this test is about follows the server has
	// taken, so it stops the server only once its log says both follows began.
	follows := &recordWatcher{msg: "log follow begins", want: 2, seen: make(chan struct{})}
	m := &service.Main{Config: servicetest.Config(t), Token: servicetest.Token, Ray: ray, Cluster: servicetest.OneNode(4),
		ShutdownGrace: 10 * time.Minute, Logger: slog.New(follows)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(ctx) }()
	c := m.Client()
	submit := func() string {
		raw, err := c.Submit(context.Background(), []byte(goodPPO(1)), false)
		if err != nil {
			t.Fatal(err)
		}
		var task mvp.Task
		json.Unmarshal(raw, &task)
		return task.ID
	}
	running, waiting := submit(), submit()
	ray.WaitJob(t, mvp.SubmissionID(running, 1)) // the first is in Ray, its log streaming; the second waits for GPUs
	ray.Set(running+"--a01", mvp.RayRunning)
	ray.AddLog(running+"--a01", "step 1\n")
	errs := make(chan error, 2)
	// Each follow on a connection of its own (a pooled idle connection is closed by the stop under a request about
	// to be sent on it).
	own := &api.Client{Addr: m.URL(), Token: servicetest.Token, HTTP: &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true}}}
	go func() { errs <- own.Logs(context.Background(), waiting, 0, true, io.Discard) }()
	streaming := &signalWriter{at: "step 1", seen: make(chan struct{})}
	go func() { errs <- own.Logs(context.Background(), running, 0, true, streaming) }()
	for what, ch := range map[string]chan struct{}{"the running task's log did not arrive": streaming.seen,
		"the server did not take both follows": follows.seen} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	cancel()
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mvp serve did not stop within a minute while logs were followed (its shutdown grace is 10 minutes)")
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "the server is stopping") {
			t.Errorf("a follow ended by the stop: %v, want an error saying the server is stopping", err)
		}
	}
}

// recordWatcher is a slog handler (all levels) that closes seen once want records with message msg arrived.
type recordWatcher struct {
	mu   sync.Mutex
	msg  string
	want int
	n    int
	seen chan struct{}
}

func (h *recordWatcher) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordWatcher) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Message == h.msg {
		if h.n++; h.n == h.want {
			close(h.seen)
		}
	}
	return nil
}
func (h *recordWatcher) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordWatcher) WithGroup(string) slog.Handler      { return h }

func goodPPO(nnodes int) string {
	return fmt.Sprintf("workload: ppo\nnnodes: %d\nn_gpus_per_node: 4\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n", nnodes)
}

// signalWriter closes seen once what was written holds at.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	at   string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.at) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// An ended attempt's log was read from the task folder whenever a file was there, even when it was only the
// running log's last copy (copied every log_copy_s) and the whole log was not kept yet (its final fetch failed, or
// is still to come after the pass's actions): `mvp logs` then showed a log cut short while Ray still had all of
// it. The folder's copy is the answer only once the log is kept; before, Ray's.
func TestAnEndedAttemptsLogIsNotTheRunningCopy(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 3600 // no pass of the loop keeps the log meanwhile
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Config: cfg, Ray: ray})
	// The loop's first pass, which runs at the start, must be over before the attempt below exists (submitting
	// waits for it): a pass that saw it ended would keep its log meanwhile (and its clean-up of a cut copy's
	// temporary files removed the one the running copy below is written through, a flake seen once).
	ctx := context.Background()
	db := m.Store()
	id := "mvp2-ppo-20251223-143201-0b1c"
	at, att := submitting(t, m, id)
	sub := att.RaySubmissionID
	end := at.Add(time.Second)
	up := *att
	up.RayStatus, up.EndTime = mvp.RaySucceeded, &end
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: end, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	if err := ray.SubmitJob(ctx, &mvp.JobSubmission{SubmissionID: sub}); err != nil {
		t.Fatal(err)
	}
	ray.Set(sub, mvp.RaySucceeded)
	ray.AddLog(sub, "step 1\nstep 2\ndone\n")
	if err := (taskfs.FS{Root: cfg.SharedRoot}).WriteLog(id, 1, "log of "+sub+"\nstep 1\n"); err != nil { // the running copy
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.Client().Logs(ctx, id, 0, false, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "done") {
		t.Errorf("log of the ended attempt: %q; want Ray's whole log (it ends with done), not the running copy", b.String())
	}
}

// The database's folder missing at start (an NFS not mounted yet) gave a new, empty queue without a word; and the
// folder removed while mvp ran left /healthz "ok" while submits went into a file no later start would open. mvp
// now warns at start that it made a new database, and /healthz is degraded (and submits refused) once the file is
// no longer at its path. Found in a walk-through.
func TestANewOrLostDatabaseIsSaidOutLoud(t *testing.T) {
	cfg := servicetest.Config(t)
	dir := filepath.Join(t.TempDir(), "not-mounted")
	cfg.V2.SQLite.DBPath = filepath.Join(dir, "db", "mvp.sqlite3")
	var log servicetest.Buffer
	m := servicetest.Start(t, &service.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !strings.Contains(log.String(), "a new, empty database was made, and its folder too") {
		t.Errorf("no warning that the database and its folder are new:\n%s", log.String())
	}
	health := func() map[string]any {
		resp, err := http.Get(m.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Degraded until the scheduler's first look at Ray (api.NotLookedYet), then ok.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		h := health()
		if h["status"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz before: %v", h)
		}
	}
	if err := os.Rename(dir, dir+".aside"); err != nil {
		t.Fatal(err)
	}
	h := health()
	if h["status"] != "degraded" || !strings.Contains(fmt.Sprint(h["database"]), "was removed") {
		t.Errorf("healthz with the database removed: %v; want degraded, saying so", h)
	}
	if _, err := m.Client().Submit(context.Background(), []byte(goodPPO(1)), false); mvp.ErrorCode(err) != mvp.CodeUnavailable {
		t.Errorf("a submit into the removed database: %v; want 503", err)
	}
	if err := os.Rename(dir+".aside", dir); err != nil {
		t.Fatal(err)
	}
}

// A user removed from v2.auth.users (mvp restarted without her): her waiting tasks kept their place and ran with
// no max_gpus (none is configured for a name that is not there), and she could no longer see or cancel them.
// They are held, saying why, and GET /api/v2/users marks her removed. Found in a walk-through.
func TestARemovedUsersTasksAreHeld(t *testing.T) {
	cfg := servicetest.Config(t)
	t.Setenv("MVP_TEST_TOKEN_BOB", "bob-token-0123456789abcdef")
	cfg.V2.Auth.Users = []config.User{{Name: "bob", TokenEnv: "MVP_TEST_TOKEN_BOB", Share: 1}}
	db, err := sqlite.Open(context.Background(), cfg.V2.SQLite.DBPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	id := "mvp2-ppo-20251223-143201-a11c"
	if err := db.CreateTask(context.Background(), &mvp.Task{ID: id, Workload: mvp.WorkloadPPO, State: mvp.StateQueued,
		NNodes: 1, GPUsPerNode: 1, JobSpecYAML: "x", CreatedAt: at, UpdatedAt: at, Owner: "alice", Priority: 50,
		SpecJSON: []byte(`{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/t","val_file":"/v"}`)}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Config: cfg, Ray: ray})
	var task *mvp.Task
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err = m.Store().GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != mvp.StateQueued || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if task.State != mvp.StatePendingResources || !strings.Contains(task.PendingReason, "not in v2.auth.users") {
		t.Errorf("alice's task after she was removed: %s %q; want it held, saying why", task.State, task.PendingReason)
	}
	if n := len(ray.Submissions()); n != 0 {
		t.Errorf("%d submission(s) to Ray; want none", n)
	}
	users, _, err := m.Client().Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	for _, u := range users.Users {
		removed = removed || u.Name == "alice" && u.Removed
	}
	if !removed {
		t.Errorf("GET /api/v2/users does not mark alice removed: %+v", users.Users)
	}
	// A resubmit is its origin's owner's: the operator's rerun of her task would be hers, held for ever without
	// limits to apply (the review of walk-through 12's fix); it is refused as a schedule of hers is.
	_, _, err = m.Client().Resubmit(context.Background(), id, api.ResubmitRequest{})
	if mvp.ErrorCode(err) != mvp.CodeForbidden || !strings.Contains(err.Error(), "no longer a user") ||
		strings.Contains(err.Error(), "hers") { // mvp knows a user's name, not who they are
		t.Errorf("the operator's resubmit of a removed user's task: %v; want 403 saying the owner is no longer a user", err)
	}
}

// TestAUsersMissingTokenNamesItsSetting: a user whose token variable is empty stops serve with the user's own
// setting and what to do; it named the operator's v2.auth.token_env and offered --dev-generate-token, which makes
// only the operator's token (walk-through 12).
func TestAUsersMissingTokenNamesItsSetting(t *testing.T) {
	t.Setenv("MVP_TEST_TOKEN_ALICE", "alice-token-0123456789abcdef")
	t.Setenv("MVP_TEST_TOKEN_NOPE", "")
	cfg := servicetest.Config(t)
	cfg.V2.Auth.Users = []config.User{{Name: "alice", TokenEnv: "MVP_TEST_TOKEN_ALICE"}, {Name: "bob", TokenEnv: "MVP_TEST_TOKEN_NOPE"}}
	_, err := service.UsersOf(cfg, "operator-token-0123456789abcdef")
	if err == nil {
		t.Fatal("a user without a token was accepted")
	}
	msg := err.Error()
	for _, want := range []string{"v2.auth.users[1].token_env", "$MVP_TEST_TOKEN_NOPE", "bob"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	for _, wrong := range []string{"v2.auth.token_env", "--dev-generate-token"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("%q names %q, which is the operator's", msg, wrong)
		}
	}
	t.Setenv("MVP_TEST_TOKEN_NOPE", "short")
	if _, err := service.UsersOf(cfg, "operator-token-0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "v2.auth.users[1].token_env") {
		t.Errorf("a short token: %v", err)
	}
}

// TestADatabaseFromANewerMVPIsNotAPathToChange: serve refusing a database a newer mvp migrated said to point
// v2.sqlite.db_path at a file in a folder mvp can write, which is no fix (the upgrade walk-through, running the
// old binary on an upgraded database); it says which mvp to run or which backup to restore, and nothing of paths.
func TestADatabaseFromANewerMVPIsNotAPathToChange(t *testing.T) {
	cfg := servicetest.Config(t)
	db, err := sqlite.Open(context.Background(), cfg.V2.SQLite.DBPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite3", cfg.V2.SQLite.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_a_newer_mvp.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	err = m.Open(context.Background())
	m.Close()
	if err == nil || !errors.Is(err, sqlite.ErrNewerSchema) || !strings.Contains(err.Error(), "restore the backup") ||
		strings.Contains(err.Error(), "a folder mvp can write") {
		t.Errorf("serve on a newer database: %v; want the newer-mvp refusal without the path hint", err)
	}
}

// TestAFollowedLogArrivesByteForByte: a follower of a running log gets each new part once, bytes that are not
// UTF-8 included, and the follow ends with the attempt. The server now streams each poll from the byte the
// follower has (it held the whole log in memory at every poll, per follower: 2.3 GB for three followers of a
// 220 MB log in walk-through 16).
func TestAFollowedLogArrivesByteForByte(t *testing.T) {
	ray := servicetest.NewRay()
	id := "mvp2-ppo-20251223-143201-0b1d"
	m, at, att := runningInRay(t, ray, id)
	ctx, db, sub := context.Background(), m.Store(), att.RaySubmissionID
	parts := []string{"step 1\n", "\xff\xfe bytes \x1b[31m\r50%", "\r100%\nstep 2\n"}
	ray.AddLog(sub, parts[0])
	got := &signalWriter{at: "step 1", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- m.Client().Logs(ctx, id, 0, true, got) }()
	select {
	case <-got.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the first part did not arrive")
	}
	ray.AddLog(sub, parts[1])
	ray.AddLog(sub, parts[2])
	end := at.Add(time.Second)
	up := *att
	up.RayStatus, up.EndTime = mvp.RaySucceeded, &end
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(got.String(), "step 2") {
		if time.Now().After(deadline) {
			t.Fatalf("the later parts did not arrive: %q", got.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: end, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	ray.Set(sub, mvp.RaySucceeded)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow did not end with the attempt")
	}
	if want := "log of " + sub + "\n" + strings.Join(parts, ""); got.String() != want {
		t.Errorf("followed %q, want %q", got.String(), want)
	}
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runningInRay starts a service whose loop does not tick (the test moves the attempt itself) and stores task id
// moved to SUBMITTING (submitting), with its attempt's job RUNNING in ray.
func runningInRay(t *testing.T, ray *servicetest.Ray, id string) (*service.Main, time.Time, *mvp.Attempt) {
	t.Helper()
	return runningInRayWith(t, ray, id, 0)
}

// runningInRayWith is runningInRay with v2.ray.max_log_streams set to streams.
func runningInRayWith(t *testing.T, ray *servicetest.Ray, id string, streams int) (*service.Main, time.Time, *mvp.Attempt) {
	t.Helper()
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 3600
	cfg.V2.Ray.MaxLogStreams = streams
	m := servicetest.Start(t, &service.Main{Config: cfg, Ray: ray})
	at, att := submitting(t, m, id)
	if err := ray.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: att.RaySubmissionID}); err != nil {
		t.Fatal(err)
	}
	ray.Set(att.RaySubmissionID, mvp.RayRunning)
	return m, at, att
}

// submitting stores task id as a QUEUED PPO task moved to SUBMITTING with attempt 1, as the loop leaves it before
// it calls Ray, and returns the time it used and the attempt. It first waits for the loop's first pass (the
// service's loop does not tick again in these tests, so nothing but the test moves the task after it).
func submitting(t *testing.T, m *service.Main, id string) (time.Time, *mvp.Attempt) {
	t.Helper()
	servicetest.WaitFirstPass(t, m.URL(), m.APIToken()) // the loop's first pass must not see the task half made
	ctx, db, at := context.Background(), m.Store(), time.Now()
	task := &mvp.Task{ID: id, Workload: mvp.WorkloadPPO, State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 1,
		JobSpecYAML: "x", SpecJSON: []byte("{}"), CreatedAt: at, UpdatedAt: at}
	if err := db.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	att := &mvp.Attempt{TaskID: id, No: 1, RaySubmissionID: mvp.SubmissionID(id, 1), CreatedAt: at}
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateQueued, To: mvp.StateSubmitting, At: at, NewAttempt: att}); err != nil {
		t.Fatal(err)
	}
	return at, att
}

// TestAFollowerReadsARunningLogInOneStream: following a running attempt whose driver's node is known reads its log
// through one stream from Ray (the node's agent reads the file once, then what is appended), not a whole copy of
// the file at every poll, which made Ray read a log of hundreds of MB again every second for every follower. What
// the driver appends arrives as it comes, and the follow ends, byte for byte, with the attempt.
func TestAFollowerReadsARunningLogInOneStream(t *testing.T) {
	followRunningLog(t, 4)
}

// TestAFollowerCopiesARunningLogWithoutStreams: with v2.ray.max_log_streams 0 (the default: Ray 2.60 keeps a place
// of its state API for good for each stream whose log stops growing), a follower opens no stream; it copies the
// log at each poll and gets the same bytes, to the attempt's end.
func TestAFollowerCopiesARunningLogWithoutStreams(t *testing.T) {
	followRunningLog(t, 0)
}

// followRunningLog follows a running attempt's log with v2.ray.max_log_streams set to streams: its lines arrive
// as they come, by one stream (streams > 0) or by copies (0), and the follow ends with the attempt, byte for byte.
func followRunningLog(t *testing.T, streams int) {
	ray := servicetest.NewRay()
	id := "mvp2-ppo-20251223-143201-0f01"
	m, at, att := runningInRayWith(t, ray, id, streams)
	ctx, db, sub := context.Background(), m.Store(), att.RaySubmissionID
	up := *att
	up.RayStatus, up.DriverNodeID = mvp.RayRunning, "w1"
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StateRunning, At: at,
		AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	ray.AddLog(sub, "step 1\n")
	got := &signalWriter{at: "step 1", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		n, err := m.Client().LogsOf(ctx, id, 0, true, got)
		if err == nil && n != 1 {
			err = fmt.Errorf("the answer names attempt %d as the one streamed (%s), want 1", n, api.LogAttemptHeader)
		}
		done <- err
	}()
	select {
	case <-got.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the first line did not arrive")
	}
	// Three more lines, one a poll apart (LogPoll is 1 s): each must arrive while the attempt runs.
	for i := 2; i <= 4; i++ {
		line := fmt.Sprintf("step %d\n", i)
		ray.AddLog(sub, line)
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(got.String(), line) {
			if time.Now().After(deadline) {
				t.Fatalf("%q did not arrive: %q", line, got.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second)
	}
	copies, follows := ray.LogReads()
	if streams > 0 && (copies != 0 || follows != 1) {
		t.Fatalf("while the attempt ran: %d whole copies and %d streams of its log; want 0 and 1", copies, follows)
	}
	if streams == 0 && (copies < 4 || follows != 0) {
		t.Fatalf("while the attempt ran, without streams: %d whole copies and %d streams of its log; want a copy "+
			"per poll and no stream", copies, follows)
	}
	ray.AddLog(sub, "last words, no newline")
	end := at.Add(time.Second)
	up.RayStatus, up.EndTime = mvp.RaySucceeded, &end
	ray.Set(sub, mvp.RaySucceeded)
	if err := db.Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateRunning, To: mvp.StateSucceeded, At: end,
		AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow did not end with the attempt")
	}
	if want := "log of " + sub + "\nstep 1\nstep 2\nstep 3\nstep 4\nlast words, no newline"; got.String() != want {
		t.Errorf("followed %q, want %q", got.String(), want)
	}
}

// TestADatabaseThatCannotBeOpenedIsNamedOnce: a file that is not a database said "open database X: open database
// X: database X cannot be used: file is not a database (set v2.sqlite.db_path …)". It says it once, with the
// setting to change (found in the fault walk-through).
func TestADatabaseThatCannotBeOpenedIsNamedOnce(t *testing.T) {
	cfg := servicetest.Config(t)
	if err := os.WriteFile(cfg.V2.SQLite.DBPath, bytes.Repeat([]byte("not a database "), 600), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(4),
		Logger: slog.New(slog.DiscardHandler)}
	err := m.Open(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("mvp opened a file that is not a database")
	}
	if msg := err.Error(); strings.Count(msg, "open database") != 1 || strings.Count(msg, cfg.V2.SQLite.DBPath) != 1 ||
		!strings.Contains(msg, "v2.sqlite.db_path") {
		t.Errorf("the error: %s; want the database named once, and the setting to change", msg)
	}
}

// shared_root unmounted under mvp (its jobs/ folder, made at start, gone) held every submission with a reason on
// the task, while /healthz answered "ok" and v2/scripts/status.sh exited 0: the operator learned of it from a user
// asking why nothing starts. /healthz is now degraded with a shared_root sentence that says what to do, and ok
// again once the folder is back. Found in the SRE walk-through.
func TestAnUnmountedSharedRootIsInTheHealth(t *testing.T) {
	cfg := servicetest.Config(t)
	m := servicetest.Start(t, &service.Main{Config: cfg})
	health := func() map[string]any {
		resp, err := http.Get(m.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	for deadline := time.Now().Add(20 * time.Second); health()["status"] != "ok"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("healthz before: %v", health())
		}
	}
	jobs := filepath.Join(cfg.SharedRoot, "jobs")
	if err := os.Rename(jobs, jobs+".aside"); err != nil {
		t.Fatal(err)
	}
	h := health()
	if s := fmt.Sprint(h["shared_root"]); h["status"] != "degraded" || !strings.Contains(s, cfg.SharedRoot) || !strings.Contains(s, "mount") {
		t.Errorf("healthz with shared_root unmounted: %v; want degraded, naming shared_root and saying to mount it", h)
	}
	if err := os.Rename(jobs+".aside", jobs); err != nil {
		t.Fatal(err)
	}
	if h := health(); h["status"] != "ok" || h["shared_root"] != nil {
		t.Errorf("healthz with shared_root back: %v; want ok", h)
	}
}

// mvp restarted while shared_root's filesystem was not mounted (the mount point there, empty) made jobs/ again on
// the local disk without a word and sent the waiting task to Ray: its folder on mvp's disk, its driver's files on
// the shared one (seen in the SRE walk-through: a restart undid what holding the submission had kept). A
// database whose attempts have folders under jobs/ with jobs/ gone is an unmounted filesystem: mvp does not start,
// and says what to do. Found in the SRE walk-through.
func TestARestartDoesNotMakeJobsAgainOnAnUnmountedSharedRoot(t *testing.T) {
	cfg := servicetest.Config(t)
	open := func() (*service.Main, error) {
		m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(),
			Cluster: servicetest.OneNode(4), ShutdownGrace: 5 * time.Second}
		return m, m.Open(context.Background())
	}
	m, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	raw, err := m.Client().Submit(context.Background(), []byte(goodPPO(1)), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _, err := m.Client().Get(context.Background(), task.ID)
		if err == nil && got.LatestAttemptNo > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attempt: %+v %v", got, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	jobs := filepath.Join(cfg.SharedRoot, "jobs")
	if err := os.RemoveAll(jobs); err != nil { // unmounted: the mount point is empty
		t.Fatal(err)
	}
	m, err = open()
	if err == nil {
		m.Close()
		t.Fatal("mvp serve started on an unmounted shared_root")
	}
	if !strings.Contains(err.Error(), jobs) || !strings.Contains(err.Error(), "mount") {
		t.Errorf("the refusal %q does not name %s and say to mount it", err, jobs)
	}
	if _, err := os.Stat(jobs); err == nil {
		t.Errorf("%s was made again on the empty mount point", jobs)
	}
	if err := os.Mkdir(jobs, 0o755); err != nil { // the refusal's advice when it was emptied on purpose
		t.Fatal(err)
	}
	if m, err = open(); err != nil {
		t.Fatalf("with jobs/ made again by hand: %v", err)
	}
	m.Close()
}

// A task submitted and canceled through the API left no line in mvp's log (the Ray door logged its submissions,
// the API did not; a cancel was logged only when its stop failed): who submitted or canceled a task, and when,
// was only in `mvp events`. Found in the SRE walk-through.
func TestSubmitAndCancelAreLogged(t *testing.T) {
	var log servicetest.Buffer
	m := servicetest.Start(t, &service.Main{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	raw, err := m.Client().Submit(context.Background(), []byte(goodPPO(1)), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Client().Cancel(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	// The submit wakes the scheduler, which may send the task to the fake Ray before the cancel arrives (was=
	// SUBMITTED: 4 runs in 40 on a busy machine), so the state it was canceled in is either.
	for _, want := range []string{
		`msg="task submitted" component=api task_id=` + task.ID + ` owner=operator workload=ppo`,
		`msg="task canceled" component=api task_id=` + task.ID + ` by=api was=(QUEUED|SUBMITTING|SUBMITTED) caller=operator`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("log has no %q:\n%s", want, out)
		}
	}
}

// With shared_root unmounted, a task held for it (PENDING_RESOURCES, its reason naming shared_root) was listed by
// GET /api/v2/queue under "starting" (`mvp queue`: "starting now"; `mvp list`: no queue position) while nothing
// could start. It is now a waiting entry with code shared_root and the sentence that says what to do. Found in the
// SRE walk-through.
func TestTheQueueSaysATaskWaitsForSharedRoot(t *testing.T) {
	cfg := servicetest.Config(t)
	m := servicetest.Start(t, &service.Main{Config: cfg})
	jobs := filepath.Join(cfg.SharedRoot, "jobs")
	if err := os.Rename(jobs, jobs+".aside"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(jobs+".aside", jobs)
	raw, err := m.Client().Submit(context.Background(), []byte(goodPPO(1)), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _, err := m.Client().Get(context.Background(), task.ID)
		if err == nil && got.State == mvp.StatePendingResources {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task was not held: %+v %v", got, err)
		}
	}
	v, _, err := m.Client().Queue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(v.Starting, task.ID) {
		t.Errorf("the queue lists %s as starting while shared_root is unmounted", task.ID)
	}
	if len(v.Queue) != 1 || v.Queue[0].TaskID != task.ID || v.Queue[0].Code != scheduler.CodeSharedRoot ||
		v.Queue[0].Position != 1 || !strings.Contains(v.Queue[0].Reason, "mount") {
		t.Errorf("queue %+v; want %s first, code shared_root, saying to mount it", v.Queue, task.ID)
	}
}

// TestADryRunSaysATaskWouldBeHeldForSharedRoot: with shared_root unmounted a dry run said "fits_now, would be
// submitted now" while the loop holds every task it would start until the folders can be written.
func TestADryRunSaysATaskWouldBeHeldForSharedRoot(t *testing.T) {
	cfg := servicetest.Config(t)
	m := servicetest.Start(t, &service.Main{Config: cfg})
	jobs := filepath.Join(cfg.SharedRoot, "jobs")
	if err := os.Rename(jobs, jobs+".aside"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(jobs+".aside", jobs)
	raw, err := m.Client().Submit(context.Background(), []byte(goodPPO(1)), true)
	if err != nil {
		t.Fatal(err)
	}
	var dry struct {
		Admission struct {
			Verdict, Reason string
			EstStart        *time.Time `json:"est_start"`
		} `json:"admission"`
	}
	if err := json.Unmarshal(raw, &dry); err != nil {
		t.Fatal(err)
	}
	if dry.Admission.Verdict != api.VerdictWaits || !strings.Contains(dry.Admission.Reason, "shared_root") ||
		!strings.Contains(dry.Admission.Reason, "mount") || dry.Admission.EstStart != nil {
		t.Errorf("dry run with shared_root unmounted: %s; want %s, held until shared_root can be written", raw, api.VerdictWaits)
	}
}

// An upgrade applies the new binary's migrations at start without a word: the walk-through's upgrade from c660345
// applied 0011…0019 to a database with tasks in flight and the log said nothing of it, so an operator could not
// tell from the log that the schema had changed (and that an older mvp would no longer open the file). The start
// now logs the migrations it applied to an existing database, from which version to which.
func TestMigrationsAppliedToAnExistingDatabaseAreLogged(t *testing.T) {
	cfg := servicetest.Config(t)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, cfg.V2.SQLite.DBPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The database as the mvp before migration 0019 left it (of the migrations after 0019, 0021 adds a column,
	// 0022 an index, 0023 a table and a column, 0024 an index).
	raw, err := sql.Open("sqlite3", cfg.V2.SQLite.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM schema_migrations WHERE version >= 19`, `ALTER TABLE attempts DROP COLUMN placed_at`,
		`ALTER TABLE instance DROP COLUMN packages_sealed`, `DROP INDEX tasks_by_resume_from`, `DROP INDEX attempts_by_ray_job_id`, `DROP TABLE gpu_nodes_known`,
		`ALTER TABLE gpu_nodes_seen DROP COLUMN most_gpu_nodes`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	var log servicetest.Buffer
	servicetest.Start(t, &service.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !regexp.MustCompile(`msg="database migrated".* from_version=18 to_version=\d+ applied=0019_placed_at.sql`).MatchString(log.String()) {
		t.Errorf("no log line of the migration applied at start:\n%s", log.String())
	}
}

// TestTheFirstStartWithSealingSealsThePackagesKeptBefore: the Ray door's packages are kept sealed, so that a job
// cannot replace one (raycompat.Packages). Those an mvp before sealing kept have none: on an upgrade of a database
// with a door task still to run, the first start seals them once (and says so), so that the task runs with its
// package; a later start seals nothing, or a job could have a file of its own sealed by removing a seal and
// waiting for a restart.
func TestTheFirstStartWithSealingSealsThePackagesKeptBefore(t *testing.T) {
	cfg := servicetest.Config(t)
	ctx := context.Background()
	dir := filepath.Join(cfg.SharedRoot, "ray_packages")
	a, b := "_ray_pkg_0123456789abcdef.zip", "_ray_pkg_fedcba9876543210.zip"
	start := func() (*service.Main, string) {
		t.Helper()
		var log servicetest.Buffer
		m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(4),
			Logger: slog.New(slog.NewTextHandler(&log, nil))}
		if err := m.Open(ctx); err != nil {
			t.Fatalf("open the service: %v", err)
		}
		return m, log.String()
	}
	// A door task still to run, in a database as an mvp before sealing left it.
	m, _ := start()
	door := &mvp.Task{ID: "raysubmit_door1", Workload: mvp.WorkloadRayJob, State: mvp.StateQueued, JobSpecYAML: "{}",
		SpecJSON:     []byte(`{"entrypoint":"python x.py","runtime_env":{"working_dir":"gcs://` + a + `"}}`),
		SubmissionID: "door1"}
	if err := m.Store().CreateTask(ctx, door); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", cfg.V2.SQLite.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM schema_migrations WHERE version >= 21`, `ALTER TABLE instance DROP COLUMN packages_sealed`,
		`DROP INDEX tasks_by_resume_from`, `DROP INDEX attempts_by_ray_job_id`, `DROP TABLE gpu_nodes_known`, `ALTER TABLE gpu_nodes_seen DROP COLUMN most_gpu_nodes`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	old := raycompat.Packages{Dir: dir} // as an mvp before sealing keeps them
	if err := old.Put(raycompat.PackageProtocol, a, []byte("kept before")); err != nil {
		t.Fatal(err)
	}
	m, log := start()
	if !regexp.MustCompile(`msg="the Ray packages kept by an earlier mvp were sealed".* packages=1`).MatchString(log) {
		t.Errorf("the first start did not say it sealed the package kept before:\n%s", log)
	}
	sealed := raycompat.Packages{Dir: dir, Key: instanceKey(t, cfg.V2.SQLite.DBPath)}
	if data, ok, err := sealed.Get("gcs://" + a); string(data) != "kept before" || !ok || err != nil {
		t.Errorf("the package kept before, after the upgrade: %q, %v, %v; want it served", data, ok, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A job puts a file of its own there, unsealed; the next start does not seal it.
	if err := os.WriteFile(filepath.Join(dir, b), []byte("a job's zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, log = start()
	defer m.Close()
	if strings.Contains(log, "were sealed") {
		t.Errorf("a second start sealed packages:\n%s", log)
	}
	if _, ok, err := sealed.Get("gcs://" + b); ok || err == nil {
		t.Errorf("a file put there after the first start is served as a kept package")
	}
}

// TestANewDatabaseSealsNothingItFindsInRayPackages: a database made by this start (a first start, or one lost or
// not mounted) has no package kept by an earlier mvp to trust; what a job left in ray_packages (a file of its own
// under a package's name, its seal removed) is not sealed, and not served.
func TestANewDatabaseSealsNothingItFindsInRayPackages(t *testing.T) {
	cfg := servicetest.Config(t)
	dir := filepath.Join(cfg.SharedRoot, "ray_packages")
	name := "_ray_pkg_0123456789abcdef.zip"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("a job's zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log servicetest.Buffer
	servicetest.Start(t, &service.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if strings.Contains(log.String(), "were sealed") {
		t.Errorf("a new database's start sealed what it found:\n%s", log.String())
	}
	p := raycompat.Packages{Dir: dir, Key: instanceKey(t, cfg.V2.SQLite.DBPath)}
	if _, ok, err := p.Get("gcs://" + name); ok || err == nil {
		t.Errorf("a job's file found by a new database's start is served as a kept package")
	}
}

// instanceKey is the database's instance key, read as the service reads it.
func instanceKey(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var key []byte
	if err := raw.QueryRow(`SELECT key FROM instance`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestOpenOnAFullDiskSaysToFreeSpace: mvp serve restarted while the database's disk was full failed with "open
// database …: disk I/O error: no space left on device (set v2.sqlite.db_path in dev.yaml, or serve's --db-path, to a
// file in a folder mvp can write)": the folder is writable, the disk is full, and moving the database elsewhere
// starts an empty queue. It now says the disk is full and to free space there. Found in a fault walk-through (data
// folder on a 2 MB tmpfs, filled while mvp was stopped).
func TestOpenOnAFullDiskSaysToFreeSpace(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); the test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", small).Run() })
	cfg := servicetest.Config(t)
	cfg.V2.SQLite.DBPath = filepath.Join(small, "db", "mvp.sqlite3")
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	f, err := os.Create(filepath.Join(small, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 64<<10); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	m = &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(1)}
	err = m.Open(context.Background())
	m.Close()
	if err == nil {
		t.Skip("the database opened on the full disk (SQLite needed no new page); nothing to check")
	}
	for _, w := range []string{"disk is full", "free space on " + filepath.Join(small, "db")} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("open on a full disk: %v; want it to say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "a folder mvp can write") {
		t.Errorf("open on a full disk: %v; it says to move the database, which starts an empty queue", err)
	}
}
