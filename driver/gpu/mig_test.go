package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

func readFixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata", "smi"}, parts...)...))
	require.NoError(t, err)
	return b
}

func TestParseSMIList(t *testing.T) {
	h100, err := ParseSMIList(readFixture(t, "h100-mig-mixed", "list.txt"))
	require.NoError(t, err)
	require.Len(t, h100, 4)
	require.Equal(t, SMIListGPU{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a61", MIGs: []SMIListMIG{
		{Index: 0, Profile: "3g.40gb", UUID: "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a11"},
		{Index: 1, Profile: "3g.40gb", UUID: "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a12"},
	}}, h100[1])
	require.Len(t, h100[0].MIGs, 4)
	require.Empty(t, h100[2].MIGs)

	a100, err := ParseSMIList(readFixture(t, "a100-mig-single", "list.txt"))
	require.NoError(t, err)
	require.Equal(t, SMIListMIG{Index: 2, Profile: "2g.10gb", UUID: "MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f11/6/0"}, a100[1].MIGs[2],
		"R450's MIG-GPU-<uuid>/<gi>/<ci> form")

	none, err := ParseSMIList([]byte("No devices were found\n"))
	require.NoError(t, err)
	require.Empty(t, none)

	bad := []struct{ name, in, msg string }{
		{"mig before gpu", "  MIG 1g.10gb Device 0: (UUID: MIG-a)\n", "before any GPU"},
		{"no uuid", "GPU 0: NVIDIA H100\n", "no (UUID"},
		{"garbage", "hello (UUID: x)\n", "neither a GPU nor a MIG line"},
		{"bad gpu index", "GPU x: H100 (UUID: GPU-a)\n", "GPU <index>"},
		{"bad mig line", "GPU 0: H100 (UUID: GPU-a)\n  MIG 1g.10gb Dev 0: (UUID: MIG-b)\n", "MIG <profile> Device"},
		{"mig uuid without MIG-", "GPU 0: H100 (UUID: GPU-a)\n  MIG 1g.10gb Device 0: (UUID: GPU-b)\n", "starts with MIG-"},
		{"uuid twice", "GPU 0: H100 (UUID: GPU-a)\nGPU 1: H100 (UUID: GPU-a)\n", "listed twice"},
		{"index twice", "GPU 0: H100 (UUID: GPU-a)\nGPU 0: H100 (UUID: GPU-b)\n", "GPU 0 listed twice"},
		{"driver failure", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "NVIDIA-SMI has failed"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSMIList([]byte(tc.in))
			require.ErrorIs(t, err, ErrNvidiaSMI)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestParseSMIHealthFields(t *testing.T) {
	devs, err := ParseSMIHealth(readFixture(t, "v100-retired", "query-gpu.txt"))
	require.NoError(t, err)
	require.Len(t, devs, 4)
	require.Equal(t, "", devs[0].Unhealthy)
	require.Equal(t, ReasonRetiredPagesPending, devs[1].Unhealthy)
	require.Equal(t, "", devs[3].Unhealthy, "[N/A] tells nothing")

	_, err = ParseSMIHealth([]byte("0, GPU-a, T4, 1 MiB, x, Enabled, perhaps\n"))
	require.ErrorIs(t, err, ErrNvidiaSMI)
	require.Contains(t, err.Error(), "retired_pages.pending")
}

func TestParseSMIRemappedRows(t *testing.T) {
	got, err := ParseSMIRemappedRows(readFixture(t, "h100-mig-mixed", "remapped-rows.txt"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a63": ReasonRowRemapPending}, got)

	got, err = ParseSMIRemappedRows([]byte("GPU-a, Yes, Yes\nGPU-b, No, [N/A]\nGPU-c, [Not Supported], [Not Supported]\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"GPU-a": ReasonRowRemapFailed}, got, "a failure outranks pending")

	_, err = ParseSMIRemappedRows([]byte("GPU-a, 0\n"))
	require.ErrorIs(t, err, ErrNvidiaSMI)
	require.Contains(t, err.Error(), "want 3 comma-separated fields")
}

func TestProfileNames(t *testing.T) {
	require.Equal(t, "1g.5gb", ProfileFromName("NVIDIA A100-SXM4-40GB MIG 1g.5gb"))
	require.Equal(t, "", ProfileFromName("NVIDIA A100-SXM4-40GB"))
	require.Equal(t, "3g.40gb", profileFromAttributes(3, 3, 40192))
	require.Equal(t, "1g.10gb", profileFromAttributes(1, 0, 9856))
	require.Equal(t, "1c.3g.40gb", profileFromAttributes(3, 1, 40192))
}

// smiDirEnv makes nvidia-smi the fake one answering from a fixture
// directory under testdata/smi.
func smiDirEnv(t *testing.T, dir string) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "smi", dir))
	require.NoError(t, err)
	t.Setenv("XRES_FAKE_NVIDIA_SMI_DIR", abs)
}

func keysOf(infos []resources.Info, key string) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i], _ = in.Property(key)
	}
	return out
}

func TestMIGAndHealthWithNvidiaSMI(t *testing.T) {
	const h100 = "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a6"
	const mig = "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a"
	tests := []struct {
		name     string
		dir      string
		params   map[string]string
		amount   int64
		want     []string // uuids
		errIs    error
		errHas   []string
		unwanted string // in the error
	}{
		{name: "strategy none: whole GPUs, the unhealthy one left out", dir: "h100-mig-mixed", amount: 3,
			want: []string{h100 + "0", h100 + "1", h100 + "2"}},
		{name: "strategy none: too few healthy, the unhealthy one named", dir: "h100-mig-mixed", amount: 4,
			errIs: driver.ErrNotEnoughDevices, errHas: []string{"4 requested but the host has 3 healthy", "gpu 3 (" + h100 + "3): row remapping pending"}},
		{name: "health off: every GPU", dir: "h100-mig-mixed", params: map[string]string{ParamHealth: "false"}, amount: 4,
			want: []string{h100 + "0", h100 + "1", h100 + "2", h100 + "3"}},
		{name: "mixed: MIG instances and whole GPUs", dir: "h100-mig-mixed", params: map[string]string{ParamMIGStrategy: "mixed"}, amount: 7,
			want: []string{mig + "01", mig + "02", mig + "03", mig + "04", mig + "11", mig + "12", h100 + "2"}},
		{name: "mixed: one more than healthy", dir: "h100-mig-mixed", params: map[string]string{ParamMIGStrategy: "mixed"}, amount: 8,
			errIs: driver.ErrNotEnoughDevices, errHas: []string{"host has 7 healthy", "row remapping pending"}},
		{name: "mixed with a profile", dir: "h100-mig-mixed", params: map[string]string{ParamMIGStrategy: "MIXED", ParamMIGProfile: "3g.40gb"}, amount: 3,
			want: []string{mig + "01", mig + "11", mig + "12"}},
		{name: "mixed with a profile: no whole GPUs", dir: "h100-mig-mixed", params: map[string]string{ParamMIGStrategy: "mixed", ParamMIGProfile: "1g.10gb"}, amount: 3,
			errIs: driver.ErrNotEnoughDevices, errHas: []string{"the host has 2 (" + mig + "03"}, unwanted: "gpu 3"},
		{name: "single on a mixed host", dir: "h100-mig-mixed", params: map[string]string{ParamMIGStrategy: "single"}, amount: 1,
			errIs: ErrMIGConfig, errHas: []string{"gpu 2 (" + h100 + "2), gpu 3 (" + h100 + "3) are not"}},
		{name: "single", dir: "a100-mig-single", params: map[string]string{ParamMIGStrategy: "single"}, amount: 6,
			want: []string{
				"MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f10/3/0", "MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f10/5/0", "MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f10/6/0",
				"MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f11/3/0", "MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f11/5/0", "MIG-GPU-b41e07d2-91aa-4c3f-8e25-6d7c8b9a0f11/6/0"}},
		{name: "single with another profile", dir: "a100-mig-single", params: map[string]string{ParamMIGStrategy: "single", ParamMIGProfile: "1g.5gb"}, amount: 1,
			errIs: ErrMIGConfig, errHas: []string{"needs profile 1g.5gb", "2g.10gb (0:0 0:1 0:2 1:0 1:1 1:2)"}},
		{name: "retired pages (no row remapper on this GPU)", dir: "v100-retired", amount: 3,
			want: []string{"GPU-c2d3e4f5-0a1b-4c2d-8e3f-405162738490", "GPU-c2d3e4f5-0a1b-4c2d-8e3f-405162738492", "GPU-c2d3e4f5-0a1b-4c2d-8e3f-405162738493"}},
		{name: "retired pages named", dir: "v100-retired", amount: 4,
			errIs: driver.ErrNotEnoughDevices, errHas: []string{"gpu 1 (GPU-c2d3e4f5-0a1b-4c2d-8e3f-405162738491): retired pages pending"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			smiDirEnv(t, tc.dir)
			params := map[string]string{ParamCoordEnabled: "false"}
			for k, v := range tc.params {
				params[k] = v
			}
			d, err := newDriver(driver.Options{Resource: "gpu", Params: params, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), tc.amount)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				for _, s := range tc.errHas {
					require.Contains(t, err.Error(), s)
				}
				if tc.unwanted != "" {
					require.NotContains(t, err.Error(), tc.unwanted)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, keysOf(infos, "uuid"))
		})
	}
}

func TestMIGInfos(t *testing.T) {
	smiDirEnv(t, "h100-mig-mixed")
	d, err := newDriver(driver.Options{Resource: "gpu", Getenv: fakeEnv(t, nil),
		Params: map[string]string{ParamCoordEnabled: "false", ParamMIGStrategy: "mixed"}}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 7)
	require.NoError(t, err)
	require.Equal(t, resources.Properties{
		"index": "0:1", "uuid": "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a02", "name": "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
		"mig.profile": "2g.20gb", "mig.index": "1", "gpu.index": "0", "gpu.uuid": "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a60",
		"pci.bus-id": "00000000:18:00.0",
	}, infos[1])
	require.Equal(t, "2", keysOf(infos[6:], "index")[0], "a GPU without MIG is handed out whole")

	// Strategy none on a MIG host: the GPU says it is in MIG mode.
	none, err := newDriver(driver.Options{Resource: "gpu", Getenv: fakeEnv(t, nil),
		Params: map[string]string{ParamCoordEnabled: "false"}}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	infos, err = none.Discover(ctxT(t), 1)
	require.NoError(t, err)
	mode, _ := infos[0].Property("mig.mode")
	require.Equal(t, "enabled", mode)
}

// Health is read afresh on every discovery: a GPU that recovers (after a
// reset) is handed out again by the same driver.
func TestHealthNotLatched(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "2")
	t.Setenv("XRES_FAKE_UNHEALTHY", "1")
	d, err := newDriver(driver.Options{Resource: "gpu", Getenv: fakeEnv(t, nil), Params: map[string]string{ParamCoordEnabled: "false"}},
		deps{nvml: unavailableNVML})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 2)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), "gpu 1 (GPU-00000000-0000-4000-8000-000000000001): retired pages pending")
	hr, ok := d.(driver.HealthReporter)
	require.True(t, ok)
	require.Equal(t, []driver.UnhealthyDevice{{Key: "GPU-00000000-0000-4000-8000-000000000001", Reason: ReasonRetiredPagesPending,
		Info: resources.Properties{"index": "1", "uuid": "GPU-00000000-0000-4000-8000-000000000001", "name": "NVIDIA Fake GPU 80GB",
			"memory.total": "81920", "pci.bus-id": "00000000:11:00.0"}}}, hr.Unhealthy())

	t.Setenv("XRES_FAKE_UNHEALTHY", "")
	infos, err := d.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos))
	require.Empty(t, hr.Unhealthy())
}

// An nvidia-smi that does not know the MIG and health fields still lists
// the GPUs (asked again with the base query).
func TestOldNvidiaSMI(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "2")
	t.Setenv("XRES_FAKE_NVIDIA_SMI_OLD", "1")
	t.Setenv("XRES_FAKE_UNHEALTHY", "1") // not visible to an old nvidia-smi
	d, err := newDriver(driver.Options{Resource: "gpu", Getenv: fakeEnv(t, nil),
		Params: map[string]string{ParamCoordEnabled: "false", ParamMIGStrategy: "mixed"}}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos))
}

func TestMIGAndHealthParams(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		key    string
	}{
		{"unknown strategy", map[string]string{ParamMIGStrategy: "all"}, "external-resource.gpu.param.mig.strategy"},
		{"profile without strategy", map[string]string{ParamMIGProfile: "1g.10gb"}, "external-resource.gpu.param.mig.profile"},
		{"health flag", map[string]string{ParamHealth: "sometimes"}, "external-resource.gpu.param.health.enabled"},
		{"nvidia-smi timeout", map[string]string{ParamSMITimeout: "soon"}, "external-resource.gpu.param.nvidia-smi.timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(driver.Options{Resource: "gpu", Params: tc.params})
			require.ErrorIs(t, err, ErrInvalidParam)
			require.Contains(t, err.Error(), tc.key)
		})
	}
}

// Without timeouts of their own, nvidia-smi and the discovery script get
// the global xres.discovery.timeout (Options.Timeout); their params win.
func TestTimeoutsFallBackToGlobal(t *testing.T) {
	dir := t.TempDir()
	slow := writeScript(t, dir, "slow.sh", "sleep 60\n")
	start := time.Now()
	d, err := newDriver(driver.Options{Resource: "gpu", Timeout: 300 * time.Millisecond,
		Params: map[string]string{ParamCoordEnabled: "false", ParamSource: "nvidia-smi", ParamNvidiaSMI: slow}}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrNvidiaSMI)
	require.Contains(t, err.Error(), "timed out after 300ms")
	require.Less(t, time.Since(start), 30*time.Second, "well below the script's 60 s, with room for a loaded host")

	d, err = newDriver(driver.Options{Resource: "gpu", Timeout: time.Hour,
		Params: map[string]string{ParamCoordEnabled: "false", ParamSource: "nvidia-smi", ParamNvidiaSMI: slow, ParamSMITimeout: "200 ms"}}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.Contains(t, err.Error(), "timed out after 200ms", "the param wins over the global option")

	s, err := New(driver.Options{Resource: "gpu", Timeout: 300 * time.Millisecond, Params: map[string]string{ParamScriptPath: slow}})
	require.NoError(t, err)
	_, err = s.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptTimeout)
	require.Contains(t, err.Error(), "after 300ms")
}

// FuzzParseSMIList: never panics; every MIG instance has a MIG- uuid and
// belongs to a GPU; uuids are unique.
func FuzzParseSMIList(f *testing.F) {
	for _, dir := range []string{"h100-mig-mixed", "a100-mig-single"} {
		f.Add(readFixture(f, dir, "list.txt"))
	}
	f.Add([]byte("GPU 0: X (UUID: GPU-a)\n  MIG 1g.5gb Device 0: (UUID: MIG-b)\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, err := ParseSMIList(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, g := range gpus {
			require.False(t, seen[g.UUID])
			seen[g.UUID] = true
			for _, m := range g.MIGs {
				require.True(t, strings.HasPrefix(m.UUID, "MIG-"))
				require.False(t, seen[m.UUID])
				seen[m.UUID] = true
			}
		}
	})
}

// FuzzParseSMIHealth: never panics; every device has an index and a unique
// key, and an unhealthy one says why with a known reason.
func FuzzParseSMIHealth(f *testing.F) {
	for _, dir := range []string{"h100-mig-mixed", "a100-mig-single", "v100-retired"} {
		f.Add(readFixture(f, dir, "query-gpu.txt"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, err := ParseSMIHealth(b)
		if err != nil {
			return
		}
		keys := map[string]bool{}
		for _, d := range devs {
			require.NotEmpty(t, d.Info["index"])
			require.False(t, keys[d.Key])
			keys[d.Key] = true
			require.Contains(t, []string{"", ReasonRetiredPagesPending}, d.Unhealthy)
		}
	})
}

// FuzzParseSMIRemappedRows: never panics; only known reasons come back.
func FuzzParseSMIRemappedRows(f *testing.F) {
	f.Add(readFixture(f, "h100-mig-mixed", "remapped-rows.txt"))
	f.Add([]byte("GPU-a, Yes, No\nGPU-b, [N/A], [N/A]\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		why, err := ParseSMIRemappedRows(b)
		if err != nil {
			return
		}
		for _, r := range why {
			require.Contains(t, []string{ReasonRowRemapPending, ReasonRowRemapFailed}, r)
		}
	})
}
