//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestFinishedJobsLeaveRay: with keep_finished_jobs 1, an ended job is deleted from Ray's job server once a newer
// one has ended, and its status and log stay readable from the task folder.
func TestFinishedJobsLeaveRay(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	// keep_finished_jobs sits in the ray section of the harness config: restart with it set.
	s.stop()
	cfg := readFile(t, s.cfgPath)
	cfg = strings.Replace(cfg, "log_copy_s: 1}", "log_copy_s: 1, keep_finished_jobs: 1}", 1)
	writeFile(t, s.cfgPath, cfg)
	s.start()

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
	if log := s.logs(first.ID, 1); !strings.Contains(log, "verl-standin: done") {
		t.Errorf("the deleted job's log is not readable from the task folder: %q", tail(log, 3))
	}
	if got := s.get(first.ID); got.State != mvp.StateSucceeded || got.Attempts[0].RayStatus != mvp.RaySucceeded {
		t.Errorf("%+v", got.Attempts[0])
	}
}
