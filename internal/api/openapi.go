package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3 document of this API. A test checks that every route is in it.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
	return nil
}
