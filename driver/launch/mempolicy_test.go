package launch

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// testdata/numa-sysfs is a fake NUMA tree: GPUs 0000:3b:00.0 and
// 0000:3c:00.0 on node 0, 0000:86:00.0 on node 1, 0000:af:00.0 on none
// (-1, a host without NUMA).
func numaSysfs(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("testdata", "numa-sysfs"))
	require.NoError(t, err)
	return root
}

func TestGrantsMemPolicy(t *testing.T) {
	root := numaSysfs(t)
	dev := func(bus string) resources.Info { return resources.Properties{InfoPCIBusID: bus} }
	grant := func(mode string, devs ...resources.Info) Grant {
		p := map[string]string{ParamSysfsRoot: root}
		if mode != "" {
			p[driver.NUMAMemoryParam.Name] = mode
		}
		return Grant{Spec: resources.Spec{Name: "gpu", Params: p}, Devices: devs}
	}
	tests := []struct {
		name   string
		grants []Grant
		want   string
	}{
		{"one node, preferred by default", []Grant{grant("", dev("00000000:3B:00.0"), dev("00000000:3C:00.0"))}, "preferred:0"},
		{"node 1", []Grant{grant("", dev("00000000:86:00.0"))}, "preferred:1"},
		{"across sockets, preferred: left default", []Grant{grant("", dev("00000000:3B:00.0"), dev("00000000:86:00.0"))}, ""},
		{"across sockets, bind: both", []Grant{grant("bind", dev("00000000:3B:00.0"), dev("00000000:86:00.0"))}, "bind:0,1"},
		{"off", []Grant{grant("off", dev("00000000:3B:00.0"))}, ""},
		{"no NUMA (-1)", []Grant{grant("", dev("00000000:AF:00.0"))}, ""},
		{"no sysfs entry", []Grant{grant("", dev("00000000:01:00.0"))}, ""},
		{"info numa-node wins", []Grant{grant("", resources.Properties{InfoPCIBusID: "00000000:3B:00.0", driver.InfoNUMANode: "1"})}, "preferred:1"},
		{"nothing told", []Grant{grant("", resources.Properties{"index": "0"})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, grantsMemPolicy(tc.grants, logrus.New()).String())
		})
	}
	p, err := parseMemPolicy("bind:0,1")
	require.NoError(t, err)
	require.Equal(t, "bind:0,1", p.String())
	for _, bad := range []string{"", "preferred:0,1", "interleave:0", "bind:", "bind:x", "bind:4096"} {
		_, err := parseMemPolicy(bad)
		require.Error(t, err, bad)
	}
}

// recordMemPolicies replaces setMemPolicy with a recorder for the test.
func recordMemPolicies(t *testing.T) func() []string {
	var mu sync.Mutex
	var asked []string
	old := setMemPolicy
	setMemPolicy = func(p memPolicy) error {
		mu.Lock()
		defer mu.Unlock()
		s := p.String()
		if s == "" {
			s = "default"
		}
		asked = append(asked, s)
		return nil
	}
	t.Cleanup(func() { setMemPolicy = old })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// The launcher asks for the GPUs' node around the worker's fork and
// restores the default after it, even for a node this machine lacks
// (the fake tree's node 1).
func TestWorkerMemPolicyAskedForGPUsNode(t *testing.T) {
	asked := recordMemPolicies(t)
	h := newFakeHost()
	h.devices["gpu"] = 2
	h.extra["gpu"] = []resources.Properties{{InfoPCIBusID: "00000000:86:00.0"}, {InfoPCIBusID: "00000000:3B:00.0"}}
	spec := gpuSpec(1)
	spec.Params[ParamSysfsRoot] = numaSysfs(t)
	r := runMain(t, h, fixedSpecs(spec), nil, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"preferred:1", "default"}, asked())

	spec.Params[driver.NUMAMemoryParam.Name] = driver.NUMAMemoryOff
	r = runMain(t, h, fixedSpecs(spec), nil, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"preferred:1", "default"}, asked(), "numa.memory off: nothing asked")
}

// numaCapable skips unless this kernel has memory policies and tells
// them in /proc/self/numa_maps.
func numaCapable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory policies are Linux's")
	}
	if _, err := os.Stat("/proc/self/numa_maps"); err != nil {
		t.Skipf("no /proc/self/numa_maps (kernel without NUMA): %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := setThreadMemPolicy(memPolicy{mode: driver.NUMAMemoryPreferred, nodes: []int{0}}); err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
			t.Skipf("set_mempolicy: %v", err)
		}
		t.Fatal(err)
	}
	require.NoError(t, setThreadMemPolicy(memPolicy{}))
}

// The worker really runs with the policy: its own /proc/self/numa_maps
// says prefer:0 (this machine's node 0, where the fake tree puts the GPU),
// while the launcher's thread is back to the default.
func TestWorkerMemPolicyInherited(t *testing.T) {
	numaCapable(t)
	h := newFakeHost()
	h.devices["gpu"] = 1
	h.extra["gpu"] = []resources.Properties{{InfoPCIBusID: "00000000:3B:00.0"}}
	out := filepath.Join(t.TempDir(), "maps")
	for _, tc := range []struct{ mode, want string }{
		{driver.NUMAMemoryPreferred, " prefer:0 "},
		{driver.NUMAMemoryBind, " bind:0 "},
		{driver.NUMAMemoryOff, " default "},
	} {
		spec := gpuSpec(1)
		spec.Params[ParamSysfsRoot] = numaSysfs(t)
		spec.Params[driver.NUMAMemoryParam.Name] = tc.mode
		r := runMain(t, h, fixedSpecs(spec), nil, "--", "sh", "-c", `head -n 1 /proc/self/numa_maps > "$1"`, "worker", out)
		require.Equal(t, 0, r.code, r.stderr)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Contains(t, string(b), tc.want, tc.mode)
	}
	own, err := os.ReadFile("/proc/self/numa_maps")
	require.NoError(t, err)
	require.NotContains(t, strings.SplitN(string(own), "\n", 2)[0], "prefer:", "the launcher keeps the default policy")
}

// --per-device: each worker gets its own device's node.
func TestPerDeviceMemPolicy(t *testing.T) {
	asked := recordMemPolicies(t)
	h := newFakeHost()
	h.devices["gpu"] = 2
	h.extra["gpu"] = []resources.Properties{{InfoPCIBusID: "00000000:86:00.0"}, {InfoPCIBusID: "00000000:3B:00.0"}}
	spec := gpuSpec(2)
	spec.Params[ParamSysfsRoot] = numaSysfs(t)
	r := runMain(t, h, fixedSpecs(spec), nil, "--per-device=gpu", "--pin-cpus=false", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	got := asked()
	require.ElementsMatch(t, []string{"preferred:1", "default", "preferred:0", "default"}, got)
}

// probe says where the devices sit and when they cross sockets, also for
// a pick xres did not make (YARN's NodeManager's).
func TestProbeSaysCrossSocket(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 2
	h.extra["gpu"] = []resources.Properties{{InfoPCIBusID: "00000000:3B:00.0"}, {InfoPCIBusID: "00000000:86:00.0"}}
	spec := gpuSpec(2)
	spec.Params[ParamSysfsRoot] = numaSysfs(t)
	r := runMain(t, h, fixedSpecs(spec), nil, "probe")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "numa: nodes 0,1: the devices cross sockets")
	require.Contains(t, r.stdout, "worker memory default")

	spec = gpuSpec(1)
	spec.Params[ParamSysfsRoot] = numaSysfs(t)
	r = runMain(t, h, fixedSpecs(spec), nil, "probe")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "numa: node 0, worker memory preferred:0")

	var b strings.Builder
	writeProbeNUMA(&b, "  ", &ProbeNUMA{Nodes: []int{0, 1}, CrossesSockets: true, MemoryPolicy: "bind:0,1"},
		&driver.NodeAssignment{Mode: "plugin", Assigned: []string{"minor 0", "minor 5"}})
	require.Equal(t, "  numa: nodes 0,1: YARN's NodeManager picked devices that cross sockets (their traffic crosses the inter-socket link); worker memory bind:0,1\n", b.String())
}

func TestBadNUMAMemoryNamesTheKey(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 1
	spec := gpuSpec(1)
	spec.Params[driver.NUMAMemoryParam.Name] = "fast"
	r := runMain(t, h, fixedSpecs(spec), nil, "--", "true")
	require.Equal(t, ExitConfig, r.code, r.stderr)
	require.Contains(t, r.stderr, "external-resource.gpu.param.numa.memory")
	require.Empty(t, h.Held("gpu"))
}
