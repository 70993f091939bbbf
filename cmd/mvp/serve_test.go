package main

import (
	"context"
	"strings"
	"testing"
)

// `mvp serve --log-level verbose` answered `slog: level string "verbose": unknown name`: it named neither the
// flag's value as given nor the values it takes. Found in the SRE walk-through.
func TestABadLogLevelSaysWhichAreTaken(t *testing.T) {
	err := serve(context.Background(), []string{"--log-level", "verbose"})
	if err == nil || !strings.Contains(err.Error(), `"verbose"`) || !strings.Contains(err.Error(), "debug, info, warn or error") {
		t.Errorf("serve --log-level verbose: %v; want the value and the levels it takes", err)
	}
}
