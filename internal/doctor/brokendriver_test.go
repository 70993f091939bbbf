package doctor

import (
	"context"
	"strings"
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

// TestAnExplicitGPUCountOverridesABrokenDriver: RAY_GPUS_PER_WORKER is a fleet's default and does not cover a
// failing NVML (above), but --gpus N typed for this node is the operator's own word (`mvp doctor --num-gpus --gpus 7`
// to start a node whose eighth GPU fell off the bus): it was ignored, and the refusal did not say how to override.
func TestAnExplicitGPUCountOverridesABrokenDriver(t *testing.T) {
	broken := &mock.Interface{
		InitFunc:        func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH },
		ErrorStringFunc: func(nvml.Return) string { return "RM has detected an NVML/RM version mismatch" },
	}
	if n, from, err := GPUCount(Options{NVML: broken, ConfiguredGPUs: 7, ConfiguredFrom: "--gpus"}); n != 7 || from != "--gpus" || err != nil {
		t.Errorf("GPUCount with NVML failing and --gpus 7: %d from %q, %v; want 7 from --gpus", n, from, err)
	}
	_, _, err := GPUCount(Options{NVML: broken, ConfiguredGPUs: 8, ConfiguredFrom: "RAY_GPUS_PER_WORKER"})
	if err == nil || !strings.Contains(err.Error(), "--gpus") {
		t.Errorf("GPUCount with NVML failing and only RAY_GPUS_PER_WORKER: %v; want it refused, saying --gpus N overrides", err)
	}
}

// TestDoctorSaysABrokenDriverOverridden: the full doctor still fails the gpus check (the driver is broken) and says
// what the override does, rather than "<nil>".
func TestDoctorSaysABrokenDriverOverridden(t *testing.T) {
	broken := &mock.Interface{
		InitFunc:        func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH },
		ErrorStringFunc: func(nvml.Return) string { return "RM has detected an NVML/RM version mismatch" },
	}
	r := Run(context.Background(), Options{NVML: broken, ConfiguredGPUs: 7, ConfiguredFrom: "--gpus"})
	for _, c := range r.Checks {
		if c.Name == "gpus" {
			if c.OK || !strings.Contains(c.Detail, "mismatch") || !strings.Contains(c.Detail, "7") {
				t.Errorf("gpus check with NVML failing and --gpus 7: %+v; want a failed check naming the fault and the count", c)
			}
			return
		}
	}
	t.Errorf("no gpus check: %+v", r.Checks)
}
