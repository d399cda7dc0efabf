//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"

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

// nvmlEnumerator lists GPUs (or their MIG instances) through NVML.
type nvmlEnumerator struct {
	lib   nvmlLib
	units unitOptions
	log   logrus.FieldLogger
	// lookup says whether the loaded library has a symbol; nil: assume it
	// has. The library is loaded lazily, so calling a function an old
	// driver lacks would end the process, not return an error.
	lookup func(symbol string) error
}

var _ driver.Enumerator = (*nvmlEnumerator)(nil)

// newNVMLEnumerator loads libnvidia-ml from o.lib ("" = the default
// libnvidia-ml.so.1) into this process when Enumerate first runs.
func newNVMLEnumerator(o nvmlOptions) driver.Enumerator {
	var opts []nvml.LibraryOption
	if o.lib != "" {
		opts = append(opts, nvml.WithLibraryPath(o.lib))
	}
	lib := nvml.New(opts...)
	return &nvmlEnumerator{lib: lib, units: o.units, log: o.log, lookup: lib.Extensions().LookupSymbol}
}

// has reports whether the library has symbol (true when it cannot say).
func (e *nvmlEnumerator) has(symbol string) bool {
	return e.lookup == nil || e.lookup(symbol) == nil
}

// Enumerate implements driver.Enumerator. A library that cannot be loaded
// or initialised is ErrNVMLUnavailable (the caller falls back to
// nvidia-smi), never a panic.
func (e *nvmlEnumerator) Enumerate(ctx context.Context) ([]driver.Device, error) {
	l, err := e.list(ctx, e.units.wantMIG(), e.units.health)
	if err != nil {
		return nil, err
	}
	return l.devices(e.units, e.log)
}

// list asks NVML about every GPU: its infos, MIG mode and, with mig, its
// MIG instances; with health, what makes it unfit.
func (e *nvmlEnumerator) list(ctx context.Context, mig, health bool) (l nvmlListing, err error) {
	defer func() {
		if r := recover(); r != nil {
			l, err = nvmlListing{}, fmt.Errorf("%w: nvml panicked: %v", ErrNVMLUnavailable, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return l, err
	}
	if ret := e.lib.Init(); ret != nvml.SUCCESS {
		return l, fmt.Errorf("%w: init: %v", ErrNVMLUnavailable, nvmlErr(ret))
	}
	defer e.lib.Shutdown()
	n, ret := e.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return l, fmt.Errorf("nvml device count: %w", nvmlErr(ret))
	}
	hasMIG := e.has("nvmlDeviceGetMigMode") && e.has("nvmlDeviceGetMaxMigDeviceCount") && e.has("nvmlDeviceGetMigDeviceHandleByIndex")
	retired, remapped := e.has("nvmlDeviceGetRetiredPagesPendingStatus"), e.has("nvmlDeviceGetRemappedRows")
	l.noMIGFunctions = !hasMIG
	l.gpus = make([]gpuRecord, 0, n)
	for i := 0; i < n; i++ {
		d, ret := e.lib.DeviceGetHandleByIndex(i)
		if ret == nvml.ERROR_NO_PERMISSION {
			// Device isolation (a devices cgroup) keeps this process off the
			// GPU: never a candidate.
			l.denied = append(l.denied, strconv.Itoa(i))
			continue
		}
		if ret != nvml.SUCCESS {
			return l, fmt.Errorf("nvml device %d: %w", i, nvmlErr(ret))
		}
		info, err := nvmlInfo(i, d)
		if errors.Is(err, nvml.ERROR_NO_PERMISSION) {
			l.denied = append(l.denied, strconv.Itoa(i))
			continue
		}
		if err != nil {
			return l, err
		}
		g := gpuRecord{key: deviceKey(info), info: info}
		if hasMIG {
			if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
				g.migMode = true
				if mig {
					if g.migs, err = nvmlMIGs(i, d); err != nil {
						return l, err
					}
				}
			}
		}
		if health {
			g.unhealthy = nvmlHealth(d, retired, remapped)
		}
		l.gpus = append(l.gpus, g)
	}
	return l, nil
}

// nvmlMIGs lists the MIG instances of GPU i: every slot up to
// GetMaxMigDeviceCount that holds one (an empty slot is ERROR_NOT_FOUND).
func nvmlMIGs(i int, d nvmlDevice) ([]migRecord, error) {
	max, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device %d: MIG device count: %w", i, nvmlErr(ret))
	}
	var migs []migRecord
	for j := 0; j < max; j++ {
		m, ret := d.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: MIG device %d: %w", i, j, nvmlErr(ret))
		}
		uuid, ret := m.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: MIG device %d uuid: %w", i, j, nvmlErr(ret))
		}
		r := migRecord{uuid: uuid, index: j, info: resources.Properties{}}
		name, ret := m.GetName()
		if ret == nvml.SUCCESS && name != "" {
			r.info["name"] = name
			r.profile = ProfileFromName(name)
		}
		if mem, ret := m.GetMemoryInfo(); ret == nvml.SUCCESS {
			r.info["memory.total"] = strconv.FormatUint(mem.Total>>20, 10)
		}
		if a, ret := m.GetAttributes(); ret == nvml.SUCCESS {
			if r.profile == "" && a.GpuInstanceSliceCount > 0 {
				r.profile = profileFromAttributes(a.GpuInstanceSliceCount, a.ComputeInstanceSliceCount, a.MemorySizeMB)
			}
			if _, ok := r.info["memory.total"]; !ok && a.MemorySizeMB > 0 {
				r.info["memory.total"] = strconv.FormatUint(a.MemorySizeMB, 10)
			}
		}
		if gi, ret := m.GetGpuInstanceId(); ret == nvml.SUCCESS {
			r.info["mig.gi"] = strconv.Itoa(gi)
		}
		if ci, ret := m.GetComputeInstanceId(); ret == nvml.SUCCESS {
			r.info["mig.ci"] = strconv.Itoa(ci)
		}
		migs = append(migs, r)
	}
	return migs, nil
}

// nvmlHealth asks NVML, each discovery afresh, what makes the GPU unfit:
//
//   - pages pending retirement (GetRetiredPagesPendingStatus; pre-Ampere
//     GPUs with ECC): memory the driver will take out at the next reboot
//     can still be handed to a worker and corrupt it;
//   - row remapping pending or failed (GetRemappedRows; Ampere and later):
//     pending needs a GPU reset, failed means the GPU should be replaced;
//   - a GPU that has fallen off the bus (ERROR_GPU_IS_LOST).
//
// XID errors are not checked: NVML reports them only as events to a
// process that registered for them before they happened (an event set and
// a loop), never as a state a one-shot discovery can read. A query NVML
// does not support on a GPU (ERROR_NOT_SUPPORTED), or a function the
// driver does not have (retired, remapped false), says nothing about it.
func nvmlHealth(d nvmlDevice, retired, remapped bool) []string {
	var why []string
	lost := false
	if retired {
		switch st, ret := d.GetRetiredPagesPendingStatus(); {
		case ret == nvml.SUCCESS && st == nvml.FEATURE_ENABLED:
			why = append(why, ReasonRetiredPagesPending)
		case ret == nvml.ERROR_GPU_IS_LOST:
			lost = true
		}
	}
	if remapped {
		switch _, _, pending, failed, ret := d.GetRemappedRows(); {
		case ret == nvml.SUCCESS && failed:
			why = append(why, ReasonRowRemapFailed)
		case ret == nvml.SUCCESS && pending:
			why = append(why, ReasonRowRemapPending)
		case ret == nvml.ERROR_GPU_IS_LOST:
			lost = true
		}
	}
	if lost {
		why = append(why, ReasonGPULost)
	}
	return why
}

// nvmlDevice is the part of nvml.Device the driver reads.
type nvmlDevice interface {
	GetUUID() (string, nvml.Return)
	GetName() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	// MIG
	GetMigMode() (int, int, nvml.Return)
	GetMaxMigDeviceCount() (int, nvml.Return)
	GetMigDeviceHandleByIndex(int) (nvml.Device, nvml.Return)
	// health
	GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return)
	GetRemappedRows() (int, int, bool, bool, nvml.Return)
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
	if m, ok := d.(interface{ GetMinorNumber() (int, nvml.Return) }); ok {
		// The /dev/nvidia<minor> node: what YARN's GPU plugin names a GPU by.
		if minor, ret := m.GetMinorNumber(); ret == nvml.SUCCESS && minor >= 0 {
			info[InfoMinor] = strconv.Itoa(minor)
		}
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

// NVMLHelperMain is the xres-nvml command (NVMLHelperName): it asks NVML
// in this process and prints the listing for a launcher built without cgo.
func NVMLHelperMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(NVMLHelperName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("library", "", "the NVIDIA management library to load (default libnvidia-ml.so.1)")
	mig := fs.Bool("mig", false, "list the MIG instances of GPUs in MIG mode")
	health := fs.Bool("health", false, "say what makes each GPU unfit (pending page retirement, row remapping, lost)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", NVMLHelperName, fs.Arg(0))
		return 2
	}
	e := newNVMLEnumerator(nvmlOptions{lib: *lib}).(*nvmlEnumerator)
	l, err := e.list(context.Background(), *mig, *health)
	return nvmlHelperMain(l, err, stdout, stderr)
}
