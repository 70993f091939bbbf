package ray

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func fakeRay(t *testing.T, token string) (*httptest.Server, *[]string) {
	var seen []string
	jobs := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path)
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(401)
			return
		}
		switch {
		case r.Method == "POST" && r.URL.Path == "/api/jobs/":
			var s mvp.JobSubmission
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &s)
			if s.Entrypoint == "" {
				w.WriteHeader(400)
				io.WriteString(w, "Traceback...\nTypeError: entrypoint is required")
				return
			}
			if jobs[s.SubmissionID] {
				w.WriteHeader(500)
				io.WriteString(w, "Traceback...\nValueError: Job with submission_id "+s.SubmissionID+" already exists. Please use a different submission_id.")
				return
			}
			jobs[s.SubmissionID] = true
			io.WriteString(w, `{"job_id":"`+s.SubmissionID+`","submission_id":"`+s.SubmissionID+`"}`)
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/logs"):
			io.WriteString(w, `{"logs":"hello\n"}`)
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/api/jobs/"):
			id := strings.TrimPrefix(r.URL.Path, "/api/jobs/")
			if !jobs[id] {
				w.WriteHeader(404)
				io.WriteString(w, "Job "+id+" does not exist")
				return
			}
			io.WriteString(w, `{"submission_id":"`+id+`","job_id":"02000000","status":"FAILED","message":"boom","error_type":"JOB_ENTRYPOINT_COMMAND_ERROR","driver_exit_code":3,"driver_node_id":"abc","start_time":1700000000000,"end_time":1700000005000}`)
		case r.Method == "DELETE":
			w.WriteHeader(500)
			io.WriteString(w, "RuntimeError: Attempted to delete job 'x', but it is in a non-terminal state RUNNING.")
		case r.URL.Path == "/api/version":
			io.WriteString(w, `{"ray_version":"2.60.0"}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestClientMapsRayAnswers(t *testing.T) {
	srv, _ := fakeRay(t, "sekret-token-123")
	c := New(Options{DashboardURL: srv.URL, Token: "sekret-token-123"})
	ctx := context.Background()
	s := &mvp.JobSubmission{Entrypoint: "python3 -m x", SubmissionID: "mvp2-ppo-20251223-143201-7f3a--a01"}
	if err := c.SubmitJob(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := c.SubmitJob(ctx, s); !errors.Is(err, mvp.ErrJobExists) {
		t.Errorf("duplicate: %v", err)
	}
	if err := c.SubmitJob(ctx, &mvp.JobSubmission{SubmissionID: "y"}); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("refused payload: %v", err)
	}
	info, err := c.GetJob(ctx, s.SubmissionID)
	if err != nil || info.Status != mvp.RayFailed || info.JobID != "02000000" || *info.DriverExitCode != 3 {
		t.Errorf("get: %+v %v", info, err)
	}
	if _, err := c.GetJob(ctx, "nope"); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if logs, err := c.JobLogs(ctx, s.SubmissionID); err != nil || logs != "hello\n" {
		t.Errorf("logs %q %v", logs, err)
	}
	if err := c.DeleteJob(ctx, s.SubmissionID); mvp.ErrorCode(err) != mvp.CodeConflict {
		t.Errorf("delete running: %v", err)
	}
	if v, err := c.Version(ctx); err != nil || v != "2.60.0" {
		t.Errorf("version %q %v", v, err)
	}
}

func TestClientTokenAndUnavailable(t *testing.T) {
	srv, _ := fakeRay(t, "right-token-123456")
	wrong := New(Options{DashboardURL: srv.URL, Token: "wrong-token-abcdef"})
	_, err := wrong.GetJob(context.Background(), "x")
	if !errors.Is(err, mvp.ErrRayUnavailable) || strings.Contains(err.Error(), "wrong-token-abcdef") {
		t.Errorf("wrong token: %v", err)
	}
	srv.Close()
	down := New(Options{DashboardURL: srv.URL, Token: "right-token-123456", Timeout: time.Second})
	err = down.SubmitJob(context.Background(), &mvp.JobSubmission{Entrypoint: "x", SubmissionID: "y"})
	if !errors.Is(err, mvp.ErrRayUnavailable) || strings.Contains(err.Error(), "right-token") {
		t.Errorf("down: %v", err)
	}
}

func python(t *testing.T) string {
	for _, p := range []string{"python3"} {
		if _, err := os.Stat("/usr/bin/" + p); err == nil {
			return p
		}
	}
	return "python3"
}

func TestProbeReadsAndRestarts(t *testing.T) {
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "x",
		Env: []string{"FAKE_PROBE_DIE_AFTER=2"}, ReadTimeout: 3 * time.Second})
	defer p.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		v, err := p.ReadCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Source != "probe" || len(v.Nodes) != 1 || v.Nodes[0].Available["GPU"] != 2 || v.Groups[0].CreatorJobID != "01000000" {
			t.Fatalf("view %+v", v)
		}
	}
	// The child exited after two answers: the next reading fails or restarts it; within a few tries it answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := p.ReadCluster(ctx); err == nil {
			break
		} else if !errors.Is(err, mvp.ErrRayUnavailable) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("probe never came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestProbeTimeoutAndFallback(t *testing.T) {
	p := NewProbe(ProbeOptions{Python: python(t), Script: "testdata/fakeprobe.py", Address: "x",
		Env: []string{"FAKE_PROBE_HANG=1"}, ReadTimeout: 500 * time.Millisecond})
	defer p.Close()
	if _, err := p.ReadCluster(context.Background()); !errors.Is(err, mvp.ErrRayUnavailable) {
		t.Errorf("hung probe: %v", err)
	}
	p.o.Fallback = func(context.Context) (*mvp.ClusterView, error) {
		return &mvp.ClusterView{Source: "dashboard"}, nil
	}
	v, err := p.ReadCluster(context.Background())
	if err != nil || v.Source != "dashboard" {
		t.Errorf("fallback: %+v %v", v, err)
	}
}

// calls records what the client tells its Observer.
type calls struct {
	mvp.NopObserver
	mu  sync.Mutex
	got []string
}

func (c *calls) RayCall(endpoint, outcome string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		outcome += " (no duration)"
	}
	c.got = append(c.got, endpoint+" "+outcome)
}

func TestClientObservesEveryCallByEndpointAndOutcome(t *testing.T) {
	srv, _ := fakeRay(t, "sekret-token-123")
	obs := &calls{}
	c := New(Options{DashboardURL: srv.URL, Token: "sekret-token-123", Observer: obs})
	ctx := context.Background()
	s := &mvp.JobSubmission{Entrypoint: "python3 -m x", SubmissionID: "mvp2-ppo-20251223-143201-7f3a--a01"}
	c.SubmitJob(ctx, s)
	c.SubmitJob(ctx, s)
	c.SubmitJob(ctx, &mvp.JobSubmission{SubmissionID: "y"})
	c.GetJob(ctx, s.SubmissionID)
	c.GetJob(ctx, "nope")
	c.JobLogs(ctx, s.SubmissionID)
	c.StopJob(ctx, s.SubmissionID)
	c.DeleteJob(ctx, s.SubmissionID)
	c.Version(ctx)
	New(Options{DashboardURL: srv.URL, Token: "wrong-token-abcdef", Observer: obs}).GetJob(ctx, "x")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c.GetJob(canceled, "x")
	srv.Close()
	New(Options{DashboardURL: srv.URL, Timeout: time.Second, Observer: obs}).SubmitJob(ctx, s)
	want := []string{"submit_job ok", "submit_job exists", "submit_job refused", "get_job ok", "get_job not_found",
		"job_logs ok", "stop_job not_found", "delete_job conflict", "version ok", "get_job unauthorized",
		"get_job canceled", "submit_job unreachable"}
	if strings.Join(obs.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(obs.got, "\n"), strings.Join(want, "\n"))
	}
}
