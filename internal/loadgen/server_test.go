package loadgen_test

import (
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// startServer starts the service (real API, store and scheduler loop; Ray and a 4-GPU node faked) and returns its
// URL and token.
func startServer(t *testing.T) (string, string) {
	m := servicetest.Start(t, nil)
	return m.URL(), m.APIToken()
}
