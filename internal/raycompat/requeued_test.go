package raycompat_test

import (
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestARequeuedJobShowsNoDriverOfItsFailedAttempt: a job whose attempt lost the race for GPUs is queued in mvp
// again and shown PENDING, as Ray shows a job that has not started; it carried the failed attempt's driver_node_id
// (and its job_id and driver_exit_code), which Ray's PENDING job never has: a client that reads driver_exit_code
// took the job for ended (found by a user's-eye drill). They are back once the next attempt runs.
func TestARequeuedJobShowsNoDriverOfItsFailedAttempt(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python train.py","submission_id":"lost-race"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	ray.Set(s.SubmissionID, mvp.RayRunning)
	d.waitStatus("lost-race", "RUNNING", "")
	ray.AddLog(s.SubmissionID, "ValueError: Total available GPUs 2.0 is less than total desired GPUs 4\n")
	ray.Set(s.SubmissionID, mvp.RayFailed)
	j := d.waitStatus("lost-race", "PENDING", "lack of resources")
	if j.DriverNodeID != nil || j.JobID != nil || j.DriverExitCode != nil || j.EndTime != nil {
		t.Errorf("the requeued job: driver_node_id %v, job_id %v, driver_exit_code %v, end_time %v; want all null, "+
			"as Ray's PENDING job", deref(j.DriverNodeID), deref(j.JobID), j.DriverExitCode, j.EndTime)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestAJobStoppedWhileQueuedAgainShowsTheStopNotItsFailedAttempt: a job queued in mvp again after its attempt
// failed, then stopped (`ray job stop`) while it waited, is STOPPED at the stop: it showed the failed attempt's
// end_time (which may be hours before the stop), job_id and driver_exit_code, as if that run had been stopped.
func TestAJobStoppedWhileQueuedAgainShowsTheStopNotItsFailedAttempt(t *testing.T) {
	ray := servicetest.NewRay()
	d, _ := startDoor(t, ray, 4)
	d.ok("POST", "/api/jobs/", []byte(`{"entrypoint":"python train.py","submission_id":"stopped-queued"}`), nil)
	s := waitSubmissions(t, ray, 1)[0]
	ray.Set(s.SubmissionID, mvp.RayRunning)
	d.waitStatus("stopped-queued", "RUNNING", "")
	ray.AddLog(s.SubmissionID, "ValueError: Total available GPUs 2.0 is less than total desired GPUs 4\n")
	ray.Set(s.SubmissionID, mvp.RayFailed)
	d.waitStatus("stopped-queued", "PENDING", "lack of resources")
	time.Sleep(20 * time.Millisecond) // so that the stop's millisecond is after the attempt's end
	stopAt := time.Now().UnixMilli()
	d.ok("POST", "/api/jobs/stopped-queued/stop", nil, nil)
	j := d.waitStatus("stopped-queued", "STOPPED", "")
	if j.JobID != nil || j.DriverExitCode != nil || j.DriverNodeID != nil || j.EndTime == nil || *j.EndTime < stopAt {
		t.Errorf("a job stopped while queued again: job_id %v, driver_exit_code %v, driver_node_id %v, end_time %v "+
			"(stopped at %d); want no driver of the failed attempt and its end at the stop", deref(j.JobID),
			j.DriverExitCode, deref(j.DriverNodeID), j.EndTime, stopAt)
	}
}
