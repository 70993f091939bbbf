package mvp

import (
	"errors"
	"fmt"
	"slices"
)

// Error codes. The HTTP layer maps each to one status in one place.
const (
	CodeInvalid      = "invalid"      // bad input: 400
	CodeUnauthorized = "unauthorized" // no token: 401
	CodeForbidden    = "forbidden"    // wrong token, or another user's task: 403
	CodeNotFound     = "not_found"    // 404
	CodeConflict     = "conflict"     // illegal transition, lost compare-and-set: 409
	CodeTooLarge     = "too_large"    // body over the cap: 413
	CodeUnsupported  = "unsupported"  // media type: 415
	CodeUnavailable  = "unavailable"  // disk full, DB gone, Ray down where it matters: 503
	CodeInternal     = "internal"     // 500
	CodeMethod       = "method"       // 405
	CodeTooMany      = "too_many"     // past a per-user limit such as max_queued: 429
)

// Error is an error meant for the user: a code, a message that says what to fix, and the field it is about.
type Error struct {
	Code    string
	Message string
	Field   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return e.Message
}

// Errorf builds an *Error.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal when there is none.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// CheckpointsInUse is the refusal of a new task that would resume from the checkpoint folder of task folder while
// task writer (in state) writes there, or may still: two runs would write one folder's checkpoints at once.
func CheckpointsInUse(folder, writer string, state State) error {
	who := fmt.Sprintf("task %s (%s) resumes from %s's checkpoints and writes them", writer, state, folder)
	if writer == folder {
		who = fmt.Sprintf("task %s (%s) writes its checkpoints", writer, state)
	}
	if state.Terminal() {
		// It has ended: only its job's stop is to be waited for (a cancel of it is refused, as it ended).
		return Errorf(CodeConflict, "resume_from", "%s, and its Ray job has not stopped yet: one checkpoint folder "+
			"takes one run at a time; try again once that job has stopped, or have this task start after it "+
			"(after_any: [%s]), which the scheduler holds until the job has stopped", who, writer)
	}
	return Errorf(CodeConflict, "resume_from", "%s: one checkpoint folder takes one run at a time; wait until %s "+
		"has ended (its Ray job stopped), cancel it, or have this task start after it (after_any: [%s], or after_ok "+
		"to run only if it succeeds)", who, writer, writer)
}

// UnawaitedWriter returns a writer of a checkpoint folder (of writers, by id: Store.CheckpointWriters) that t, which
// resumes from that folder, does not wait for (after_ok or after_any), the smallest id first; "" when t waits for
// all of them: then no two runs write the folder at once, each starting once the one before it has ended.
func UnawaitedWriter(t *Task, writers map[string]State) (string, State) {
	best := ""
	for id := range writers {
		if !slices.Contains(t.AfterOK, id) && !slices.Contains(t.AfterAny, id) && (best == "" || id < best) {
			best = id
		}
	}
	return best, writers[best]
}

// ErrNotFound is returned by stores for an unknown task or attempt.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "not found"}

// ErrConflict is returned by stores when a compare-and-set finds another state than expected.
var ErrConflict = &Error{Code: CodeConflict, Message: "the task changed state meanwhile"}

// ErrTaskIDTaken is the ErrConflict of a new task whose id another task has (a restarted mvp counting through the
// ids it made before in the same second, say): the caller makes another. errors.Is matches both.
var ErrTaskIDTaken = &Error{Code: CodeConflict, Message: "the task id is taken"}

// TooManyWaiting is the refusal of a submit past the owner's max_queued: n of their tasks wait already.
func TooManyWaiting(owner string, n, maxQueued int) error {
	return Errorf(CodeTooMany, "", "%s has %d tasks waiting and may have at most %d (max_queued): wait for some to start or cancel some",
		owner, n, maxQueued)
}
