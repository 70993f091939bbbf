package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
)

// putSecret stores a secret's value, encrypted, as the caller's (the operator's owner= names a user's); the
// answer and the log never hold the value.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) error {
	if !s.Secrets.Enabled() {
		return s.Secrets.Off()
	}
	name := r.PathValue("name")
	if err := secrets.CheckName(name); err != nil {
		return err
	}
	owner, err := s.namedOwner(r, "secrets", true)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, jsonOnly, `JSON {"value": "…"}`)
	if err != nil {
		return err
	}
	var req struct {
		Value *string `json:"value"`
	}
	if err := decodeJSON(body, &req); errors.Is(err, errLoneSurrogate) {
		return mvp.Errorf(mvp.CodeInvalid, "value", "%v", err)
	} else if err != nil || req.Value == nil {
		return mvp.Errorf(mvp.CodeInvalid, "value", "the body must be JSON {\"value\": \"…\"} and nothing else")
	}
	info, created, err := s.Secrets.Put(r.Context(), owner, name, *req.Value)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.Logger.Info("secret stored", "name", name, "owner", owner, "created", created)
	writeJSON(w, status, info)
	return nil
}

// listSecrets answers the names and times of the caller's secrets (the operator's: everyone's, or owner='s).
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	only, err := s.listedOwner(r, "secrets")
	if err != nil {
		return err
	}
	list, err := s.Secrets.List(r.Context())
	if err != nil {
		return err
	}
	own := []mvp.SecretInfo{}
	for _, i := range list {
		if only == "" || mvp.OwnerName(i.Owner) == only {
			own = append(own, i)
		}
	}
	if len(own) == 0 {
		if err := s.unknownOwner(only, "secrets"); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": own})
	return nil
}

// deleteSecret removes one of the caller's secrets (the operator's owner= names a user's); a queued task that
// names it fails when it is submitted.
func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	if !s.Secrets.Enabled() {
		return s.Secrets.Off()
	}
	name := r.PathValue("name")
	owner, err := s.namedOwner(r, "secrets", false)
	if err != nil {
		return err
	}
	if err := s.Secrets.Delete(r.Context(), owner, name); err != nil {
		if mvp.ErrorCode(err) != mvp.CodeNotFound {
			return err
		}
		if hint := s.othersOf(r, func() ([]string, error) {
			list, err := s.Secrets.List(r.Context())
			var owners []string
			for _, i := range list {
				if i.Name == name {
					owners = append(owners, mvp.OwnerName(i.Owner))
				}
			}
			return owners, err
		}, "secret"); hint != "" {
			return mvp.Errorf(mvp.CodeNotFound, "name", "you have no secret %q%s", name, hint)
		}
		return err
	}
	s.Logger.Info("secret deleted", "name", name, "owner", owner)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkSecrets refuses a task that names secrets while secret storage is off, or names secrets its owner does not
// have (a task uses its owner's secrets only: another user's of the same name are not its).
func (s *Server) checkSecrets(ctx context.Context, t *mvp.Task) error {
	if !bytes.Contains(t.SpecJSON, []byte(`"secrets"`)) {
		return nil // most specs name no secret: not worth decoding the spec again on every submit
	}
	var spec struct {
		Secrets map[string]string `json:"secrets"`
	}
	if err := json.Unmarshal(t.SpecJSON, &spec); err != nil || len(spec.Secrets) == 0 {
		return nil
	}
	if !s.Secrets.Enabled() {
		return s.Secrets.Off()
	}
	list, err := s.Secrets.List(ctx)
	if err != nil {
		return err
	}
	owner := mvp.OwnerName(t.Owner)
	have := map[string]bool{}
	for _, i := range list {
		if mvp.OwnerName(i.Owner) == owner {
			have[i.Name] = true
		}
	}
	var missing []string
	for _, env := range slices.Sorted(maps.Keys(spec.Secrets)) {
		if n := spec.Secrets[env]; !have[n] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		who, flag, query := "you have", "", ""
		if req := requesterOf(ctx); req.Name != owner {
			who = owner + " has" // the operator's resubmit of a user's task: the rerun is the user's
			if req.Operator {
				flag, query = " --owner "+owner, "?owner="+owner
			}
		}
		return mvp.Errorf(mvp.CodeInvalid, "secrets", "no secret named %s: %s none of that name (each user's secrets "+
			"are their own); store it first (mvp secrets put %s%s, which reads the value from standard input; or PUT "+
			"/api/v2/secrets/{name}%s)", strings.Join(missing, ", "), who, missing[0], flag, query)
	}
	return nil
}

// requesterKey holds who asked, when a request acts as another caller (the operator's resubmit of a user's task
// is checked as the user's; a run of a user's schedule is checked as the user's and read by the operator too).
type requesterKey struct{}

// requesterOf is who asked for what ctx checks: the caller, unless the request acts for another owner.
func requesterOf(ctx context.Context) mvp.Caller {
	if c, ok := ctx.Value(requesterKey{}).(mvp.Caller); ok {
		return c
	}
	return mvp.CallerOf(ctx)
}

// namedOwner is whose secret or schedule (what, plural) a request names: the caller's own; the operator may name a
// user's with owner= (known: a user of v2.auth.users or the operator, when something is to be stored; any, to
// read, change or delete what a user no longer configured left).
func (s *Server) namedOwner(r *http.Request, what string, known bool) (string, error) {
	c := mvp.CallerOf(r.Context())
	o := r.URL.Query().Get("owner")
	switch {
	case o == "" || o == c.Name:
		return c.Name, nil
	case !c.Operator:
		return "", mvp.Errorf(mvp.CodeForbidden, "owner", "owner=%s: a user sees and changes only their own %s (drop owner=, "+
			"or give owner=%s)", clip(o), what, c.Name)
	case known && o != mvp.Operator && s.user(mvp.Caller{Name: o}) == nil:
		return "", mvp.Errorf(mvp.CodeInvalid, "owner", "owner=%s is not a user of v2.auth.users (nor the operator)", clip(o))
	}
	return o, nil
}

// listedOwner is whose secrets or schedules (what) a listing shows: namedOwner's, or "" (everyone's) for the
// operator's listing without owner=.
func (s *Server) listedOwner(r *http.Request, what string) (string, error) {
	if mvp.CallerOf(r.Context()).Operator && r.URL.Query().Get("owner") == "" {
		return "", nil
	}
	return s.namedOwner(r, what, false)
}

// unknownOwner refuses a listing by owner= that found nothing (what: "secrets", "schedules") when owner names no
// user of v2.auth.users nor the operator: a typo answered an empty list, as if that user had none. A user removed
// from v2.auth.users whose items remain is listed (the listing found them).
func (s *Server) unknownOwner(only, what string) error {
	if only == "" || only == mvp.Operator || s.user(mvp.Caller{Name: only}) != nil {
		return nil
	}
	return mvp.Errorf(mvp.CodeInvalid, "owner", "owner=%s is not a user of v2.auth.users (nor the operator), and owns "+
		"no %s: is the name spelled as v2.auth.users has it?", clip(only), what)
}

// othersOf is, for the operator's request without owner= that found no what of its own, which users have one of
// that name and what to give (owners lists them); "" otherwise. Only the operator, who sees everything, is told.
func (s *Server) othersOf(r *http.Request, owners func() ([]string, error), what string) string {
	if !mvp.CallerOf(r.Context()).Operator || r.URL.Query().Get("owner") != "" {
		return ""
	}
	list, err := owners()
	if err != nil || len(list) == 0 {
		return ""
	}
	sort.Strings(list)
	if len(list) == 1 {
		return fmt.Sprintf(" (the operator's requests name its own %s; names are each user's own): %s has one of "+
			"that name: give owner=%s (the CLI's --owner %s)", what+"s", list[0], list[0], list[0])
	}
	return fmt.Sprintf(" (the operator's requests name its own %s; names are each user's own): %s each have one "+
		"of that name: give owner=USER, one of them (the CLI's --owner USER)", what+"s", strings.Join(list, ", "))
}
