package ray

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// Ray's job server refuses a duplicate submission id with a traceback ending "ValueError: Job with submission_id X
// already exists" — 500 when the head relays the agent's answer (ray-facts.md), 400 when the job manager answers
// itself (ray-jobs-protocol.md: "Real Ray answers a duplicate ID ... with 400"). Either way the job exists.
func TestDuplicateSubmissionAnswered400IsErrJobExists(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		io.WriteString(w, "Traceback (most recent call last):\nValueError: Job with submission_id t--a01 already exists. Please use a different submission_id.")
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	err := c.SubmitJob(context.Background(), &mvp.JobSubmission{Entrypoint: "x", SubmissionID: "t--a01"})
	if !errors.Is(err, mvp.ErrJobExists) {
		t.Fatalf("duplicate answered 400 maps to %v; want ErrJobExists (the loop fails the task as USER_ERROR while the job runs)", err)
	}
}

// A 404 that is not Ray's "Job X does not exist" (an ingress or proxy in front of the dashboard while the head
// pod is not ready) must not read as "Ray forgot the job": the loop concludes such attempts INFRA and submits a
// new attempt while the first still runs.
func TestA404ThatIsNotRaysIsNotJobNotFound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		io.WriteString(w, "<html><body><h1>404 Not Found</h1>default backend - 404</body></html>")
	}))
	defer srv.Close()
	c := New(Options{DashboardURL: srv.URL})
	_, err := c.GetJob(context.Background(), "t--a01")
	if errors.Is(err, mvp.ErrJobNotFound) {
		t.Fatalf("a proxy's 404 page maps to ErrJobNotFound: %v", err)
	}
	if !errors.Is(err, mvp.ErrRayUnavailable) {
		t.Fatalf("a proxy's 404 page: %v, want ErrRayUnavailable", err)
	}
}

// When Ray's job server cannot be reached, or something else answers at its address, the error names the setting
// to change: the top-level `address` of dev.yaml (it named "v2.ray.address", which is not a key: set, it stops
// the service's start).
func TestUnreachableNamesTheAddressSetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }))
	c := New(Options{DashboardURL: srv.URL})
	_, err := c.GetJob(context.Background(), "t--a01")
	srv.Close()
	_, err2 := New(Options{DashboardURL: srv.URL}).GetJob(context.Background(), "t--a01") // nothing listens now
	for _, e := range []error{err, err2} {
		if e == nil || strings.Contains(e.Error(), "v2.ray.address") || !strings.Contains(e.Error(), "`address`") {
			t.Errorf("%v; want it to name `address` in dev.yaml", e)
		}
	}
}

// A 429 (Too Many Requests) or 408 (Request Timeout) from Ray's dashboard or a proxy in front of it says the request
// was not taken now, not that the submission is wrong. Read as Ray's refusal, the loop failed the task as USER_ERROR
// at its first submit (a task lost to a passing overload); as Ray unavailable, the loop looks the job up and, not
// finding it, submits it again with the same id at the next pass.
func TestA429Or408IsNoRefusal(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusRequestTimeout} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, http.StatusText(code))
		}))
		c := New(Options{DashboardURL: srv.URL})
		err := c.SubmitJob(context.Background(), &mvp.JobSubmission{Entrypoint: "x", SubmissionID: "t--a01"})
		srv.Close()
		if !errors.Is(err, mvp.ErrRayUnavailable) || mvp.ErrorCode(err) == mvp.CodeInvalid {
			t.Errorf("a submit answered %d: %v, want ErrRayUnavailable (no verdict on the job)", code, err)
		}
	}
}
