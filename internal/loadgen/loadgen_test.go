package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/loadgen"
)

// TestRunAgainstAServer runs the generator briefly against a real API server and checks its bookkeeping (no timing
// is asserted).
func TestRunAgainstAServer(t *testing.T) {
	addr, token := startServer(t)
	res, err := loadgen.Run(context.Background(), loadgen.Options{Addr: addr, Token: token, Clients: 8,
		Duration: 500 * time.Millisecond, Spec: []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 16\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops["submit"].Count == 0 || res.Missing != 0 || res.Verified != len(res.Acked) || len(res.Acked) == 0 {
		t.Errorf("%+v", res)
	}
	for op, st := range res.Ops {
		if st.Errors != 0 {
			t.Errorf("%s: %d errors: %v", op, st.Errors, res.ErrorSample)
		}
	}
	if res.Report() == "" {
		t.Error("empty report")
	}
}
