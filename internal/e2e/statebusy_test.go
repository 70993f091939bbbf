//go:build e2e

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAStateAPIRaysOtherClientsFilledIsNotALogTryAndIsInTheHealth: Ray's state API at its limit of requests in
// progress (others' streams: the dashboard's log viewer, `ray logs -f`, leaked places) refuses a fetch of an ended
// job's driver log with 429. mvp counted each refusal as a failed try, and after ten (under a minute) gave the log
// up for lost. A busy Ray is not a try, as a Ray that is down is not: the tries stay at none while Ray is busy,
// /healthz says so once it has lasted a minute (ray_logs), and once Ray has room the log is kept and the health is
// ok again. On a cluster of the test's own whose head allows 3 such requests (RAY_STATE_SERVER_MAX_HTTP_REQUEST),
// held by the test: the shared cluster's 100 could not be held full reliably once other tests had used it.
func TestAStateAPIRaysOtherClientsFilledIsNotALogTryAndIsInTheHealth(t *testing.T) {
	const limit = 3
	c := startOwnCluster(t, 1, 2, fmt.Sprintf("RAY_STATE_SERVER_MAX_HTTP_REQUEST=%d", limit))
	s := startService(t, serviceOpts{dashboard: c.dashboard, gcs: c.gcs, logCopyS: 3600})
	id, _ := startChattyJob(t, s)
	a := s.get(id).Attempts[0]
	// Not http.DefaultClient: the harness bounds its calls to a minute, which ended the streams held below (and
	// with them the full state API) part way through.
	hc := &http.Client{}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.dashboard+path, nil)
		if err != nil {
			return nil, err
		}
		if env.rayToken != "" {
			req.Header.Set("Authorization", "Bearer "+env.rayToken)
		}
		return hc.Do(req)
	}

	// Fill Ray's state API with streams of the running job's log, as other clients of Ray would.
	sctx, release := context.WithCancel(context.Background())
	defer release()
	q := url.Values{"node_id": {a.DriverNodeID}, "filename": {"job-driver-" + a.RaySubmissionID + ".log"},
		"lines": {"10"}, "interval": {"1"}}
	var held sync.WaitGroup
	streams := make(chan int, limit)
	for range limit {
		held.Add(1)
		go func() {
			defer held.Done()
			resp, err := get(sctx, "/api/v0/logs/stream?"+q.Encode())
			if err != nil {
				return
			}
			defer resp.Body.Close()
			streams <- resp.StatusCode
			_, err = io.Copy(io.Discard, resp.Body)
			if sctx.Err() == nil {
				t.Errorf("a stream held by the test ended before the test let it go: %v", err)
			}
		}()
	}
	defer held.Wait()
	defer release()
	waitFor(t, time.Minute, "Ray's state API to be full", func() (bool, string) {
		if len(streams) < limit {
			return false, fmt.Sprintf("%d streams answered", len(streams))
		}
		resp, err := get(ctxT(t), "/api/v0/nodes?limit=1")
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
		_, by := since(before, rayLogCalls(t, s), "log_file")
		return by["log_file "+mvp.OutcomeBusy] >= 3, show(by)
	})
	if tries := logTries(t, s, b.ID); tries != 0 {
		t.Errorf("log_tries %d while Ray's state API was full; want 0: a busy Ray is not a try", tries)
	}
	if s.get(b.ID).Attempts[0].LogKept {
		t.Fatal("the log was kept while Ray's state API refused every read: the test did not fill it")
	}
	var why string
	waitFor(t, 2*time.Minute, "/healthz to say Ray's state API refuses log reads", func() (bool, string) {
		h, _ := healthz(t, s)
		why = h.RayLogs
		_, by := since(before, rayLogCalls(t, s), "log_file")
		return h.Status == "degraded" && why != "", fmt.Sprintf("%+v; log kept %v, %d streams held, mvp's log reads %s",
			h, s.get(b.ID).Attempts[0].LogKept, len(streams), show(by))
	})
	for _, want := range []string{"RAY_STATE_SERVER_MAX_HTTP_REQUEST", "not kept"} {
		if !strings.Contains(why, want) {
			t.Errorf("ray_logs %q does not say %q", why, want)
		}
	}
	if tries := logTries(t, s, b.ID); tries != 0 {
		t.Errorf("log_tries %d after a minute of a full state API; want 0", tries)
	}

	release()
	held.Wait()
	waitFor(t, 90*time.Second, "the log to be kept once Ray has room", func() (bool, string) {
		return s.get(b.ID).Attempts[0].LogKept && keptLog(s, b.ID) != "", fmt.Sprintf("log_tries %d", logTries(t, s, b.ID))
	})
	waitFor(t, 30*time.Second, "/healthz to be ok again", func() (bool, string) {
		h, _ := healthz(t, s)
		return h.Status == "ok" && h.RayLogs == "", fmt.Sprintf("%+v", h)
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
