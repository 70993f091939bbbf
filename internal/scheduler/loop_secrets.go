package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// SecretValues opens owner's named secrets for one Ray submission of a task of owner (secrets.Vault.ValuesOf); a
// secret owner does not have is an error that names it (another user's of that name is never looked at).
type SecretValues func(ctx context.Context, owner string, names []string) (map[string]string, error)

// withSecrets returns what is sent to Ray: payload itself when the task names no secrets, else a copy whose
// runtime_env.env_vars gain the secrets' current values (so a rotated secret reaches the next attempt). payload,
// which is what the task folder and the dry run show, is never changed. values are the values put in, for
// redaction of anything that might echo them.
func (l *Loop) withSecrets(ctx context.Context, t *mvp.Task, payload *mvp.JobSubmission) (*mvp.JobSubmission, []string, error) {
	var spec struct {
		Secrets map[string]string `json:"secrets"`
	}
	if err := json.Unmarshal(t.SpecJSON, &spec); err != nil {
		return nil, nil, mvp.Errorf(mvp.CodeInvalid, "secrets", "decode the secrets of %s: %v", t.ID, err)
	}
	if len(spec.Secrets) == 0 {
		return payload, nil, nil
	}
	names := make([]string, 0, len(spec.Secrets))
	for _, n := range spec.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	if l.Secrets == nil {
		return nil, nil, mvp.Errorf(mvp.CodeUnavailable, "secrets", "the task names secrets and secret storage is off on this server (v2.secrets.key_env)")
	}
	vals, err := l.Secrets(ctx, t.Owner, names)
	if err != nil {
		return nil, nil, err
	}
	sent := *payload
	sent.RuntimeEnv = make(map[string]any, len(payload.RuntimeEnv))
	for k, v := range payload.RuntimeEnv {
		sent.RuntimeEnv[k] = v
	}
	old, _ := payload.RuntimeEnv["env_vars"].(map[string]any)
	env := make(map[string]any, len(old)+len(spec.Secrets))
	for k, v := range old {
		env[k] = v
	}
	values := make([]string, 0, len(spec.Secrets))
	for envName, secret := range spec.Secrets {
		env[envName] = vals[secret]
		values = append(values, vals[secret])
	}
	sent.RuntimeEnv["env_vars"] = env
	if n := sent.RayConfigBytes(); n > mvp.MaxRayConfigBytes {
		// A verdict (the field is "secrets"): Ray would fail the job at start, and the next try would too.
		return nil, nil, mvp.Errorf(mvp.CodeInvalid, "secrets", "with its secrets' values the job's runtime_env "+
			"comes to about %d bytes as Ray hands it to the job (JSON, non-ASCII escaped), in one environment "+
			"variable, which Linux refuses past 128 KiB (%d here): make the secrets or env shorter, or pass large "+
			"values in a file", n, mvp.MaxRayConfigBytes)
	}
	return &sent, values, nil
}

// secretsVerdict reports whether withSecrets's error is a verdict on the task's secrets (one is gone, does not open
// with the key, or secret storage is off: every such error names the field "secrets"), which fails the attempt, rather
// than a failure to read them now (the database's I/O error, a cut pass), which is tried again.
func secretsVerdict(err error) bool {
	var e *mvp.Error
	return errors.As(err, &e) && e.Field == "secrets"
}

// rayAnswer finds where the Ray client's error text quotes Ray's answer: after "(HTTP <status>".
var rayAnswer = regexp.MustCompile(`\(HTTP (\d{3})`)

// redact replaces every secret value in s; and when there are values, it drops the text of Ray's answer that s
// quotes, keeping its status: the answer may echo them cut short or escaped (JSON, Python's repr), which no
// replacement catches.
func redact(s string, values []string) string {
	live := false
	for _, v := range values {
		if v != "" {
			live = true
			s = strings.ReplaceAll(s, v, "<redacted>")
		}
	}
	if m := rayAnswer.FindStringSubmatchIndex(s); live && m != nil {
		s = s[:m[0]] + "(HTTP " + s[m[2]:m[3]] + "; Ray's answer is not kept: the submission carried secret values, " +
			"which it may echo)"
	}
	return s
}

// failSubmitting ends a SUBMITTING task whose submission cannot be made: its secrets cannot be put in it (deleted,
// key changed, storage off), or it cannot be built again. It can never be submitted as asked. The attempt is
// closed without reaching Ray.
func (l *Loop) failSubmitting(ctx context.Context, t *mvp.Task, att *mvp.Attempt, err error) error {
	msg := fmt.Sprintf("attempt %d cannot be submitted: %v", att.No, err)
	l.Logger.Error("submission cannot be made", "task_id", t.ID, "attempt_no", att.No, "err", err)
	up := *att
	now := l.Clock.Now()
	up.RayStatus, up.FailureKind, up.Message, up.EndTime = mvp.RayFailed, mvp.FailureUserError, cut(err.Error()), &now
	return l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: mvp.StateSubmitting, To: mvp.StateFailed, At: now,
		AttemptUpdate: &up, ErrorSummary: &msg, EventPayload: map[string]any{"error": msg}})
}

// redactedError is an error whose text has the secret values replaced; it still unwraps to the original, so that
// errors.Is matches it as before.
type redactedError struct {
	err    error
	values []string
}

func (e redactedError) Error() string { return redact(e.err.Error(), e.values) }
func (e redactedError) Unwrap() error { return e.err }
