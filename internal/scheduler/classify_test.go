package scheduler

import (
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestClassify(t *testing.T) {
	code := func(n int) *int { return &n }
	verl := "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n" +
		"Traceback (most recent call last):\n  File \"x.py\"\nValueError: Total available GPUs 4.0 is less than total desired GPUs 8\n"
	cases := []struct {
		name string
		info mvp.JobInfo
		log  string
		want mvp.FailureKind
	}{
		{"verl fail-fast in message", mvp.JobInfo{Status: mvp.RayFailed, Message: verl, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1)}, "", mvp.FailureInsufficientResources},
		{"verl fail-fast only in log", mvp.JobInfo{Status: mvp.RayFailed, Message: "failed", DriverExitCode: code(1)}, "ValueError: Total available GPUs 0 is less than total desired GPUs 8", mvp.FailureInsufficientResources},
		{"hydra override error", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1)}, "Could not override 'trainer.foo'.\nKey 'foo' is not in struct", mvp.FailureUserError},
		{"missing module", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)}, "ModuleNotFoundError: No module named 'verl'", mvp.FailureUserError},
		{"missing data file", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)}, "FileNotFoundError: [Errno 2] No such file or directory: '/private/x.parquet'", mvp.FailureUserError},
		{"exit 2", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(2)}, "bad argument", mvp.FailureUserError},
		{"crash", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)}, "Traceback (most recent call last):\nRuntimeError: CUDA error", mvp.FailureRuntimeError},
		{"plain non-zero exit", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(3)}, "bye", mvp.FailureRuntimeError},
		{"runtime env", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "RUNTIME_ENV_SETUP_FAILURE", Message: "pip failed"}, "", mvp.FailureUserError},
		{"supervisor died", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: "node died"}, "", mvp.FailureUnknown},
		{"stopped outside mvp", mvp.JobInfo{Status: mvp.RayStopped}, "", mvp.FailureUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, summary := Classify(&c.info, c.log)
			if got != c.want || summary == "" {
				t.Errorf("got %s %q, want %s", got, summary, c.want)
			}
		})
	}
	_, s := Classify(&mvp.JobInfo{Status: mvp.RayFailed, Message: verl}, "")
	if s != "Total available GPUs 4.0 is less than total desired GPUs 8" {
		t.Errorf("summary %q", s)
	}
}
