//go:build cgo && linux

package gpu

import (
	"context"
	"fmt"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// nvmlLib is the part of go-nvml's library the GPU driver uses. go-nvml's
// own nvml.Interface (and its mock package) satisfies it.
type nvmlLib interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvml.Device, nvml.Return)
}

// nvmlEnumerator lists GPUs through NVML.
type nvmlEnumerator struct {
	lib nvmlLib
}

var _ driver.Enumerator = (*nvmlEnumerator)(nil)

// newNVMLEnumerator loads libnvidia-ml from libPath ("" = the default
// libnvidia-ml.so.1) when Enumerate first runs.
func newNVMLEnumerator(libPath string) driver.Enumerator {
	var opts []nvml.LibraryOption
	if libPath != "" {
		opts = append(opts, nvml.WithLibraryPath(libPath))
	}
	return &nvmlEnumerator{lib: nvml.New(opts...)}
}

// Enumerate implements driver.Enumerator. A library that cannot be loaded
// or initialised is ErrNVMLUnavailable (the caller falls back to
// nvidia-smi), never a panic.
func (e *nvmlEnumerator) Enumerate(ctx context.Context) (devs []driver.Device, err error) {
	defer func() {
		if r := recover(); r != nil {
			devs, err = nil, fmt.Errorf("%w: nvml panicked: %v", ErrNVMLUnavailable, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ret := e.lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: init: %v", ErrNVMLUnavailable, nvmlErr(ret))
	}
	defer e.lib.Shutdown()
	n, ret := e.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %w", nvmlErr(ret))
	}
	devs = make([]driver.Device, 0, n)
	for i := 0; i < n; i++ {
		d, ret := e.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: %w", i, nvmlErr(ret))
		}
		info, err := nvmlInfo(i, d)
		if err != nil {
			return nil, err
		}
		devs = append(devs, driver.Device{Key: deviceKey(info), Info: info})
	}
	return devs, nil
}

// nvmlDevice is the part of nvml.Device the driver reads.
type nvmlDevice interface {
	GetUUID() (string, nvml.Return)
	GetName() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
}

func nvmlInfo(i int, d nvmlDevice) (resources.Properties, error) {
	info := resources.Properties{"index": strconv.Itoa(i)}
	uuid, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device %d uuid: %w", i, nvmlErr(ret))
	}
	info["uuid"] = uuid
	if name, ret := d.GetName(); ret == nvml.SUCCESS && name != "" {
		info["name"] = name
	}
	if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		info["memory.total"] = strconv.FormatUint(mem.Total>>20, 10)
	}
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		if bus := cString(pci.BusId[:]); bus != "" {
			info["pci.bus-id"] = bus
		} else if bus := cString(pci.BusIdLegacy[:]); bus != "" {
			info["pci.bus-id"] = bus
		}
	}
	return info, nil
}

// nvmlErr makes an NVML status an error (nvml.Return implements error).
func nvmlErr(ret nvml.Return) error { return ret }

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
