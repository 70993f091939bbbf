package raycompat

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// pagedStore serves ListTasks in pages over n queued tasks and GetTask for any of them, never failing: a store
// whose reads do not stop when their context is canceled (mvp's SQLite reads run to their end, readCtx).
type pagedStore struct {
	mvp.Store
	n        int
	gets     int
	cancel   func() // called once the gets reach cancelAt
	cancelAt int
}

func (s *pagedStore) task(i int) *mvp.Task {
	return &mvp.Task{ID: fmt.Sprintf("mvp2-ppo-20251223-143201-%04x", i), Workload: mvp.WorkloadPPO,
		State: mvp.StateQueued, CreatedAt: time.Unix(int64(s.n-i), 0)}
}

func (s *pagedStore) ListTasks(_ context.Context, f mvp.TaskFilter) ([]*mvp.Task, string, error) {
	from := 0
	if f.Cursor != "" {
		fmt.Sscan(f.Cursor, &from)
	}
	var page []*mvp.Task
	for i := from; i < s.n && len(page) < f.Limit; i++ {
		page = append(page, s.task(i))
	}
	next := ""
	if to := from + len(page); to < s.n {
		next = fmt.Sprint(to)
	}
	return page, next, nil
}

func (s *pagedStore) GetTask(_ context.Context, id string) (*mvp.Task, error) {
	s.gets++
	if s.gets == s.cancelAt {
		s.cancel()
	}
	var i int
	fmt.Sscanf(id, "mvp2-ppo-20251223-143201-%x", &i)
	t := s.task(i)
	t.Attempts = []*mvp.Attempt{}
	return t, nil
}

// TestTheDoorsJobListStopsWhenItsClientLeaves: `GET /api/jobs/` reads every task, one by one; once the request's
// context ends (the client timed out or went away) it stops reading instead of walking the rest of the table for
// no one. The store's reads do not stop it: mvp's reads run to their end.
func TestTheDoorsJobListStopsWhenItsClientLeaves(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &pagedStore{n: 3000, cancel: cancel, cancelAt: 10}
	d := &Door{Store: s}
	err := d.list(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/jobs/", nil).WithContext(ctx))
	if mvp.ErrorCode(err) != mvp.CodeUnavailable || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("list after its client left: %v, want %s saying the context was canceled", err, mvp.CodeUnavailable)
	}
	if s.gets > s.cancelAt {
		t.Fatalf("%d tasks read after the client left (%d before), want none", s.gets-s.cancelAt, s.cancelAt)
	}

	all := &pagedStore{n: 1200, cancel: func() {}, cancelAt: -1}
	rec := httptest.NewRecorder()
	if err := (&Door{Store: all}).list(rec, httptest.NewRequest("GET", "/api/jobs/", nil)); err != nil || all.gets != 1200 {
		t.Fatalf("list of 1200 tasks over 3 pages: %d read, %v", all.gets, err)
	}
}
