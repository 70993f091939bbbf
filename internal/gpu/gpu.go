// Package gpu reads this node's NVIDIA GPUs through NVML (github.com/NVIDIA/go-nvml). NVML is loaded at run time
// (dlopen of libnvidia-ml.so.1), so mvp builds and runs on machines without NVIDIA's driver; there Read returns
// ErrNoLibrary and the caller falls back to configuration.
package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoLibrary: NVIDIA's management library (libnvidia-ml.so.1, part of the driver) is not on this machine.
var ErrNoLibrary = errors.New("NVIDIA's management library (libnvidia-ml.so.1) is not on this machine")

// Device is one GPU.
type Device struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	UUID        string `json:"uuid"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// Inventory is what NVML reports of this node.
type Inventory struct {
	DriverVersion string   `json:"driver_version"`
	Devices       []Device `json:"devices"`
}

// System is the machine's NVML (loaded on first use).
func System() nvml.Interface { return nvml.New() }

// Read initializes lib, lists its GPUs and shuts it down again. Without the library it returns ErrNoLibrary.
func Read(lib nvml.Interface) (*Inventory, error) {
	if lib == nil {
		return nil, ErrNoLibrary
	}
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoLibrary
	default:
		return nil, fmt.Errorf("initialize NVML: %s", errorString(lib, ret))
	}
	defer lib.Shutdown()
	inv := &Inventory{}
	v, ret := lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML driver version: %s", errorString(lib, ret))
	}
	inv.DriverVersion = v
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", errorString(lib, ret))
	}
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, errorString(lib, ret))
		}
		dev := Device{Index: i}
		if dev.Name, ret = d.GetName(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d name: %s", i, errorString(lib, ret))
		}
		if dev.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d uuid: %s", i, errorString(lib, ret))
		}
		mem, ret := d.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d memory: %s", i, errorString(lib, ret))
		}
		dev.MemoryBytes = mem.Total
		inv.Devices = append(inv.Devices, dev)
	}
	return inv, nil
}

// errorString is NVML's text for ret, with its number.
func errorString(lib nvml.Interface, ret nvml.Return) string {
	return fmt.Sprintf("%s (NVML return %d)", lib.ErrorString(ret), int32(ret))
}
