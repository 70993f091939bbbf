package scheduler

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzClassify feeds Classify what Ray and a job's driver log say of a run that failed: Ray's message and error
// type, the driver's exit code and the log the job wrote. The kind is one a failed run can have, and the summary
// (the task's error_summary) is UTF-8 when the inputs are, holds no colour code, and stays short however long the
// log.
func FuzzClassify(f *testing.F) {
	verl := "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n" +
		"Traceback (most recent call last):\n  File \"x.py\"\nValueError: Total available GPUs 4.0 is less than total desired GPUs 8\n"
	for _, c := range []struct {
		message, errorType, log string
		exit                    int
	}{
		{verl, "JOB_ENTRYPOINT_COMMAND_ERROR", "", 1},
		{"failed", "", "ValueError: Total available GPUs 0 is less than total desired GPUs 8", 1},
		{"", "JOB_ENTRYPOINT_COMMAND_ERROR", "Could not override 'trainer.foo'.\nKey 'foo' is not in struct", 1},
		{"", "", "bad argument", 2}, {"", "", "Traceback (most recent call last):\nRuntimeError: CUDA error", 1},
		{"pip failed", "RUNTIME_ENV_SETUP_FAILURE", "", -1},
		{"Job supervisor actor died: The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR", "JOB_SUPERVISOR_ACTOR_DIED", "", -1},
		{"", "", "\x1b[36m(TaskRunner pid=1)\x1b[0m Traceback (most recent call last):\n\x1b[36m(TaskRunner pid=1)\x1b[0m ValueError: " + strings.Repeat("é", 400), 1},
		{"", "", "Running entrypoint for job x--a01: python3 model.path=/m/ModuleNotFoundError\nstep 1\n", 1},
		{"", "", "The actor died because its node has died. " + strings.Repeat("x", 1000), 1},
	} {
		f.Add(c.message, c.errorType, c.log, c.exit, false)
	}
	known := map[mvp.FailureKind]bool{mvp.FailureInsufficientResources: true, mvp.FailureUserError: true,
		mvp.FailureRuntimeError: true, mvp.FailureInfra: true, mvp.FailureUnknown: true}
	f.Fuzz(func(t *testing.T, message, errorType, log string, exit int, stopped bool) {
		info := &mvp.JobInfo{Status: mvp.RayFailed, Message: message, ErrorType: errorType}
		if stopped {
			info.Status = mvp.RayStopped
		}
		if exit >= 0 {
			info.DriverExitCode = &exit
		}
		kind, summary := Classify(info, log)
		if !known[kind] {
			t.Fatalf("kind %q", kind)
		}
		if utf8.ValidString(message) && utf8.ValidString(errorType) && utf8.ValidString(log) && !utf8.ValidString(summary) {
			t.Fatalf("a summary that is not UTF-8: %q", summary)
		}
		if colourCode.MatchString(summary) && !colourCode.MatchString(errorType) {
			t.Fatalf("a colour code in the summary: %q", summary)
		}
		if len(summary) > 400+len(errorType) {
			t.Fatalf("a summary of %d bytes: %.100q…", len(summary), summary)
		}
	})
}
