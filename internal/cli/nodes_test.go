package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// twoNodes is a cluster of two 4-GPU workers, the second of which can be made dead as Ray lists a node that is
// down (alive false, no resources).
type twoNodes struct {
	mu   sync.Mutex
	dead bool
}

func (c *twoNodes) ReadCluster(context.Context) (*mvp.ClusterView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := func() map[string]float64 { return map[string]float64{"GPU": 4, "CPU": 48, "worker_node": 100} }
	w2 := mvp.Node{ID: "w2-0123456789", IP: "10.0.0.2", Alive: !c.dead, Total: res(), Available: res()}
	if c.dead {
		w2.Total, w2.Available = map[string]float64{}, map[string]float64{}
	}
	return &mvp.ClusterView{Source: "probe", At: time.Now(), Nodes: []mvp.Node{
		{ID: "w1-0123456789", IP: "10.0.0.1", Alive: true, Total: res(), Available: res()}, w2}}, nil
}

// TestNodesForget: mvp nodes forget NODE_ID forgets a GPU node that is down, so that a gang that fits only with
// it is never_fits rather than waiting for it (nodes_down); it refuses a node that is alive (409), one it does not
// know (404), and a user's token (403), with exit 1 and the server's message.
func TestNodesForget(t *testing.T) {
	cl := &twoNodes{}
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 0.1
	t.Setenv("MVP_TEST_TOKEN_ALICE", "alice-token-0123456789abcdef")
	cfg.V2.Auth.Users = []config.User{{Name: "alice", TokenEnv: "MVP_TEST_TOKEN_ALICE", Share: 1}}
	m := servicetest.Start(t, &service.Main{Config: cfg, Cluster: cl})
	runIn := runAt(t, m.URL())
	run := func(tok string, want int, args ...string) string { t.Helper(); return runIn(tok, "", want, args...) }
	op := servicetest.Token
	waitQueue := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			q := run(op, 0, "queue")
			if ok(q) {
				return q
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: mvp queue:\n%s", what, q)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	gang := func(nnodes int) string {
		job := filepath.Join(t.TempDir(), "gang.yaml")
		if err := os.WriteFile(job, []byte(fmt.Sprintf("workload: ppo\nnnodes: %d\nn_gpus_per_node: 4\nmodel_path: /m\n"+
			"train_file: /t\nval_file: /v\n", nnodes)), 0o644); err != nil {
			t.Fatal(err)
		}
		return strings.Fields(run(op, 0, "submit", "-f", job))[0]
	}
	// A pass of the loop has seen both nodes alive once it has judged a task (the queue's view is read apart from
	// the loop, and the loop remembers only what its own passes saw): one that never fits, canceled then.
	never := gang(3)
	waitQueue("a pass of the loop to judge a task", func(string) bool {
		return strings.Contains(run(op, 0, "get", never), "PENDING_RESOURCES")
	})
	run(op, 0, "cancel", never)
	cl.mu.Lock()
	cl.dead = true
	cl.mu.Unlock()
	id := gang(2)
	waitQueue("the gang waiting for the node that is down", func(q string) bool {
		return strings.Contains(q, "w2-0123456789 (down)") && strings.Contains(q, "nodes_down")
	})
	if got := run("alice-token-0123456789abcdef", 1, "nodes", "forget", "w2"); !strings.Contains(got, "for the operator") ||
		!strings.Contains(got, "403") {
		t.Errorf("a user's forget: %s", got)
	}
	if got := run(op, 1, "nodes", "forget", "w1-0123456789"); !strings.Contains(got, "is alive in Ray") || !strings.Contains(got, "409") {
		t.Errorf("forget the node that is alive: %s", got)
	}
	if got := run(op, 1, "nodes", "forget", "w9"); !strings.Contains(got, "mvp knows no GPU node") || !strings.Contains(got, "404") {
		t.Errorf("forget an unknown node: %s", got)
	}
	if got := run(op, 0, "nodes", "forget", "w2"); !strings.Contains(got, "forgot node w2-0123456789 (10.0.0.2, 4 GPU)") {
		t.Errorf("forget the node that is down: %s", got)
	}
	q := waitQueue("the gang never_fits once the node is forgotten", func(q string) bool {
		return strings.Contains(q, "never_fits") && !strings.Contains(q, "(down)")
	})
	if !strings.Contains(q, id) {
		t.Errorf("the gang is not in the queue any more:\n%s", q)
	}
	if got := run(op, 2, "nodes"); !strings.Contains(got, "a subcommand is needed: forget") {
		t.Errorf("mvp nodes: %s", got)
	}
}
