package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

func TestReadsADGXH100(t *testing.T) {
	inv, err := Read(dgxh100.New())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DriverVersion != "550.54.15" || len(inv.Devices) != 8 {
		t.Fatalf("driver %q, %d devices; want 550.54.15 and 8", inv.DriverVersion, len(inv.Devices))
	}
	seen := map[string]bool{}
	for i, d := range inv.Devices {
		if d.Index != i || d.Name != "NVIDIA H100 80GB HBM3" || d.MemoryBytes != 81920<<20 || d.UUID == "" || seen[d.UUID] {
			t.Errorf("device %d: %+v", i, d)
		}
		seen[d.UUID] = true
	}
}

func TestReadsMixedGPUs(t *testing.T) {
	s, err := server.New(server.WithGPUs(gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB), server.WithDriverVersion("560.1"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Read(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 2 || !strings.Contains(inv.Devices[0].Name, "A100") || !strings.Contains(inv.Devices[1].Name, "H100") {
		t.Errorf("%+v", inv)
	}
}

func TestNoLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	if _, err := Read(lib); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("got %v, want ErrNoLibrary", err)
	}
	if _, err := Read(nil); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("nil library: %v, want ErrNoLibrary", err)
	}
}

// TestSystemLibrary reads the machine's own NVML: on a machine without NVIDIA's driver (CI, this project's dev
// machines) it must say so, not fail otherwise.
func TestSystemLibrary(t *testing.T) {
	inv, err := Read(System())
	switch {
	case errors.Is(err, ErrNoLibrary):
		t.Logf("no NVML here: %v", err)
	case err != nil:
		t.Errorf("NVML is here but cannot be read: %v", err)
	default:
		t.Logf("NVML: driver %s, %d GPUs", inv.DriverVersion, len(inv.Devices))
	}
}

func TestErrorsCarryNVMLsText(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION },
		ErrorStringFunc:            func(r nvml.Return) string { return "Insufficient Permissions" },
	}
	_, err := Read(lib)
	if err == nil || !strings.Contains(err.Error(), "Insufficient Permissions") || errors.Is(err, ErrNoLibrary) {
		t.Errorf("got %v", err)
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Errorf("Shutdown called %d times, want once", len(lib.ShutdownCalls()))
	}
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	if _, err := Read(lib); err == nil || errors.Is(err, ErrNoLibrary) {
		t.Errorf("driver not loaded: %v, want an error other than ErrNoLibrary", err)
	}
}
