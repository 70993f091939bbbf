package sqlite

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestGenerateBenchDB fills the database at $MVP_BENCH_DB with $MVP_BENCH_TASKS tasks (default 100,000) for the
// cold-start benchmark (P5 in scripts/bench.sh). It does nothing unless MVP_BENCH_DB is set.
func TestGenerateBenchDB(t *testing.T) {
	path := os.Getenv("MVP_BENCH_DB")
	if path == "" {
		t.Skip("set MVP_BENCH_DB to generate a benchmark database")
	}
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("MVP_BENCH_TASKS")); err == nil {
		n = v
	}
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	work := make(chan int, 1024)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				at := start.Add(time.Duration(i) * time.Millisecond)
				task := &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251201-000000-%08x", i), Workload: mvp.WorkloadPPO,
					State: mvp.StateQueued, NNodes: 1, GPUsPerNode: 1 + i%8, JobSpecYAML: "workload: ppo\n",
					SpecJSON: []byte(`{"workload":"ppo"}`), CreatedAt: at, UpdatedAt: at}
				if err := db.CreateTask(context.Background(), task); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}
