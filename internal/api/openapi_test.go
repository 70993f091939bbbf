package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenAPICoversEveryRoute keeps the document true: every route the server serves is in it, with its method.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi version %q", doc.OpenAPI)
	}
	s := &Server{}
	served := map[string]bool{}
	for _, rt := range s.routes() {
		// OpenAPI spells a wildcard that matches the rest of the path {path}; ServeMux spells it {path...}. "{$}"
		// (ServeMux: this path exactly, nothing below it) is not part of the path itself.
		pattern := strings.TrimSuffix(strings.ReplaceAll(rt.pattern, "...}", "}"), "{$}")
		served[pattern+" "+rt.method] = true
		ops, ok := doc.Paths[pattern]
		if !ok {
			t.Errorf("route %s %s is not in openapi.json", rt.method, pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(rt.method)]; !ok {
			t.Errorf("method %s of %s is not in openapi.json", rt.method, pattern)
		}
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			if !served[p+" "+strings.ToUpper(m)] {
				t.Errorf("openapi.json documents %s %s, which the server does not serve", m, p)
			}
		}
	}
}
