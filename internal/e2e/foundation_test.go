//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestStandInStraightToRay submits the verl stand-in straight to Ray's Job REST API, as users did before mvp.
func TestStandInStraightToRay(t *testing.T) {
	waitIdle(t)
	id := uniq("direct-ppo")
	// It holds its GPUs for 45 s: the 1×8 job below must start and make its check while they are taken, which
	// takes 10–20 s on a busy 2-core machine.
	direct(t, id, "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=4 mvp_test.hold_s=45")

	// The GPUs it asked for are taken on one node while it runs.
	waitFor(t, 60*time.Second, "4 GPUs taken on one worker", func() (bool, string) {
		for _, n := range workers(t) {
			if n.Total["GPU"]-n.Available["GPU"] == 4 {
				return true, ""
			}
		}
		return false, fmt.Sprint(freeGPUs(t))
	})

	// With 4 GPUs left in all, a 1×8 request fails fast with verl's own message.
	big := uniq("direct-ppo-1x8")
	direct(t, big, "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=8")
	info := waitJob(t, big, 90*time.Second, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
	if info.Status != mvp.RayFailed || !strings.Contains(info.Message, "ValueError: Total available GPUs 4.0 is less than total desired GPUs 8") {
		t.Errorf("1×8 on 4 free GPUs: status %s, message %q", info.Status, tail(info.Message, 5))
	}

	info = waitJob(t, id, 150*time.Second, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
	if info.Status != mvp.RaySucceeded {
		t.Fatalf("stand-in ended %s: %s", info.Status, info.Message)
	}
	isWorker := false
	for _, n := range workers(t) {
		if n.ID == info.DriverNodeID {
			isWorker = true
		}
	}
	if !isWorker {
		t.Errorf("driver_node_id %q is not a worker node", info.DriverNodeID)
	}
	logs, err := rayc.JobLogs(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "verl-standin: workload=ppo nnodes=1 n_gpus_per_node=4") {
		t.Errorf("log lacks the stand-in's first line:\n%s", tail(logs, 20))
	}
	// Each line its Ray task (the TaskRunner actor) prints reaches the driver's log once: with one Ray temp
	// folder for all the local cluster's nodes, each node's log monitor forwarded it, three times in all.
	seen := map[string]int{}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "verl-standin: step") {
			seen[line]++
		}
	}
	if len(seen) == 0 {
		t.Errorf("log has no step line of the stand-in:\n%s", tail(logs, 20))
	}
	for line, n := range seen {
		if n > 1 {
			t.Errorf("%q is in the driver's log %d times", line, n)
		}
	}
}

// TestGangHangsWithoutMVP shows the problem mvp solves: on 4 + 4 free GPUs a 1×8 gang passes verl's total check
// and then waits forever for a placement group no node can hold.
func TestGangHangsWithoutMVP(t *testing.T) {
	waitIdle(t)
	id := uniq("direct-hang")
	direct(t, id, "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=8 mvp_test.hold_s=1")
	info := waitJob(t, id, 60*time.Second, func(i *mvp.JobInfo) bool { return i.JobID != "" && i.Status == mvp.RayRunning })
	waitFor(t, 60*time.Second, "a PENDING placement group of the job", func() (bool, string) {
		v, err := probe.ReadCluster(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, g := range v.Groups {
			if g.CreatorJobID == info.JobID {
				return g.State == "PENDING", g.State + "/" + g.SchedulingState
			}
		}
		return false, "no group yet"
	})
	if err := rayc.StopJob(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitJob(t, id, 60*time.Second, func(i *mvp.JobInfo) bool { return i.Status.Terminal() })
}
