package doctor

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// TestNumGPUsDoesNotCoverABrokenDriver: RAY_GPUS_PER_WORKER is the fallback where NVML is missing
// (deploy.md). Where the library is there but fails (a driver/library version mismatch after a driver upgrade
// without reboot, a GPU fallen off the bus), `mvp doctor` says FAIL gpus, yet `mvp doctor --num-gpus` (what
// worker.sh start runs) prints the configured count and exits 0, and the worker joins Ray with GPUs that do not work.
func TestNumGPUsDoesNotCoverABrokenDriver(t *testing.T) {
	broken := &mock.Interface{
		InitFunc:        func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH },
		ErrorStringFunc: func(nvml.Return) string { return "RM has detected an NVML/RM version mismatch" },
	}
	o := Options{NVML: broken, ConfiguredGPUs: 8, ConfiguredFrom: "RAY_GPUS_PER_WORKER"}
	if n, from, err := GPUCount(o); err == nil {
		t.Errorf("GPUCount with NVML failing: %d from %s, no error (mvp doctor's gpus check says FAIL)", n, from)
	}
}
