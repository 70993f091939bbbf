package scheduler

import (
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// ShellStartWait is how long mvp must have seen a job RUNNING before it asks Ray to stop it, when the job's
// entrypoint is a shell that starts the driver as its child (StopTooSoon).
const ShellStartWait = time.Second

// StopTooSoon reports whether Ray should not be asked yet to stop attempt a of task t, as of now: t is a Ray-door
// job that Ray runs as a shell that starts the driver as its child (build says so: mvp.JobSubmission's
// ShellStartsDriver; quotes, operators, `bash run.sh`, `A=1 python …`), and mvp has not seen the job RUNNING for
// ShellStartWait (an attempt recorded RUNNING with no time is taken as running long enough).
//
// Ray 2.60 stops a job by signalling its entrypoint's process and the children it lists at that instant. A stop
// that reached Ray's job supervisor while it was starting the entrypoint (the job PENDING, or RUNNING a moment:
// Ray says RUNNING just before it starts the shell) missed a driver the shell started a moment later, which then
// ran on with no parent, holding its resources for its whole run, while Ray said STOPPED (measured with Ray's own
// job API: `cd /tmp && python3 -c …` stopped 0.2 s after its submit, 5 of 12). A second after mvp saw it RUNNING
// the shell has started its command, and Ray's listing holds the driver. So such a stop waits: the task is
// CANCELED at once, and the loop sends the stop at its first pass after that second (up to two ticks after the
// job starts). Ray itself starts a job stopped while PENDING anyway, so holding the stop back then starts nothing
// that would not have started; the job runs until that pass. mvp's own entrypoints and a door command that is one
// plain Python command are exec'd and stopped at once.
func StopTooSoon(build Builder, t *mvp.Task, a *mvp.Attempt, now time.Time) bool {
	if t == nil || a == nil || t.Workload != mvp.WorkloadRayJob || build == nil || a.RayStatus.Terminal() {
		return false
	}
	if a.RayStatus == mvp.RayRunning {
		if since := a.RunningSince(); since == nil || now.Sub(*since) >= ShellStartWait {
			return false
		}
	}
	sub, err := build(t, a.No)
	if err != nil {
		return false // nothing to judge by: stop it, as before
	}
	return sub.ShellStartsDriver
}
