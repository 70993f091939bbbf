package api

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
)

// putSecret stores a secret's value, encrypted; the answer and the log never hold the value.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) error {
	if !s.Secrets.Enabled() {
		return s.Secrets.Off()
	}
	name := r.PathValue("name")
	if err := secrets.CheckName(name); err != nil {
		return err
	}
	body, err := s.readBody(w, r, jsonOnly)
	if err != nil {
		return err
	}
	var req struct {
		Value *string `json:"value"`
	}
	if err := decodeJSON(body, &req); err != nil || req.Value == nil {
		return mvp.Errorf(mvp.CodeInvalid, "value", "the body must be JSON {\"value\": \"…\"} and nothing else")
	}
	info, created, err := s.Secrets.Put(r.Context(), name, *req.Value)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.Logger.Info("secret stored", "name", name, "created", created)
	writeJSON(w, status, info)
	return nil
}

// listSecrets answers every secret's name and times.
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Secrets.List(r.Context())
	if err != nil {
		return err
	}
	c := mvp.CallerOf(r.Context())
	own := []mvp.SecretInfo{}
	for _, i := range list {
		if c.Owns(i.Owner) {
			own = append(own, i)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": own})
	return nil
}

// deleteSecret removes a secret; a queued task that names it fails when it is submitted.
func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := s.ownSecrets(r.Context(), []string{name}, nil); err != nil {
		return err
	}
	if err := s.Secrets.Delete(r.Context(), name); err != nil {
		return err
	}
	s.Logger.Info("secret deleted", "name", name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkSecrets refuses a task that names secrets while secret storage is off, or names secrets that do not exist.
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
	names := make([]string, 0, len(spec.Secrets))
	fields := map[string]string{} // secret name → the field that named it
	for _, env := range slices.Sorted(maps.Keys(spec.Secrets)) {
		n := spec.Secrets[env]
		names = append(names, n)
		if _, ok := fields[n]; !ok {
			fields[n] = "secrets." + env
		}
	}
	list, err := s.Secrets.List(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, i := range list {
		have[i.Name] = true
	}
	if err := s.ownSecrets(ctx, names, fields); err != nil {
		return err
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return mvp.Errorf(mvp.CodeInvalid, "secrets", "no secret named %s: store it first (mvp secrets put %s, which "+
			"reads the value from standard input; or PUT /api/v2/secrets/{name})", strings.Join(missing, ", "), missing[0])
	}
	return nil
}

// ownSecrets refuses (403) when one of the named secrets that exist belongs to another user than the caller; the
// refusal names fields[name], the field that named it.
func (s *Server) ownSecrets(ctx context.Context, names []string, fields map[string]string) error {
	if !s.Secrets.Enabled() {
		return s.Secrets.Off()
	}
	list, err := s.Secrets.List(ctx)
	if err != nil {
		return err
	}
	c := mvp.CallerOf(ctx)
	for _, i := range list {
		if !c.Owns(i.Owner) && slices.Contains(names, i.Name) {
			return notYours(fields[i.Name], "secret", i.Name)
		}
	}
	return nil
}
