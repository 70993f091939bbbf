package mvp

import "context"

// User is one named user of v2.auth.users: a bearer token (read from the environment variable the config names,
// never from the file) and optional limits. The internal token is the operator's (Operator), who has no limits,
// sees everything and may cancel everything.
type User struct {
	Name string `json:"name"`
	// Token is the user's bearer token; never logged, echoed or serialized.
	Token string `json:"-"`
	// MaxGPUs bounds the GPUs of the user's live tasks together (0: none): a task that would pass it waits with
	// the wait code quota.
	MaxGPUs int `json:"max_gpus"`
	// MaxQueued bounds the user's waiting tasks (0: none): a submit past it is refused (429).
	MaxQueued int `json:"max_queued"`
	// MaxPriority caps the priority the user's jobspecs may ask for (MaxPriority when the config names none).
	MaxPriority int `json:"max_priority"`
	// Share is the user's weight in fair share (1 when the config names none).
	Share float64 `json:"share"`
}

// Caller is who made a request: a user, or the operator.
type Caller struct {
	Name     string
	Operator bool
}

// OwnerName is owner as named: the operator's own things may carry no owner ("").
func OwnerName(owner string) string {
	if owner == "" {
		return Operator
	}
	return owner
}

// Owns reports whether the caller may see and act on what owner owns: the operator always, a user its own.
func (c Caller) Owns(owner string) bool {
	return c.Operator || c.Name == OwnerName(owner)
}

// OwnerCaller is the caller that acts for what owner owns (a task run for its owner): the operator for
// Operator or "", else that user.
func OwnerCaller(owner string) Caller {
	if owner == "" || owner == Operator {
		return Caller{Name: Operator, Operator: true}
	}
	return Caller{Name: owner}
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries; the operator when it carries none (in-process callers such as the
// schedules loop and the web page act as the operator).
func CallerOf(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Name: Operator, Operator: true}
}
