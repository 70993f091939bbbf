package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// BenchmarkSubmitHTTP is P1: durable task submissions through the HTTP API on loopback with 64 concurrent
// clients (real TCP, real SQLite file with synchronous=FULL). It reports submissions/s and p50/p99 latency, and
// checks afterwards that every acknowledged task is in the database.
func BenchmarkSubmitHTTP(b *testing.B) {
	base, db := newServer(b)
	const clients = 64
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	body := []byte(goodSpec)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	ids := make([]string, 0, b.N)
	work := make(chan struct{}, b.N)
	for i := 0; i < b.N; i++ {
		work <- struct{}{}
	}
	close(work)
	before := db.Stats()
	b.ResetTimer()
	start := time.Now()
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
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "submits/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	if after := db.Stats(); after.Transactions > before.Transactions {
		b.ReportMetric(float64(after.Writes-before.Writes)/float64(after.Transactions-before.Transactions), "writes/txn")
	}
	for _, id := range ids {
		if _, err := db.GetTask(context.Background(), id); err != nil {
			b.Fatalf("acknowledged task %s missing: %v", id, err)
		}
	}
}
