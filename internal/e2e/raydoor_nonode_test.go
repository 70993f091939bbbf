//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestARayDoorDriverNoNodeCanTakeDoesNotHoldTheQueue: a job sent through the Ray door (Ray's own `ray job submit`)
// whose entrypoint_label_selector no alive node matches, admitted while mvp could not see the nodes' labels (the
// live probe cut off from the GCS, so mvp's view is the dashboard's fallback, which has none: the selector is left
// to Ray), sits PENDING in Ray, which keeps it so until its start timeout (15 minutes). Once mvp's view has the
// labels again, it must not reserve room for that driver: a 1 × 2 task submitted after it must run meanwhile (it
// waited "behind a submitted task whose gang is not placed yet" before 9668869; unit test
// TestALiveDriverNoNodeCanTakeDoesNotHoldTheQueue). The other way to get there, the labelled worker killed while
// its job supervisor is still starting on it, is not deterministic on Ray 2.60: of two runs, Ray kept the job PENDING
// in one and failed it JOB_SUPERVISOR_ACTOR_DIED ("The actor never ran - it was cancelled before it started
// running", the node's death noticed by its health check) in the other.
func TestARayDoorDriverNoNodeCanTakeDoesNotHoldTheQueue(t *testing.T) {
	waitIdle(t)
	gcs := newGateProxy(t, env.gcs) // shut: the probe gets no answer, the view is the dashboard's
	s := startService(t, serviceOpts{gcs: gcs.addr(), retryS: 1})
	d := newRayDoor(t, s)
	source := func(want string) {
		t.Helper()
		waitFor(t, 90*time.Second, "mvp's view of the cluster from the "+want, func() (bool, string) {
			h, _ := healthz(t, s)
			return h.Ray.RayOK && h.Ray.ClusterSource == want, fmt.Sprintf("%s ray_ok=%v source=%s %s", h.Status,
				h.Ray.RayOK, h.Ray.ClusterSource, h.Ray.RayError)
		})
	}
	source("dashboard")

	id := uniq("nonode")
	out, code := d.run(time.Minute, nil, "job", "submit", "--no-wait", "--submission-id", id, "--entrypoint-num-cpus", "1",
		"--entrypoint-label-selector", `{"mvp-dev/worker": "gone"}`, "--", "echo", "never")
	if code != 0 {
		t.Fatalf("ray job submit (exit %d):\n%s", code, out)
	}
	var sub string
	waitFor(t, 60*time.Second, "the labelled job admitted on the view without labels", func() (bool, string) {
		task := mustTask(t, d, id)
		if a := task.Attempt(task.LatestAttemptNo); a != nil {
			sub = a.RaySubmissionID
			return true, ""
		}
		return false, string(task.State) + " " + task.PendingReason
	})
	t.Cleanup(func() { killSupervisor(t, sub) })
	waitJob(t, sub, 30*time.Second, func(j *mvp.JobInfo) bool { return j.Status == mvp.RayPending })

	gcs.open()
	source("probe")
	next := s.submit(spec("ppo", 1, 2, 1))
	waitFor(t, 30*time.Second, "the next task (1 × 2) to be admitted", func() (bool, string) {
		got := s.get(next.ID)
		return got.LatestAttemptNo > 0, string(got.State) + " " + got.PendingReason
	})
	if info, err := rayc.GetJob(ctxT(t), sub); err != nil || info.Status != mvp.RayPending {
		t.Errorf("the labelled job was no longer PENDING in Ray when the next task was admitted (%+v, %v): the test "+
			"did not show what it is for", info, err)
	}
	s.waitState(next.ID, mvp.StateSucceeded, 120*time.Second)
	if task := mustTask(t, d, id); task.State.Terminal() {
		t.Errorf("the labelled job's task ended (%s: %q) while Ray still had its driver PENDING", task.State, task.ErrorSummary)
	}
}

// killSupervisor ends a Ray job whose supervisor actor Ray cannot place: Ray 2.60's stop answers {"stopped": true}
// for it and leaves it PENDING (its stop is a call to the actor, queued until the actor starts; measured), so it would
// sit there until Ray's start timeout. Killing the actor by name makes Ray's job manager fail the job
// (JOB_SUPERVISOR_ACTOR_DIED).
func killSupervisor(t *testing.T, submissionID string) {
	const script = `import sys, ray
ray.init(address=sys.argv[1], namespace="SUPERVISOR_ACTOR_RAY_NAMESPACE", logging_level="ERROR", log_to_driver=False)
ray.kill(ray.get_actor("_ray_internal_job_actor_" + sys.argv[2]), no_restart=True)
`
	cmd := exec.Command(env.python, "-c", script, env.gcs, submissionID)
	cmd.Env = os.Environ()
	if env.rayToken != "" {
		cmd.Env = append(cmd.Env, "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN="+env.rayToken)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("kill the job supervisor of %s: %v\n%s", submissionID, err, tail(string(out), 10))
		return
	}
	waitJob(t, submissionID, 30*time.Second, func(j *mvp.JobInfo) bool { return j.Status.Terminal() })
}
