package ray

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// pythonWithoutRay returns a Python that cannot import ray: the system python3 run isolated (-I: no user site, no
// PYTHONPATH), through a wrapper script, as a v2.ray.python pointing at the wrong interpreter would be.
func pythonWithoutRay(t *testing.T) string {
	sys, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if exec.Command(sys, "-I", "-c", "import ray").Run() == nil {
		t.Skipf("%s -I can import ray", sys)
	}
	w := filepath.Join(t.TempDir(), "python-without-ray")
	if err := os.WriteFile(w, []byte("#!/bin/sh\nexec "+sys+" -I \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestProbeSaysWhyItCannotStart(t *testing.T) {
	noRay := pythonWithoutRay(t)
	missing := filepath.Join(t.TempDir(), "no-python3")
	for _, tc := range []struct {
		name           string
		python, script string
		env            []string
		want           []string
	}{
		{"python without ray", noRay, "../../py-entrypoints/mvp_probe.py", nil, []string{
			"the live probe could not start: " + noRay + " (v2.ray.python) cannot import ray " +
				"(ModuleNotFoundError: No module named 'ray'); set v2.ray.python to the Python that has Ray"}},
		{"no such python", missing, "testdata/fakeprobe.py", nil, []string{
			"the live probe could not start: " + missing + " (v2.ray.python) cannot be run (",
			"; set v2.ray.python to the Python that has Ray"}},
		{"no such script", python(t), "testdata/no-such-probe.py", nil, []string{
			"the live probe could not start: the probe script testdata/no-such-probe.py (v2.ray.probe_script) cannot be opened (",
			"No such file or directory", "set v2.ray.probe_script to mvp's py-entrypoints/mvp_probe.py"}},
		{"GCS unreachable", python(t), "testdata/fakeprobe.py", []string{"FAKE_PROBE_NO_GCS=1"}, []string{
			"the live probe could not start: it cannot connect to the GCS at 127.0.0.1:1 (v2.ray.gcs_address): " +
				"RuntimeError: Failed to connect to GCS at 127.0.0.1:1; set v2.ray.gcs_address"}},
		{"other exit", python(t), "testdata/fakeprobe.py", []string{"FAKE_PROBE_EXIT=3"}, []string{
			"the live probe could not start: it exited (exit status 3) before it was ready: fakeprobe: something else went wrong; check v2.ray.python"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			p := NewProbe(ProbeOptions{Python: tc.python, Script: tc.script, Address: "127.0.0.1:1", Env: tc.env,
				ReadTimeout: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			defer p.Close()
			_, err := p.ReadCluster(context.Background())
			t.Log(err)
			var se *StartError
			if !errors.As(err, &se) || !errors.Is(err, mvp.ErrRayUnavailable) {
				t.Fatalf("want a StartError that is ErrRayUnavailable, got %T %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %s\nlacks\n  %s", err, w)
				}
			}
			// While it backs off, and on the next tries, the cause stays the same and is logged once.
			for i := 0; i < 3; i++ {
				if _, err2 := p.ReadCluster(context.Background()); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("reading %d: %v, want the same cause", i+2, err2)
				}
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "could not start") {
				t.Errorf("want the cause logged once at warn, got %d warnings:\n%s", n, logs.String())
			}
		})
	}
}

func TestFallbackViewSaysWhyTheProbeFailed(t *testing.T) {
	p := NewProbe(ProbeOptions{Python: pythonWithoutRay(t), Script: "../../py-entrypoints/mvp_probe.py", Address: "x",
		Fallback: func(context.Context) (*mvp.ClusterView, error) { return &mvp.ClusterView{Source: "dashboard"}, nil }})
	defer p.Close()
	v, err := p.ReadCluster(context.Background())
	if err != nil || v.Source != "dashboard" || !strings.Contains(v.ProbeError, "cannot import ray") ||
		!strings.Contains(v.ProbeError, "v2.ray.python") {
		t.Errorf("fallback view %+v, %v", v, err)
	}
}

func TestLiveViewHasNoProbeError(t *testing.T) {
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "x"})
	defer p.Close()
	v, err := p.ReadCluster(context.Background())
	if err != nil || v.Source != "probe" || v.ProbeError != "" {
		t.Errorf("live view %+v, %v", v, err)
	}
}

// When the probe cannot answer and the dashboard's fallback cannot either, the error says both, and the log does
// not claim the dashboard's view is in use (it logged "using the dashboard's lagging view" and dropped the
// fallback's error).
func TestNeitherProbeNorFallback(t *testing.T) {
	var logs bytes.Buffer
	p := NewProbe(ProbeOptions{Python: pythonWithoutRay(t), Script: "../../py-entrypoints/mvp_probe.py", Address: "x",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Fallback: func(context.Context) (*mvp.ClusterView, error) {
			return nil, errors.New("GET /api/cluster_status: connection refused; `address` in dev.yaml")
		}})
	defer p.Close()
	_, err := p.ReadCluster(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot import ray") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err %v; want the probe's cause and the dashboard's", err)
	}
	if strings.Contains(logs.String(), "using the dashboard") {
		t.Errorf("the log claims the dashboard's view is used:\n%s", logs.String())
	}
}

// TestAGroupRayRemovedIsReadAsRemoved: Ray's table drops a removed placement group from its live ones at once,
// before the nodes report its GPUs free and before its job's end is known. The probe keeps a group it read and
// then no longer reads as REMOVED (for removedKeep), so that the scheduler does not take an ended gang for one
// still to be placed, with the time it first missed it (the scheduler counts its GPUs free for ReportLag after).
func TestAGroupRayRemovedIsReadAsRemoved(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "x",
		Env: []string{"FAKE_PROBE_REMOVE_AFTER=1"}, Now: func() time.Time { return now }})
	defer p.Close()
	ctx := context.Background()
	read := func() []mvp.PlacementGroup {
		t.Helper()
		v, err := p.ReadCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v.Groups
	}
	if g := read(); len(g) != 1 || g[0].State != "CREATED" {
		t.Fatalf("first reading %+v, want p1 CREATED", g)
	}
	missed := now
	for _, after := range []time.Duration{0, time.Minute, removedKeep} {
		now = missed.Add(after)
		g := read()
		if len(g) != 1 || g[0].ID != "p1" || g[0].State != "REMOVED" || g[0].CreatorJobID != "01000000" ||
			g[0].Node != "aa" || len(g[0].Bundles) != 1 || g[0].RemovedNs != missed.UnixNano() {
			t.Fatalf("after %v: %+v, want p1 REMOVED with its job, node, bundles and when it was first missed", after, g)
		}
	}
	now = missed.Add(removedKeep + time.Second)
	if g := read(); len(g) != 0 {
		t.Errorf("past removedKeep: %+v, want none", g)
	}
}

// TestRemovedGroupsAreBounded: a cluster that removes many groups at once does not grow the readings without end.
func TestRemovedGroupsAreBounded(t *testing.T) {
	p := NewProbe(ProbeOptions{})
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var many []mvp.PlacementGroup
	for i := range removedMax + 10 {
		many = append(many, mvp.PlacementGroup{ID: fmt.Sprintf("g%04d", i), State: "CREATED"})
	}
	p.withRemoved("h", many, now)
	got := p.withRemoved("h", nil, now)
	if len(got) != removedMax || got[0].ID != "g0010" || got[len(got)-1].State != "REMOVED" {
		t.Errorf("%d removed groups kept (first %s), want the last %d", len(got), got[0].ID, removedMax)
	}
	if got := p.withRemoved("h", many[10:11], now); len(got) != removedMax || got[0].ID != "g0010" || got[0].State != "CREATED" ||
		got[1].ID != "g0011" {
		t.Errorf("a group read again is live again: %d groups, first %+v", len(got), got[0])
	}
}

// TestANewClusterForgetsTheRemovedGroups: a Ray head restarted without its GCS's store is a new cluster, which
// numbers its jobs from 01000000 again: groups of the old cluster's job 01000000 kept as REMOVED would have counted
// as the removed gang of the new cluster's first job, which then held no reservation.
func TestANewClusterForgetsTheRemovedGroups(t *testing.T) {
	p := NewProbe(ProbeOptions{})
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	old := []mvp.PlacementGroup{{ID: "g1", CreatorJobID: "01000000", State: "CREATED"}}
	p.withRemoved("head-1", old, now)
	if got := p.withRemoved("head-1", nil, now); len(got) != 1 || got[0].State != "REMOVED" {
		t.Fatalf("same cluster: %+v, want g1 REMOVED", got)
	}
	if got := p.withRemoved("head-2", nil, now); len(got) != 0 {
		t.Errorf("new cluster: %+v, want nothing of the old one", got)
	}
	p.withRemoved("head-2", old, now)
	if got := p.withRemoved("", nil, now); len(got) != 0 {
		t.Errorf("no head read: %+v, want nothing kept", got)
	}
}

// TestAProbeThatConnectedWhileUnreadIsReadyAtOnce: the child says it cannot connect once a second while the GCS is
// away, and mvp reads one line a reading (fewer while it backs off during the outage): when the GCS came back, its
// ready line waited behind every error line written meanwhile, one reading each, and the dashboard's lagging view
// stood in for as long again. A reading takes every line already written, the last one saying.
func TestAProbeThatConnectedWhileUnreadIsReadyAtOnce(t *testing.T) {
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "127.0.0.1:1",
		Env: []string{"FAKE_PROBE_LATE_GCS=10"}, ReadTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	// The child writes its lines at once; wait until all are there to be read, as after an outage.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		var err error
		if p.cmd == nil {
			err = p.start()
		}
		n := len(p.lines)
		p.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if n >= 11 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	v, err := p.ReadCluster(context.Background())
	if err != nil {
		t.Fatalf("first reading with the ready line written: %v", err)
	}
	if v.Source != "probe" {
		t.Errorf("first reading from %q, want the probe", v.Source)
	}
}

// TestAnAbandonedReadingIsNoProbeRestartWarning: a reading whose context ends while the child has not answered
// (mvp stopping: SIGTERM during a tick; or a caller that gave up) ends the child, since its late answer would be
// taken for the next reading's. That logged WARN "probe restarted" reason="context canceled" at every clean stop
// of mvp serve, as if the probe had failed: it is said at DEBUG, and a child that stops answering is still a WARN.
func TestAnAbandonedReadingIsNoProbeRestartWarning(t *testing.T) {
	var logs bytes.Buffer
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "127.0.0.1:1",
		Env: []string{"FAKE_PROBE_HANG=1"}, ReadTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer p.Close()
	// Ready first (the child answers the ready line at once), so that its end would be a restart.
	p.mu.Lock()
	err := p.ensure(context.Background())
	p.mu.Unlock()
	if err != nil {
		t.Fatalf("start the fake probe: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := p.Live(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading: %v, want the context's end", err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("an abandoned reading logged a warning:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=DEBUG") {
		t.Errorf("the child's end was not logged at debug:\n%s", logs.String())
	}
}
