package ray

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestCopyJobLogStreamsTheFileByteForByte: with the driver's node known, the log comes from Ray's state API as
// the file holds it, bytes that are not UTF-8 included (the job server's /logs answers 500 for them: walk-through
// 16); with the node unknown, its agent gone, or no bytes sent (Ray 2.60's answer for a file that is not there),
// the job server's copy is read; another failure of the state API is Ray unavailable, without that fallback; a
// file cut short is an error.
func TestCopyJobLogStreamsTheFileByteForByte(t *testing.T) {
	raw := []byte("step 1\n\xff\xfe not utf-8 \x1b[31mred\x1b[0m\r50%\r100%\n")
	var fileCalls, logsCalls int
	mode := "ok"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v0/logs/file":
			fileCalls++
			q := r.URL.Query()
			if q.Get("node_id") != "node-1" || q.Get("filename") != "job-driver-job-a01.log" || q.Get("lines") != "-1" {
				t.Errorf("state API query %q", r.URL.RawQuery)
			}
			if r.Header.Get("Authorization") != "Bearer tok" {
				t.Errorf("the state API call lacks the token: %q", r.Header.Get("Authorization"))
			}
			switch mode {
			case "ok":
				w.Write(raw)
			case "500":
				http.Error(w, "500 Internal Server Error\n\nServer got itself in trouble", http.StatusInternalServerError)
			case "gone": // Ray 2.60, the node's agent gone (its node died)
				http.Error(w, "Agent for node id: node-1 doesn't exist.", http.StatusInternalServerError)
			case "empty": // Ray 2.60, a file that is not on the node: 200 with nothing
			case "cut":
				w.Header().Set("Content-Length", "1000")
				w.Write(raw)
			}
		case "/api/jobs/job-a01/logs":
			logsCalls++
			w.Write([]byte(`{"logs": "from the job server\n"}`))
		case "/api/jobs/job-a01":
			if mode == "job server down" {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"submission_id": "job-a01", "status": "SUCCEEDED", "driver_node_id": "node-1"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL, Token: "tok"})
	ctx := context.Background()

	var b bytes.Buffer
	n, err := c.CopyJobLog(ctx, "job-a01", "node-1", &b)
	if err != nil || n != int64(len(raw)) || !bytes.Equal(b.Bytes(), raw) {
		t.Errorf("copy: %d bytes, err %v, got %q, want %q", n, err, b.Bytes(), raw)
	}
	if logsCalls != 0 {
		t.Errorf("the job server's copy was read too")
	}

	// No driver node recorded: Ray's job says where it is, and the file is read there.
	b.Reset()
	if _, err := c.CopyJobLog(ctx, "job-a01", "", &b); err != nil || !bytes.Equal(b.Bytes(), raw) || fileCalls != 2 || logsCalls != 0 {
		t.Errorf("no driver node: %q, err %v, %d state API calls, %d job server reads", b.String(), err, fileCalls, logsCalls)
	}
	// … and when Ray cannot say, the copy fails: the job server would not tell more, and it holds a log whole.
	mode = "job server down"
	b.Reset()
	if _, err := c.CopyJobLog(ctx, "job-a01", "", &b); !errors.Is(err, mvp.ErrRayUnavailable) || logsCalls != 0 {
		t.Errorf("no driver node, Ray unavailable: err %v, %d job server reads; want Ray unavailable and none", err, logsCalls)
	}
	mode = "ok"

	mode = "500"
	b.Reset()
	before := logsCalls
	if _, err := c.CopyJobLog(ctx, "job-a01", "node-1", &b); !errors.Is(err, mvp.ErrRayUnavailable) || logsCalls != before {
		t.Errorf("state API failing: err %v, %d job server reads; want Ray unavailable and no fallback (the job "+
			"server's copy is read by the same agent, whole)", err, logsCalls-before)
	}
	for _, m := range []string{"gone", "empty"} {
		mode = m
		b.Reset()
		if _, err := c.CopyJobLog(ctx, "job-a01", "node-1", &b); err != nil || b.String() != "from the job server\n" {
			t.Errorf("state API %s: %q, err %v; want the job server's copy", m, b.String(), err)
		}
	}

	mode = "cut"
	b.Reset()
	_, err = c.CopyJobLog(ctx, "job-a01", "node-1", &b)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a file cut short: err %v, want one saying so", err)
	}
}
