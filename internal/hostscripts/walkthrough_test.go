package hostscripts

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestTwoStartsAtOnceStartOneService: two start.sh at once (two operators, or a retry while the first still waits
// for /healthz) both found no service, and each started one. Both said "started", each with its own pid; the
// second mvp serve waited 5 s for the database lock and exited, and the pidfile named whichever start wrote it
// last, so status.sh could say "not running" (and stop.sh stop nothing) while the other mvp served. One start
// must start mvp serve and the other find it running.
func TestTwoStartsAtOnceStartOneService(t *testing.T) {
	r := newRig(t)
	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], _ = r.run("start.sh", "MVP_LOCAL=1")
		}(i)
	}
	wg.Wait()
	pidRE := regexp.MustCompile(`\(pid (\d+)`)
	var pids []string
	for _, out := range outs {
		m := pidRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("start.sh named no pid: %s", out)
		}
		pids = append(pids, m[1])
	}
	joined := strings.Join(outs, "")
	if pids[0] != pids[1] || strings.Count(joined, "started") != 1 || strings.Count(joined, "already running") != 1 {
		t.Errorf("two start.sh at once: want one start and one 'already running' of the same pid, got pids %v:\n%s", pids, joined)
	}
}
