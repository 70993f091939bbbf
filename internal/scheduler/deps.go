package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// DependencyFailed ends a waiting task as CANCELED because one of its after_ok dependencies ended FAILED or
// CANCELED: it can never run as asked.
type DependencyFailed struct {
	Task       *mvp.Task
	Dependency string
	Reason     string
}

func (DependencyFailed) action() {}

// NextLook is why a QUEUED task waits: no pass of the scheduler has decided on it yet (a pass writes its reason,
// PENDING_RESOURCES, or starts it). The API and the Ray door say it of such a task, whose pending_reason is empty.
const NextLook = "waiting for the scheduler's next look"

// DependencyReasonPrefix starts the pending_reason of a task held by its dependencies.
const DependencyReasonPrefix = "dependency: "

// dependencies looks at the waiting tasks that name dependencies (after_ok, after_any) and returns the queue
// without those that must not start yet, with their actions: a Wait naming what the task waits for, or a
// DependencyFailed when an after_ok dependency ended FAILED or CANCELED. A held task does not hold the queue
// behind it. A dependency whose state is not in s.Deps is waited for. A task past its max_queued_s is left in the
// queue for expiries. Without any dependency in the queue, the queue is returned as it is.
func dependencies(now time.Time, s Snapshot, out []Action) ([]*mvp.Task, []Action) {
	first := -1
	for i, t := range s.Queue {
		if len(t.AfterOK)+len(t.AfterAny) > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return s.Queue, out
	}
	queue := make([]*mvp.Task, first, len(s.Queue))
	copy(queue, s.Queue[:first])
	stopping := stoppingRuns(s)
	for _, t := range s.Queue[first:] {
		if len(t.AfterOK)+len(t.AfterAny) == 0 || expired(now, t) {
			queue = append(queue, t)
			continue
		}
		a, held := holdFor(t, s.Deps, stopping)
		if !held {
			queue = append(queue, t) // every dependency is done: the task competes for GPUs like any other
		} else if a != nil {
			out = append(out, a)
		}
	}
	return queue, out
}

// holdFor judges a waiting task that names dependencies. held is false when every dependency is done: the task
// competes for GPUs. Otherwise a is what to do: a DependencyFailed when an after_ok dependency ended FAILED or
// CANCELED, or a Wait naming what the task waits for (nil when its stored reason says so already).
func holdFor(t *mvp.Task, deps map[string]mvp.State, stopping map[string]bool) (a Action, held bool) {
	failed, waiting := judgeDeps(t, deps, stopping)
	switch {
	case failed != "":
		return DependencyFailed{Task: t, Dependency: failed, Reason: fmt.Sprintf(
			"dependency %s ended %s, and this task runs only after it succeeds (after_ok)", failed, deps[failed])}, true
	case len(waiting) > 0:
		reason := DependencyReasonPrefix + "waiting for " + strings.Join(waiting, ", ") + " to end"
		if t.State != mvp.StatePendingResources || t.PendingReason != reason {
			return &Wait{Task: t, code: cDependency, Reason: reason}, true
		}
		return nil, true
	}
	return nil, false
}

// stoppingRuns returns the tasks of s.Active that have ended in mvp's record while their Ray job has not (a
// canceled run in Ray's stop wait); nil for none.
func stoppingRuns(s Snapshot) map[string]bool {
	var out map[string]bool
	for _, a := range s.Active {
		if a.Task != nil && a.Task.State.Terminal() {
			if out == nil {
				out = map[string]bool{}
			}
			out[a.Task.ID] = true
		}
	}
	return out
}

// judgeDeps returns the first after_ok dependency that ended FAILED or CANCELED, or else the dependencies still to
// end, each with its kind and state ("mvp2-… (after_ok, RUNNING)"). An after_any dependency that has ended while
// its Ray job still stops (stopping) is still to end: a run after it (the next segment of a training, resuming from
// the folder that job may still write) starts once the job has stopped.
func judgeDeps(t *mvp.Task, states map[string]mvp.State, stopping map[string]bool) (failed string, waiting []string) {
	if i := FailedAfterOK(t, states); i >= 0 {
		return t.AfterOK[i], nil
	}
	note := func(kind string, ids []string) {
		for _, id := range ids {
			st, ok := states[id]
			switch {
			case !ok:
				waiting = append(waiting, fmt.Sprintf("%s (%s, unknown)", id, kind))
			case !st.Terminal():
				waiting = append(waiting, fmt.Sprintf("%s (%s, %s)", id, kind, st))
			case stopping[id]:
				waiting = append(waiting, fmt.Sprintf("%s (%s, %s; its Ray job is still stopping)", id, kind, st))
			}
		}
	}
	note("after_ok", t.AfterOK)
	note("after_any", t.AfterAny)
	return "", waiting
}

// FailedAfterOK is the index in t.AfterOK of the first dependency that ended FAILED or CANCELED in states (so t
// can never run: the scheduler cancels it, the API refuses it), or -1 for none.
func FailedAfterOK(t *mvp.Task, states map[string]mvp.State) int {
	for i, id := range t.AfterOK {
		if st := states[id]; st == mvp.StateFailed || st == mvp.StateCanceled {
			return i
		}
	}
	return -1
}

// DependencyIDs lists the tasks that the tasks of queue depend on, each once.
func DependencyIDs(queue []*mvp.Task) []string {
	var ids []string
	seen := map[string]bool{}
	for _, t := range queue {
		for _, l := range [][]string{t.AfterOK, t.AfterAny} {
			for _, id := range l {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}
