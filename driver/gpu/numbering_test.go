//go:build cgo && linux

package gpu

import (
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// fakeT4 is an NVML device as a 16 GB T4 reports itself.
func fakeT4(i int) *mock.Device {
	d := fakeH100(i)
	d.GetUUIDFunc = func() (string, nvml.Return) { return fmt.Sprintf("GPU-t4-%d", i), nvml.SUCCESS }
	d.GetNameFunc = func() (string, nvml.Return) { return "Tesla T4", nvml.SUCCESS }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 15360 << 20}, nvml.SUCCESS }
	return d
}

// nvmlGPUDriver builds the GPU driver over a fake NVML with the given
// devices, coordination off, in an environment holding env.
func nvmlGPUDriver(t *testing.T, env map[string]string, lib *mock.Interface) driver.Driver {
	t.Helper()
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamSource: "nvml", ParamCoordEnabled: "false"},
		Getenv: func(k string) string { return env[k] }}, deps{nvml: &nvmlEnumerator{lib: lib}})
	require.NoError(t, err)
	return d
}

func prop(infos []resources.Info, key string) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i], _ = in.Property(key)
	}
	return out
}

// TestNumberingUnderIsolation: what the worker is told about its GPUs in
// each isolation mode (the README's "Device numbering" table).
func TestNumberingUnderIsolation(t *testing.T) {
	withDenied := func(devs ...nvml.Device) *mock.Interface {
		lib, _ := fakeNVML(nvml.SUCCESS, devs...)
		lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			if devs[i] == nil {
				return nil, nvml.ERROR_NO_PERMISSION
			}
			return devs[i], nvml.SUCCESS
		}
		return lib
	}
	mixed, _ := fakeNVML(nvml.SUCCESS, fakeT4(0), fakeH100(1), fakeT4(2))
	host4, _ := fakeNVML(nvml.SUCCESS, fakeH100(0), fakeH100(1), fakeH100(2), fakeH100(3))
	container2, _ := fakeNVML(nvml.SUCCESS, fakeH100(0), fakeH100(1))
	tests := []struct {
		name        string
		lib         *mock.Interface
		env         map[string]string
		amount      int64
		wantIndex   []string
		wantVisible []string // visible-id per device; "" where the index names it
		wantErr     error
	}{
		{name: "mixed models, no isolation: NVML's PCI-ordered indices", lib: mixed, amount: 3,
			wantIndex: []string{"0", "1", "2"}, wantVisible: []string{"", "", ""}},
		{name: "cgroup isolation: a denied GPU is not a candidate, the others go by uuid",
			lib: withDenied(nil, fakeH100(1), nil, fakeH100(3)), amount: 2,
			wantIndex: []string{"1", "3"}, wantVisible: []string{"GPU-h100-1", "GPU-h100-3"}},
		{name: "cgroup isolation: too few accessible GPUs", lib: withDenied(nil, fakeH100(1)), amount: 2,
			wantErr: driver.ErrNotEnoughDevices},
		{name: "docker mode, uuids on a host view: only those", lib: host4, amount: 2,
			env:       map[string]string{EnvNvidiaVisibleDevices: "GPU-h100-3,GPU-h100-1"},
			wantIndex: []string{"1", "3"}, wantVisible: []string{"GPU-h100-1", "GPU-h100-3"}},
		{name: "docker mode, container view renumbered from 0", lib: container2, amount: 2,
			env:       map[string]string{EnvNvidiaVisibleDevices: "2,3"},
			wantIndex: []string{"0", "1"}, wantVisible: []string{"GPU-h100-0", "GPU-h100-1"}},
		{name: "host indices on a host view", lib: host4, amount: 1,
			env:       map[string]string{EnvNvidiaVisibleDevices: "2"},
			wantIndex: []string{"2"}, wantVisible: []string{"GPU-h100-2"}},
		{name: "all", lib: host4, amount: 4, env: map[string]string{EnvNvidiaVisibleDevices: "all"},
			wantIndex: []string{"0", "1", "2", "3"}, wantVisible: []string{"", "", "", ""}},
		{name: "none", lib: host4, amount: 1, env: map[string]string{EnvNvidiaVisibleDevices: "none"},
			wantErr: driver.ErrNotEnoughDevices},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			infos, err := nvmlGPUDriver(t, tc.env, tc.lib).Discover(ctxT(t), tc.amount)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantIndex, indices(infos))
			require.Equal(t, tc.wantVisible, prop(infos, driver.InfoVisibleID))
		})
	}
}

func TestVisibleSetMIG(t *testing.T) {
	devs := []driver.Device{
		{Key: "MIG-a", Parent: "GPU-0", Info: resources.Properties{"uuid": "MIG-a", "gpu.uuid": "GPU-0", "gpu.index": "0", "index": "0:0"}},
		{Key: "MIG-b", Parent: "GPU-1", Info: resources.Properties{"uuid": "MIG-b", "gpu.uuid": "GPU-1", "gpu.index": "1", "index": "1:0"}},
		{Key: "GPU-2", Info: resources.Properties{"uuid": "GPU-2", "index": "2"}},
	}
	log := driver.LoggerOrDiscard(nil)
	keys := func(ds []driver.Device) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Key)
		}
		return out
	}
	require.Equal(t, []string{"MIG-b"}, keys(visibleSet(devs, "MIG-b", log)), "a MIG instance by its uuid")
	require.Equal(t, []string{"MIG-a"}, keys(visibleSet(devs, "GPU-0", log)), "the instances of a listed GPU")
	require.Equal(t, []string{"MIG-b", "GPU-2"}, keys(visibleSet(devs, "1, 2", log)), "host indices: the GPU's")
	require.Equal(t, "", devs[0].Info[driver.InfoVisibleID], "the input is not changed")
}
