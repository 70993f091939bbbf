package cli

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/scheduler"
)

func TestPrintUsersAndQueueShowOwners(t *testing.T) {
	var b strings.Builder
	l := &api.UserList{FairShare: true, HalfLifeS: 86400, StarvationS: 86400, Users: []api.UserView{
		{Name: "operator", Operator: true, MaxPriority: 100, Share: 1},
		{Name: "alice", MaxGPUs: 16, MaxPriority: 80, Share: 2, UsageGPUSeconds: 7200, NormalizedUsage: 3600, GPUsInUse: 8, Waiting: 3},
	}}
	if err := printUsers(&b, l); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"fair share on, half-life 24h0m0s", "alice", "2.00", "1.00", "16", "80"} {
		if !strings.Contains(out, want) {
			t.Errorf("mvp users output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	q := &scheduler.QueueView{Policy: "xfbf", ClusterKnown: true, Queue: []scheduler.QueueEntry{
		{TaskID: "mvp2-ppo-20251223-143201-7f3a", Owner: "bob", Priority: 70, Rank: 4, Position: 2,
			Code: scheduler.CodeFairShare, Reason: "fair share: bob has used more"}}}
	if err := printQueue(&b, q); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "bob") || !strings.Contains(out, "fair_share") || !strings.Contains(out, "70") {
		t.Errorf("mvp queue output lacks owner, priority or code:\n%s", out)
	}
}
