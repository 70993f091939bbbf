package loadgen_test

import (
	"context"
	"os"
	"strings"
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

// TestRunSubmitsOnlyAndMeasuresTheServersCPU: with SubmitShare 1 every operation is a submit; ServerPID (here this
// test process, which runs the server) gets its CPU time during the run reported; NoVerify skips the read-back.
func TestRunSubmitsOnlyAndMeasuresTheServersCPU(t *testing.T) {
	addr, token := startServer(t)
	res, err := loadgen.Run(context.Background(), loadgen.Options{Addr: addr, Token: token, Clients: 8,
		Duration: 300 * time.Millisecond, SubmitShare: 1, ServerPID: os.Getpid(), NoVerify: true,
		Spec: []byte("workload: ppo\nnnodes: 1\nn_gpus_per_node: 16\nmodel_path: /m\ntrain_file: /t\nval_file: /v\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ops) != 1 || res.Ops["submit"].Count == 0 || res.Ops["submit"].Errors != 0 {
		t.Fatalf("ops %+v (%v)", res.Ops, res.ErrorSample)
	}
	if res.Verified != 0 || res.Missing != 0 {
		t.Errorf("read back %d (%d missing) with NoVerify", res.Verified, res.Missing)
	}
	if res.ServerCPU <= 0 {
		t.Errorf("server CPU %v", res.ServerCPU)
	}
	if !strings.Contains(res.Report(), "µs per submit") {
		t.Errorf("the report does not give the CPU per submit:\n%s", res.Report())
	}
}
