//go:build e2e

package e2e

import (
	"context"
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
// The tick is 1 s; the goal is at most one tick + 50 ms.
func BenchmarkGPUsFreedToSubmit(b *testing.B) {
	s := startService(b, serviceOpts{tickS: 1})
	var lags []time.Duration
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
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
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

// BenchmarkJobServerAfterManyJobs is P4: Ray's GET /api/jobs/{id} latency after $MVP_BENCH_P4_N (default 500)
// short jobs submitted straight to Ray and never deleted, versus after as many short tasks through mvp, which
// deletes ended jobs beyond keep_finished_jobs (100). Latency is the median of 200 bare GETs of the last job.
func BenchmarkJobServerAfterManyJobs(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("MVP_BENCH_P4_N")); err == nil && v > 0 {
		n = v
	}
	median := func(id string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 200; i++ {
			t0 := time.Now()
			resp, err := http.Get(env.dashboard + "/api/jobs/" + id)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ds = append(ds, time.Since(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	for i := 0; i < b.N; i++ {
		// Direct: n jobs nobody deletes, at most 16 in flight (each has a job-supervisor process).
		var ids []string
		for j := 0; j < n; j++ {
			if j >= 16 {
				waitJob(b, ids[j-16], 30*time.Minute, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
			}
			id := fmt.Sprintf("p4-direct-%d-%d", time.Now().UnixNano(), j)
			if err := rayc.SubmitJob(context.Background(), &mvp.JobSubmission{Entrypoint: "python3 -c pass",
				SubmissionID: id, EntrypointResources: map[string]float64{"worker_node": 1}}); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids[max(0, len(ids)-16):] {
			waitJob(b, id, 30*time.Minute, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
		}
		direct := median(ids[len(ids)-1])
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
		last := tasks[len(tasks)-1] + "--a01"
		waitFor(b, 5*time.Minute, "mvp to prune Ray's job server", func() (bool, string) {
			_, err := rayc.GetJob(context.Background(), tasks[0]+"--a01")
			return errors.Is(err, mvp.ErrJobNotFound), ""
		})
		viaMVP := median(last)
		b.ReportMetric(float64(direct.Microseconds()), "direct-get-µs")
		b.ReportMetric(float64(viaMVP.Microseconds()), "via-mvp-get-µs")
		b.ReportMetric(float64(n), "jobs")
	}
}
