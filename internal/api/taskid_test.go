package api_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// The ids one process makes within a second do not collide (each collision costs the writer another insert, and
// at thousands of submissions a second random digits collided often), and they follow one another, so that a new
// task's id goes at the end of its index, not at a random place among that second's: at most one wrap of the
// counter in a run of ids.
func TestTaskIDsOfOneSecondDoNotCollideAndFollowOneAnother(t *testing.T) {
	now := time.Date(2026, 12, 4, 18, 30, 0, 0, time.UTC)
	shape := regexp.MustCompile(`^mvp2-ppo-20261204-183000-[0-9a-f]{4}$`)
	const n = 20000
	seen := make(map[string]bool, n)
	wraps := 0
	prev := ""
	for i := 0; i < n; i++ {
		id := api.NewTaskID(mvp.Workload("ppo"), now, 0)
		if !shape.MatchString(id) {
			t.Fatalf("id %q is not mvp2-<workload>-<date>-<time>-<4 hex>", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice within one second (after %d ids)", id, i)
		}
		seen[id] = true
		if prev != "" && id < prev {
			wraps++
		}
		prev = id
	}
	if wraps > 1 {
		t.Fatalf("%d ids made in a row went back %d times: they should follow one another (one wrap at most)", n, wraps)
	}
	// After many collisions (another process's ids of the same second) the id takes 8 random hex digits.
	if id := api.NewTaskID(mvp.Workload("ppo"), now, 8); !regexp.MustCompile(`^mvp2-ppo-20261204-183000-[0-9a-f]{8}$`).MatchString(id) {
		t.Fatalf("after 8 collisions: %q", id)
	}
}
