package scheduler

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"

	"github.com/mvp2/mvp/internal/mvp"
)

// InsufficientPattern is verl's fail-fast message, in the job's message or its log.
var InsufficientPattern = regexp.MustCompile(`Total available GPUs ([\d.]+) is less than total desired GPUs (\d+)`)

// NodeDiedMarker is Ray's words for an actor lost with its node: in the job's message when the driver's node
// died (error type JOB_SUPERVISOR_ACTOR_DIED, measured on Ray 2.60), in the driver's traceback (ActorDiedError)
// when a node holding the run's workers did. The machine failed under the run, not the run's code: INFRA.
const NodeDiedMarker = "because its node has died"

// ActorUnreachableMarker is Ray's error for a call to an actor it cannot reach and does not yet know to be dead:
// what verl's driver raises first when a node holding its workers is lost (measured on Ray 2.60: the worker killed
// with SIGKILL, the driver's next call fails with "Connection refused" seconds before Ray marks the node dead).
// Ray raises it only for lost connections and restarting actors, so it is INFRA too (retries are bounded).
const ActorUnreachableMarker = "ActorUnavailableError"

// SupervisorSystemErrorMarker is how Ray (2.60) says that the process of a job's supervisor actor died
// unexpectedly (killed, or its raylet gone: the node failing before Ray knows it dead): Ray's worker exit type
// SYSTEM_ERROR. The job's own code runs in a subprocess of the supervisor, never as it; a supervisor killed for
// memory says NODE_OUT_OF_MEMORY instead, which the run's own use may have caused, and stays UNKNOWN.
const SupervisorSystemErrorMarker = "Worker exit type: SYSTEM_ERROR"

// userErrorMarkers are log lines that mean the job was set up wrong rather than that the code crashed.
var userErrorMarkers = []string{
	"Could not override",         // Hydra: key not in the config
	"Could not append to config", // Hydra: +key twice
	"hydra.errors.",
	"omegaconf.errors.",
	"ConfigAttributeError",
	"ConfigKeyError",
	"ModuleNotFoundError",
	"No module named",
	"FileNotFoundError",
	"No such file or directory",
	"command not found",
	"usage:", // argparse and friends
}

// Classify assigns a failure kind to a Ray job that ended FAILED (or STOPPED outside mvp), from Ray's message and
// the driver log, and returns a short summary for the task's error_summary. The rules, in order, are written in
// specs/failure-kinds.md.
func Classify(info *mvp.JobInfo, log string) (mvp.FailureKind, string) {
	// Ray logs the command line ("Running entrypoint for job …: <command>"; usually the first line, but flushed
	// after the driver starts, so not always), and its message holds the log's tail: the user's own words there (a
	// path, an override) are not what happened. Every such line is dropped, wherever it is.
	text := withoutCommandLine(info.Message) + "\n" + withoutCommandLine(log)
	if m := InsufficientPattern.FindString(text); m != "" {
		return mvp.FailureInsufficientResources, m
	}
	if info.Status == mvp.RayStopped {
		return mvp.FailureUnknown, "the Ray job was stopped outside mvp"
	}
	if strings.Contains(text, NodeDiedMarker) {
		return mvp.FailureInfra, "a node under the run died: " + errorLine(text, NodeDiedMarker)
	}
	if strings.Contains(text, ActorUnreachableMarker) {
		return mvp.FailureInfra, "a node under the run could not be reached: " + errorLine(text, ActorUnreachableMarker)
	}
	switch info.ErrorType {
	case "JOB_SUPERVISOR_ACTOR_DIED":
		if strings.Contains(info.Message, SupervisorSystemErrorMarker) {
			return mvp.FailureInfra, "Ray's job supervisor of the run died with its process (killed, or its node " +
				"failing): " + lastLine(info.Message)
		}
		return mvp.FailureUnknown, fmt.Sprintf("Ray reported %s: %s", info.ErrorType, lastLine(info.Message))
	case "JOB_SUPERVISOR_ACTOR_START_TIMEOUT":
		// Ray found no node for the driver within its start timeout: nothing of the run ran. What mvp admitted was
		// taken by something outside it (or the driver asks for what no node has, such as a label): a lost race.
		return mvp.FailureInsufficientResources, "the driver did not start: " + lastLine(info.Message)
	case "RUNTIME_ENV_SETUP_FAILURE":
		return mvp.FailureUserError, "runtime_env could not be set up: " + lastLine(info.Message)
	case "", "JOB_ENTRYPOINT_COMMAND_ERROR":
	default:
		return mvp.FailureUnknown, fmt.Sprintf("Ray reported %s: %s", info.ErrorType, lastLine(info.Message))
	}
	// A set-up mistake ends the run where it happens: only the end of the log says why it failed (a warning that
	// names a missing module long before a crash is not the cause).
	end := lastLines(text, tailLines)
	for _, m := range userErrorMarkers {
		if strings.Contains(end, m) {
			return mvp.FailureUserError, errorLine(end, m)
		}
	}
	if info.DriverExitCode != nil && *info.DriverExitCode == 2 {
		return mvp.FailureUserError, fmt.Sprintf("exit code 2 (bad arguments): %s", lastLine(text))
	}
	if info.DriverExitCode != nil && *info.DriverExitCode < 0 {
		// The driver is the process Ray started (the entrypoint execs it): killed by signal N, it ends with Ray's
		// exit code -N (Python's Popen.returncode), where a shell in between said 128+N.
		sig := syscall.Signal(-*info.DriverExitCode)
		name, ok := signalNames[sig]
		if !ok {
			name = sig.String()
		}
		if sig == syscall.SIGKILL {
			name += ", as the kernel's OOM killer does"
		}
		return mvp.FailureRuntimeError, fmt.Sprintf("killed by signal %d (%s): %s", int(sig), name, crashLine(text))
	}
	if info.DriverExitCode != nil && *info.DriverExitCode != 0 {
		return mvp.FailureRuntimeError, fmt.Sprintf("exit code %d: %s", *info.DriverExitCode, crashLine(text))
	}
	if strings.Contains(text, tracebackHeader) {
		return mvp.FailureRuntimeError, crashLine(text)
	}
	return mvp.FailureUnknown, lastLine(text)
}

// tailLines is how much of the end of the log the user-error markers are looked for in.
const tailLines = 40

// commandLinePrefix starts the line in which Ray's job supervisor logs the entrypoint it runs.
const commandLinePrefix = "Running entrypoint for job "

// withoutCommandLine drops the lines in which Ray logs the job's command line.
func withoutCommandLine(s string) string {
	if !strings.Contains(s, commandLinePrefix) {
		return s
	}
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), commandLinePrefix) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// lastLines returns the last n lines of s ("" when s holds nothing but blank lines).
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n ")
	if s == "" || n <= 0 {
		return "" // s[i+1:] below would slice past the end: a failure that said nothing panicked in the loop
	}
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(s[:i], '\n')
		if i < 0 {
			return s
		}
	}
	return s[i+1:]
}

// errorLine returns the line of text holding marker, trimmed and cut to a readable length.
func errorLine(text, marker string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return cut(strings.TrimSpace(l))
		}
	}
	return marker
}

// tracebackHeader begins a Python traceback.
const tracebackHeader = "Traceback (most recent call last)"

// actorLine is the prefix Ray's log monitor puts on a line it forwards from an actor or a task ("(TaskRunner
// pid=2992)", "(WorkerDict pid=7, ip=10.0.0.2)"), once its colour codes are gone.
var actorLine = regexp.MustCompile(`^\([^()]*\bpid=\d+[^()]*\)`)

// crashLine returns what a crash says of itself: after the last traceback in text, the last line of the driver's
// own (neither indented, as a frame is, nor forwarded from an actor), which is the exception. Ray forwards what the
// actors printed asynchronously, so their last lines often come after the driver's traceback; as the last line of
// the log, one ("(TaskRunner pid=…) step 4") was the summary of a run that failed on a read-only disk. Without a
// traceback (Ray's message holds only a log's last lines), it is the exception when only actor lines follow it.
// Otherwise it is lastLine.
func crashLine(text string) string {
	if i := strings.LastIndex(text, tracebackHeader); i >= 0 {
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			if l := lastDriverLine(text[i+j+1:], true); l != "" {
				return l
			}
		}
	} else if l := lastDriverLine(text, false); exceptionLine.MatchString(l) {
		return l
	}
	return lastLine(text)
}

// exceptionLine is the line a Python exception ends its traceback with ("OSError: [Errno 28] …",
// "ray.exceptions.RayTaskError(OSError): …").
var exceptionLine = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)(?:\([\w.]*\))?: `)

// lastDriverLine is the last line of text that the driver wrote itself (not empty, not forwarded from an actor),
// as a summary (cut). An indented line (a traceback's frame) is passed over in a traceback (frames), else it ends
// the search; "" when there is none.
func lastDriverLine(text string, frames bool) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		raw := lines[i]
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if raw[0] == ' ' || raw[0] == '\t' {
			if frames {
				continue
			}
			return ""
		}
		if l := cut(raw); l != "" && !actorLine.MatchString(l) {
			return l
		}
	}
	return ""
}

// lastLine returns the last non-empty line, which for a Python crash is the exception.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n "), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := cut(lines[i]); l != "" { // a line of colour codes alone is empty
			return l
		}
	}
	return ""
}

// colourCode is an ANSI escape sequence (CSI: ESC '[' parameters, a final byte). Ray colours the "(TaskRunner
// pid=…)" prefix of each line an actor prints in the driver's log; kept in a summary, the codes showed as
// `\x1b[36m` in `mvp list` (which escapes them) and `[36m` on the web page, in place of the error.
var colourCode = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// cut makes a log line a summary: without colour codes, and clipped to a readable length. One pass left the code
// that removing another inside it made ("\x1b[" "\x1b[31m" "36m"): a few passes are made, and the ESC of a code
// nested deeper still (a job's log can hold anything) is dropped, so that the work stays linear in the line.
func cut(s string) string {
	for i := 0; i < 4 && colourCode.MatchString(s); i++ {
		s = colourCode.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "\x1b", "")
	return mvp.Clip(strings.TrimSpace(s), 300)
}

// signalNames are the names of the signals that end a driver most often; others are said by Go's description.
var signalNames = map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGILL: "SIGILL",
	syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM"}
