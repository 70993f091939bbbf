package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/mvp2/mvp/internal/mvp"
)

// statuses is the one mapping between error codes and HTTP statuses: the server answers an error with its code's
// status (statusOf), and the client reads a status without a known code back as its code (codeOf).
var statuses = []struct {
	code   string
	status int
}{
	{mvp.CodeInvalid, http.StatusBadRequest},
	{mvp.CodeUnauthorized, http.StatusUnauthorized},
	{mvp.CodeForbidden, http.StatusForbidden},
	{mvp.CodeNotFound, http.StatusNotFound},
	{mvp.CodeMethod, http.StatusMethodNotAllowed},
	{mvp.CodeTooMany, http.StatusTooManyRequests},
	{mvp.CodeConflict, http.StatusConflict},
	{mvp.CodeTooLarge, http.StatusRequestEntityTooLarge},
	{mvp.CodeUnsupported, http.StatusUnsupportedMediaType},
	{mvp.CodeUnavailable, http.StatusServiceUnavailable},
	{mvp.CodeInternal, http.StatusInternalServerError},
}

// statusOf returns the HTTP status of an error code; 500 for a code not in the table.
func statusOf(code string) int {
	for _, e := range statuses {
		if e.code == code {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// codeOf returns the error code of an error answer: the body's code when it is one of mvp's, else the code of the
// HTTP status, else invalid for another 4xx and internal for anything else.
func codeOf(status int, bodyCode string) string {
	for _, e := range statuses {
		if e.code == bodyCode {
			return bodyCode
		}
	}
	for _, e := range statuses {
		if e.status == status {
			return e.code
		}
	}
	if status/100 == 4 {
		return mvp.CodeInvalid
	}
	return mvp.CodeInternal
}

// ErrorBody is the one shape of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong and what to fix.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// errorOf is the *mvp.Error err answers as: its own, a disk of mvp's that is full or read-only (503, naming the
// folder: the operator's to free), or an internal error, logged and hidden.
func errorOf(log *slog.Logger, r *http.Request, err error) *mvp.Error {
	var e *mvp.Error
	if errors.As(err, &e) {
		return e
	}
	log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		dir := filepath.Dir(pe.Path)
		switch {
		case errors.Is(pe.Err, syscall.ENOSPC), errors.Is(pe.Err, syscall.EDQUOT):
			return mvp.Errorf(mvp.CodeUnavailable, "", "no space left in %s: free space there and try again", dir)
		case errors.Is(pe.Err, syscall.EROFS):
			return mvp.Errorf(mvp.CodeUnavailable, "", "%s is read-only: make it writable and try again", dir)
		}
	}
	return &mvp.Error{Code: mvp.CodeInternal, Message: "internal error; see the server log"}
}

// writeError answers err in the error shape. Errors that are not *mvp.Error are logged and hidden.
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	e := errorOf(log, r, err)
	writeJSON(w, statusOf(e.Code), ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
}

// writeTextError answers err as plain text with its code's status: Ray's own job server answers errors so, and
// Ray's client shows the body to its user ("Request failed with status code 404: Job x does not exist.").
func writeTextError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	e := errorOf(log, r, err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(statusOf(e.Code))
	_, _ = io.WriteString(w, e.Error())
}

// writeJSON answers v as compact JSON (one line; pipe it to jq to read it, as with Ray's and Kubernetes' APIs):
// indenting it took as long as encoding it again, about 5 µs of every submission's answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	// Encoded whole first, so that the answer carries its Content-Length instead of being sent in chunks.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		// Only a value JSON cannot hold (NaN, ±Inf) gets here: say so rather than answer an empty 2xx.
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(ErrorBody{Error: ErrorDetail{Code: mvp.CodeInternal,
			Message: "the answer could not be encoded as JSON: " + err.Error()}})
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
