//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestADriverLogThatIsNotUTF8IsKeptByteForByte: a driver that prints bytes that are not UTF-8 (a binary dump, a
// library's progress bar in another encoding). Ray's job server answers 500 for such a log (it decodes the whole
// file as UTF-8), so mvp never kept it and lost it once the job left Ray (walk-through 16). mvp now copies the
// file from the driver's node through Ray's state API: the kept log and `mvp logs` hold the very bytes printed.
func TestADriverLogThatIsNotUTF8IsKeptByteForByte(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	entry := `python3 -c "import sys; sys.stdout.buffer.write(b'before\n\xff\xfe not utf-8 \x1b[31mred\x1b[0m\r50%\r100%\nafter\n')"`
	want := []byte("before\n\xff\xfe not utf-8 \x1b[31mred\x1b[0m\r50%\r100%\nafter\n")
	id := submitThroughDoor(t, s, entry)
	s.waitState(id, mvp.StateSucceeded, 120*time.Second)
	waitFor(t, 60*time.Second, "the driver log to be kept", func() (bool, string) {
		a := s.get(id).Attempts[0]
		return a.LogKept, "log_tries " + itoa(a.LogTries)
	})
	got := s.logs(id, 1)
	if !strings.Contains(got, string(want)) {
		t.Errorf("the kept log does not hold the bytes printed:\n got %q\nwant %q within it", got, want)
	}
}

// TestAFollowedLogIsOneStreamFromRay: `mvp logs -f` of a running job on the real cluster. The follower copied
// the whole driver log from Ray at every poll (a second), so Ray's agent read a log of hundreds of MB again every
// second for each follower; it now follows it in one stream of Ray's state API (`/api/v0/logs/stream`). Each line
// arrives while the job runs, the follow ends with the job holding every byte once, and mvp's calls to Ray's log
// endpoints in that time are the stream and a few copies (the loop's running copy, the kept log),
// not one per poll.
func TestAFollowedLogIsOneStreamFromRay(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{logCopyS: 60, logStreams: 4}) // the loop's own running copies: once a minute here
	// 24 s of lines: the follow begins once a poll has seen line 0 (a pass has recorded the driver's node, then a
	// read through Ray's state API), which can take seconds on a loaded machine; it must still last a while.
	entry := `python3 -c "import time
for i in range(48):
    print('line', i, flush=True)
    time.sleep(0.5)"`
	id := submitThroughDoor(t, s, entry)
	waitFor(t, 90*time.Second, "the job's first line", func() (bool, string) {
		task := s.get(id)
		if len(task.Attempts) == 0 || task.Attempts[0].DriverNodeID == "" {
			return false, "no driver node yet"
		}
		var b bytes.Buffer
		err := s.c.Logs(ctxT(t), id, 1, false, &b)
		return strings.Contains(b.String(), "line 0\n"), fmt.Sprintf("state %s, logs: %v", task.State, err)
	})
	calls := func() (stream, copies float64) {
		code, m := servicetest.Scrape(t, s.c.Addr, s.token)
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		for _, se := range m.Series("mvp_ray_request_duration_seconds") {
			switch servicetest.Label(se, "endpoint") {
			case "log_stream":
				stream += float64(se.GetHistogram().GetSampleCount())
			case "log_file", "job_logs":
				copies += float64(se.GetHistogram().GetSampleCount())
			}
		}
		return stream, copies
	}
	stream0, copies0 := calls()
	out := &servicetest.Buffer{}
	done := make(chan error, 1)
	began := time.Now()
	fctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { done <- s.c.Logs(fctx, id, 0, true, out) }()
	waitFor(t, 60*time.Second, "line 10 to arrive while the job runs", func() (bool, string) {
		return strings.Contains(out.String(), "line 10\n"), fmt.Sprintf("%d bytes so far", len(out.String()))
	})
	if st := s.get(id).State; st.Terminal() {
		t.Fatalf("the job ended (%s) before its lines were followed: nothing was followed live", st)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the follow: %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("the follow did not end with the job")
	}
	followed := time.Since(began)
	var want strings.Builder
	for i := range 48 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := out.String(); !strings.Contains(got, want.String()) || strings.Count(got, "line 0\n") != 1 {
		t.Errorf("followed log:\n%s\nwant every line once, in order", got)
	}
	stream1, copies1 := calls()
	polls := followed.Seconds() // LogPoll is 1 s: one copy a poll before
	t.Logf("followed for %.1f s: %v streams, %v whole copies", followed.Seconds(), stream1-stream0, copies1-copies0)
	if stream1-stream0 < 1 {
		t.Errorf("no stream of Ray's state API was opened for the follow")
	}
	if copies1-copies0 > 3 || polls < 6 {
		t.Errorf("%v whole copies of the log in a follow of %.1f s: want the stream and at most 3 (the loop's running "+
			"copy, the kept log, the follower's last read)", copies1-copies0, polls)
	}
}

// TestALogReadBeforeItsNodeIsKnownIsTheFile: a log read before mvp recorded the driver's node (`mvp logs` right
// after the driver started: the loop records the node at its next pass) was the job server's copy, which Ray
// decodes whole in memory: 500 for a byte that is not UTF-8, and a 220 MB log took `mvp serve` to about 1 GB in
// that window (measured by hand). The client now asks Ray for the job's driver node and reads the file.
func TestALogReadBeforeItsNodeIsKnownIsTheFile(t *testing.T) {
	waitIdle(t)
	ctx := ctxT(t)
	sid := "e2e-node-unknown-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	entry := `python3 -c "import sys; sys.stdout.buffer.write(b'before\n\xff not utf-8\nafter\n')"`
	if err := rayc.SubmitJob(ctx, &mvp.JobSubmission{SubmissionID: sid, Entrypoint: entry,
		EntrypointResources: map[string]float64{"worker_node": 1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rayc.DeleteJob(context.Background(), sid) })
	waitFor(t, 90*time.Second, "the job to end", func() (bool, string) {
		info, err := rayc.GetJob(ctx, sid)
		if err != nil {
			return false, err.Error()
		}
		return info.Status.Terminal(), string(info.Status)
	})
	var b bytes.Buffer
	if _, err := rayc.CopyJobLog(ctx, sid, "", &b); err != nil {
		t.Fatalf("copy of the log without its node: %v", err)
	}
	if want := "before\n\xff not utf-8\nafter\n"; !strings.Contains(b.String(), want) {
		t.Errorf("copy without its node: %q, want %q within it", b.String(), want)
	}
}

// submitThroughDoor submits entry as a Ray job through mvp's Ray-Jobs door and returns its task, the service's
// only one.
func submitThroughDoor(t *testing.T, s *service, entry string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"entrypoint": entry})
	req, _ := http.NewRequest(http.MethodPost, s.c.Addr+"/ray/api/jobs/", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submit through the door: %d %s", resp.StatusCode, b)
	}
	page, _, err := s.c.List(ctxT(t), "", "", 10, "")
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("list: %v (err %v), want the one task", page, err)
	}
	return page.Tasks[0].ID
}
