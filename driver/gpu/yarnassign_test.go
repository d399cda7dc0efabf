package gpu

import (
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

func TestParseNMResourceInfoShapes(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		plugin   bool
		assigned []NMGPU
		total    int
		errHas   string
	}{
		{name: "natural, wrapped", plugin: true, total: 2,
			body:     `{"nmGpuResourceInfo":{"gpuDeviceInformation":{},"totalGpuDevices":[{"index":0,"minorNumber":4},{"index":1,"minorNumber":0}],"assignedGpuDevices":[{"index":1,"minorNumber":0,"containerId":"container_1_0001_01_000002"}]}}`,
			assigned: []NMGPU{{Index: 1, Minor: 0, ContainerID: "container_1_0001_01_000002"}}},
		{name: "jettison: one element as an object, numbers as strings", plugin: true, total: 1,
			body:     `{"nmGpuResourceInfo":{"totalGpuDevices":{"index":"0","minorNumber":"7"},"assignedGpuDevices":{"index":"0","minorNumber":"7","containerId":"c1"}}}`,
			assigned: []NMGPU{{Index: 0, Minor: 7, ContainerID: "c1"}}},
		{name: "unwrapped", plugin: true, total: 1,
			body:     `{"totalGpuDevices":[{"index":3,"minorNumber":3}],"assignedGpuDevices":[{"index":3,"minorNumber":3,"containerId":"c"}]}`,
			assigned: []NMGPU{{Index: 3, Minor: 3, ContainerID: "c"}}},
		{name: "plugin, nothing assigned (list left out)", plugin: true, total: 1,
			body: `{"nmGpuResourceInfo":{"gpuDeviceInformation":{"driver_version":"1"},"totalGpuDevices":{"index":"0","minorNumber":"0"}}}`},
		{name: "plugin, assigned null", plugin: true,
			body: `{"nmGpuResourceInfo":{"totalGpuDevices":[],"assignedGpuDevices":null}}`},
		{name: "pluggable nvidia.com/gpu", plugin: true, total: 2,
			body:     `{"totalDevices":[{"id":0,"minorNumber":0},{"id":1,"minorNumber":1}],"assignedDevices":[{"containerId":"c9","device":{"id":1,"devPath":"/dev/nvidia1","majorNumber":195,"minorNumber":1,"busID":"00000000:3B:00.0"}}]}`,
			assigned: []NMGPU{{Index: 1, Minor: 1, BusID: "00000000:3B:00.0", ContainerID: "c9"}}},
		{name: "no plugin: empty object", body: `{}`},
		{name: "no plugin: empty root element", body: `{"nmResourceInfo":""}`},
		{name: "no plugin: wrapped empty", body: `{"nmResourceInfo":{}}`},
		{name: "not JSON", body: `<html>`, errHas: "not JSON"},
		{name: "no minor number", body: `{"assignedGpuDevices":[{"index":0,"containerId":"c"}]}`, errHas: "assignedGpuDevices[0]: no minorNumber"},
		{name: "no container", body: `{"assignedGpuDevices":[{"index":0,"minorNumber":0}]}`, errHas: "no containerId"},
		{name: "negative minor", body: `{"assignedGpuDevices":[{"index":0,"minorNumber":-1,"containerId":"c"}]}`, errHas: "minorNumber: not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseNMResourceInfo([]byte(tc.body))
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.plugin, info.Plugin)
			require.Equal(t, tc.assigned, info.Assigned)
			require.Len(t, info.Total, tc.total)
		})
	}
}

func FuzzParseNMResourceInfo(f *testing.F) {
	f.Add([]byte(`{"nmGpuResourceInfo":{"assignedGpuDevices":{"index":"0","minorNumber":"7","containerId":"c1"}}}`))
	f.Add([]byte(`{"assignedDevices":[{"containerId":"c9","device":{"id":1,"minorNumber":5}}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseNMResourceInfo(b)
		if err != nil {
			return
		}
		for _, g := range info.Assigned {
			if g.ContainerID == "" || g.Minor < 0 {
				t.Fatalf("accepted an assignment without container or minor: %+v", g)
			}
		}
	})
}

func TestParseSMIXML(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "smi-xq.xml"))
	require.NoError(t, err)
	gpus, err := ParseSMIXML(b)
	require.NoError(t, err)
	require.Equal(t, []SMIXMLGPU{
		{BusID: "00000000:3B:00.0", UUID: "GPU-aaaaaaaa-0000-4000-8000-000000000000", Minor: 4},
		{BusID: "00000000:5E:00.0", UUID: "GPU-aaaaaaaa-0000-4000-8000-000000000001", Minor: -1},
	}, gpus)
	_, err = ParseSMIXML([]byte(`<nvidia_smi_log><gpu id="x"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>`))
	require.ErrorContains(t, err, "no minor_number")
	_, err = ParseSMIXML([]byte(`<nvidia_smi_log><gpu id="x"><uuid>GPU-1</uuid><minor_number>x1</minor_number></gpu></nvidia_smi_log>`))
	require.ErrorContains(t, err, `minor_number "x1" is not a number`)
}

func FuzzParseSMIXML(f *testing.F) {
	f.Add([]byte(`<nvidia_smi_log><gpu id="a"><uuid>GPU-1</uuid><minor_number>3</minor_number></gpu></nvidia_smi_log>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, err := ParseSMIXML(b)
		if err != nil {
			return
		}
		for _, g := range gpus {
			if g.UUID == "" || g.Minor < -1 {
				t.Fatalf("bad GPU accepted: %+v", g)
			}
		}
	})
}

func TestProcMinor(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "0000:3b:00.0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0000:3b:00.0", "information"),
		[]byte("Model: \t\t NVIDIA H100\nIRQ:   \t\t 150\nDevice Minor: \t 6\nBus Location: \t 0000:3b:00.0\n"), 0o644))
	n, ok := procMinor(dir, "00000000:3B:00.0")
	require.True(t, ok)
	require.Equal(t, 6, n)
	_, ok = procMinor(dir, "00000000:5E:00.0")
	require.False(t, ok)
}

// yarnHost is a fake GPU host (the fake nvidia-smi, minor numbers that
// differ from the indices) in a YARN container of a stub NodeManager.
type yarnHost struct {
	t         *testing.T
	nm        *drivertest.NodeManager
	env       map[string]string
	params    map[string]string
	state     string
	yarnKey   string
	container string
}

// hostMinors are the fake host's minor numbers, index i → hostMinors[i].
var hostMinors = []int{4, 0, 7, 2}

func newYarnHost(t *testing.T, resource string, shape drivertest.NMShape) *yarnHost {
	t.Helper()
	t.Setenv("XRES_FAKE_GPUS", "4")
	t.Setenv("XRES_FAKE_GPU_MINORS", "4,0,7,2")
	var gpus []drivertest.NMGPU
	for i, m := range hostMinors {
		gpus = append(gpus, drivertest.NMGPU{Index: i, Minor: m})
	}
	nm := drivertest.NewNodeManager(resource, gpus)
	nm.Shape = shape
	t.Cleanup(nm.Close)
	host, port := nm.HostPort()
	state := filepath.Join(t.TempDir(), "coordination.state")
	return &yarnHost{t: t, nm: nm, state: state, yarnKey: resource, container: "container_1700000000000_0001_01_000002",
		env:    map[string]string{EnvNMHost: host, EnvNMHTTPPort: port, "HADOOP_CONF_DIR": "", "KRB5CCNAME": "", EnvNvidiaVisibleDevices: "", "USER": "alice"},
		params: map[string]string{ParamSource: "nvidia-smi", ParamCoordFile: state}}
}

// discover runs one launcher's discovery of amount GPUs in container.
func (h *yarnHost) discover(container string, amount int64) ([]resources.Info, driver.Driver, error) {
	h.t.Helper()
	env := map[string]string{EnvContainerID: container}
	for k, v := range h.env {
		env[k] = v
	}
	if container == "" {
		env[EnvContainerID] = ""
	}
	d, err := newDriver(driver.Options{Resource: "gpu", Params: h.params, Getenv: fakeEnv(h.t, env), YarnKey: h.yarnKey},
		deps{nvml: unavailableNVML, gpusDir: h.t.TempDir()})
	require.NoError(h.t, err)
	infos, err := d.Discover(ctxT(h.t), amount)
	return infos, d, err
}

func uuids(infos []resources.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i], _ = in.Property(driver.InfoVisibleID)
	}
	return out
}

func fakeUUID(i int) string { return "GPU-00000000-0000-4000-8000-00000000000" + string(rune('0'+i)) }

func TestYarnPluginAssignment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource string
		shape    drivertest.NMShape
	}{
		{"yarn.io/gpu natural", YarnGPU, drivertest.ShapeNatural},
		{"yarn.io/gpu jettison", YarnGPU, drivertest.ShapeJettison},
		{"nvidia.com/gpu device framework", YarnNvidiaGPU, drivertest.ShapeDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newYarnHost(t, tc.resource, tc.shape)
			// Another container holds the first GPU, ours gets index 1 (minor 0).
			_, err := h.nm.Assign("container_other", 1)
			require.NoError(t, err)
			got, err := h.nm.Assign(h.container, 1)
			require.NoError(t, err)
			require.Equal(t, []drivertest.NMGPU{{Index: 1, Minor: 0}}, got)
			infos, d, err := h.discover(h.container, 1)
			require.NoError(t, err)
			require.Equal(t, []string{fakeUUID(1)}, uuids(infos), "the GPU YARN assigned, named by uuid")
			m, _ := infos[0].Property("minor")
			require.Equal(t, "0", m)
			require.Contains(t, h.nm.LastQuery(), "user.name=alice")

			// Recorded in the host state: a host-coordinated launcher on the
			// same host (no YARN) never takes it.
			others, od, err := h.discover("", 3)
			require.NoError(t, err)
			require.NotContains(t, uuids(others), fakeUUID(1))
			require.NoError(t, od.(driver.Releaser).Release(ctxT(t)))
			require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
		})
	}
}

func TestYarnAssignmentDisagrees(t *testing.T) {
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	_, err := h.nm.Assign(h.container, 1)
	require.NoError(t, err)
	_, _, err = h.discover(h.container, 2)
	require.ErrorIs(t, err, driver.ErrAssignmentMismatch)
	require.ErrorContains(t, err, "YARN assigned 1 yarn.io/gpu GPU(s) to container "+h.container+" (minor 4 (index 0)")
	require.ErrorContains(t, err, "resource gpu asks 2")

	// No GPU assigned to this container on a plugin host: 0 against 1.
	_, _, err = h.discover("container_1700000000000_0001_01_000009", 1)
	require.ErrorIs(t, err, driver.ErrAssignmentMismatch)
	require.ErrorContains(t, err, "YARN assigned 0")
}

func TestYarnCountedNodeManager(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(nm *drivertest.NodeManager)
	}{
		{"no plugin (empty answer)", func(nm *drivertest.NodeManager) { nm.Counted.Store(true) }},
		{"no endpoint (404)", func(nm *drivertest.NodeManager) { nm.Status.Store(404) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
			tc.set(h.nm)
			infos, d, err := h.discover(h.container, 2)
			require.NoError(t, err, "host coordination")
			require.Equal(t, []string{"0", "1"}, indices(infos))
			require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
		})
	}
}

func writeYarnSite(t *testing.T, props map[string]string) string {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for k, v := range props {
		b.WriteString("  <property><name>" + k + "</name><value>" + v + "</value></property>\n")
	}
	b.WriteString("</configuration>\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(b.String()), 0o644))
	return dir
}

// The decision where the NodeManager's REST cannot be asked: Docker's
// NVIDIA_VISIBLE_DEVICES where set; host coordination where the node's
// yarn-site.xml proves there is no plugin; fail closed otherwise.
func TestYarnRESTUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resource  string
		fail      func(nm *drivertest.NodeManager)
		site      map[string]string
		visible   string
		want      []string // uuids
		wantIndex []string
		errIs     error
		errHas    []string
	}{
		{name: "down, nothing known: fail closed", resource: YarnGPU, fail: func(nm *drivertest.NodeManager) { nm.Close() },
			errIs: driver.ErrAssignmentUnknown, errHas: []string{"nothing proves the NodeManager only counts GPUs", "yarn.assignment: off"}},
		{name: "500 with the plugin configured: fail closed", resource: YarnGPU, fail: func(nm *drivertest.NodeManager) { nm.Status.Store(500) },
			site:  map[string]string{"yarn.nodemanager.resource-plugins": "yarn.io/gpu"},
			errIs: driver.ErrAssignmentUnknown, errHas: []string{"yarn-site.xml enables the yarn.io/gpu plugin", "HTTP 500"}},
		{name: "down, yarn-site without the plugin: host coordination", resource: YarnGPU, fail: func(nm *drivertest.NodeManager) { nm.Close() },
			site: map[string]string{"yarn.nodemanager.resource-plugins": "yarn.io/fpga"}, wantIndex: []string{"0"}},
		{name: "down, Docker indices", resource: YarnGPU, fail: func(nm *drivertest.NodeManager) { nm.Close() },
			visible: "2", want: []string{fakeUUID(2)}},
		{name: "down, Docker under nvidia.com/gpu (its plugin's \"minor numbers\" are indices)", resource: YarnNvidiaGPU, fail: func(nm *drivertest.NodeManager) { nm.Close() },
			visible: "2", want: []string{fakeUUID(2)}},
		{name: "SPNEGO without Kerberos credentials", resource: YarnGPU, fail: func(nm *drivertest.NodeManager) { nm.Negotiate.Store(true) },
			errIs: driver.ErrAssignmentUnknown, errHas: []string{"requires SPNEGO", "this container has no Kerberos credentials", "delegation tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newYarnHost(t, tc.resource, drivertest.ShapeNatural)
			_, err := h.nm.Assign(h.container, 1)
			require.NoError(t, err)
			tc.fail(h.nm)
			if tc.site != nil {
				h.env["HADOOP_CONF_DIR"] = writeYarnSite(t, tc.site)
			}
			h.env[EnvNvidiaVisibleDevices] = tc.visible
			h.env["KRB5CCNAME"] = filepath.Join(t.TempDir(), "no-cache")
			infos, _, err := h.discover(h.container, 1)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				for _, s := range tc.errHas {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			if tc.wantIndex != nil {
				require.Equal(t, tc.wantIndex, indices(infos), "host coordination")
				return
			}
			require.Equal(t, tc.want, uuids(infos))
		})
	}
}

// A NodeManager on HTTPS is asked through the helper (xres-nmrest, built
// here and found on PATH): the launcher links no TLS. Its certificate is
// trusted through the CA param; untrusted, the error names the param.
func TestYarnRESTOverHTTPS(t *testing.T) {
	helperDir := filepath.Dir(nmrestHelper(t))
	t.Setenv("XRES_FAKE_GPUS", "4")
	t.Setenv("XRES_FAKE_GPU_MINORS", "4,0,7,2")
	nm := drivertest.NewTLSNodeManager(YarnGPU, []drivertest.NMGPU{{Index: 0, Minor: 4}, {Index: 1, Minor: 0}, {Index: 2, Minor: 7}, {Index: 3, Minor: 2}})
	t.Cleanup(nm.Close)
	_, err := nm.Assign("c1", 1)
	require.NoError(t, err)
	_, err = nm.Assign("c2", 1)
	require.NoError(t, err)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: nm.Server.Certificate().Raw}), 0o644))
	host, port := nm.HostPort()
	for _, tc := range []struct {
		name string
		site map[string]string
	}{
		{"yarn.http.policy HTTPS_ONLY", map[string]string{"yarn.http.policy": "HTTPS_ONLY"}},
		{"no yarn-site: plain HTTP first, then HTTPS", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvContainerID: "c2", EnvNMHost: host, EnvNMHTTPPort: port, EnvNvidiaVisibleDevices: "", "HADOOP_CONF_DIR": "",
				"PATH": helperDir + ":" + fakeEnv(t, nil)("PATH")}
			if tc.site != nil {
				env["HADOOP_CONF_DIR"] = writeYarnSite(t, tc.site)
			}
			params := map[string]string{ParamSource: "nvidia-smi", ParamCoordFile: filepath.Join(t.TempDir(), "s"), ParamYarnCAFile: ca}
			d, err := newDriver(driver.Options{Resource: "gpu", Params: params, Getenv: fakeEnv(t, env), YarnKey: YarnGPU},
				deps{nvml: unavailableNVML, gpusDir: t.TempDir()})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), 1)
			require.NoError(t, err)
			require.Equal(t, []string{fakeUUID(1)}, uuids(infos))
		})
	}
	// Without the CA: a clear TLS error, fail closed.
	env := map[string]string{EnvContainerID: "c2", EnvNMHost: host, EnvNMHTTPPort: port, EnvNvidiaVisibleDevices: "",
		"HADOOP_CONF_DIR": writeYarnSite(t, map[string]string{"yarn.http.policy": "HTTPS_ONLY", "yarn.nodemanager.resource-plugins": "yarn.io/gpu"}),
		"PATH":            helperDir + ":" + fakeEnv(t, nil)("PATH")}
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamSource: "nvidia-smi", ParamCoordFile: filepath.Join(t.TempDir(), "s")},
		Getenv: fakeEnv(t, env), YarnKey: YarnGPU}, deps{nvml: unavailableNVML, gpusDir: t.TempDir()})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, driver.ErrAssignmentUnknown)
	require.ErrorContains(t, err, "certificate")
	require.ErrorContains(t, err, "fix: name the CA that signed the NodeManager's certificate (PEM) in external-resource.gpu.param.yarn.nm-ca-file")
}

func TestYarnAssignedGPUNotSeen(t *testing.T) {
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	t.Setenv("XRES_FAKE_GPUS", "2") // the host's discovery sees 2 of the NodeManager's 4
	_, err := h.nm.Assign("x", 2)
	require.NoError(t, err)
	_, err = h.nm.Assign(h.container, 1) // index 2, minor 7
	require.NoError(t, err)
	_, _, err = h.discover(h.container, 1)
	require.ErrorIs(t, err, driver.ErrAssignmentMismatch)
	require.ErrorContains(t, err, "minor number 7, which this host's discovery does not list (it lists index 0 minor 4, index 1 minor 0)")
}

func TestYarnAssignmentOff(t *testing.T) {
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	h.params[ParamYarnAssignment] = "off"
	_, err := h.nm.Assign("x", 1)
	require.NoError(t, err)
	_, err = h.nm.Assign(h.container, 1)
	require.NoError(t, err)
	infos, _, err := h.discover(h.container, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos), "host coordination, YARN not asked")
	require.Zero(t, h.nm.Requests.Load())
}

func TestYarnNodeAssignmentReport(t *testing.T) {
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	_, err := h.nm.Assign(h.container, 2)
	require.NoError(t, err)
	env := map[string]string{EnvContainerID: h.container}
	for k, v := range h.env {
		env[k] = v
	}
	na, err := factory{}.NodeAssignment(ctxT(t), driver.Options{Resource: "gpu", Params: h.params, Getenv: fakeEnv(t, env), YarnKey: YarnGPU})
	require.NoError(t, err)
	require.Equal(t, driver.NodeModePlugin, na.Mode)
	require.Equal(t, []string{"minor 4 (index 0)", "minor 0 (index 1)"}, na.Assigned)
	require.Equal(t, 4, na.Total)
	h.nm.Counted.Store(true)
	na, err = factory{}.NodeAssignment(ctxT(t), driver.Options{Resource: "gpu", Params: h.params, Getenv: fakeEnv(t, env), YarnKey: YarnGPU})
	require.NoError(t, err)
	require.Equal(t, driver.NodeModeCounted, na.Mode)
}

// TestYarnRequestSentWhenMade: the driver asks the NodeManager once, as
// it is made (the launcher subscribes to signals meanwhile): its Discover
// reads that answer, a later Discover asks again, and a driver released
// unused closes its request.
func TestYarnRequestSentWhenMade(t *testing.T) {
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	_, err := h.nm.Assign(h.container, 1)
	require.NoError(t, err)
	env := map[string]string{EnvContainerID: h.container}
	for k, v := range h.env {
		env[k] = v
	}
	mk := func() driver.Driver {
		d, err := newDriver(driver.Options{Resource: "gpu", Params: h.params, Getenv: fakeEnv(t, env), YarnKey: h.yarnKey},
			deps{nvml: unavailableNVML, gpusDir: t.TempDir()})
		require.NoError(t, err)
		return d
	}
	d := mk()
	infos, err := d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos), "index 0: minor 4, YARN's first")
	require.EqualValues(t, 1, h.nm.Requests.Load(), "one request for the made driver and its Discover")
	require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
	infos, err = d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos))
	require.EqualValues(t, 2, h.nm.Requests.Load(), "a later Discover asks again")
	require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))

	unused := mk()
	require.NoError(t, unused.(driver.Releaser).Release(ctxT(t)))
	_, err = unused.Discover(ctxT(t), 1) // a fresh request after the dropped one
	require.NoError(t, err)
	require.NoError(t, unused.(driver.Releaser).Release(ctxT(t)))
}

// A host shared by several Unix users: the coordination folder is another
// user's, so this user's launchers may not use the host state. Where YARN
// assigned the GPUs they are still the worker's (logged); where it only
// counts them, nothing is granted (host coordination fails closed).
func TestYarnAssignmentWithAnotherUsersHostState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowns a folder to another user: needs root (CI runs as root)")
	}
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	dir := filepath.Join(t.TempDir(), "theirs")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	h.params[ParamCoordFile] = filepath.Join(dir, "coordination.state")

	_, err := h.nm.Assign(h.container, 2)
	require.NoError(t, err)
	infos, d, err := h.discover(h.container, 2)
	require.NoError(t, err, "YARN's assignment is the worker's even where this user cannot record it")
	require.Equal(t, []string{fakeUUID(0), fakeUUID(1)}, uuids(infos))
	require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))

	// Without YARN's assignment (no container): refused, never guessed.
	_, _, err = h.discover("", 1)
	require.ErrorIs(t, err, coord.ErrUnsafeFolder)
}

// A NodeManager that asks for SPNEGO gets the token the helper
// (xres-nmrest, a fake found on PATH here) makes from the container's ticket
// cache: Kerberos is not linked into the launcher. The helper's own
// failures say what it said; a launcher without it names it.
func TestYarnRESTWithSPNEGOHelper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		helper string // the fake helper's body; "" for none
		errIs  []error
		errHas []string
	}{
		{name: "token", helper: `[ "$1" = "token" ] && [ "$2" = "HTTP/127.0.0.1" ] && [ "$KRB5CCNAME" = "$CCACHE" ] || { echo "xres-nmrest: args $*" >&2; exit 1; }; echo "Negotiate dG9rZW4="`},
		{name: "no credentials", helper: `echo "xres-nmrest: no Kerberos credentials: ticket cache $KRB5CCNAME: expired" >&2; exit 3`,
			errIs: []error{driver.ErrAssignmentUnknown}, errHas: []string{"requires SPNEGO", "this container has no Kerberos credentials: ticket cache", "expired"}},
		{name: "failed", helper: `echo "xres-nmrest: SPNEGO token for HTTP/127.0.0.1: KDC unreachable" >&2; exit 1`,
			errIs: []error{driver.ErrAssignmentUnknown}, errHas: []string{"requires SPNEGO", "KDC unreachable", "exit status 1"}},
		{name: "not a token", helper: `echo "Basic eA=="`,
			errIs: []error{driver.ErrAssignmentUnknown}, errHas: []string{"printed no Negotiate token"}},
		{name: "no helper", errIs: []error{driver.ErrAssignmentUnknown},
			errHas: []string{"requires SPNEGO", "xres-nmrest is not beside the launcher"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
			_, err := h.nm.Assign(h.container, 1)
			require.NoError(t, err)
			h.nm.Negotiate.Store(true)
			ccache := filepath.Join(t.TempDir(), "krb5cc")
			require.NoError(t, os.WriteFile(ccache, []byte("cache"), 0o600))
			bin := t.TempDir()
			if tc.helper != "" {
				require.NoError(t, os.WriteFile(filepath.Join(bin, NMRESTHelperName), []byte("#!/bin/sh\n"+tc.helper+"\n"), 0o755))
			}
			h.env["KRB5CCNAME"] = "FILE:" + ccache
			h.env["CCACHE"] = "FILE:" + ccache
			fakebin, err := filepath.Abs(filepath.Join("testdata", "fakebin"))
			require.NoError(t, err)
			h.env["PATH"] = bin + ":" + fakebin + ":" + os.Getenv("PATH")
			t.Setenv("CCACHE", "FILE:"+ccache) // the helper's environment is the launcher's
			infos, _, err := h.discover(h.container, 1)
			if tc.errIs != nil {
				for _, e := range tc.errIs {
					require.ErrorIs(t, err, e)
				}
				for _, s := range tc.errHas {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			require.Len(t, infos, 1)
			require.Equal(t, "Negotiate dG9rZW4=", h.nm.LastAuthorization())
		})
	}
}

var (
	nmrestOnce sync.Once
	nmrestBin  string
	nmrestErr  error
)

// nmrestHelper builds the NodeManager REST helper (xres-nmrest) once per
// test binary and returns its path.
func nmrestHelper(t *testing.T) string {
	t.Helper()
	nmrestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "xres-nmrest-")
		if err != nil {
			nmrestErr = err
			return
		}
		nmrestBin = filepath.Join(dir, NMRESTHelperName)
		out, err := exec.Command("go", "build", "-o", nmrestBin, "../../cmd/container-launcher/xres-nmrest").CombinedOutput()
		if err != nil {
			nmrestErr = fmt.Errorf("go build xres-nmrest: %w\n%s", err, out)
		}
	})
	require.NoError(t, nmrestErr)
	return nmrestBin
}
