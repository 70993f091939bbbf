package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/sqlite"
)

// scrapeEvery is how often the P1 benchmarks scrape /metrics while they submit: 60 times as often as a 15 s
// Prometheus scrape interval, so that the collectors' cost (a grouped count query per scrape) shows.
const scrapeEvery = 250 * time.Millisecond

// BenchmarkSubmitHTTP is P1: durable task submissions through the HTTP API on loopback with 64 concurrent
// clients (real TCP, real SQLite file with synchronous=FULL), with the metrics on (the default) and /metrics
// scraped every scrapeEvery meanwhile. It reports submissions/s and p50/p99 latency, and checks afterwards that
// every acknowledged task is in the database.
func BenchmarkSubmitHTTP(b *testing.B) {
	base, db := newServer(b)
	r := submitHTTP(b, base, db, b.N, true)
	b.StopTimer()
	b.ReportMetric(r.rate, "submits/s")
	b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(r.scrapes), "scrapes")
	if r.writesPerTxn > 0 {
		b.ReportMetric(r.writesPerTxn, "writes/txn")
	}
}

// BenchmarkSubmitHTTPMetricsCost is P1's price of the metrics: the same submissions as BenchmarkSubmitHTTP
// (b.N per run), against a service with the metrics off (v2.metrics.enabled: false) and one with them on and
// scraped, in ten adjacent pairs whose order alternates, so that a change in the machine's load hits both sides of
// a pair alike. It reports the median rate of each side, the median of the pairs' costs in rate (1 − on/off, in
// %) and in CPU time per submission (on/off − 1, in %; the process's user+system time, client included, which a
// busy machine disturbs less than the rate).
func BenchmarkSubmitHTTPMetricsCost(b *testing.B) {
	const pairs = 10
	var offs, ons, costs, cpuCosts []float64
	run := func(metrics bool) p1Result {
		// Each service is stopped once measured, so that its scheduler (still working through the tasks it was
		// sent) does not load the next runs.
		cfg := servicetest.Config(b)
		cfg.V2.Metrics.Enabled = &metrics
		m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(4)}
		ctx, stop := context.WithCancel(context.Background())
		if err := m.Open(ctx); err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		r := submitHTTP(b, m.URL(), m.Store(), b.N, metrics)
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		return r
	}
	for i := 0; i < pairs; i++ {
		var off, on p1Result
		if i%2 == 0 {
			off, on = run(false), run(true)
		} else {
			on, off = run(true), run(false)
		}
		offs, ons = append(offs, off.rate), append(ons, on.rate)
		costs = append(costs, (1-on.rate/off.rate)*100)
		cpuCosts = append(cpuCosts, (on.cpuPerOp.Seconds()/off.cpuPerOp.Seconds()-1)*100)
	}
	b.StopTimer()
	b.ReportMetric(median(offs), "off-submits/s")
	b.ReportMetric(median(ons), "on-submits/s")
	b.ReportMetric(median(costs), "cost-%")
	b.ReportMetric(median(cpuCosts), "cpu-cost-%")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// p1Result is one run of submitHTTP.
type p1Result struct {
	rate, writesPerTxn float64
	p50, p99           time.Duration
	// cpuPerOp is the process's CPU time (user + system) per submission, over the run.
	cpuPerOp time.Duration
	scrapes  int
}

// cpuTime is the process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// submitHTTP sends n POSTs of a jobspec from 64 clients with keep-alive, scraping /metrics every scrapeEvery
// meanwhile when scrape is set; it fails the benchmark on any answer but 201 and when an acknowledged task is not
// in the database afterwards.
func submitHTTP(b *testing.B, base string, db *sqlite.DB, n int, scrape bool) p1Result {
	const clients = 64
	tr := &http.Transport{MaxIdleConnsPerHost: clients + 1, MaxConnsPerHost: clients + 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	body := []byte(goodSpec)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	ids := make([]string, 0, n)
	work := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		work <- struct{}{}
	}
	close(work)
	before := db.Stats()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	stopScrapes, scraped := make(chan struct{}), make(chan int)
	go func() {
		scrapes := 0
		defer func() { scraped <- scrapes }()
		if !scrape {
			return
		}
		t := time.NewTicker(scrapeEvery)
		defer t.Stop()
		for {
			select {
			case <-stopScrapes:
				return
			case <-t.C:
			}
			req, _ := http.NewRequest("GET", base+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("scrape: status %d", resp.StatusCode)
				return
			}
			scrapes++
		}
	}()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest("POST", base+"/api/v2/tasks", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/yaml")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				var task mvp.Task
				json.NewDecoder(resp.Body).Decode(&task)
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != 201 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				ids = append(ids, task.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopScrapes)
	r := p1Result{scrapes: <-scraped, cpuPerOp: (cpuTime(b) - cpu0) / time.Duration(max(n, 1))}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		r.rate = float64(len(lat)) / elapsed.Seconds()
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	if after := db.Stats(); after.Transactions > before.Transactions {
		r.writesPerTxn = float64(after.Writes-before.Writes) / float64(after.Transactions-before.Transactions)
	}
	for _, id := range ids {
		if _, err := db.GetTask(context.Background(), id); err != nil {
			b.Fatalf("acknowledged task %s missing: %v", id, err)
		}
	}
	return r
}
