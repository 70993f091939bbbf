//go:build e2e

package e2e

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mvp2/mvp/internal/mvp"
)

// startKeepingOneJob starts a service that keeps one ended job in Ray (keep_finished_jobs: 1).
func startKeepingOneJob(t *testing.T) *service {
	t.Helper()
	waitIdle(t)
	s := startService(t, serviceOpts{})
	// keep_finished_jobs sits in the ray section of the harness config: restart with it set.
	s.stop()
	cfg := readFile(t, s.cfgPath)
	if !strings.Contains(cfg, "log_copy_s: 1,") {
		t.Fatalf("the harness config no longer has log_copy_s in its ray mapping:\n%s", cfg)
	}
	cfg = strings.Replace(cfg, "log_copy_s: 1,", "log_copy_s: 1, keep_finished_jobs: 1,", 1)
	writeFile(t, s.cfgPath, cfg)
	s.start()
	return s
}

// TestFinishedJobsLeaveRay: with keep_finished_jobs 1, an ended job is deleted from Ray's job server once a newer
// one has ended, and its status and log stay readable from the task folder.
func TestFinishedJobsLeaveRay(t *testing.T) {
	s := startKeepingOneJob(t)

	first := s.submit(spec("ppo", 1, 1, 1))
	s.waitState(first.ID, mvp.StateSucceeded, 120*time.Second)
	second := s.submit(spec("ppo", 1, 1, 1))
	s.waitState(second.ID, mvp.StateSucceeded, 120*time.Second)
	waitFor(t, 60*time.Second, "the older job to leave Ray", func() (bool, string) {
		_, err := rayc.GetJob(ctxT(t), first.ID+"--a01")
		return errors.Is(err, mvp.ErrJobNotFound), ""
	})
	if _, err := rayc.GetJob(ctxT(t), second.ID+"--a01"); err != nil {
		t.Errorf("the newest job must stay in Ray: %v", err)
	}
	if log := s.logs(first.ID, 1); !strings.Contains(log, "verl-standin: driver exits with code 0") {
		t.Errorf("the deleted job's log is not readable from the task folder: %q", tail(log, 3))
	}
	if got := s.get(first.ID); got.State != mvp.StateSucceeded || got.Attempts[0].RayStatus != mvp.RaySucceeded {
		t.Errorf("%+v", got.Attempts[0])
	}
}

// TestARestoredDatabaseDoesNotRunAPrunedJobAgain: mvp's database put back to a copy older than two runs whose Ray
// jobs mvp has since deleted (keep_finished_jobs 1). Ray takes a deleted submission id again, so the task QUEUED
// in the copy was sent again as --a01 and its 1-GPU run ran a second time, and the one RUNNING in the copy was
// taken as lost by Ray and retried. Each attempt's end is in its task folder; mvp reads it from there and sends
// nothing. Found in a walk-through.
func TestARestoredDatabaseDoesNotRunAPrunedJobAgain(t *testing.T) {
	s := startKeepingOneJob(t)

	first := s.submit(spec("ppo", 1, 1, 1))
	s.waitState(first.ID, mvp.StateSucceeded, 120*time.Second)
	second := s.submit(spec("ppo", 1, 1, 1))
	s.waitState(second.ID, mvp.StateSucceeded, 120*time.Second)
	third := s.submit(spec("ppo", 1, 1, 1))
	s.waitState(third.ID, mvp.StateSucceeded, 120*time.Second)
	waitFor(t, 60*time.Second, "the two older jobs to leave Ray", func() (bool, string) {
		_, e1 := rayc.GetJob(ctxT(t), first.ID+"--a01")
		_, e2 := rayc.GetJob(ctxT(t), second.ID+"--a01")
		return errors.Is(e1, mvp.ErrJobNotFound) && errors.Is(e2, mvp.ErrJobNotFound), ""
	})
	firstStart := *s.get(first.ID).Attempts[0].StartTime
	s.stop()

	// The copy: first was still QUEUED (no attempt), second RUNNING.
	db, err := sql.Open("sqlite3", "file:"+s.dbPath+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM attempts WHERE task_id = ?`, []any{first.ID}},
		{`UPDATE tasks SET state = 'QUEUED', latest_attempt_no = 0 WHERE task_id = ?`, []any{first.ID}},
		{`UPDATE attempts SET ray_status = 'RUNNING', end_time = NULL, exit_code = NULL, log_kept = 0, ray_deleted = 0
			WHERE task_id = ?`, []any{second.ID}},
		{`UPDATE tasks SET state = 'RUNNING' WHERE task_id = ?`, []any{second.ID}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("make the older copy: %s: %v", q.sql, err)
		}
	}
	db.Close()

	s.start()
	for _, task := range []*mvp.Task{first, second} {
		got := s.waitState(task.ID, mvp.StateSucceeded, 60*time.Second)
		if len(got.Attempts) != 1 {
			t.Errorf("%s: %d attempts after the restore, want its one (it ran already)", task.ID, len(got.Attempts))
		}
	}
	if got := s.get(first.ID).Attempts[0]; got.StartTime == nil || !got.StartTime.Equal(firstStart) {
		t.Errorf("first's attempt started at %v after the restore; want its first run's start %v (not run again)", got.StartTime, firstStart)
	}
	for _, id := range []string{first.ID + "--a01", second.ID + "--a01", second.ID + "--a02"} {
		if _, err := rayc.GetJob(ctxT(t), id); !errors.Is(err, mvp.ErrJobNotFound) {
			t.Errorf("Ray has %s after the restore (%v): it was sent again", id, err)
		}
	}
}

// TestAJobTheDatabaseDoesNotKnowIsNamed: mvp's database put back to a copy older than a running task. Its Ray job
// ran on, holding its GPU, and nothing said so. mvp lists Ray's jobs at its first synced pass and logs each live
// one whose metadata names this database that it does not follow. Found in a walk-through.
func TestAJobTheDatabaseDoesNotKnowIsNamed(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 1, 120))
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	sid := task.ID + "--a01"
	t.Cleanup(func() { _ = rayc.StopJob(ctxT(t), sid) })
	s.stop()

	db, err := sql.Open("sqlite3", "file:"+s.dbPath+"?_busy_timeout=5000&_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM events WHERE task_id = ?`, `DELETE FROM attempts WHERE task_id = ?`,
		`DELETE FROM tasks WHERE task_id = ?`} {
		if _, err := db.Exec(q, task.ID); err != nil {
			t.Fatalf("make the older copy: %s: %v", q, err)
		}
	}
	db.Close()

	s.start()
	waitFor(t, 60*time.Second, "mvp to name the job it does not follow", func() (bool, string) {
		log := readFile(t, s.logPath)
		return strings.Contains(log, "does not follow it") && strings.Contains(log, sid), tail(log, 3)
	})
	if info, err := rayc.GetJob(ctxT(t), sid); err != nil || info.Status.Terminal() {
		t.Errorf("the job: %+v %v; mvp must not stop a job it does not know (it cannot tell what it is for)", info, err)
	}
}
