package workload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestRuntimeEnvMeasuredAsRayHandsIt: Ray's job supervisor hands the driver its runtime_env as Python's json.dumps
// writes it (every non-ASCII character escaped, \u00e9 for é: six bytes), in one environment variable Linux caps
// at 128 KiB. A jobspec's env was measured by Go's JSON (é: two bytes), so one of about 270 KiB as Ray hands it (90
// KB of é) was taken, to fail at start in Ray after its wait for GPUs. The same env in ASCII is taken.
func TestRuntimeEnvMeasuredAsRayHandsIt(t *testing.T) {
	spec := func(ch string) []byte {
		val := strings.Repeat(ch, 15000) // under the 32 KiB a value may hold
		b, _ := json.Marshal(map[string]any{"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 1, "model_path": "/m",
			"train_file": "/t", "val_file": "/v", "env": map[string]string{"A": val, "B": val, "C": val}})
		return b
	}
	_, err := Prepare(spec("é"), settings())
	if mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), "128 KiB") {
		t.Errorf("a jobspec whose env comes to about 270 KiB as Ray hands it over: %v; want it refused, saying so", err)
	}
	if _, err := Prepare(spec("e"), settings()); err != nil {
		t.Errorf("the same env in ASCII (about 45 KiB): %v", err)
	}
}
