//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
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
