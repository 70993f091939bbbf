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
	h.loop.MaxLogTries = 2 // a skipped read counted as a try would give the logs up within the quiet minute
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

// frozenNode makes every read of a log of a job whose driver is on node fail after 20 s (the harness's clock), as
// Ray's state API does for a node whose agent does not answer; it returns how many reads were made of each job.
func (h *harness) frozenNode(node string) map[string]int {
	reads := map[string]int{}
	h.ray.logsErr = func(id string) error { // called with the fake's lock held
		if j := h.ray.jobs[id]; j == nil || j.DriverNodeID != node {
			return nil
		}
		reads[id]++
		h.clock.t = h.clock.t.Add(20 * time.Second)
		return fmt.Errorf("GET /api/v0/logs/file: 500: failed to connect to all addresses")
	}
	return reads
}

// endOn runs tasks to RUNNING with their drivers on the given nodes, then ends them SUCCEEDED (their logs are
// kept by keepLogs alone).
func (h *harness) endOn(tasks []*mvp.Task, nodes []string) {
	h.tick()
	for i, task := range tasks {
		id := task.ID + "--a01"
		h.ray.set(id, mvp.RayRunning, "", 0)
		h.ray.mu.Lock()
		h.ray.jobs[id].DriverNodeID = nodes[i]
		h.ray.mu.Unlock()
	}
	h.tick()
	for _, task := range tasks {
		h.ray.set(task.ID+"--a01", mvp.RaySucceeded, "ok", 0)
	}
}

// TestTheLogsOfAQuietNodeDoNotHoldUpTheOthers: keepLogs reads the ten oldest unkept logs; when the oldest were all
// a quiet node's, skipped, no other node's log was kept while it stayed quiet (found in review). It looks past them.
func TestTheLogsOfAQuietNodeDoNotHoldUpTheOthers(t *testing.T) {
	h := newHarness(t)
	h.view.Nodes[0].Total["GPU"], h.view.Nodes[0].Available["GPU"] = 32, 32
	h.loop.Policy.MaxRunning = 20
	var tasks []*mvp.Task
	var nodes []string
	for i := 0; i < 12; i++ {
		tasks, nodes = append(tasks, h.task()), append(nodes, "w2")
	}
	tasks, nodes = append(tasks, h.task()), append(nodes, "w1") // the newest, on a node that answers
	h.endOn(tasks, nodes)
	h.frozenNode("w2")
	h.tick() // concluded; keepLogs: the first of w2's logs goes unanswered
	h.clock.t = h.clock.t.Add(5 * time.Second)
	h.tick() // within w2's quiet minute
	last := tasks[len(tasks)-1]
	if _, err := os.Stat(filepath.Join(h.root, "jobs", last.ID, "attempts", "a01", "driver.log")); err != nil {
		t.Errorf("the log of a job on a node that answers was not kept while another node was quiet: %v", err)
	}
}

// TestTheLogsOfANodeThatStaysQuietAreGivenUp: a node Ray keeps alive whose agent never answers (it hangs) is quiet
// minute after minute, its skipped logs not counted as tries; were the read after each quiet minute not one, its
// logs, and their jobs in Ray, would be kept waiting for ever (a reviewer's worry). They are asked about once a
// minute and given up after their tries, as any log that cannot be fetched.
func TestTheLogsOfANodeThatStaysQuietAreGivenUp(t *testing.T) {
	h := newHarness(t)
	h.loop.MaxLogTries = 3
	task := h.task()
	h.endOn([]*mvp.Task{task}, []string{"w2"})
	reads := h.frozenNode("w2")
	for i := 0; i < 60; i++ {
		h.clock.t = h.clock.t.Add(10 * time.Second)
		h.tick()
	}
	if n := reads[task.ID+"--a01"]; n > 5 {
		t.Errorf("%d reads of a log of a node that does not answer in 10 minutes; want about one a minute, at most", n)
	}
	got := h.get(task.ID)
	if a := got.Attempts[0]; a.LogKept || a.LogTries < 3 {
		t.Errorf("the log of a node that never answers: kept %v, %d tries; want given up after 3", a.LogKept, a.LogTries)
	}
}
