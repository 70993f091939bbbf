package scheduler_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
)

// TestASubmissionRaysAgentRefusesDoesNotHoldTheQueue: Ray's head relays its job agent's 400 as an HTTP 500 (seen on
// real Ray: TestRaysAgentRefusalIsARefusalNotAnOutage). mvp's client took every 5xx for an outage: that one
// submission stayed SUBMITTING for ever, each pass posted it again first (the oldest live attempt) and read the
// failure as the job server being down, so no other task was ever admitted. Now it is a refusal: the task fails
// (USER_ERROR, as any refusal of the request) and the next task is submitted.
func TestASubmissionRaysAgentRefusesDoesNotHoldTheQueue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, "Traceback (most recent call last):\nRuntimeError: Request failed with status code 400: "+
			"Traceback (most recent call last):\nValueError: something about this one submission\n.")
	}))
	defer srv.Close()
	rc := ray.New(ray.Options{DashboardURL: srv.URL})
	h := newHarness(t)
	bad := h.taskOf(1)
	h.ray.submitErr = func(id string) error {
		if strings.HasPrefix(id, bad.ID) {
			return rc.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: id})
		}
		return nil
	}
	h.tick()
	good := h.taskOf(1)
	for i := 0; i < 20; i++ { // 20 passes, each past the outage's backoff (at most 30 s)
		h.clock.t = h.clock.t.Add(31 * time.Second)
		h.tick()
	}
	b, g := h.get(bad.ID), h.get(good.ID)
	t.Logf("after 20 passes: %s is %s (%d POSTs in all); %s is %s", bad.ID, b.State, h.ray.submits, good.ID, g.State)
	if b.State == mvp.StateSubmitting {
		t.Errorf("the submission Ray answers 500 is still SUBMITTING after 20 passes (want FAILED per the spec)")
	}
	if g.State != mvp.StateSubmitted && g.State != mvp.StateRunning {
		t.Errorf("a task that fits on an idle cluster was never submitted: %s %q", g.State, g.PendingReason)
	}
}
