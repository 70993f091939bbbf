//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestUsersShareTheCluster (issue 15), on the real cluster (2 workers × 4 GPUs) with three named users, alice
// (max_gpus 4), bob and carol:
//   - alice over her quota waits with code quota though a worker is free, and `mvp list` says so;
//   - bob can neither read, follow the logs of, nor cancel alice's task (403), and her task runs on;
//   - bob and carol flood the queue with whole-cluster gangs, bob first: carol's first task starts before bob's
//     second (fair share puts the light user ahead of the heavy user's backlog; in arrival order it would run
//     after all of bob's).
func TestUsersShareTheCluster(t *testing.T) {
	waitIdle(t)
	const (
		aliceTok = "e2e-alice-0123456789abcdef"
		bobTok   = "e2e-bob-0123456789abcdef00"
		carolTok = "e2e-carol-0123456789abcdef"
	)
	s := startService(t, serviceOpts{
		authExtra: ", users: [{name: alice, token_env: MVP_E2E_ALICE, max_gpus: 4}, " +
			"{name: bob, token_env: MVP_E2E_BOB}, {name: carol, token_env: MVP_E2E_CAROL}]",
		env: []string{"MVP_E2E_ALICE=" + aliceTok, "MVP_E2E_BOB=" + bobTok, "MVP_E2E_CAROL=" + carolTok}})
	alice := &api.Client{Addr: s.c.Addr, Token: aliceTok}
	bob := &api.Client{Addr: s.c.Addr, Token: bobTok}
	carol := &api.Client{Addr: s.c.Addr, Token: carolTok}
	submit := func(c *api.Client, spec string) string {
		t.Helper()
		raw, err := c.Submit(ctxT(t), []byte(spec), false)
		if err != nil {
			t.Fatalf("submit: %v", err)
		}
		var task mvp.Task
		if err := json.Unmarshal(raw, &task); err != nil {
			t.Fatal(err)
		}
		return task.ID
	}

	// Quota: alice's second 1×4 task waits with code quota while a worker is free.
	a1 := submit(alice, spec("ppo", 1, 4, 40)+"max_runtime_s: 120\n")
	s.waitState(a1, mvp.StateRunning, 90*time.Second)
	a2 := submit(alice, spec("ppo", 1, 4, 1)+"max_runtime_s: 60\n")
	waitFor(t, 30*time.Second, "alice's second task to wait with code quota", func() (bool, string) {
		q, _, err := alice.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range q.Queue {
			if e.TaskID == a2 {
				return e.Code == scheduler.CodeQuota && e.Owner == "alice", string(e.Code) + ": " + e.Reason
			}
		}
		return false, "not in alice's queue view"
	})
	// Her view estimates it at her first task's declared end, when her quota frees (the forecast of her own view).
	waitFor(t, 30*time.Second, "alice's quota-held task estimated at her first task's declared end", func() (bool, string) {
		var since *time.Time
		for _, at := range s.get(a1).Attempts {
			since = at.RunStart() // from its gang's placement once recorded, as mvp counts
		}
		if since == nil {
			return false, "a1 has not run yet"
		}
		q, _, err := alice.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range q.Queue {
			if e.TaskID == a2 {
				want := since.Add(120 * time.Second)
				return e.EstStart != nil && e.EstStart.Sub(want).Abs() < 2*time.Second,
					fmt.Sprintf("est_start %v, want %s", e.EstStart, want.Format(time.RFC3339Nano))
			}
		}
		return false, "not in alice's queue view"
	})
	if out, errOut, code := s.cliAs(aliceTok, "list"); code != 0 ||
		!strings.Contains(out, a2) || !strings.Contains(out, "quota") || !strings.Contains(out, "alice") {
		t.Errorf("alice's mvp list (exit %d): %s %s", code, out, errOut)
	}
	if free := freeGPUs(t); sum(free) < 4 {
		t.Errorf("free GPUs %v: the quota wait should leave a worker free", free)
	}

	// Isolation: bob cannot read, follow the logs of, or cancel alice's running task.
	if _, _, err := bob.Get(ctxT(t), a1); !forbidden(err) {
		t.Errorf("bob reads alice's task: %v, want 403", err)
	}
	if _, errOut, code := s.cliAs(bobTok, "logs", "-f", a1); code == 0 || !strings.Contains(errOut, "another user") {
		t.Errorf("bob follows alice's logs: exit %d, %s", code, errOut)
	}
	if _, _, err := bob.Cancel(ctxT(t), a1); !forbidden(err) {
		t.Errorf("bob cancels alice's task: %v, want 403", err)
	}
	if out, _, code := s.cliAs(bobTok, "list"); code != 0 || strings.Contains(out, a1) {
		t.Errorf("bob's mvp list shows alice's task (exit %d): %s", code, out)
	}
	if got := s.get(a1); got.State != mvp.StateRunning {
		t.Errorf("alice's task after bob's cancel: %s", got.State)
	}
	for _, id := range []string{a1, a2} {
		if _, _, err := alice.Cancel(ctxT(t), id); err != nil {
			t.Errorf("alice cancels her task %s: %v", id, err)
		}
	}
	waitIdle(t)

	// Floods: bob's whole-cluster gangs first, then carol's.
	whole := spec("ppo", 2, 4, 4) + "max_runtime_s: 60\n"
	var bs, cs []string
	for i := 0; i < 3; i++ {
		bs = append(bs, submit(bob, whole))
	}
	s.waitState(bs[0], mvp.StateRunning, 90*time.Second)
	for i := 0; i < 2; i++ {
		cs = append(cs, submit(carol, whole))
	}
	c1 := s.waitState(cs[0], mvp.StateRunning, 180*time.Second)
	if b2 := s.get(bs[1]); b2.LatestAttemptNo > 0 && startOf(b2).Before(startOf(c1)) {
		t.Errorf("bob's second task started at %s, before carol's first at %s: no fair share", startOf(b2), startOf(c1))
	}
	q, _, err := s.c.Queue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, e := range q.Queue {
		codes = append(codes, e.Owner+":"+string(e.Code))
	}
	t.Logf("queue while carol's first task runs: %v", codes)
	for _, id := range append(bs, cs...) {
		_, _, _ = s.c.Cancel(ctxT(t), id) // ended ones answer 409
	}
	waitIdle(t)
}

func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}

// forbidden reports whether err is the API's 403.
func forbidden(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status == 403
}
