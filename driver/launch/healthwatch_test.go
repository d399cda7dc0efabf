package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// Where YARN's NodeManager assigns the GPUs, the launcher cannot pick
// another: a quarantined GPU YARN assigns is refused at once, exit 216
// (gpu-failed: the AM replaces the worker without counting it, and keeps
// the node), with the reason; a healthy assignment beside it is taken.
func TestYarnAssignedQuarantinedGPUIsRefused(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "2")
	t.Setenv("XRES_FAKE_GPU_MINORS", "")
	nm := drivertest.NewNodeManager("yarn.io/gpu", []drivertest.NMGPU{{Index: 0, Minor: 0}, {Index: 1, Minor: 1}})
	t.Cleanup(nm.Close)
	host, port := nm.HostPort()
	dir := t.TempDir()
	state := filepath.Join(dir, "coord", "state")
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	require.NoError(t, err)
	reg, err := builtin.NewRegistry(func(string) string { return "" })
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := coord.OpenState(state, nil)
	require.NoError(t, err)
	require.NoError(t, st.QuarantineDevice(ctx, "gpu", fakeUUIDOf(0), coord.Quarantine{Reason: "Xid 94 (contained ECC error)", Event: "xid", XID: 94}))

	launch := func(container string) (*Reservation, error) {
		assigned, err := nm.Assign(container, 1)
		require.NoError(t, err)
		t.Logf("YARN assigned %v to %s", assigned, container)
		env := map[string]string{"CONTAINER_ID": container, "NM_HOST": host, "NM_HTTP_PORT": port, "USER": "alice",
			"PATH": fakebin + ":" + os.Getenv("PATH"), "TMPDIR": dir}
		l := &Launcher{Registry: reg, Getenv: func(k string) string { return env[k] }}
		spec := resources.Spec{Name: "gpu", Amount: 1, Factory: "xres.gpu", YarnKey: "yarn.io/gpu",
			Params: map[string]string{"discovery.source": "nvidia-smi", "coordination.file": state}}
		return l.Acquire(ctx, []resources.Spec{spec})
	}
	// The stub NodeManager assigns the lowest free GPU first: GPU 0.
	_, err = launch("container_1700000000000_0001_01_000001")
	require.Error(t, err)
	require.ErrorIs(t, err, driver.ErrAssignedQuarantined)
	require.Equal(t, ExitGPUFailed, ExitCode(err))
	require.Equal(t, "gpu-failed", ExitCodeName(ExitCode(err)))
	require.ErrorContains(t, err, "Xid 94 (contained ECC error)")
	require.ErrorContains(t, err, fakeUUIDOf(0))

	// YARN's next assignment (GPU 0 is still the container's until YARN
	// frees it): GPU 1, taken.
	r, err := launch("container_1700000000000_0001_01_000002")
	require.NoError(t, err)
	u, _ := r.Grants[0].Devices[0].Property(driver.InfoVisibleID)
	require.Equal(t, fakeUUIDOf(1), u)
	require.NoError(t, r.Release(ctx))
}

// gpuWatchHost is a fake GPU host whose launcher finds the fake xres-nvml
// on PATH, its events read from a file the test appends to.
type gpuWatchHost struct {
	*fakeGPUHost
	bin, events, started, end string
}

func newGPUWatchHost(t *testing.T, params string) *gpuWatchHost {
	t.Helper()
	h := &gpuWatchHost{fakeGPUHost: newFakeGPUHost(t, 2, 1), bin: launcherBinary(t)}
	helperDir := t.TempDir()
	fake, err := filepath.Abs("../gpu/testdata/fake-xres-nvml")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(fake, filepath.Join(helperDir, "xres-nvml")))
	h.events = filepath.Join(h.dir, "events")
	h.started, h.end = filepath.Join(h.dir, "started"), filepath.Join(h.dir, "end")
	for i, kv := range h.env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			h.env[i] = "PATH=" + helperDir + ":" + kv[5:]
		}
	}
	h.env = append(h.env, "XRES_FAKE_NVML_EVENTS="+h.events, "XRES_FAKE_GPUS=2")
	if params != "" {
		f, err := os.OpenFile(h.conf, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(params)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	return h
}

// start runs the launcher with a worker that says it started, then waits
// until the end file exists (or a signal ends it).
func (h *gpuWatchHost) start(t *testing.T, flags ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	args := append(append([]string{"--conf", h.conf}, flags...), "--", "sh", "-c",
		`echo "$XRES_GPU_HEALTH_FILE $CUDA_VISIBLE_DEVICES" > "$0"; while [ ! -e "$1" ]; do sleep 0.05; done`, h.started, h.end)
	cmd := h.command(h.bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The worker's line whole (the file exists, empty, before echo writes it).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(h.started); strings.HasSuffix(string(b), "\n") {
			return cmd, stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start within 60 s\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *gpuWatchHost) inject(t *testing.T, uuid string, index int, xid int) {
	t.Helper()
	f, err := os.OpenFile(h.events, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, `{"type":"xid","uuid":"%s","index":%d,"minor":%d,"xid":%d,"time":"%s"}`+"\n", uuid, index, index, xid, time.Now().UTC().Format(time.RFC3339Nano))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// quarantined waits until the host state quarantines uuid (or the launcher
// has exited, when it says what it has).
func (h *gpuWatchHost) quarantines(t *testing.T) map[string]string {
	t.Helper()
	st, err := coord.OpenState(h.state, nil)
	require.NoError(t, err)
	qs, err := st.Quarantines()
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range qs {
		out[e.Key] = e.Quarantine.Reason
	}
	return out
}

func (h *gpuWatchHost) waitQuarantined(t *testing.T, uuid string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, ok := h.quarantines(t)[uuid]; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not quarantined within 60 s", uuid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// health.action replace (the default): an application Xid on the worker's
// GPU changes nothing; a critical one on another worker's GPU quarantines
// that GPU only; a critical one on the worker's GPU quarantines it, ends
// the worker and the launcher exits 216 with the reason; the next launcher
// gets the other GPU.
func TestHealthWatchReplacesWorker(t *testing.T) {
	h := newGPUWatchHost(t, "")
	cmd, stderr := h.start(t)
	gpu0, gpu1 := fakeUUIDOf(0), fakeUUIDOf(1)
	h.inject(t, gpu0, 0, 13)
	h.inject(t, gpu1, 1, 48)
	h.waitQuarantined(t, gpu1)
	require.Equal(t, map[string]string{gpu1: "Xid 48 (double-bit ECC error) on " + gpu1 + " (index 1)"}, h.quarantines(t),
		"Xid 13 (the application's) came first and quarantined nothing")
	require.Nil(t, cmd.ProcessState, "the worker runs on")

	h.inject(t, gpu0, 0, 94)
	err := cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, stderr)
	require.Equal(t, ExitGPUFailed, exit.ExitCode(), "%s", stderr)
	require.Contains(t, stderr.String(), "gpu-failed error (exit 216): a GPU of this worker failed while it ran (Xid 94 (contained ECC error) on "+gpu0)
	require.Contains(t, h.quarantines(t), gpu0)
	_, err = os.Stat(h.end)
	require.True(t, os.IsNotExist(err), "the worker was stopped, it did not end by itself")

	rep := h.probe(t, h.bin)
	require.Len(t, rep.Resources[0].Coordination.Quarantined, 2)
	require.Empty(t, rep.Resources[0].Devices, "both GPUs quarantined: none to hand out")
	require.NotZero(t, rep.Resources[0].ExitCode)
}

// health.action notify: the worker keeps running and is told in its
// health file; the GPU is quarantined all the same.
func TestHealthWatchNotifies(t *testing.T) {
	h := newGPUWatchHost(t, "external-resource.gpu.param.health.action: notify\n")
	cmd, stderr := h.start(t)
	said, err := os.ReadFile(h.started)
	require.NoError(t, err)
	file := strings.Fields(string(said))[0]
	require.Equal(t, filepath.Join(h.dir, GPUHealthFileName), file, "XRES_GPU_HEALTH_FILE")
	h.inject(t, fakeUUIDOf(0), 0, 79)
	waitForFile(t, file, 60*time.Second)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), "action=notify: Xid 79 (GPU has fallen off the bus)")
	h.waitQuarantined(t, fakeUUIDOf(0))
	require.Nil(t, cmd.ProcessState, "the worker runs on")
	require.NoError(t, os.WriteFile(h.end, nil, 0o644))
	require.NoError(t, cmd.Wait(), "%s", stderr)
	require.Contains(t, stderr.String(), "health.action notify")
}

// A watch that breaks while the worker runs is reported, not ignored.
func TestHealthWatchLostIsReported(t *testing.T) {
	h := newGPUWatchHost(t, "")
	// Debug: on a failure the log says whether the watch had started
	// (seen once in CI under load, not reproduced since).
	cmd, stderr := h.start(t, "--log-level", "debug")
	f, err := os.OpenFile(h.events, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("Segmentation fault\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "GPU health watch lost while the worker runs") {
		if time.Now().After(deadline) {
			events, _ := os.ReadFile(h.events)
			t.Fatalf("no report of the lost watch:\n%s\nevent source %s:\n%s", stderr.String(), h.events, events)
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(h.end, nil, 0o644))
	require.NoError(t, cmd.Wait())
}

// The launcher tells its application master of a critical event on its
// worker's GPU (a health report: the event, its Xid and meaning, the
// action), so that am status, api/status and the tracking page show it;
// an event on another worker's GPU is not this worker's to report.
func TestHealthWatchReportsToAM(t *testing.T) {
	var mu sync.Mutex
	var health []contract.DeviceReport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep contract.DeviceReport
		if err := json.NewDecoder(r.Body).Decode(&rep); err == nil && len(rep.Health) > 0 {
			mu.Lock()
			health = append(health, rep)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	h := newGPUWatchHost(t, "")
	h.env = append(h.env, contract.EnvReportURL+"="+srv.URL+contract.ReportPath, EnvContainerID+"=container_1_0001_01_000002")
	cmd, stderr := h.start(t)
	gpu0, gpu1 := fakeUUIDOf(0), fakeUUIDOf(1)
	h.inject(t, gpu1, 1, 48)
	h.waitQuarantined(t, gpu1)
	h.inject(t, gpu0, 0, 79)
	err := cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, stderr)
	require.Equal(t, ExitGPUFailed, exit.ExitCode(), "%s", stderr)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, health, 1, "one report, of the worker's GPU: %+v", health)
	rep := health[0]
	require.Equal(t, "container_1_0001_01_000002", rep.Container)
	require.Empty(t, rep.Resources)
	require.NotZero(t, rep.Seq)
	require.Len(t, rep.Health, 1)
	e := rep.Health[0]
	require.False(t, e.Time.IsZero())
	e.Time = time.Time{}
	require.Equal(t, contract.HealthEvent{Resource: "gpu", Device: gpu0, Event: "xid", XID: 79,
		Reason: "Xid 79 (GPU has fallen off the bus) on " + gpu0 + " (index 0)", Action: "replace"}, e)
}

// --per-device launches are watched too: a critical event on one worker's
// GPU quarantines it and, with replace, stops every worker of the launch
// (the container is replaced whole, as YARN granted it whole); the
// launcher exits 216 with the reason. Each worker is told the health file.
func TestHealthWatchPerDevice(t *testing.T) {
	h := newGPUWatchHost(t, "")
	conf, err := os.ReadFile(h.conf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(h.conf, []byte(strings.Replace(string(conf), "amount: 1\n", "amount: 2\n", 1)), 0o644))
	cmd := h.command(h.bin, "--conf", h.conf, "--per-device", "--pin-cpus=false", "--", "sh", "-c",
		`echo "$XRES_DEVICE_RANK $XRES_GPU_HEALTH_FILE" > "$0.$XRES_DEVICE_RANK"; while [ ! -e "$1" ]; do sleep 0.05; done`, h.started, h.end)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for rank := range 2 {
		want := strconv.Itoa(rank) + " " + filepath.Join(h.dir, GPUHealthFileName) + "\n"
		deadline := time.Now().Add(60 * time.Second)
		for {
			b, _ := os.ReadFile(h.started + "." + strconv.Itoa(rank))
			if string(b) == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker %d: said %q, want %q\n%s", rank, b, want, stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	h.inject(t, fakeUUIDOf(1), 1, 48)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, stderr)
	require.Equal(t, ExitGPUFailed, exit.ExitCode(), "%s", stderr)
	require.Contains(t, stderr.String(), "gpu-failed error (exit 216): a GPU of this worker failed while it ran (Xid 48 (double-bit ECC error) on "+fakeUUIDOf(1))
	require.Contains(t, h.quarantines(t), fakeUUIDOf(1))
	require.NotContains(t, h.quarantines(t), fakeUUIDOf(0))
	_, err = os.Stat(h.end)
	require.True(t, os.IsNotExist(err), "the workers were stopped, they did not end by themselves")
}
