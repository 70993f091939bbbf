package scheduler

import (
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// ids lists the tasks' ids, for failure messages.
func ids(ts []*mvp.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// A task that can never fit is not a candidate: its owner or priority must not make the queue look reordered by
// rank, which switches drain chaining (and the expansion-factor backfill order) off for every other task. The
// candidates are TestPolicies' case where xfchain starts the gang first; only a 3-node task on a 2-node cluster is
// added behind them, of another owner (fair share on) or another priority.
func TestChainingIgnoresTasksThatNeverFit(t *testing.T) {
	for _, c := range []struct {
		name  string
		owner string
		prio  int
		fair  bool
	}{
		{"another owner, fair share on", "bob", 50, true},
		{"another priority", "alice", 60, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBench("n1", "n2")
			long := timed(1, 1, 2*time.Hour, time.Hour)
			gang := timed(2, 4, 10*time.Minute, 30*time.Minute)
			long.Owner, gang.Owner = "alice", "alice"
			long.Priority, gang.Priority = 50, 50
			never := timed(3, 4, time.Hour, time.Minute)
			never.Owner, never.Priority = c.owner, c.prio
			p := named(PolicyXFChain)
			p.FairShare = c.fair
			if s := submitted(Decide(t0, b.snap(long, gang), p)); len(s) != 1 || s[0] != gang {
				t.Fatalf("without the never-fitting task: submitted %v, want the gang %s", ids(s), gang.ID)
			}
			if s := submitted(Decide(t0, b.snap(long, gang, never), p)); len(s) != 1 || s[0] != gang {
				t.Fatalf("with a never-fitting task of %s at priority %d: submitted %v, want the gang %s",
					c.owner, c.prio, ids(s), gang.ID)
			}
		})
	}
}

// displaced counts the tasks ahead of the gang that admission would start: not those a user's max_gpus holds
// back. bob (max_gpus 1) has eight 1-GPU 30-min tasks ahead of alice's 2 × 4 20-min gang on an empty 2 × 4
// cluster: admission would start one of them (n = 1, D = 30 min; 1 × 20 < 30 and 35 + 20 ≤ 30 + 30), so the gang
// goes first; counting all eight (8 × 20 ≥ 30) left 7 GPUs idle through the drain.
func TestChainingCountsOnlyWhatAQuotaLetsStart(t *testing.T) {
	b := newBench("n1", "n2")
	var q []*mvp.Task
	for range 8 {
		tk := timed(1, 1, 30*time.Minute, 35*time.Minute)
		tk.Owner = "bob"
		q = append(q, tk)
	}
	gang := timed(2, 4, 20*time.Minute, 30*time.Minute)
	gang.Owner = "alice"
	q = append(q, gang)
	p := named(PolicyXFChain)
	p.Users = map[string]UserLimits{"bob": {MaxGPUs: 1}}
	if s := submitted(Decide(t0, b.snap(q...), p)); len(s) != 1 || s[0] != gang {
		t.Fatalf("submitted %v, want only the gang %s", ids(s), gang.ID)
	}
}

// Likewise for max_running_tasks (the shipped default is 16): of 32 one-GPU 30-min tasks ahead of a 1-min 8 × 4
// gang on 8 × 4 GPUs, admission would start 16 (16 × 1 < 30: the gang goes first), not 32 (32 ≥ 30).
func TestChainingCountsOnlyWhatMaxRunningLetsStart(t *testing.T) {
	b := newBench("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")
	var q []*mvp.Task
	for range 32 {
		q = append(q, timed(1, 1, 30*time.Minute, 35*time.Minute))
	}
	gang := timed(8, 4, time.Minute, 30*time.Minute)
	q = append(q, gang)
	p := named(PolicyXFChain)
	p.MaxRunning = 16
	if s := submitted(Decide(t0, b.snap(q...), p)); len(s) != 1 || s[0] != gang {
		t.Fatalf("submitted %d task(s) %v, want only the gang %s", len(s), ids(s), gang.ID)
	}
}
