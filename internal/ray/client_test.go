package ray

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
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
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/stop"):
			id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/jobs/"), "/stop")
			if !jobs[id] {
				w.WriteHeader(404) // Ray's answer for an unknown job (ray-facts.md)
				io.WriteString(w, "Job "+id+" does not exist")
				return
			}
			io.WriteString(w, `{"stopped":true}`)
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

// TestAnAnswerThatIsNotRaysNamesTheAddress: an address where something else answers 200 with a page (a login
// page, a proxy's portal) made mvp serve log "ray is unavailable (undecodable answer: invalid character '<' looking
// for beginning of value)", naming no setting. It names `address` and what answered. Found by running mvp serve
// against such a server.
func TestAnAnswerThatIsNotRaysNamesTheAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Login required</body></html>")
	}))
	defer srv.Close()
	_, err := New(Options{DashboardURL: srv.URL}).ClusterStatus(context.Background())
	if !errors.Is(err, mvp.ErrRayUnavailable) || !strings.Contains(err.Error(), "`address`") ||
		!strings.Contains(err.Error(), "Login required") {
		t.Errorf("a page where Ray's answer should be: %v", err)
	}
}

// TestADashboardSlowerThanTheTimeoutNamesTheTimeout: a dashboard that answers after request_timeout_s was
// reported as "is Ray's dashboard running at …? `address` in dev.yaml", which names the wrong setting when it
// runs but is slow (a head under load): the message names v2.ray.request_timeout_s too (the messages audit).
func TestADashboardSlowerThanTheTimeoutNamesTheTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	c := New(Options{DashboardURL: srv.URL, Timeout: 100 * time.Millisecond})
	_, err := c.ClusterStatus(context.Background())
	if !errors.Is(err, mvp.ErrRayUnavailable) || !strings.Contains(err.Error(), "v2.ray.request_timeout_s") ||
		!strings.Contains(err.Error(), "`address`") {
		t.Errorf("a dashboard slower than the timeout: %v", err)
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
	c.StopJob(ctx, "nope")
	c.DeleteJob(ctx, s.SubmissionID)
	c.Version(ctx)
	c.UploadPackage(ctx, "gcs://_ray_pkg_0123456789abcdef.zip", []byte("PK")) // the fake has no package route: 404
	New(Options{DashboardURL: srv.URL, Token: "wrong-token-abcdef", Observer: obs}).GetJob(ctx, "x")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c.GetJob(canceled, "x")
	srv.Close()
	New(Options{DashboardURL: srv.URL, Timeout: time.Second, Observer: obs}).SubmitJob(ctx, s)
	want := []string{"submit_job ok", "submit_job exists", "submit_job refused", "get_job ok", "get_job not_found",
		"job_logs ok", "stop_job ok", "stop_job not_found", "delete_job conflict", "version ok", "upload_package refused", "get_job unauthorized",
		"get_job canceled", "submit_job unreachable"}
	if strings.Join(obs.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(obs.got, "\n"), strings.Join(want, "\n"))
	}
}

// fakeDashboard answers the three reads of the fallback view: usage by node, the nodes, and the placement groups
// (Ray 2.60's answer recorded from a real cluster in testdata/placement_groups.json: two CREATED groups, one
// PENDING with NO_RESOURCES, one REMOVED).
func fakeDashboard(t *testing.T, groups string) (*httptest.Server, *[]string) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/cluster_status":
			// Node a4b6… already reports group f858…'s resources (camelCased as the dashboard does); node a32a…
			// has not reported group 3a24… yet (the usage lags the state API by a few seconds).
			io.WriteString(w, `{"result":true,"data":{"clusterStatus":{"loadMetricsReport":{"usageByNode":{
				"a4b653a1b1456487a0d7e4bdd4e119e70e17b5168dd965b79c3c7e68":{"GPU":[4.0,4.0],"CPU":[4.0,48.0],"workerNode":[0.0,1.0],
					"bundleGroupF8587169Bbc8A91103Ab787C51F601000000":[0.0,1000.0],"GPUGroup0F8587169Bbc8A91103Ab787C51F601000000":[0.0,4.0]},
				"a32aee9f9a35a1b56e0cfbc3490f2044ebfd71ab8ec83b719f3e5d02":{"GPU":[0.0,4.0]}}}}}}`)
		case "/api/v0/nodes":
			io.WriteString(w, `{"result":true,"data":{"result":{"result":[
				{"node_id":"a4b653a1b1456487a0d7e4bdd4e119e70e17b5168dd965b79c3c7e68","state":"ALIVE","is_head_node":false,"resources_total":{"GPU":4.0,"CPU":48.0,"worker_node":1.0}},
				{"node_id":"a32aee9f9a35a1b56e0cfbc3490f2044ebfd71ab8ec83b719f3e5d02","state":"ALIVE","is_head_node":false,"resources_total":{"GPU":4.0}}]}}}`)
		case "/api/v0/placement_groups":
			queries = append(queries, r.URL.RawQuery)
			io.WriteString(w, groups)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &queries
}

func TestClusterStatusCarriesPlacementGroups(t *testing.T) {
	recorded, err := os.ReadFile("testdata/placement_groups.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, queries := fakeDashboard(t, string(recorded))
	v, err := New(Options{DashboardURL: srv.URL}).ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.Source != "dashboard" || len(v.Nodes) != 2 || v.Nodes[0].Available["GPU"] != 0 || v.Nodes[0].Available["CPU"] != 44 {
		t.Errorf("nodes: %+v", v)
	}
	// The REMOVED group is left out; so is CREATED group 3a24… until the usage shows it: counted as placed before
	// its GPUs show as used, its gang would hold no reservation while its GPUs still looked free.
	want := []mvp.PlacementGroup{
		{ID: "1443e5dada77bc0807608b5fa89501000000", CreatorJobID: "01000000", State: "PENDING",
			SchedulingState: "NO_RESOURCES", Bundles: []map[string]float64{{"GPU": 4}}},
		{ID: "f8587169bbc8a91103ab787c51f601000000", CreatorJobID: "01000000", State: "CREATED",
			SchedulingState: "FINISHED", Bundles: []map[string]float64{{"CPU": 4, "GPU": 4}}},
	}
	if !reflect.DeepEqual(v.Groups, want) {
		t.Errorf("groups:\n got %+v\nwant %+v", v.Groups, want)
	}
	// One request asks for every group that is not REMOVED, far past the state API's default limit of 100.
	if len(*queries) != 1 {
		t.Fatalf("placement group queries: %q", *queries)
	}
	q, _ := url.ParseQuery((*queries)[0])
	if q.Get("detail") != "1" || q.Get("limit") != "10000" || q.Get("filter_keys") != "state" ||
		q.Get("filter_predicates") != "!=" || q.Get("filter_values") != "REMOVED" {
		t.Errorf("query %q", (*queries)[0])
	}
}

// A PREPARED group (Ray's first step of placing it: its bundles held on its node) counts as placed too, so it is
// left out until the usage shows it, as a CREATED one is; once the usage shows it, it is listed.
func TestClusterStatusListsAPreparedGroupOnceTheUsageShowsIt(t *testing.T) {
	srv, _ := fakeDashboard(t, `{"result":true,"msg":"","data":{"result":{"total":2,"num_after_truncation":2,
		"num_filtered":2,"partial_failure_warning":"","warnings":null,"result":[
		{"placement_group_id":"3a24aaaa","creator_job_id":"02000000","state":"PREPARED",
		 "bundles":[{"unit_resources":{"GPU":4.0},"node_id":"a32aee9f9a35a1b56e0cfbc3490f2044ebfd71ab8ec83b719f3e5d02"}],
		 "stats":{"scheduling_state":"QUEUED"}},
		{"placement_group_id":"f8587169bbc8a91103ab787c51f601000000","creator_job_id":"01000000","state":"PREPARED",
		 "bundles":[{"unit_resources":{"GPU":4.0},"node_id":"a4b653a1b1456487a0d7e4bdd4e119e70e17b5168dd965b79c3c7e68"}],
		 "stats":{"scheduling_state":"QUEUED"}}]}}}`)
	v, err := New(Options{DashboardURL: srv.URL}).ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Groups) != 1 || v.Groups[0].ID != "f8587169bbc8a91103ab787c51f601000000" {
		t.Errorf("groups %+v, want only the PREPARED group the usage shows", v.Groups)
	}
}

func TestClusterStatusWarnsOnceOfACutShortGroupList(t *testing.T) {
	srv, _ := fakeDashboard(t, `{"result":true,"msg":"","data":{"result":{"total":10002,"num_after_truncation":10002,
		"num_filtered":10001,"partial_failure_warning":"","warnings":null,"result":[{"placement_group_id":"p1",
		"creator_job_id":"02000000","state":"PENDING","bundles":[{"unit_resources":{"GPU":4.0}}],
		"stats":{"scheduling_state":"NO_RESOURCES"}}]}}}`)
	var logs strings.Builder
	c := New(Options{DashboardURL: srv.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := 0; i < 3; i++ {
		v, err := c.ClusterStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Groups) != 1 || v.Groups[0].CreatorJobID != "02000000" || v.Groups[0].Bundles[0]["GPU"] != 4 {
			t.Fatalf("groups %+v", v.Groups)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "Ray returned 1 of 10001 placement groups") {
		t.Errorf("want one warning that the list was cut short, got %d:\n%s", n, logs.String())
	}
}

func TestClusterStatusFailsWhenGroupsCannotBeRead(t *testing.T) {
	srv, _ := fakeDashboard(t, `not json`)
	_, err := New(Options{DashboardURL: srv.URL}).ClusterStatus(context.Background())
	if !errors.Is(err, mvp.ErrRayUnavailable) || !strings.Contains(err.Error(), "placement groups") {
		t.Errorf("undecodable group list: %v", err)
	}
}

func TestClusterStatusCountsANodeWithoutUsageAsFull(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/cluster_status": // node "late" has not reported its usage yet (seen for ~3 s after it joins)
			io.WriteString(w, `{"data":{"clusterStatus":{"loadMetricsReport":{"usageByNode":{"early":{"GPU":[1.0,4.0]}}}}}}`)
		case "/api/v0/nodes":
			io.WriteString(w, `{"data":{"result":{"result":[
				{"node_id":"early","state":"ALIVE","resources_total":{"GPU":4.0}},
				{"node_id":"late","state":"ALIVE","resources_total":{"GPU":4.0}}]}}}`)
		case "/api/v0/placement_groups":
			io.WriteString(w, `{"data":{"result":{"result":[]}}}`)
		}
	}))
	defer srv.Close()
	v, err := New(Options{DashboardURL: srv.URL}).ClusterStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Nodes) != 2 || v.Nodes[0].Available["GPU"] != 3 || v.Nodes[1].Available["GPU"] != 0 || v.Nodes[1].Total["GPU"] != 4 {
		t.Errorf("nodes %+v", v.Nodes)
	}
}
