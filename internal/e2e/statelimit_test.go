//go:build e2e

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// rayStateLimit is Ray 2.60's default bound on the requests its state API serves at once
// (RAY_STATE_SERVER_MAX_HTTP_REQUEST, dashboard/consts.py): log reads and streams (/api/v0/logs/…), node and
// placement group lists share it, and one past it is answered 429. The test cluster keeps the default.
const rayStateLimit = 100

// chattyDriver prints a numbered line every 200 ms until the file "end" exists in its folder (argv[1]).
const chattyDriver = `import os, sys, time
d = sys.argv[1]
deadline = time.time() + 600
i = 0
while not os.path.exists(os.path.join(d, "end")) and time.time() < deadline:
    print("line", i, flush=True)
    i += 1
    time.sleep(0.2)
print("the last line", flush=True)
`

// startChattyJob submits chattyDriver through the Ray door (as the service's only task) and waits until it runs
// with its driver's node known; end lets it finish.
func startChattyJob(t *testing.T, s *service) (id string, end func()) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "chatty.py")
	writeFile(t, script, chattyDriver)
	end = func() { writeFile(t, filepath.Join(dir, "end"), "") }
	t.Cleanup(end)
	id = submitThroughDoor(t, s, fmt.Sprintf("python3 %s %s", script, dir))
	waitFor(t, 2*time.Minute, "the chatty driver to run", func() (bool, string) {
		task := s.get(id)
		if len(task.Attempts) == 0 {
			return false, string(task.State)
		}
		a := task.Attempts[0]
		return a.DriverNodeID != "" && a.RayStatus == mvp.RayRunning, fmt.Sprintf("%s, ray %s, node %q", task.State, a.RayStatus, a.DriverNodeID)
	})
	return id, end
}

// keptLog reads attempt 1's driver log from task id's folder ("" while it is not there).
func keptLog(s *service, id string) string {
	b, _ := os.ReadFile(filepath.Join(s.sharedRoot, "jobs", id, "attempts", "a01", "driver.log"))
	return string(b)
}

// TestManyFollowsOfALogDoNotCostAnotherJobItsLog: more `mvp logs -f` of a running job than Ray's state API serves
// at once (rayStateLimit; the web page's, the door's tails and every user's follows together). Each follow held
// one of Ray's state API streams for as long as it lasted, so past the limit every other read of Ray's logs was
// refused: a job that ended meanwhile had its log fetch refused at every try, until mvp gave up on it (its log
// lost once Ray pruned the job). And Ray 2.60 keeps a stream's place after its reader left for as long as the
// file does not grow (measured: over 8 minutes, with no end): every follow of an attempt to its end took one of
// Ray's places for good. By default mvp follows by copies (v2.ray.max_log_streams: 0), at most ray.MaxLogCopies
// at once: the ended job's log is kept while the follows go on, every follower gets the followed log whole, no
// stream is opened, and Ray's state API has room once the follows ended.
func TestManyFollowsOfALogDoNotCostAnotherJobItsLog(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{logCopyS: 3600})
	id, end := startChattyJob(t, s)
	calls := rayLogCalls(t, s)

	const followers = rayStateLimit + 10 // past the limit for certain: the loop's own reads take places too
	outs := make([]*servicetest.Buffer, followers)
	errs := make([]error, followers)
	fctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range outs {
		outs[i] = &servicetest.Buffer{}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.c.Logs(fctx, id, 0, true, outs[i]) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	// The follows are under way: Ray's limit worth of followers have lines printed after the last of them began
	// (all of them once Ray's places are not all taken by streams; the end below checks that every one got all).
	mark := fmt.Sprintf("line %d\n", strings.Count(s.logs(id, 1), "\nline ")+25)
	waitFor(t, 3*time.Minute, "the followers to get "+strings.TrimSpace(mark), func() (bool, string) {
		n := 0
		for _, o := range outs {
			if strings.Contains(o.String(), mark) {
				n++
			}
		}
		return n >= rayStateLimit-10, fmt.Sprintf("%d of %d have it", n, followers)
	})

	b := s.submit(spec("ppo", 1, 1, 0))
	s.waitState(b.ID, mvp.StateSucceeded, 2*time.Minute)
	waitFor(t, 90*time.Second, "the log of the job that ended during the follows to be kept", func() (bool, string) {
		task := s.get(b.ID)
		return task.Attempts[0].LogKept && keptLog(s, b.ID) != "", fmt.Sprintf("log_kept %v, %d bytes in the folder",
			task.Attempts[0].LogKept, len(keptLog(s, b.ID)))
	})

	end()
	s.waitState(id, mvp.StateSucceeded, 2*time.Minute)
	wg.Wait()
	whole := s.logs(id, 1)
	if !strings.Contains(whole, "the last line\n") {
		t.Fatalf("the followed job's kept log lacks its last line:\n%s", tail(whole, 500))
	}
	bad := 0
	for i, o := range outs {
		if errs[i] != nil || o.String() != whole {
			if bad++; bad <= 3 {
				t.Errorf("follower %d: err %v, got %d bytes ending %q; want the log whole (%d bytes)", i, errs[i],
					len(o.String()), tail(o.String(), 80), len(whole))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d followers did not get the log whole", bad, followers)
	}
	if n, by := since(calls, rayLogCalls(t, s), "log_stream"); n > 0 {
		t.Errorf("%v log streams opened: %s; want none (v2.ray.max_log_streams: 0)", n, show(by))
	}
	waitFor(t, 30*time.Second, "Ray's state API to have room once the follows ended", func() (bool, string) {
		resp, err := dashboardGet(t, "/api/v0/nodes?limit=1")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("a node list answers %d", resp.StatusCode)
	})
}

// TestALogFetchRefusedByABusyStateAPIIsNotATry: Ray's state API at its limit of requests in progress (others'
// streams: the dashboard's log viewer, `ray logs -f`) refuses a fetch of an ended job's driver log with 429. mvp
// counted each refusal as a failed try, and after ten (under a minute) gave the log up for lost. A busy Ray is
// not a try, as a Ray that is down is not: the tries stay at none while Ray is busy, and once Ray has room the
// log is kept.
func TestALogFetchRefusedByABusyStateAPIIsNotATry(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{logCopyS: 3600})
	id, _ := startChattyJob(t, s)
	a := s.get(id).Attempts[0]

	// Fill Ray's state API with streams of the running job's log, as other clients of Ray would.
	sctx, release := context.WithCancel(context.Background())
	defer release()
	q := url.Values{"node_id": {a.DriverNodeID}, "filename": {"job-driver-" + a.RaySubmissionID + ".log"},
		"lines": {"10"}, "interval": {"1"}}
	var held sync.WaitGroup
	streams := make(chan int, rayStateLimit)
	for range rayStateLimit {
		held.Add(1)
		go func() {
			defer held.Done()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, env.dashboard+"/api/v0/logs/stream?"+q.Encode(), nil)
			if env.rayToken != "" {
				req.Header.Set("Authorization", "Bearer "+env.rayToken)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			streams <- resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	defer held.Wait()
	defer release()
	waitFor(t, 2*time.Minute, "Ray's state API to be full", func() (bool, string) {
		if len(streams) < rayStateLimit {
			return false, fmt.Sprintf("%d streams answered", len(streams))
		}
		resp, err := dashboardGet(t, "/api/v0/nodes?limit=1")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusTooManyRequests, fmt.Sprintf("a node list answers %d", resp.StatusCode)
	})

	b := s.submit(spec("ppo", 1, 1, 0))
	s.waitState(b.ID, mvp.StateSucceeded, 2*time.Minute)
	// Three passes of keepLogs (one every 5 s) have asked Ray for the log since the job ended.
	before := rayLogCalls(t, s)
	waitFor(t, time.Minute, "three refused fetches of the ended job's log", func() (bool, string) {
		n, by := since(before, rayLogCalls(t, s), "log_file")
		return n >= 3, show(by)
	})
	if tries := logTries(t, s, b.ID); tries != 0 {
		t.Errorf("log_tries %d while Ray's state API was full; want 0: a busy Ray is not a try", tries)
	}
	if s.get(b.ID).Attempts[0].LogKept {
		t.Fatal("the log was kept while Ray's state API refused every read: the test did not fill it")
	}

	release()
	held.Wait()
	waitFor(t, 90*time.Second, "the log to be kept once Ray has room", func() (bool, string) {
		return s.get(b.ID).Attempts[0].LogKept && keptLog(s, b.ID) != "", fmt.Sprintf("log_tries %d", logTries(t, s, b.ID))
	})
}

// logTries reads attempt 1's log_tries of task id from the service's database (read-only, beside the service).
func logTries(t *testing.T, s *service, id string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+s.dbPath+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT log_tries FROM attempts WHERE task_id = ? AND attempt_no = 1`, id).Scan(&n); err != nil {
		t.Fatalf("read log_tries: %v", err)
	}
	return n
}
