package ray

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// answerFunc answers every request itself, with no network.
type answerFunc func(*http.Request) *http.Response

func (f answerFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

// FuzzAnswers feeds the client what Ray's dashboard (or whatever answers at its address) may answer: a status and
// a body for the job endpoints (and the driver log's), and one body each for the three reads of ClusterStatus. Every call ends in an
// answer or in an error mvp sorts (Ray unavailable, job not found, job exists, or a coded *mvp.Error), whose message
// is valid UTF-8 when the answer is and stays short whatever the answer's size; a view read has a node for each
// node listed, each with its map of available resources; a driver log answered whole is copied whole.
func FuzzAnswers(f *testing.F) {
	groups, _ := os.ReadFile("testdata/placement_groups.json")
	usage := `{"result":true,"data":{"clusterStatus":{"loadMetricsReport":{"usageByNode":{"n1":{"GPU":[1.0,4.0],"workerNode":[0.0,1.0]}}}}}}`
	nodes := `{"result":true,"data":{"result":{"result":[{"node_id":"n1","state":"ALIVE","is_head_node":false,"resources_total":{"GPU":4.0,"worker_node":1.0}}]}}}`
	for _, c := range []struct {
		status int
		body   string
	}{
		{200, `{"submission_id":"t--a01","job_id":"02000000","status":"FAILED","message":"boom","error_type":"JOB_ENTRYPOINT_COMMAND_ERROR","driver_exit_code":3,"driver_node_id":"abc","start_time":1700000000000,"end_time":1700000005000}`},
		{200, `[{"submission_id":"t--a01","status":"RUNNING"}]`}, {200, `{"logs":"a\nb\n","ray_version":"2.60.0"}`},
		{400, "Traceback (most recent call last):\nValueError: Job with submission_id t--a01 already exists. Please use a different submission_id."},
		{404, "<html><body><h1>404 Not Found</h1>default backend - 404</body></html>"}, {404, "Job t--a01 does not exist"},
		{500, "RuntimeError: x\n.\n"}, {500, "the job is in a non-terminal state"}, {503, ""}, {429, "slow down"},
		{401, "no"}, {200, "<html>login</html>"}, {500, strings.Repeat("é", 200)},
		{500, "a" + strings.Repeat("é", 200)}, // cut inside a character (TestLastLineCutsBetweenCharacters)
	} {
		f.Add(uint16(c.status), []byte(c.body), []byte(usage), []byte(nodes), groups)
	}
	f.Fuzz(func(t *testing.T, status uint16, body, usage, nodes, groups []byte) {
		code := int(status) // a status from 200 to 599; the fuzzer's others are folded into that range
		if code < 200 || code > 599 {
			code = 200 + code%400
		}
		answer := func(r *http.Request) *http.Response {
			b, c := body, code
			switch r.URL.Path {
			case "/api/cluster_status":
				b, c = usage, 200
			case "/api/v0/nodes":
				b, c = nodes, 200
			case "/api/v0/placement_groups":
				b, c = groups, 200
			}
			return &http.Response{StatusCode: c, Status: http.StatusText(c), Header: http.Header{}, Request: r,
				Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), ProtoMajor: 1, ProtoMinor: 1}
		}
		c := New(Options{DashboardURL: "http://ray.invalid:8265", HTTPClient: &http.Client{Transport: answerFunc(answer)}})
		ctx := context.Background()
		check := func(call string, err error, answer []byte) {
			if err == nil {
				return
			}
			var e *mvp.Error
			if !errors.Is(err, mvp.ErrRayUnavailable) && !errors.Is(err, mvp.ErrJobNotFound) && !errors.Is(err, mvp.ErrJobExists) &&
				!(errors.As(err, &e) && e.Code != "" && e.Message != "") {
				t.Fatalf("%s: an error mvp does not sort: %#v", call, err)
			}
			if msg := err.Error(); utf8.Valid(answer) && !utf8.ValidString(msg) {
				t.Fatalf("%s: a message that is not UTF-8 from an answer that is: %q", call, msg)
			} else if len(msg) > 1000 {
				t.Fatalf("%s: a message of %d bytes", call, len(msg))
			}
		}
		_, err := c.GetJob(ctx, "t--a01")
		check("GetJob", err, body)
		_, err = c.ListJobs(ctx)
		check("ListJobs", err, body)
		_, err = c.JobLogs(ctx, "t--a01")
		check("JobLogs", err, body)
		_, err = c.Version(ctx)
		check("Version", err, body)
		check("SubmitJob", c.SubmitJob(ctx, &mvp.JobSubmission{Entrypoint: "x", SubmissionID: "t--a01"}), body)
		check("StopJob", c.StopJob(ctx, "t--a01"), body)
		var log bytes.Buffer
		n, err := c.CopyJobLog(ctx, "t--a01", "node-1", &log)
		check("CopyJobLog", err, body)
		if err == nil && code == 200 && len(body) > 0 && (n != int64(len(body)) || !bytes.Equal(log.Bytes(), body)) {
			t.Fatalf("CopyJobLog: %d bytes of the %d answered: %q", n, len(body), log.Bytes())
		}
		v, err := c.ClusterStatus(ctx)
		check("ClusterStatus", err, append(append(append([]byte{}, usage...), nodes...), groups...))
		if err == nil {
			for _, n := range v.Nodes {
				if n.Available == nil {
					t.Fatalf("node %q without its available resources", n.ID)
				}
			}
		}
	})
}
