package gpu

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/driver/gpu/nmhelper"
)

// resetPrefetch forgets what PrefetchNodeManager sent (the process's one
// prefetch, reused by every test here).
func resetPrefetch(t *testing.T) {
	t.Helper()
	clear := func() {
		prefetched.Lock()
		defer prefetched.Unlock()
		if prefetched.sent != nil && !prefetched.taken && prefetched.call != nil {
			prefetched.call.cancel()
		}
		prefetched.key, prefetched.sent, prefetched.call, prefetched.taken = "", nil, nil, false
	}
	clear()
	t.Cleanup(clear)
}

// prefetchEnv is the container's environment as PrefetchNodeManager and
// the driver read it.
func (h *yarnHost) prefetchEnv() func(string) string {
	env := map[string]string{EnvContainerID: h.container}
	for k, v := range h.env {
		env[k] = v
	}
	return fakeEnv(h.t, env)
}

// The launcher's command asks the NodeManager for yarn.io/gpu as it
// starts; the GPU driver of the same container takes that answer instead
// of asking again, and hands out what YARN assigned.
func TestPrefetchTakenByTheDriver(t *testing.T) {
	resetPrefetch(t)
	h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
	_, err := h.nm.Assign("x", 1)
	require.NoError(t, err)
	_, err = h.nm.Assign(h.container, 1) // index 1, minor 0
	require.NoError(t, err)
	PrefetchNodeManager(h.prefetchEnv())
	PrefetchNodeManager(h.prefetchEnv()) // only the first sends
	infos, _, err := h.discover(h.container, 1)
	require.NoError(t, err)
	require.Equal(t, []string{fakeUUID(1)}, uuids(infos))
	require.EqualValues(t, 1, h.nm.Requests.Load(), "one request: the prefetched one, taken")
	// A later Discover asks again (the prefetch is taken once).
	_, _, err = h.discover(h.container, 1)
	require.Error(t, err, "its GPU is held by the first")
	require.EqualValues(t, 2, h.nm.Requests.Load())
}

// A driver asking something else (nvidia.com/gpu) asks for itself; under
// yarn.http.policy HTTPS_ONLY nothing is prefetched (the driver asks over
// HTTPS, through its helper).
func TestPrefetchNotTaken(t *testing.T) {
	t.Run("another resource", func(t *testing.T) {
		resetPrefetch(t)
		h := newYarnHost(t, YarnNvidiaGPU, drivertest.ShapeDevice)
		_, err := h.nm.Assign(h.container, 1)
		require.NoError(t, err)
		PrefetchNodeManager(h.prefetchEnv())
		infos, _, err := h.discover(h.container, 1)
		require.NoError(t, err)
		require.Len(t, infos, 1)
		require.EqualValues(t, 2, h.nm.Requests.Load(), "the prefetch (yarn.io/gpu) and the driver's own")
	})
	t.Run("HTTPS_ONLY", func(t *testing.T) {
		resetPrefetch(t)
		h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
		h.env["HADOOP_CONF_DIR"] = writeYarnSite(t, map[string]string{"yarn.http.policy": "HTTPS_ONLY"})
		PrefetchNodeManager(h.prefetchEnv())
		prefetched.Lock()
		sent := prefetched.sent
		prefetched.Unlock()
		require.Nil(t, sent)
		require.Zero(t, h.nm.Requests.Load())
	})
	t.Run("not in YARN", func(t *testing.T) {
		resetPrefetch(t)
		PrefetchNodeManager(func(string) string { return "" })
		prefetched.Lock()
		sent := prefetched.sent
		prefetched.Unlock()
		require.Nil(t, sent)
	})
}

// A taken prefetch is bounded by the driver's own timeout: a NodeManager
// that never answers fails the discovery instead of holding the launch.
func TestPrefetchTakenKeepsTheDriversTimeout(t *testing.T) {
	resetPrefetch(t)
	old := prefetchTimeout
	prefetchTimeout = time.Hour // the driver's 300 ms must end it
	t.Cleanup(func() { prefetchTimeout = old })
	host, port := silentListener(t)
	t.Setenv("XRES_FAKE_GPUS", "2")
	env := map[string]string{EnvContainerID: "c1", EnvNMHost: host, EnvNMHTTPPort: port, "HADOOP_CONF_DIR": "", "USER": "alice", EnvNvidiaVisibleDevices: ""}
	getenv := fakeEnv(t, env)
	PrefetchNodeManager(getenv)
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamSource: "nvidia-smi", ParamCoordFile: t.TempDir() + "/s"},
		Getenv: getenv, YarnKey: YarnGPU, Timeout: 300 * time.Millisecond}, deps{nvml: unavailableNVML, gpusDir: t.TempDir()})
	require.NoError(t, err)
	within(t, func() { _, err = d.Discover(ctxT(t), 1) })
	require.ErrorIs(t, err, driver.ErrAssignmentUnknown)
	prefetched.Lock()
	taken := prefetched.taken
	prefetched.Unlock()
	require.True(t, taken, "the driver took the prefetched request")
}

// A host name is resolved and connected to beside the launch; the driver
// still takes what was sent. A prefetch whose sending failed (the
// NodeManager down) is not taken: the driver asks for itself, with its own
// timeout.
func TestPrefetchByNameAndFailed(t *testing.T) {
	t.Run("host name", func(t *testing.T) {
		resetPrefetch(t)
		h := newYarnHost(t, YarnGPU, drivertest.ShapeNatural)
		h.env[EnvNMHost] = "localhost"
		_, err := h.nm.Assign(h.container, 1) // index 0, minor 4
		require.NoError(t, err)
		PrefetchNodeManager(h.prefetchEnv())
		infos, _, err := h.discover(h.container, 1)
		require.NoError(t, err)
		require.Equal(t, []string{fakeUUID(0)}, uuids(infos))
		require.EqualValues(t, 1, h.nm.Requests.Load(), "the prefetched request, taken")
	})
	t.Run("sending failed", func(t *testing.T) {
		resetPrefetch(t)
		down, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		host, port, _ := net.SplitHostPort(down.Addr().String())
		require.NoError(t, down.Close())
		getenv := fakeEnv(t, map[string]string{EnvContainerID: "c1", EnvNMHost: host, EnvNMHTTPPort: port, "HADOOP_CONF_DIR": "", "USER": "alice"})
		PrefetchNodeManager(getenv)
		c := &nmClient{host: host, port: port, user: "alice", getenv: getenv}
		require.Nil(t, c.takePrefetched(ctxT(t), YarnGPU))
	})
}

// The launcher reads the helper's exit codes without linking the helper
// (crypto/tls, Kerberos): its copies must be the helper's.
func TestHelperExitCodesAgree(t *testing.T) {
	require.Equal(t, nmhelper.ExitNoCredentials, helperNoCredentials)
	require.Equal(t, nmhelper.ExitNotTLS, helperNotTLS)
	require.Equal(t, nmhelper.ExitUnknownCA, helperUnknownCA)
}
