package amd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/resources"
)

// fourGPUs is a dual-socket host with four AMD Instinct MI210s: KFD nodes
// 0 and 1 are the CPUs, 2-5 the GPUs (PCI 03, 23, 83, a3; NUMA 0, 0, 1, 1).
const fourGPUs = "testdata/four-gpus/sys"

const nodes = "devices/virtual/kfd/kfd/topology/nodes/"

func keys(devs []driver.Device) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.Key
	}
	return out
}

func newEnum(t *testing.T, params map[string]string) *Enumerator {
	t.Helper()
	e, err := New(driver.Options{Resource: "gpu", Params: params})
	require.NoError(t, err)
	return e
}

var allUUIDs = []string{"GPU-74ec1f464356ea00", "GPU-ac9a80b87e94126a", "GPU-2b758355dd6a4401", "GPU-f000000000000001"}

func TestKFDFourGPUs(t *testing.T) {
	e := newEnum(t, map[string]string{"sysfs-root": fourGPUs})
	require.Empty(t, e.DevRoot, "a fake sysfs root switches the render-node check off")
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, allUUIDs, keys(devs))
	require.Equal(t, resources.Properties{
		"index": "0", "uuid": "GPU-74ec1f464356ea00", "unique-id": "0x74ec1f464356ea00",
		"pci.bus-id": "0000:03:00.0", "gpu-id": "24718", "kfd-node": "2",
		"render-node": "/dev/dri/renderD128", "device-id": "0x740f", "gfx": "gfx90a",
		"name": "aldebaran", "numa-node": "0", "local-cpus": "0-31,64-95",
	}, devs[0].Info)
	require.Equal(t, "3", devs[3].Info["index"])
	require.Equal(t, "0000:a3:00.0", devs[3].Info["pci.bus-id"])
	require.Equal(t, "1", devs[3].Info["numa-node"])
	require.Equal(t, "/dev/dri/renderD131", devs[3].Info["render-node"])
}

// A GPU whose render node cannot be opened is left out and the others are
// renumbered, as ROCr numbers them.
func TestKFDRenderNodeAccess(t *testing.T) {
	dev := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "dri"), 0o755))
	for _, m := range []int{128, 130, 131} { // renderD129 is not in this container
		require.NoError(t, os.WriteFile(filepath.Join(dev, "dri", "renderD"+strconv.Itoa(m)), nil, 0o644))
	}
	e := newEnum(t, map[string]string{"sysfs-root": fourGPUs, "dev-root": dev})
	real := e.open
	e.open = func(path string) error {
		if filepath.Base(path) == "renderD131" {
			return &os.PathError{Op: "open", Path: path, Err: syscall.EPERM} // device cgroup
		}
		if real == nil {
			return pci.OpenDevice(path)
		}
		return real(path)
	}
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-74ec1f464356ea00", "GPU-2b758355dd6a4401"}, keys(devs))
	require.Equal(t, "1", devs[1].Info["index"])
	require.Equal(t, "4", devs[1].Info["kfd-node"])

	e.open = func(path string) error { return &os.PathError{Op: "open", Path: path, Err: syscall.EIO} }
	_, err = e.Enumerate(context.Background())
	require.ErrorContains(t, err, "kfd node 2: open "+filepath.Join(dev, "dri/renderD128")+": input/output error")
	require.Equal(t, 1, strings.Count(err.Error(), "renderD128"), "the path once: %v", err)

	e.open = func(path string) error { return &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT} }
	_, err = e.Enumerate(context.Background())
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.ErrorContains(t, err, "kfd lists no usable GPU")
}

func TestKFDBadFixtures(t *testing.T) {
	n2 := nodes + "2/"
	// Errors name the path users know: /sys/class/kfd/kfd/...
	n2err := "class/kfd/kfd/topology/nodes/2/"
	tests := []struct {
		name   string
		break_ func(t *testing.T, root string)
		want   string // "" = works
		check  func(t *testing.T, devs []driver.Device)
	}{
		{"properties line without value", drivertest.AppendTo(n2+"properties", "vendor_id\n"), n2err + `properties:39: "vendor_id" is not "name value"`, nil},
		{"properties value not decimal", drivertest.Write(n2+"properties", "cpu_cores_count 0\nlocation_id 0x300\n"), n2err + `properties:2: location_id: "0x300" is not a decimal number`, nil},
		{"properties key twice", drivertest.AppendTo(n2+"properties", "domain 1\n"), n2err + "properties:39: domain given twice", nil},
		{"GPU without location_id", drivertest.Write(n2+"properties", "simd_count 416\ndomain 0\ndrm_render_minor 128\n"), n2err + "properties: GPU node (gpu_id 24718) has no location_id", nil},
		{"GPU with render minor 0", drivertest.Write(n2+"properties", "location_id 768\ndomain 0\ndrm_render_minor 0\n"), "has drm_render_minor 0", nil},
		{"properties missing", drivertest.Remove(n2 + "properties"), n2err + "properties: no such file or directory", nil},
		{"gpu_id missing", drivertest.Remove(n2 + "gpu_id"), n2err + "gpu_id: no such file or directory", nil},
		{"gpu_id garbage", drivertest.Write(n2+"gpu_id", "gpu\n"), n2err + `gpu_id: "gpu" is not a gpu_id`, nil},
		{"gpu_id unreadable", drivertest.Unreadable(n2 + "gpu_id"), n2err + "gpu_id: is a directory", nil},
		{"GPU's PCI numa_node garbage", drivertest.Write("devices/pci0000:03/0000:03:01.0/0000:03:00.0/numa_node", "x\n"),
			`bus/pci/devices/0000:03:00.0/numa_node: "x" is not a NUMA node number`, nil},
		{"only CPU nodes", func(t *testing.T, root string) {
			for _, n := range []string{"2", "3", "4", "5"} {
				require.NoError(t, os.RemoveAll(filepath.Join(root, nodes, n)))
			}
		}, "kfd lists no usable GPU: not enough devices", nil},
		{"no topology with source kfd", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "devices/virtual/kfd")))
		}, "class/kfd/kfd/topology/nodes: no such file or directory", nil},
		{"GPU without unique id is keyed by PCI address", func(t *testing.T, root string) {
			b, err := os.ReadFile(filepath.Join(root, n2, "properties"))
			require.NoError(t, err)
			b = []byte(replaceLine(string(b), "unique_id ", "unique_id 0"))
			require.NoError(t, os.WriteFile(filepath.Join(root, n2, "properties"), b, 0o644))
		}, "", func(t *testing.T, devs []driver.Device) {
			require.Equal(t, "0000:03:00.0", devs[0].Key)
			_, hasUUID := devs[0].Info["uuid"]
			require.False(t, hasUUID)
		}},
		{"PCI function absent leaves locality out", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "bus/pci/devices/0000:03:00.0")))
		}, "", func(t *testing.T, devs []driver.Device) {
			_, ok := devs[0].Info["numa-node"]
			require.False(t, ok)
			require.Equal(t, "1", devs[2].Info["numa-node"])
		}},
		{"stray entries in nodes are ignored", drivertest.Write(nodes+"README", "x\n"), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := drivertest.CopyTree(t, fourGPUs)
			tt.break_(t, root)
			e := newEnum(t, map[string]string{"sysfs-root": root, "source": "kfd"})
			devs, err := e.Enumerate(context.Background())
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				require.Nil(t, devs, "nothing half-listed")
				return
			}
			require.NoError(t, err)
			require.Len(t, devs, 4)
			if tt.check != nil {
				tt.check(t, devs)
			}
		})
	}
}

// Nodes are numbered, not named: node 10 comes after node 9.
func TestTopologyNumericOrder(t *testing.T) {
	root := t.TempDir()
	for _, n := range []int{0, 2, 9, 10, 11} {
		dir := filepath.Join(root, KFDNodesDir, strconv.Itoa(n))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		gid := 1000 + n
		if n == 0 {
			gid = 0
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "gpu_id"), []byte(strconv.Itoa(gid)+"\n"), 0o644))
		props := "location_id " + strconv.Itoa(n<<8) + "\ndomain 0\ndrm_render_minor " + strconv.Itoa(128+n) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "properties"), []byte(props), 0o644))
	}
	e := &Enumerator{Source: SourceKFD, SysfsRoot: root}
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"0000:02:00.0", "0000:09:00.0", "0000:0a:00.0", "0000:0b:00.0"}, keys(devs))
	require.Equal(t, "2", devs[2].Info["index"])
}

// fakeRocmSMI writes a rocm-smi stand-in that prints a fixture (or does
// what script says) and returns its path.
func fakeRocmSMI(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rocm-smi")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return path
}

func catFixture(t *testing.T, name string) string {
	abs, err := filepath.Abs(filepath.Join("testdata/rocm-smi", name))
	require.NoError(t, err)
	return `[ "$*" = "--showuniqueid --showbus --json" ] || { echo "unexpected args: $*" >&2; exit 9; }; cat '` + abs + `'`
}

func TestRocmSMI(t *testing.T) {
	smi := fakeRocmSMI(t, catFixture(t, "four-gpus.json"))
	e := newEnum(t, map[string]string{"source": "rocm-smi", "rocm-smi.path": smi, "sysfs-root": fourGPUs})
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, allUUIDs, keys(devs))
	require.Equal(t, resources.Properties{
		"index": "3", "uuid": "GPU-f000000000000001", "unique-id": "0xf000000000000001",
		"pci.bus-id": "0000:a3:00.0", "card": "card3", "numa-node": "1", "local-cpus": "32-63,96-127",
	}, devs[3].Info)

	// Without sysfs for the PCI functions there is no locality.
	smi = fakeRocmSMI(t, catFixture(t, "no-unique-id.json"))
	e = newEnum(t, map[string]string{"source": "rocm-smi", "rocm-smi.path": smi, "sysfs-root": t.TempDir()})
	devs, err = e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"0000:0c:00.0", "0000:0d:00.0"}, keys(devs))
	require.Equal(t, resources.Properties{"index": "0", "pci.bus-id": "0000:0c:00.0", "card": "card0"}, devs[0].Info)
}

func TestRocmSMIFailures(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout string
		want    string
	}{
		{"non-zero exit with stderr tail", "echo 'line 1' >&2; echo 'ERROR: GPU[0] : Unable to read' >&2; exit 3", "",
			"exit code 3; stderr: line 1\nERROR: GPU[0] : Unable to read"},
		{"timeout", "sleep 60", "1 s", "timed out after 1s"},
		{"not JSON", "echo 'WARNING: AMD GPU device(s) is/are in a low-power state'", "", "rocm-smi output is not a JSON object"},
		{"bad bus id", "cat " + mustAbs(t, "testdata/rocm-smi/bad-bus.json"), "", `card0: "PCI Bus" "N/A" is not a PCI address`},
		{"no cards", "echo '{\"system\": {}}'", "", "rocm-smi lists no usable GPU: not enough devices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := map[string]string{"source": "rocm-smi", "rocm-smi.path": fakeRocmSMI(t, tt.script), "sysfs-root": t.TempDir()}
			if tt.timeout != "" {
				params["timeout"] = tt.timeout
			}
			start := time.Now()
			devs, err := newEnum(t, params).Enumerate(context.Background())
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, devs)
			// Well below the hanging script's 60 s, with room for a loaded host.
			require.Less(t, time.Since(start), 30*time.Second, "the timeout stops the run")
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

func TestSourceAuto(t *testing.T) {
	// KFD present: used even though rocm-smi would answer differently.
	smi := fakeRocmSMI(t, catFixture(t, "no-unique-id.json"))
	e := newEnum(t, map[string]string{"sysfs-root": fourGPUs, "rocm-smi.path": smi})
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 4)

	// No KFD: rocm-smi.
	e = newEnum(t, map[string]string{"sysfs-root": t.TempDir(), "rocm-smi.path": smi})
	devs, err = e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, "card0", devs[0].Info["card"])

	// Neither.
	e = newEnum(t, map[string]string{"sysfs-root": t.TempDir(), "rocm-smi.path": filepath.Join(t.TempDir(), "rocm-smi")})
	_, err = e.Enumerate(context.Background())
	require.ErrorIs(t, err, ErrNoSource)
	require.ErrorContains(t, err, "no KFD topology at")
}

func TestParamErrors(t *testing.T) {
	tests := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"source": "nvml"}, `external-resource.gpu.param.source: "nvml", want auto, kfd, rocm-smi`},
		{map[string]string{"timeout": "soon"}, `external-resource.gpu.param.timeout: "soon" is not a duration`},
		{map[string]string{"timeout": "0 s"}, `external-resource.gpu.param.timeout: "0 s" must be positive`},
		{map[string]string{"coordination.enabled": "1"}, `external-resource.gpu.param.coordination.enabled: "1", want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := NewFactory().NewDriver(driver.Options{Resource: "gpu", Params: tt.params})
			require.Error(t, err)
			require.ErrorContains(t, err, tt.want)
		})
	}
	e, err := New(driver.Options{Params: map[string]string{"timeout": "15 s", "source": "KFD"}})
	require.NoError(t, err)
	require.Equal(t, 15*time.Second, e.Timeout)
	require.Equal(t, SourceKFD, e.Source)
	require.Equal(t, "/dev", e.DevRoot, "the real /sys gets the render-node check")
}

func TestRegisterAndCoordinate(t *testing.T) {
	r := driver.NewRegistry()
	require.NoError(t, Register(r))
	f, err := r.Lookup(FactoryName)
	require.NoError(t, err)
	params := map[string]string{"sysfs-root": fourGPUs, "coordination.file": filepath.Join(t.TempDir(), "state")}
	ctx := context.Background()
	first, err := f.NewDriver(driver.Options{Resource: "gpu", Params: params})
	require.NoError(t, err)
	got, err := first.Discover(ctx, 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	second, err := f.NewDriver(driver.Options{Resource: "gpu", Params: params})
	require.NoError(t, err)
	got, err = second.Discover(ctx, 1)
	require.NoError(t, err)
	uuid, _ := got[0].Property("uuid")
	require.Equal(t, allUUIDs[3], uuid, "the last free GPU")
	require.Equal(t, map[string]string{"ROCR_VISIBLE_DEVICES": allUUIDs[3], "HIP_VISIBLE_DEVICES": "0"}, Environment(got))
	_, err = second.Discover(ctx, 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.NoError(t, first.(driver.Releaser).Release(ctx))
	require.NoError(t, second.(driver.Releaser).Release(ctx))
}

func TestEnvironment(t *testing.T) {
	gpu := func(kv ...string) resources.Info {
		p := resources.Properties{}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	tests := []struct {
		name  string
		infos []resources.Info
		want  map[string]string
	}{
		{"uuids when every GPU has one",
			[]resources.Info{gpu("index", "2", "uuid", "GPU-aa"), gpu("index", "3", "uuid", "GPU-bb")},
			map[string]string{"ROCR_VISIBLE_DEVICES": "GPU-aa,GPU-bb", "HIP_VISIBLE_DEVICES": "0,1"}},
		{"indices when one lacks a uuid",
			[]resources.Info{gpu("index", "2", "uuid", "GPU-aa"), gpu("index", "3")},
			map[string]string{"ROCR_VISIBLE_DEVICES": "2,3", "HIP_VISIBLE_DEVICES": "0,1"}},
		{"one GPU", []resources.Info{gpu("index", "1")},
			map[string]string{"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Environment(tt.infos))
		})
	}
}

// Without param.timeout, rocm-smi gets the global xres.discovery.timeout
// (driver.Options.Timeout), else 10 s.
func TestTimeoutFallsBackToGlobal(t *testing.T) {
	tests := []struct {
		name   string
		param  string
		global time.Duration
		want   time.Duration
	}{
		{"default", "", 0, DefaultTimeout},
		{"global", "", 42 * time.Second, 42 * time.Second},
		{"param wins", "3 s", 42 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(driver.Options{Resource: "gpu", Params: map[string]string{"timeout": tt.param}, Timeout: tt.global})
			require.NoError(t, err)
			require.Equal(t, tt.want, e.Timeout)
		})
	}
}

// TestRocrVisibleDevicesCandidateSet: a launcher started with
// ROCR_VISIBLE_DEVICES (a container or scheduler gave it those GPUs) only
// offers those, whether listed by uuid or by index.
func TestRocrVisibleDevicesCandidateSet(t *testing.T) {
	for _, tc := range []struct{ visible string }{{"GPU-2b758355dd6a4401,GPU-ac9a80b87e94126a"}, {"1, 2"}} {
		t.Run(tc.visible, func(t *testing.T) {
			e, err := New(driver.Options{Resource: "gpu", Params: map[string]string{"sysfs-root": fourGPUs},
				Getenv: func(k string) string { return map[string]string{EnvRocrVisibleDevices: tc.visible}[k] }})
			require.NoError(t, err)
			devs, err := e.Enumerate(context.Background())
			require.NoError(t, err)
			require.Equal(t, []string{"GPU-ac9a80b87e94126a", "GPU-2b758355dd6a4401"}, keys(devs), "ROCr's order, not the variable's")
		})
	}
	e, err := New(driver.Options{Resource: "gpu", Params: map[string]string{"sysfs-root": fourGPUs},
		Getenv: func(k string) string { return map[string]string{EnvRocrVisibleDevices: "GPU-elsewhere"}[k] }})
	require.NoError(t, err)
	_, err = e.Enumerate(context.Background())
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.ErrorContains(t, err, "ROCR_VISIBLE_DEVICES=GPU-elsewhere")
}
