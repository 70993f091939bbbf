package api

import (
	"context"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAdmitScheduledRefusesAnOwnerNoLongerConfigured: a schedule whose owner was removed from v2.auth.users went
// on queueing tasks in that name with no limits at all (no user, so no max_queued and no max_priority), which only
// the operator could see. Its runs make no task and say why; the operator's schedules run as before.
func TestAdmitScheduledRefusesAnOwnerNoLongerConfigured(t *testing.T) {
	s := &Server{Users: []mvp.User{{Name: "bob", MaxPriority: 100}}}
	err := s.AdmitScheduled(context.Background(), &mvp.Task{ID: "mvp2-ppo-20251223-143201-7f3a", Owner: "alice", Priority: 50}, nil)
	if mvp.ErrorCode(err) != mvp.CodeForbidden {
		t.Fatalf("a run of a removed user's schedule: %v; want forbidden", err)
	}
	if err := s.AdmitScheduled(context.Background(), &mvp.Task{Owner: mvp.Operator, Priority: 50}, nil); err != nil {
		t.Fatalf("the operator's schedule: %v", err)
	}
}
