package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// unreadableLogRay is a Ray whose job logs cannot be read (its dashboard down while the jobs run).
type unreadableLogRay struct{ *servicetest.Ray }

func (unreadableLogRay) CopyJobLog(context.Context, string, string, io.Writer) (int64, error) {
	return 0, errors.New("dial tcp 127.0.0.1:8265: connect: connection refused")
}

// TestALogErrorIsAnErrorAnswer: the log endpoint sets its log's headers (text/plain, X-Mvp-Log-Attempt, the
// X-Mvp-Log-End trailer) before it reads the log; an error found then (Ray's log unreadable: 503; no log kept:
// 404) is answered in the one JSON error shape, without the log's headers, as every other error is: a client that
// read the attempt header or the declared trailer took an error for an attempt's (empty) log.
func TestALogErrorIsAnErrorAnswer(t *testing.T) {
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Ray: unreadableLogRay{ray}})
	raw, err := m.Client().Submit(t.Context(), []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	ray.WaitJob(t, mvp.SubmissionID(task.ID, 1))
	for _, path := range []string{"/logs", "/logs?attempt=1"} {
		resp, body := do(t, m.URL(), "GET", "/api/v2/tasks/"+task.ID+path, "", "", nil)
		var e api.ErrorBody
		if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
			t.Errorf("%s of a log Ray cannot give: %d %s; want 503 in the error shape", path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: an error answered with Content-Type %q; want application/json", path, ct)
		}
		for _, h := range []string{api.LogAttemptHeader, "Trailer"} {
			if v, ok := resp.Header[h]; ok {
				t.Errorf("%s: an error answered with the log's header %s: %q", path, h, v)
			}
		}
		if len(resp.Trailer) != 0 {
			t.Errorf("%s: an error answered with trailers %v", path, resp.Trailer)
		}
	}
}
