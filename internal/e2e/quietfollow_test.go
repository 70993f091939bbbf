//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// rayLogCalls returns mvp's count of calls to Ray's log endpoints by "endpoint outcome" (from
// mvp_ray_request_duration_seconds, which counts a call when it has ended): log_stream is a follow's stream,
// log_file and job_logs a whole copy of the log.
func rayLogCalls(t *testing.T, s *service) map[string]float64 {
	t.Helper()
	code, m := servicetest.Scrape(t, s.c.Addr, s.token)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	out := map[string]float64{}
	for _, se := range m.Series("mvp_ray_request_duration_seconds") {
		switch ep := servicetest.Label(se, "endpoint"); ep {
		case "log_stream", "log_file", "job_logs":
			out[ep+" "+servicetest.Label(se, "outcome")] += float64(se.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// since returns the calls of now that were not in before, of the endpoints named, keyed "endpoint outcome".
func since(before, now map[string]float64, endpoints ...string) (total float64, by map[string]float64) {
	by = map[string]float64{}
	for k, v := range now {
		ep, _, _ := strings.Cut(k, " ")
		for _, e := range endpoints {
			if ep == e && v-before[k] > 0 {
				by[k] = v - before[k]
				total += v - before[k]
			}
		}
	}
	return total, by
}

func show(by map[string]float64) string {
	var parts []string
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s: %v", k, v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// quietDriver is a driver that makes its log file empty, says so (the file "emptied" in its folder), prints
// nothing until the file "speak" exists, then one line, and nothing more until "end" exists, then a last line.
// Ray 2.60's job supervisor writes "Running entrypoint for job …" into the driver log, so a driver that is merely
// quiet still has a log whose first chunk Ray's state API sends at once; the driver empties its own log (its
// stdout, which the supervisor opened for appending: later lines land at the start) to give the stream the case
// its client must wait out: a running job's log with no first chunk yet. It empties it only once that line is in
// it: the supervisor writes the line through a buffered file that it flushes when it closes it, after it has
// started the driver (job_supervisor.py, _exec_entrypoint), so on a busy machine the line can land after the
// driver's first steps (a CI run saw it land after the emptying).
const quietDriver = `import os, sys, time
d = sys.argv[1]
deadline = time.time() + 600
while time.time() < deadline:
    with open("/proc/self/fd/1", "rb") as f:
        if b"Running entrypoint for job " in f.read():
            break
    time.sleep(0.05)
os.ftruncate(1, 0)
open(os.path.join(d, "emptied"), "w").close()
def wait(name):
    while not os.path.exists(os.path.join(d, name)) and time.time() < deadline:
        time.sleep(0.1)
wait("speak")
print("the first line, after a quiet while", flush=True)
wait("end")
print("the last line", flush=True)
`

// TestAFollowOfAQuietRunningLogIsOneStreamAndGetsItsFirstLine: `mvp logs -f` of a running job whose driver log is
// empty for 20 s (its driver prints nothing; see quietDriver), then gets a line while the job runs on. Ray 2.60's
// state API sends a followed log's HTTP headers only with the file's first chunk, so a follow client with a
// header timeout failed the stream after it and fell back to a whole copy, again at every poll. mvp's follow has
// none: while the log is empty no call to Ray's log endpoints ends (the one stream stays open: none failed, none
// timed out) and none copies the log whole; the line arrives through that stream while the job runs; and when the
// job ends, the follow has opened one stream in all, which ended only by the attempt's end (ok or canceled).
func TestAFollowOfAQuietRunningLogIsOneStreamAndGetsItsFirstLine(t *testing.T) {
	waitIdle(t)
	// The loop's running copies: one when it first sees the job run (waited for below), then none for an hour.
	s := startService(t, serviceOpts{logCopyS: 3600, logStreams: 4})
	dir := t.TempDir()
	script := filepath.Join(dir, "quiet.py")
	writeFile(t, script, quietDriver)
	gate := func(name string) { writeFile(t, filepath.Join(dir, name), "") }
	t.Cleanup(func() { gate("speak"); gate("end") }) // a failed test leaves no driver waiting

	id := submitThroughDoor(t, s, fmt.Sprintf("python3 %s %s", script, dir))
	waitFor(t, 2*time.Minute, "the driver to run and empty its log", func() (bool, string) {
		_, err := os.Stat(filepath.Join(dir, "emptied"))
		task := s.get(id)
		if len(task.Attempts) == 0 {
			return false, fmt.Sprintf("%s, no attempt", task.State)
		}
		a := task.Attempts[0]
		return err == nil && a.DriverNodeID != "" && a.RayStatus == mvp.RayRunning,
			fmt.Sprintf("%s, ray %s, node %q, emptied: %v", task.State, a.RayStatus, a.DriverNodeID, err == nil)
	})
	// The loop copies a running log on the pass after the one that saw it RUNNING (of an empty file: the file,
	// then the job server's copy): wait until that copy is in the task folder, so that the copies counted below
	// are the follow's.
	kept := filepath.Join(s.sharedRoot, "jobs", id, "attempts", "a01", "driver.log")
	waitFor(t, time.Minute, "the loop's copy of the running log", func() (bool, string) {
		_, err := os.Stat(kept)
		_, by := since(map[string]float64{}, rayLogCalls(t, s), "log_file", "job_logs")
		return err == nil, fmt.Sprintf("%v; copies %s", err, show(by))
	})
	before := rayLogCalls(t, s)
	out := &servicetest.Buffer{}
	done := make(chan error, 1)
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	go func() { done <- s.c.Logs(fctx, id, 0, true, out) }()

	// The quiet while: 20 s (twice a 10 s header timeout, as mvp's Ray calls have by default), checked throughout.
	const quiet = 20 * time.Second
	for time.Since(began) < quiet {
		now := rayLogCalls(t, s)
		if n, by := since(before, now, "log_stream"); n > 0 {
			t.Fatalf("%.1f s into the follow of an empty log, %v calls to Ray's log stream ended: %s; want the one "+
				"stream open until the job ends", time.Since(began).Seconds(), n, show(by))
		}
		if n, by := since(before, now, "log_file", "job_logs"); n > 0 {
			t.Fatalf("%.1f s into the follow of an empty log, the log was copied whole %v times: %s; want none (the "+
				"follow is one stream)", time.Since(began).Seconds(), n, show(by))
		}
		select {
		case err := <-done:
			t.Fatalf("the follow ended (%v) %.1f s in, while the job runs; it got %q", err, time.Since(began).Seconds(), out.String())
		default:
		}
		if task := s.get(id); task.State.Terminal() {
			t.Fatalf("the job ended (%s) during the quiet while: nothing was followed", task.State)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got := out.String(); got != "" {
		t.Errorf("the follow of an empty log wrote %q", got)
	}

	gate("speak")
	waitFor(t, time.Minute, "the first line to reach the follower", func() (bool, string) {
		return strings.Contains(out.String(), "the first line, after a quiet while\n"), fmt.Sprintf("%q", out.String())
	})
	if task := s.get(id); task.State.Terminal() {
		t.Fatalf("the job ended (%s) before its first line was followed", task.State)
	}
	now := rayLogCalls(t, s)
	if n, by := since(before, now, "log_stream"); n > 0 {
		t.Errorf("when the first line arrived, %v calls to Ray's log stream had ended: %s; want the line from the "+
			"one stream, still open", n, show(by))
	}
	if n, by := since(before, now, "log_file", "job_logs"); n > 0 {
		t.Errorf("when the first line arrived, the log had been copied whole %v times: %s; want none", n, show(by))
	}

	gate("end")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the follow: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the follow did not end with the job")
	}
	s.waitState(id, mvp.StateSucceeded, time.Minute)
	if got := out.String(); got != "the first line, after a quiet while\nthe last line\n" {
		t.Errorf("followed log %q; want the two lines once each", got)
	}
	after := rayLogCalls(t, s)
	n, by := since(before, after, "log_stream")
	if n != 1 || by["log_stream "+mvp.OutcomeOK]+by["log_stream "+mvp.OutcomeCanceled] != 1 {
		t.Errorf("the follow's calls to Ray's log stream: %s; want one, ended ok or by the attempt's end (canceled)", show(by))
	}
	copies, cby := since(before, after, "log_file", "job_logs")
	t.Logf("followed for %.1f s: streams %s, whole copies %s", time.Since(began).Seconds(), show(by), show(cby))
	if copies > 2 {
		t.Errorf("%v whole copies of the log in the follow: %s; want at most 2 after the job ended (the follower's "+
			"rest, the kept log)", copies, show(cby))
	}
}
