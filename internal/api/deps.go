package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// maxDependencyWalk bounds the tasks visited when a new task's dependencies are checked for a cycle.
const maxDependencyWalk = 10000

// checkDependencies refuses a task whose after_ok or after_any name a task that does not exist, or whose
// dependencies lead back to it. It returns the states of the dependencies.
func (s *Server) checkDependencies(ctx context.Context, t *mvp.Task) (map[string]mvp.State, error) {
	ids := append(append([]string{}, t.AfterOK...), t.AfterAny...)
	if len(ids) == 0 {
		return map[string]mvp.State{}, nil
	}
	states, err := s.Store.TaskStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	lists := []struct {
		name string
		ids  []string
	}{{"after_ok", t.AfterOK}, {"after_any", t.AfterAny}}
	for _, l := range lists {
		for i, id := range l.ids {
			if _, ok := states[id]; !ok {
				return nil, mvp.Errorf(mvp.CodeInvalid, fmt.Sprintf("%s[%d]", l.name, i),
					"no task %s: a dependency must be a task that exists", id)
			}
		}
	}
	if c := mvp.CallerOf(ctx); !c.Operator {
		for _, l := range lists {
			for i, id := range l.ids {
				d, err := s.Store.GetTask(ctx, id)
				if err != nil {
					return nil, fmt.Errorf("check dependencies of %s: %w", t.ID, err)
				}
				if !c.Owns(d.Owner) {
					return nil, mvp.Errorf(mvp.CodeForbidden, fmt.Sprintf("%s[%d]", l.name, i), "task %s belongs to "+
						"another user: a task may depend only on its owner's tasks", id)
				}
			}
		}
	}
	var walkErr error
	deps := func(id string) []string {
		if id == t.ID {
			return ids
		}
		d, err := s.Store.GetTask(ctx, id)
		if err != nil {
			if !errors.Is(err, mvp.ErrNotFound) && walkErr == nil {
				walkErr = err
			}
			return nil
		}
		return append(append([]string{}, d.AfterOK...), d.AfterAny...)
	}
	if cycle := mvp.DependencyCycle(t.ID, deps, maxDependencyWalk); cycle != nil {
		return nil, mvp.Errorf(mvp.CodeInvalid, "after_ok", "the dependencies form a cycle: %s", strings.Join(cycle, " → "))
	}
	if walkErr != nil {
		return nil, fmt.Errorf("check dependencies of %s: %w", t.ID, walkErr)
	}
	return states, nil
}
