package scheduler

import (
	"fmt"
	"regexp"
	"strings"

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
	text := info.Message + "\n" + log
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
	case "RUNTIME_ENV_SETUP_FAILURE":
		return mvp.FailureUserError, "runtime_env could not be set up: " + lastLine(info.Message)
	case "", "JOB_ENTRYPOINT_COMMAND_ERROR":
	default:
		return mvp.FailureUnknown, fmt.Sprintf("Ray reported %s: %s", info.ErrorType, lastLine(info.Message))
	}
	for _, m := range userErrorMarkers {
		if strings.Contains(text, m) {
			return mvp.FailureUserError, errorLine(text, m)
		}
	}
	if info.DriverExitCode != nil && *info.DriverExitCode == 2 {
		return mvp.FailureUserError, fmt.Sprintf("exit code 2 (bad arguments): %s", lastLine(text))
	}
	if info.DriverExitCode != nil && *info.DriverExitCode != 0 {
		return mvp.FailureRuntimeError, fmt.Sprintf("exit code %d: %s", *info.DriverExitCode, lastLine(text))
	}
	if strings.Contains(text, "Traceback (most recent call last)") {
		return mvp.FailureRuntimeError, lastLine(text)
	}
	return mvp.FailureUnknown, lastLine(text)
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

// lastLine returns the last non-empty line, which for a Python crash is the exception.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n "), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return cut(l)
		}
	}
	return ""
}

func cut(s string) string { return mvp.Clip(s, 300) }
