package scheduler

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// nodeDied is Ray 2.60's message for a job whose driver's node died (measured: the worker killed with SIGKILL).
const nodeDied = "Job supervisor actor died: The actor died unexpectedly before finishing this task.\n\tclass_name: JobSupervisor\n" +
	"\tactor_id: ce125e5d36f5dfd710ff325f01000000\n\tpid: 16742\n\tname: _ray_internal_job_actor_nodedeath1\n" +
	"\tnamespace: SUPERVISOR_ACTOR_RAY_NAMESPACE\n\tip: 192.0.2.2\nThe actor died because its node has died. Node Id: " +
	"539e2c95080366ca3862a10c091874f7a800c62c732a0a03e1ea3c58\n\tthe actor's node was terminated unexpectedly: health check " +
	"failed due to missing too many heartbeats"

// actorUnavailable is the last line of a driver's traceback when a node holding one of its actors was killed and
// Ray has not yet marked it dead (Ray 2.60, measured).
const actorUnavailable = "ray.exceptions.ActorUnavailableError: The actor fd839da882abb908fee70c6102000000 is unavailable: " +
	"The actor is temporarily unavailable: RpcError: RPC error: failed to connect to all addresses; last error: UNKNOWN: " +
	"ipv4:192.0.2.2:14101: Failed to connect to remote host: Connection refused rpc_code: 14. The task may or may not " +
	"have been executed on the actor."

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
		// Ray found no node for the driver within its start timeout (15 min; walk-through 17: what mvp admitted
		// was taken by something outside it, or a label selector no node matched): nothing ran, so it is a lost
		// race, retried after retry_interval_s, not a failure of the run.
		{"driver never started", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_START_TIMEOUT",
			Message: "Job supervisor actor failed to start within 900.0 seconds. This timeout can be configured by setting the environment variable RAY_JOB_START_TIMEOUT_SECONDS."}, "", mvp.FailureInsufficientResources},
		{"supervisor died, not with its node", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: "Job supervisor actor died: The actor is dead because its worker process has died."}, "", mvp.FailureUnknown},
		// Walk-through 9 on Ray 2.60: the driver's worker node killed process by process (its job supervisor first),
		// before Ray knew the node dead; the task ended FAILED/UNKNOWN with no retry. SYSTEM_ERROR is Ray's exit
		// type for a worker process that died unexpectedly (killed, or its raylet gone), never for the job's code,
		// which runs in a subprocess of the supervisor.
		{"supervisor's process died (SYSTEM_ERROR)", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED",
			Message: "Job supervisor actor died: The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file."}, "", mvp.FailureInfra},
		{"supervisor killed for memory (not known to be the node's fault)", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED",
			Message: "Job supervisor actor died: The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit detail: Task was killed due to the node running low on memory."}, "", mvp.FailureUnknown},
		// Measured on Ray 2.60 (the worker holding the driver killed with SIGKILL): the node is lost, not the run's code.
		{"the driver's node died", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_SUPERVISOR_ACTOR_DIED", Message: nodeDied}, "", mvp.FailureInfra},
		// verl's driver calls its workers' actors: a worker's node lost shows as ActorDiedError in its traceback.
		{"a worker's node died", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1)},
			"Traceback (most recent call last):\n  File \"ray_trainer.py\"\nray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\tclass_name: WorkerDict\nThe actor died because its node has died. Node Id: 539e2c95\n", mvp.FailureInfra},
		// Measured on Ray 2.60 (TestWorkerNodeDeathIsRetried: the other worker of a two-node run killed with
		// SIGKILL): the driver's next call to its actor there fails before Ray has marked the node dead.
		{"a worker's node cannot be reached", mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1),
			Message: "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n    raise value\n"},
			"Traceback (most recent call last):\n  File \"_standin.py\", line 208, in run\n    raise value\n" + actorUnavailable + "\n", mvp.FailureInfra},
		{"a node lost, and the user's own mistake", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)},
			"FileNotFoundError: [Errno 2] No such file or directory: '/data/x'\nThe actor died because its node has died.", mvp.FailureInfra},
		{"stopped outside mvp", mvp.JobInfo{Status: mvp.RayStopped}, "", mvp.FailureUnknown},
		// The user's own words in the command line Ray logs first (a path, an override) are not the failure: found
		// in walk-through 7, where a model_path holding "ModuleNotFoundError" made a crash a USER_ERROR.
		{"a marker in the command line", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)},
			"Running entrypoint for job mvp2-sft-20251223-143201-7f3a--a01: python3 -m verl.trainer.sft_trainer_ray " +
				"model.path=/m/ModuleNotFoundError-test +logging.note=usage:high 'x=Total available GPUs 1 is less than total desired GPUs 2'\n" +
				"step 1\nverl-standin: done after 2 step(s), exit code 1\n", mvp.FailureRuntimeError},
		// A set-up mistake ends the run where it happens: a warning that mentions one, long before the crash, is not
		// why the run failed.
		{"a marker long before the crash", mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)},
			"UserWarning: No module named 'flash_attn_3', using the fallback\n" + strings.Repeat("step\n", 200) +
				"Traceback (most recent call last):\nRuntimeError: CUDA error: an illegal memory access\n", mvp.FailureRuntimeError},
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

// TestClassifySummaryHasNoColourCodes: Ray colours the "(TaskRunner pid=…)" prefix of every line a verl actor
// prints in the driver's log. Those escape codes reached error_summary, where `mvp list` showed
// `\x1b[36m(TaskRunner p…` in place of the error (the table escapes control characters) and /ui showed `[36m`.
func TestClassifySummaryHasNoColourCodes(t *testing.T) {
	code := func(n int) *int { return &n }
	log := "\x1b[36m(TaskRunner pid=13754)\x1b[0m verl-standin: step 2 progress 0.33\n" +
		"\x1b[36m(TaskRunner pid=13754)\x1b[0m verl-standin: done after 3 step(s), exit code 1\n"
	for _, info := range []mvp.JobInfo{
		{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1)},
		{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(1), Message: "x\n\x1b[31mModuleNotFoundError: No module named 'verl'\x1b[0m"},
		{Status: mvp.RayFailed, ErrorType: "SOMETHING_NEW", Message: "\x1b[1;31mboom\x1b[0m"},
	} {
		_, summary := Classify(&info, log)
		if strings.Contains(summary, "\x1b") {
			t.Errorf("summary %q keeps Ray's colour codes", summary)
		}
	}
	_, summary := Classify(&mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: code(1)}, log)
	if want := "exit code 1: (TaskRunner pid=13754) verl-standin: done after 3 step(s), exit code 1"; summary != want {
		t.Errorf("summary = %q, want %q", summary, want)
	}
}

// TestClassifyAFailureThatSaysNothing: a run that failed with no message from Ray and no log (the driver killed
// before it printed, the log not read) made Classify panic (lastLines sliced past the end of an empty text), in
// the scheduler's loop. Found by FuzzClassify. It is UNKNOWN, with an empty summary.
func TestClassifyAFailureThatSaysNothing(t *testing.T) {
	for _, c := range []struct{ message, log string }{{"", ""}, {" ", ""}, {"", "\n\n"}, {" \n", " "}} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("message %q, log %q: panic %v", c.message, c.log, r)
				}
			}()
			kind, summary := Classify(&mvp.JobInfo{Status: mvp.RayFailed, Message: c.message}, c.log)
			if kind != mvp.FailureUnknown || summary != "" {
				t.Errorf("message %q, log %q: %s %q", c.message, c.log, kind, summary)
			}
		}()
	}
	if got := lastLines("", 40); got != "" {
		t.Errorf("lastLines of nothing: %q", got)
	}
}

// TestClassifySummaryHasNoColourCodeMadeByRemovingOne: colour codes were removed in one pass, so a code that
// stood inside another ("\x1b[" + "\x1b[31m" + "36m") made a whole one once removed, and it stayed in the summary.
// Seen while writing FuzzClassify's property.
func TestClassifySummaryHasNoColourCodeMadeByRemovingOne(t *testing.T) {
	code := 1
	_, summary := Classify(&mvp.JobInfo{Status: mvp.RayFailed, DriverExitCode: &code}, "\x1b[\x1b[31m36mValueError: boom\n")
	if colourCode.MatchString(summary) || !strings.Contains(summary, "ValueError: boom") {
		t.Errorf("summary %q", summary)
	}
}

// TestACrashSummaryIsTheExceptionNotAnActorsLaterLine: a run whose shared_root went read-only mid-run crashed with
// OSError; Ray's log monitor forwards what an actor printed asynchronously, so
// the actor's last progress lines came after the driver's traceback, and the summary was "exit code 1: (TaskRunner
// pid=2992) verl-standin: step 4 progress 0.12": not why it failed. The summary of a crash is its exception: the
// traceback's last line of the driver's own. Log as measured on Ray 2.60 (found in a fault walk-through).
func TestACrashSummaryIsTheExceptionNotAnActorsLaterLine(t *testing.T) {
	code := 1
	log := "Traceback (most recent call last):\n" +
		"  File \"/tmp/h85/py-entrypoints/verl/_standin.py\", line 191, in run\n" +
		"    return ray.get(runner.run.remote(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check))\n" +
		"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
		"    raise value.as_instanceof_cause()\n" +
		"ray.exceptions.RayTaskError(OSError): \x1b[36mray::TaskRunner.run()\x1b[39m (pid=2992, ip=192.0.2.2, actor_id=7461ebc794259c04885398e131000000)\n" +
		"  File \"/tmp/h85/py-entrypoints/verl/_standin.py\", line 76, in report\n" +
		"    with open(logger_path, \"a\") as f:\n" +
		"         ^^^^^^^^^^^^^^^^^^^^^^\n" +
		"OSError: [Errno 30] Read-only file system: '/shared/jobs/t/attempts/a01/metrics.jsonl'\n" +
		"\x1b[36m(TaskRunner pid=2992)\x1b[0m verl-standin: step 4 progress 0.12\n" +
		"\x1b[36m(TaskRunner pid=2992)\x1b[0m verl-standin: step 4 progress 0.12\n" +
		"\x1b[36m(TaskRunner pid=2992, ip=192.0.2.3)\x1b[0m verl-standin: step 4 progress 0.12\n\n"
	info := mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: &code,
		Message: "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n" + log}
	kind, summary := Classify(&info, log)
	want := "exit code 1: OSError: [Errno 30] Read-only file system: '/shared/jobs/t/attempts/a01/metrics.jsonl'"
	if kind != mvp.FailureRuntimeError || summary != want {
		t.Errorf("Classify = %s %q, want %s %q", kind, summary, mvp.FailureRuntimeError, want)
	}
	// Without an exit code (Ray did not give one), the traceback alone decides, with the same line.
	info.DriverExitCode = nil
	if kind, summary := Classify(&info, log); kind != mvp.FailureRuntimeError || summary != strings.TrimPrefix(want, "exit code 1: ") {
		t.Errorf("without an exit code: Classify = %s %q", kind, summary)
	}
}

// TestACrashSummaryWithoutTheLogIsTheExceptionToo: when the driver log cannot be fetched or kept (shared_root full),
// only Ray's message is read, and it holds the last lines of the log alone: the exception, its last frames, and
// the actor lines Ray forwarded after it, but not the "Traceback" header. The summary was the last actor line
// ("(TaskRunner pid=…) verl-standin: step 2 progress 0.05"); it is the exception (measured on Ray 2.60).
func TestACrashSummaryWithoutTheLogIsTheExceptionToo(t *testing.T) {
	code := 1
	info := mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: &code,
		Message: "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n" +
			"  File \"/work/main/py-entrypoints/verl/_standin.py\", line 201, in run\n" +
			"    return train(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check)\n" +
			"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
			"  File \"/work/main/py-entrypoints/verl/_standin.py\", line 85, in report\n" +
			"    with open(tmp, \"w\") as f:\n" +
			"OSError: [Errno 28] No space left on device\n" +
			"\x1b[36m(TaskRunner pid=25158)\x1b[0m verl-standin: step 2 progress 0.05\n" +
			"\x1b[36m(TaskRunner pid=25158)\x1b[0m verl-standin: step 2 progress 0.05\n"}
	kind, summary := Classify(&info, "")
	if want := "exit code 1: OSError: [Errno 28] No space left on device"; kind != mvp.FailureRuntimeError || summary != want {
		t.Errorf("Classify = %s %q, want %s %q", kind, summary, mvp.FailureRuntimeError, want)
	}
	// A run that printed its own last words and exited without a traceback keeps them as its summary.
	info.Message = "Job entrypoint command failed with exit code 1, last available logs:\nloading data\ngave up: no data\n" +
		"\x1b[36m(TaskRunner pid=7)\x1b[0m shutting down\n"
	if _, summary := Classify(&info, ""); summary != "exit code 1: (TaskRunner pid=7) shutting down" {
		t.Errorf("without an exception: %q; want the last line as before", summary)
	}
}

// TestADriverKilledBySignalSaysTheSignal: the driver is the process Ray started (mvp's entrypoint execs it), so a
// driver killed by a signal (the kernel's OOM killer, a kill -9) ends with Ray's exit code -N (Python's
// Popen.returncode), where the shell in between used to say 128+N; "exit code -9" said neither. It says the signal.
func TestADriverKilledBySignalSaysTheSignal(t *testing.T) {
	code := func(n int) *int { return &n }
	log := "verl-standin: step 2 progress 0.33\n"
	for _, c := range []struct {
		code int
		want string
	}{
		{-9, "killed by signal 9 (SIGKILL, as the kernel's OOM killer does): verl-standin: step 2 progress 0.33"},
		{-11, "killed by signal 11 (SIGSEGV): verl-standin: step 2 progress 0.33"},
		{137, "exit code 137: verl-standin: step 2 progress 0.33"},
	} {
		kind, summary := Classify(&mvp.JobInfo{Status: mvp.RayFailed, ErrorType: "JOB_ENTRYPOINT_COMMAND_ERROR", DriverExitCode: code(c.code)}, log)
		if kind != mvp.FailureRuntimeError || summary != c.want {
			t.Errorf("exit code %d: %s %q, want RUNTIME_ERROR %q", c.code, kind, summary, c.want)
		}
	}
}
