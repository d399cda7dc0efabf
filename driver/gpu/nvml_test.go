//go:build cgo && linux

package gpu

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

func busID(s string) [32]int8 {
	var b [32]int8
	for i := 0; i < len(s) && i < 31; i++ {
		b[i] = int8(s[i])
	}
	return b
}

// fakeH100 is an NVML device as an 80 GB H100 reports itself.
func fakeH100(i int) *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return fmt.Sprintf("GPU-h100-%d", i), nvml.SUCCESS },
		GetNameFunc: func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3", nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 81559 << 20}, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: busID(fmt.Sprintf("00000000:%02X:00.0", 0x18+i))}, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		// Minor numbers that differ from the indices, as YARN allows.
		GetMinorNumberFunc: func() (int, nvml.Return) { return 2*i + 1, nvml.SUCCESS },
	}
}

// fakeNVML is a library with the given devices; ret overrides Init's result.
func fakeNVML(init nvml.Return, devices ...nvml.Device) (*mock.Interface, *int) {
	shutdowns := 0
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return init },
		ShutdownFunc:       func() nvml.Return { shutdowns++; return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devices[i], nvml.SUCCESS
		},
	}, &shutdowns
}

func TestNVMLEnumerate(t *testing.T) {
	lib, shutdowns := fakeNVML(nvml.SUCCESS, fakeH100(0), fakeH100(1))
	devs, err := (&nvmlEnumerator{lib: lib}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, []driver.Device{
		{Key: "GPU-h100-0", Info: resources.Properties{"index": "0", "uuid": "GPU-h100-0", "name": "NVIDIA H100 80GB HBM3", "memory.total": "81559", "pci.bus-id": "00000000:18:00.0", "minor": "1"}},
		{Key: "GPU-h100-1", Info: resources.Properties{"index": "1", "uuid": "GPU-h100-1", "name": "NVIDIA H100 80GB HBM3", "memory.total": "81559", "pci.bus-id": "00000000:19:00.0", "minor": "3"}},
	}, devs)
	require.Equal(t, 1, *shutdowns, "NVML is shut down after use")
}

func TestNVMLFailures(t *testing.T) {
	noUUID := fakeH100(0)
	noUUID.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	noExtras := fakeH100(0)
	noExtras.GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	noExtras.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NOT_SUPPORTED }
	noExtras.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED }
	noExtras.GetMinorNumberFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }

	libNotFound, _ := fakeNVML(nvml.ERROR_LIBRARY_NOT_FOUND)
	driverNotLoaded, _ := fakeNVML(nvml.ERROR_DRIVER_NOT_LOADED)
	lostGPU, _ := fakeNVML(nvml.SUCCESS, noUUID)
	badHandle, _ := fakeNVML(nvml.SUCCESS, fakeH100(0))
	badHandle.DeviceGetCountFunc = func() (int, nvml.Return) { return 2, nvml.SUCCESS }
	panics, _ := fakeNVML(nvml.SUCCESS)
	panics.DeviceGetCountFunc = func() (int, nvml.Return) { panic("symbol not found") }
	partial, _ := fakeNVML(nvml.SUCCESS, noExtras)

	tests := []struct {
		name   string
		lib    nvmlLib
		errIs  error
		errHas string
		want   resources.Properties
	}{
		{name: "library not found", lib: libNotFound, errIs: ErrNVMLUnavailable, errHas: "init"},
		{name: "driver not loaded", lib: driverNotLoaded, errIs: ErrNVMLUnavailable},
		{name: "gpu lost", lib: lostGPU, errIs: nvml.ERROR_GPU_IS_LOST, errHas: "nvml device 0 uuid"},
		{name: "bad handle", lib: badHandle, errIs: nvml.ERROR_INVALID_ARGUMENT, errHas: "nvml device 1"},
		{name: "panic becomes an error", lib: panics, errIs: ErrNVMLUnavailable, errHas: "symbol not found"},
		{name: "optional fields missing", lib: partial, want: resources.Properties{"index": "0", "uuid": "GPU-h100-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			devs, err := (&nvmlEnumerator{lib: tc.lib}).Enumerate(ctxT(t))
			if tc.want != nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, devs[0].Info)
				return
			}
			require.ErrorIs(t, err, tc.errIs)
			require.Contains(t, err.Error(), tc.errHas)
		})
	}
}

// A host without libnvidia-ml: the real go-nvml returns an error (never
// panics), and built-in discovery falls back to nvidia-smi.
func TestNVMLMissingLibrary(t *testing.T) {
	e := newNVMLEnumerator(nvmlOptions{lib: "/nonexistent/libnvidia-ml.so.1"})
	_, err := e.Enumerate(ctxT(t))
	require.ErrorIs(t, err, ErrNVMLUnavailable)

	t.Setenv("XRES_FAKE_GPUS", "2")
	d, err := newDriver(driver.Options{Resource: "gpu", Getenv: fakeEnv(t, nil),
		Params: map[string]string{ParamNVMLLibrary: "/nonexistent/libnvidia-ml.so.1", ParamCoordEnabled: "false"}}, deps{})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos))
}

func TestNVMLThroughDriver(t *testing.T) {
	lib, _ := fakeNVML(nvml.SUCCESS, fakeH100(0), fakeH100(1), fakeH100(2))
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamCoordEnabled: "false"}},
		deps{nvml: &nvmlEnumerator{lib: lib}})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 3)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2"}, indices(infos))
	u, _ := infos[2].Property("uuid")
	require.Equal(t, "GPU-h100-2", u)
}

// fakeMIG is a MIG instance of an H100 as NVML reports it.
func fakeMIG(uuid, name string, gi, ci int, giSlices uint32, memMiB uint64) *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetNameFunc: func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: memMiB << 20}, nvml.SUCCESS
		},
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
			return nvml.DeviceAttributes{GpuInstanceSliceCount: giSlices, ComputeInstanceSliceCount: giSlices, MemorySizeMB: memMiB}, nvml.SUCCESS
		},
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
	}
}

// withMIG puts the GPU in MIG mode with the instances in slots 0…; the
// other slots up to 7 are empty.
func withMIG(d *mock.Device, migs ...*mock.Device) *mock.Device {
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < len(migs) {
			return migs[i], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	return d
}

// withHealth makes the GPU answer the health queries; retired and remap
// override the answers.
func withHealth(d *mock.Device, retired nvml.EnableState, retiredRet nvml.Return, pending, failed bool, remapRet nvml.Return) *mock.Device {
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return retired, retiredRet }
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, pending, failed, remapRet }
	return d
}

func TestNVMLMIG(t *testing.T) {
	gpu0 := withMIG(fakeH100(0),
		fakeMIG("MIG-a0", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 2, 0, 3, 40192),
		fakeMIG("MIG-a1", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9, 0, 1, 9856),
		// An older driver names the instance like its GPU: the profile
		// comes from the attributes.
		fakeMIG("MIG-a2", "NVIDIA H100 80GB HBM3", 10, 0, 1, 9856))
	gpu1 := fakeH100(1)
	lib, _ := fakeNVML(nvml.SUCCESS, gpu0, gpu1)

	devs, err := (&nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGMixed}}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Len(t, devs, 4)
	require.Equal(t, driver.Device{Key: "MIG-a0", Parent: "GPU-h100-0", Info: resources.Properties{
		"index": "0:0", "uuid": "MIG-a0", "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "memory.total": "40192",
		"mig.profile": "3g.40gb", "mig.index": "0", "mig.gi": "2", "mig.ci": "0",
		"gpu.index": "0", "gpu.uuid": "GPU-h100-0", "pci.bus-id": "00000000:18:00.0",
	}}, devs[0])
	require.Equal(t, "1g.10gb", devs[2].Info["mig.profile"])
	require.Equal(t, "GPU-h100-0", devs[2].Parent, "every instance names its GPU")
	require.Equal(t, "GPU-h100-1", devs[3].Key, "a GPU without MIG is a unit of its own")
	require.Empty(t, devs[3].Parent)

	devs, err = (&nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGMixed, profile: "1g.10gb"}}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-a1", "MIG-a2"}, []string{devs[0].Key, devs[1].Key})

	_, err = (&nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGSingle}}).Enumerate(ctxT(t))
	require.ErrorIs(t, err, ErrMIGConfig)
	require.Contains(t, err.Error(), "gpu 1 (GPU-h100-1) is not")

	devs, err = (&nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGNone}}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, "enabled", devs[0].Info["mig.mode"])
	require.Equal(t, "GPU-h100-0", devs[0].Key)
	require.Empty(t, devs[0].Parent, "handed out whole, under the key its instances name as parent")

	broken := withMIG(fakeH100(0))
	broken.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_UNKNOWN }
	lib, _ = fakeNVML(nvml.SUCCESS, broken)
	_, err = (&nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGMixed}}).Enumerate(ctxT(t))
	require.ErrorIs(t, err, nvml.ERROR_UNKNOWN)
	require.Contains(t, err.Error(), "nvml device 0: MIG device 0")
}

func TestNVMLHealth(t *testing.T) {
	ok := nvml.SUCCESS
	tests := []struct {
		name string
		dev  *mock.Device
		want []string
	}{
		{"healthy", withHealth(fakeH100(0), nvml.FEATURE_DISABLED, ok, false, false, ok), nil},
		{"retired pages pending", withHealth(fakeH100(0), nvml.FEATURE_ENABLED, ok, false, false, nvml.ERROR_NOT_SUPPORTED), []string{ReasonRetiredPagesPending}},
		{"row remapping pending", withHealth(fakeH100(0), 0, nvml.ERROR_NOT_SUPPORTED, true, false, ok), []string{ReasonRowRemapPending}},
		{"row remapping failed", withHealth(fakeH100(0), 0, nvml.ERROR_NOT_SUPPORTED, true, true, ok), []string{ReasonRowRemapFailed}},
		{"nothing supported tells nothing", withHealth(fakeH100(0), 0, nvml.ERROR_NOT_SUPPORTED, false, false, nvml.ERROR_NOT_SUPPORTED), nil},
		{"lost", withHealth(fakeH100(0), 0, nvml.ERROR_GPU_IS_LOST, false, false, nvml.ERROR_GPU_IS_LOST), []string{ReasonGPULost}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, nvmlHealth(tc.dev, true, true))
		})
	}

	// Through the driver: the unhealthy GPU is left out and named.
	sick := withHealth(fakeH100(1), nvml.FEATURE_DISABLED, ok, true, false, ok)
	lib, _ := fakeNVML(nvml.SUCCESS, withHealth(fakeH100(0), nvml.FEATURE_DISABLED, ok, false, false, ok), sick)
	enum := &nvmlEnumerator{lib: lib, units: unitOptions{mig: MIGNone, health: true}}
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamCoordEnabled: "false"}}, deps{nvml: enum})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos))
	_, err = d.Discover(ctxT(t), 2)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), "gpu 1 (GPU-h100-1): row remapping pending")

	// Health checks off: no health query is made (the mock would panic).
	lib, _ = fakeNVML(nvml.SUCCESS, fakeH100(0), fakeH100(1))
	devs, err := (&nvmlEnumerator{lib: lib, units: unitOptions{health: false}}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Len(t, devs, 2)
}

// An old driver without the MIG or row-remapping functions: they are never
// called (the mocks would panic), and the GPUs are handed out whole.
func TestNVMLOldDriverSymbols(t *testing.T) {
	gpu := fakeH100(0)
	gpu.GetMigModeFunc = nil
	gpu.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
	lib, _ := fakeNVML(nvml.SUCCESS, gpu)
	missing := map[string]bool{"nvmlDeviceGetMigMode": true, "nvmlDeviceGetRemappedRows": true}
	lookup := func(s string) error {
		if missing[s] {
			return fmt.Errorf("%s: undefined symbol", s)
		}
		return nil
	}
	devs, err := (&nvmlEnumerator{lib: lib, lookup: lookup, units: unitOptions{mig: MIGMixed, health: true}}).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, []driver.Device{{Key: "GPU-h100-0", Info: devs[0].Info, Unhealthy: ReasonRetiredPagesPending}}, devs)
}

// The static launcher reads NVML through xres-nvml: what the helper prints
// for a host, read back, is offered exactly as in-process NVML offers it,
// for whole GPUs, MIG instances, unhealthy and denied GPUs and an old
// driver without MIG functions.
func TestNVMLListingThroughHelperMatchesInProcess(t *testing.T) {
	ok := nvml.SUCCESS
	mig := withMIG(fakeH100(0),
		fakeMIG("MIG-a0", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 2, 0, 3, 40192),
		fakeMIG("MIG-a1", "NVIDIA H100 80GB HBM3", 10, 0, 1, 9856))
	withHealth(mig, nvml.FEATURE_DISABLED, ok, false, false, ok)
	sick := withHealth(fakeH100(1), nvml.FEATURE_DISABLED, ok, true, false, ok)
	denied := fakeH100(2)
	denied.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NO_PERMISSION }
	healthy := withHealth(fakeH100(3), nvml.FEATURE_DISABLED, ok, false, false, ok)
	noMIG := func(s string) error {
		if strings.Contains(s, "Mig") {
			return fmt.Errorf("%s: undefined symbol", s)
		}
		return nil
	}
	for _, tc := range []struct {
		name   string
		units  unitOptions
		lookup func(string) error
	}{
		{"whole GPUs", unitOptions{mig: MIGNone}, nil},
		{"MIG mixed with health", unitOptions{mig: MIGMixed, health: true}, nil},
		{"MIG profile", unitOptions{mig: MIGMixed, profile: "1g.10gb"}, nil},
		{"driver without MIG functions", unitOptions{mig: MIGMixed, health: true}, noMIG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, _ := fakeNVML(ok, mig, sick, denied, healthy)
			e := &nvmlEnumerator{lib: lib, units: tc.units, lookup: tc.lookup}
			want, err := e.Enumerate(ctxT(t))
			require.NoError(t, err)

			l, err := e.list(ctxT(t), tc.units.wantMIG(), tc.units.health)
			var stdout, stderr bytes.Buffer
			require.Equal(t, 0, nvmlHelperMain(l, err, &stdout, &stderr), stderr.String())
			back, err := unmarshalNVMLListing(stdout.Bytes())
			require.NoError(t, err)
			got, err := back.devices(tc.units, nil)
			require.NoError(t, err)
			require.NotEmpty(t, want)
			require.Equal(t, want, got)
		})
	}

	// Failures keep their kind: unavailable is exit 3, anything else 1.
	var stdout, stderr bytes.Buffer
	lib, _ := fakeNVML(nvml.ERROR_LIBRARY_NOT_FOUND)
	_, err := (&nvmlEnumerator{lib: lib}).list(ctxT(t), false, false)
	require.Equal(t, nvmlHelperUnavailable, nvmlHelperMain(nvmlListing{}, err, &stdout, &stderr))
	require.Contains(t, stderr.String(), "xres-nvml: NVML unavailable: init:")
	lib, _ = fakeNVML(ok, fakeH100(0))
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	_, err = (&nvmlEnumerator{lib: lib}).list(ctxT(t), false, false)
	require.Equal(t, nvmlHelperFailed, nvmlHelperMain(nvmlListing{}, err, &stdout, &stderr))
	require.Empty(t, stdout.String())
}
