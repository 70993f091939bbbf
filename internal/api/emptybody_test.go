package api_test

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestEmptyBodySaysWhatTheEndpointTakes: an empty body to POST /api/v2/schedules (and PUT
// /api/v2/secrets/{name}, which this harness has off) was told to "send a YAML or JSON jobspec", which neither endpoint takes.
func TestEmptyBodySaysWhatTheEndpointTakes(t *testing.T) {
	base := servicetest.Start(t, nil).URL()
	for _, c := range []struct{ method, path string }{{"POST", "/api/v2/schedules"}} {
		resp, b := do(t, base, c.method, c.path, "application/json", "", nil)
		if resp.StatusCode != 400 || strings.Contains(string(b), "YAML or JSON jobspec") || !strings.Contains(string(b), "cron") {
			t.Errorf("%s %s with an empty body: %d %s; want 400 naming what the endpoint takes", c.method, c.path, resp.StatusCode, b)
		}
	}
}
