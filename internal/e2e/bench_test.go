//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// BenchmarkGPUsFreedToSubmit is P3a: the time from a gang's Ray job ending (its GPUs freed) to mvp's submission
// of the next task, which was waiting for those GPUs (measured from Ray's end_time to the attempt's created_at).
// The tick is 1 s. It also reports mvp's requests to Ray's job server over the runs (from mvp's /metrics), per
// second and per run, which a faster admission must not raise.
func BenchmarkGPUsFreedToSubmit(b *testing.B) {
	s := startService(b, serviceOpts{tickS: 1})
	var lags []time.Duration
	req0, t0 := s.rayRequests(), time.Now()
	for i := 0; i < b.N; i++ {
		waitIdle(b)
		first := s.submit(spec("ppo", 2, 4, 2))
		s.waitState(first.ID, mvp.StateRunning, 90*time.Second)
		next := s.submit(spec("ppo", 2, 4, 1))
		s.waitState(next.ID, mvp.StatePendingResources, 30*time.Second)
		done := s.waitState(first.ID, mvp.StateSucceeded, 90*time.Second)
		var sub *mvp.Task
		waitFor(b, 60*time.Second, "the next task's attempt", func() (bool, string) {
			sub = s.get(next.ID)
			return sub.LatestAttemptNo == 1, string(sub.State)
		})
		lags = append(lags, sub.Attempts[0].CreatedAt.Sub(*done.Attempts[0].EndTime))
		s.waitState(next.ID, mvp.StateSucceeded, 90*time.Second)
	}
	reqs := s.rayRequests() - req0
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	b.ReportMetric(reqs/time.Since(t0).Seconds(), "ray-job-requests/s")
	b.ReportMetric(reqs/float64(b.N), "ray-job-requests/run") // the rate rises when the same work ends sooner
	b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "freed-to-submit-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max-ms")
}

// BenchmarkRayCallOverhead is P3b: GET /api/jobs/{id} through mvp's Ray client versus a bare net/http GET of the
// same URL, alternating, on the live cluster.
func BenchmarkRayCallOverhead(b *testing.B) {
	id := uniq("bench-job")
	direct(b, id, "python3 -c 'print(1)'")
	waitJob(b, id, 60*time.Second, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
	ctx := context.Background()
	var viaClient, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := rayc.GetJob(ctx, id); err != nil {
			b.Fatal(err)
		}
		viaClient += time.Since(t0)
		t0 = time.Now()
		resp, err := http.Get(env.dashboard + "/api/jobs/" + id)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		bare += time.Since(t0)
	}
	b.ReportMetric(float64(viaClient.Microseconds())/float64(b.N), "client-µs")
	b.ReportMetric(float64(bare.Microseconds())/float64(b.N), "bare-µs")
	b.ReportMetric(float64((viaClient-bare).Microseconds())/float64(b.N), "added-µs")
}

// BenchmarkJobServerAfterManyJobs is P4: Ray's job server after $MVP_BENCH_P4_N (default 500) short verl jobs
// submitted straight to Ray and never deleted, versus after as many short tasks through mvp, which deletes ended
// jobs beyond keep_finished_jobs (100). Both sides run the same stand-in (python3 -m verl.trainer.main_ppo, 1 GPU,
// hold 0 s), so each job leaves the same traces in Ray: a submission record in the job server's KV, which can be
// deleted, and a driver entry in the GCS job table, which Ray never deletes. Measured on each side with nothing
// else running (mvp serve stopped): the median of 200 GETs of the last job (GET /api/jobs/{id}) and of 30 lists
// (GET /api/jobs/). The mvp side runs second, so Ray's GCS then holds both sides' driver entries: a bias against
// mvp, reported as is.
func BenchmarkJobServerAfterManyJobs(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("MVP_BENCH_P4_N")); err == nil && v > 0 {
		n = v
	}
	median := func(url string, times int) time.Duration {
		var ds []time.Duration
		for i := 0; i < times; i++ {
			t0 := time.Now()
			resp, err := http.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %s", url, resp.Status)
			}
			ds = append(ds, time.Since(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	listed := func() int { // mvp itself never lists Ray's jobs; the benchmark does, to report what is there
		resp, err := http.Get(env.dashboard + "/api/jobs/")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var jobs []json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&jobs); err != nil {
			b.Fatal(err)
		}
		return len(jobs)
	}
	const inFlight = 8       // the cluster's GPUs: more would only fail verl's check
	const keepFinished = 100 // mvp's default v2.ray.keep_finished_jobs, which the test service keeps
	for i := 0; i < b.N; i++ {
		waitIdle(b)
		// Direct: n jobs nobody deletes.
		var ids []string
		for j := 0; j < n; j++ {
			if j >= inFlight {
				waitJob(b, ids[j-inFlight], 30*time.Minute, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
			}
			id := fmt.Sprintf("p4-direct-%d-%d", time.Now().UnixNano(), j)
			if err := rayc.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: id,
				Entrypoint:          "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=1 mvp_test.hold_s=0",
				EntrypointResources: map[string]float64{"worker_node": 1}}); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids[max(0, len(ids)-inFlight):] {
			waitJob(b, id, 30*time.Minute, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
		}
		directJobs := listed()
		directGet := median(env.dashboard+"/api/jobs/"+ids[len(ids)-1], 200)
		directList := median(env.dashboard+"/api/jobs/", 30)
		for _, id := range ids {
			_ = rayc.DeleteJob(context.Background(), id)
		}

		// Through mvp: n short tasks; mvp keeps the newest 100 ended jobs in Ray.
		s := startService(b, serviceOpts{tickS: 0.2, maxRunning: 16})
		var tasks []string
		for j := 0; j < n; j++ {
			tasks = append(tasks, s.submit(spec("ppo", 1, 1, 0)).ID)
		}
		for _, id := range tasks {
			s.waitState(id, mvp.StateSucceeded, 30*time.Minute)
		}
		if n > keepFinished {
			waitFor(b, 5*time.Minute, "mvp to prune Ray's job server", func() (bool, string) {
				_, err := rayc.GetJob(context.Background(), mvp.SubmissionID(tasks[0], 1))
				return errors.Is(err, mvp.ErrJobNotFound), ""
			})
		}
		s.stop()
		mvpJobs := listed()
		mvpGet := median(env.dashboard+"/api/jobs/"+mvp.SubmissionID(tasks[len(tasks)-1], 1), 200)
		mvpList := median(env.dashboard+"/api/jobs/", 30)

		b.ReportMetric(float64(n), "jobs")
		b.ReportMetric(float64(directJobs), "direct-listed")
		b.ReportMetric(float64(mvpJobs), "via-mvp-listed")
		b.ReportMetric(float64(directGet.Microseconds()), "direct-get-µs")
		b.ReportMetric(float64(mvpGet.Microseconds()), "via-mvp-get-µs")
		b.ReportMetric(float64(directList.Microseconds()), "direct-list-µs")
		b.ReportMetric(float64(mvpList.Microseconds()), "via-mvp-list-µs")
	}
}
