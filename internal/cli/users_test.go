package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
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
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "bob") || !strings.Contains(out, "fair_share") || !strings.Contains(out, "70") {
		t.Errorf("mvp queue output lacks owner, priority or code:\n%s", out)
	}
}

// `mvp queue` showed RANK 0 for a task that is not ranked (it never fits) where `mvp list` shows "-", and times had
// no zone (the machine's local time, unlabelled). Found in a user walk-through.
func TestQueueUnrankedAndTimesWithZone(t *testing.T) {
	var b strings.Builder
	q := &scheduler.QueueView{Policy: "xfchain", ClusterKnown: true, Queue: []scheduler.QueueEntry{
		{TaskID: "mvp2-ppo-20251223-143201-7f3a", Owner: "operator", Priority: 50, Position: 1,
			Code: scheduler.CodeNeverFits, Reason: "can never fit"}}}
	if err := printQueue(&b, q, queueNotes{}); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(strings.Split(b.String(), "\n")[len(strings.Split(b.String(), "\n"))-2]); len(f) < 5 || f[4] != "-" {
		t.Errorf("an unranked task's RANK: %v, want -\n%s", f, b.String())
	}
	at := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	if got := ts(&at); !strings.HasSuffix(got, time.Local.String()) && !strings.Contains(got, at.Local().Format("MST")) {
		t.Errorf("ts %q names no zone", got)
	}
}

// A user removed from the config showed MAX PRIO 0, as if capped at 0 (walk-through 12): a removed user has no
// limits to show.
func TestARemovedUserShowsNoMaxPriority(t *testing.T) {
	var b strings.Builder
	l := &api.UserList{Users: []api.UserView{{Name: "bob", Removed: true, Share: 1, Waiting: 2}}}
	if err := printUsers(&b, l); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if f[len(f)-1] != "-" || !strings.Contains(lines[len(lines)-1], "(removed)") {
		t.Errorf("a removed user's row %q: want MAX PRIO -", lines[len(lines)-1])
	}
	// Nor a share: it showed 1, where the user had share 2 before it was removed (a user's-eye drill).
	if f[3] != "-" || f[4] != "-" {
		t.Errorf("a removed user's row %q: want SHARE and USAGE/SHARE -", lines[len(lines)-1])
	}
}

// The operator's mvp schedule list and mvp secrets list did not say whose each one is (walk-through 12).
func TestScheduleListShowsOwners(t *testing.T) {
	var b strings.Builder
	if err := printSchedules(&b, []*mvp.Schedule{{Name: "nightly", Owner: "alice", Cron: "0 2 * * *"}}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "OWNER") || !strings.Contains(b.String(), "alice") {
		t.Errorf("mvp schedule list:\n%s", b.String())
	}
}
