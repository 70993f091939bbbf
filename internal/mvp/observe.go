package mvp

import (
	"context"
	"time"
)

// Counts is what the database says of the whole queue at one moment, read in one go for the metrics.
type Counts struct {
	// Tasks has one entry per (state, workload) that has at least one task.
	Tasks []TaskCount
	// EndedAttempts has one entry per failure kind of the attempts whose Ray job ended (FailureNone for a
	// succeeded or canceled one).
	EndedAttempts []AttemptCount
}

// TaskCount is the number of tasks in one state of one workload, and when the oldest of them was created.
type TaskCount struct {
	State    State
	Workload Workload
	N        int
	Oldest   time.Time
}

// AttemptCount is the number of ended attempts of one failure kind.
type AttemptCount struct {
	FailureKind FailureKind
	N           int
}

// Counter reads Counts. Store implements it; the metrics read it at scrape time.
type Counter interface {
	Counts(ctx context.Context) (*Counts, error)
}

// Ray call outcomes, the bounded values an Observer's RayCall receives.
const (
	OutcomeOK          = "ok"
	OutcomeNotFound    = "not_found"
	OutcomeExists      = "exists"
	OutcomeConflict    = "conflict"
	OutcomeRefused     = "refused"
	OutcomeAuth        = "unauthorized"
	OutcomeServerError = "server_error"
	OutcomeUnreachable = "unreachable"
	OutcomeCanceled    = "canceled"
	OutcomeBusy        = "busy" // Ray's state API at its limit of requests in progress, or mvp's own bound on its log streams
)

// Observer is told what the service does as it happens, for the metrics. Every method must be cheap and safe for
// concurrent use; NopObserver ignores everything.
type Observer interface {
	// TaskSubmitted: the API accepted and stored a new task.
	TaskSubmitted(w Workload)
	// TaskAdmitted: the scheduler admitted a task (its attempt recorded in SUBMITTING, about to be sent to Ray).
	TaskAdmitted(w Workload)
	// RayCall: one call to Ray's Job server ended; endpoint is a fixed name such as "get_job", outcome one of
	// the Outcome constants.
	RayCall(endpoint, outcome string, d time.Duration)
	// SchedulerPass: one pass of the scheduler loop (not skipped while backing off) took d.
	SchedulerPass(d time.Duration)
	// ClusterRead: the scheduler read the cluster; v is the view it decides on.
	ClusterRead(v *ClusterView)
	// WriteBatch: the store committed n writes in one transaction.
	WriteBatch(n int)
	// HTTPRequest: the API answered one request of route (its pattern, e.g. "/api/v2/tasks/{task_id}", never the
	// path) with status, in d (a followed log or a tail: for as long as it was followed).
	HTTPRequest(route, method string, status int, d time.Duration)
}

// NopObserver is an Observer that ignores everything.
type NopObserver struct{}

// TaskSubmitted does nothing.
func (NopObserver) TaskSubmitted(Workload) {}

// TaskAdmitted does nothing.
func (NopObserver) TaskAdmitted(Workload) {}

// RayCall does nothing.
func (NopObserver) RayCall(string, string, time.Duration) {}

// SchedulerPass does nothing.
func (NopObserver) SchedulerPass(time.Duration) {}

// ClusterRead does nothing.
func (NopObserver) ClusterRead(*ClusterView) {}

// WriteBatch does nothing.
func (NopObserver) WriteBatch(int) {}

// HTTPRequest does nothing.
func (NopObserver) HTTPRequest(string, string, int, time.Duration) {}

// ObserverOr returns o, or NopObserver when o is nil.
func ObserverOr(o Observer) Observer {
	if o == nil {
		return NopObserver{}
	}
	return o
}

type uncountedKey struct{}

// WithoutCount marks ctx as a request the web page makes of the API's handler on its own behalf (its queue, a log
// it shows): the answer is the page's, which the HTTP metrics do not count, not an API request.
func WithoutCount(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncountedKey{}, true)
}

// Uncounted reports whether ctx was marked by WithoutCount.
func Uncounted(ctx context.Context) bool {
	return ctx.Value(uncountedKey{}) != nil
}
