package scheduler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAWorkerThatDoesNotAnswerIsAskedForOneLogNotEach: a worker node frozen (its raylet and agents stopped, or cut
// off) keeps Ray's state API waiting 20 s for each log read from it (measured on Ray 2.60: HTTP 500 "failed to
// connect to all addresses" after 20 s), until Ray marks the node dead about a minute later. The scheduler read the
// logs of every attempt that ended there one after the other in its pass, and again in keepLogs: a pass took
// 91 s while a task that fit waited. After one read from a node goes unanswered, that node's logs are not asked
// for a minute (not counted as a try: they are kept once it answers or is known dead).
func TestAWorkerThatDoesNotAnswerIsAskedForOneLogNotEach(t *testing.T) {
	h := newHarness(t)
	tasks := []*mvp.Task{h.task(), h.task(), h.task()}
	h.tick()
	for _, task := range tasks {
		id := task.ID + "--a01"
		h.ray.set(id, mvp.RayRunning, "", 0)
		h.ray.mu.Lock()
		h.ray.jobs[id].DriverNodeID = "w2"
		h.ray.mu.Unlock()
	}
	h.tick()
	reads := map[string]int{}
	frozen := true
	h.ray.logsErr = func(id string) error { // called with the fake's lock held
		if !frozen {
			return nil
		}
		reads[id]++
		h.clock.t = h.clock.t.Add(20 * time.Second) // Ray's state API waits for the agent
		return fmt.Errorf("GET /api/v0/logs/file: 500: <AioRpcError of RPC that terminated with: status = " +
			"StatusCode.UNAVAILABLE details = \"failed to connect to all addresses\">")
	}
	for _, task := range tasks {
		h.ray.set(task.ID+"--a01", mvp.RayFailed, "Job supervisor actor died: The actor died unexpectedly "+
			"before finishing this task. The actor died because its node has died.", 0)
	}
	h.tick()
	total := 0
	for _, n := range reads {
		total += n
	}
	if total != 1 {
		t.Errorf("log reads from the node that does not answer in one pass: %d (%v); want 1", total, reads)
	}
	for _, task := range tasks {
		got := h.get(task.ID)
		if got.State == mvp.StateRunning || got.Attempts[0].FailureKind != mvp.FailureInfra {
			t.Errorf("%s: %s, attempt %+v; want the ended attempt concluded (INFRA) without its log", task.ID, got.State, got.Attempts[0])
		}
	}

	// The node answers again (or Ray knows it dead): past the quiet minute the logs are read and kept, the
	// skipped reads not having used up their tries.
	frozen = false
	for i := 0; i < 8; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	for _, task := range tasks {
		if _, err := os.Stat(filepath.Join(h.root, "jobs", task.ID, "attempts", "a01", "driver.log")); err != nil {
			t.Errorf("%s: driver log not kept once the node answers: %v", task.ID, err)
		}
	}
}
