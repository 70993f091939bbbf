package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/mvp2/mvp/internal/mvp"
)

// statusOf is the one mapping from error codes to HTTP statuses.
func statusOf(code string) int {
	switch code {
	case mvp.CodeInvalid:
		return http.StatusBadRequest
	case mvp.CodeUnauthorized:
		return http.StatusUnauthorized
	case mvp.CodeForbidden:
		return http.StatusForbidden
	case mvp.CodeNotFound:
		return http.StatusNotFound
	case mvp.CodeMethod:
		return http.StatusMethodNotAllowed
	case mvp.CodeConflict:
		return http.StatusConflict
	case mvp.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case mvp.CodeUnsupported:
		return http.StatusUnsupportedMediaType
	case mvp.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
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

// writeError answers err in the error shape. Errors that are not *mvp.Error are logged and hidden.
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	var e *mvp.Error
	if !errors.As(err, &e) {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = &mvp.Error{Code: mvp.CodeInternal, Message: "internal error; see the server log"}
	}
	writeJSON(w, statusOf(e.Code), ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
