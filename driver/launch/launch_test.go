package launch

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/amd"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedSpecs is a Loader returning specs, for tests that are not about the
// configuration file.
func fixedSpecs(specs ...resources.Spec) Loader {
	return func(Config) (Loaded, error) { return Loaded{Specs: specs}, nil }
}

type runResult struct {
	code   int
	stdout string
	stderr string
}

// runMain runs Main in-process with the fake host's registry.
func runMain(t *testing.T, h *fakeHost, load Loader, sigs <-chan os.Signal, args ...string) runResult {
	t.Helper()
	return runMainEnv(t, h, load, sigs, nil, args...)
}

// runMainEnv is runMain with vars seen through Env.Getenv (besides TMPDIR).
func runMainEnv(t *testing.T, h *fakeHost, load Loader, sigs <-chan os.Signal, vars map[string]string, args ...string) runResult {
	t.Helper()
	var stdout, stderr syncBuffer
	getenv := map[string]string{"TMPDIR": t.TempDir()}
	for k, v := range vars {
		getenv[k] = v
	}
	env := Env{
		Getenv:   func(k string) string { return getenv[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH"), "CUDA_VISIBLE_DEVICES=9", "KEEP=me"},
		Dir:      t.TempDir(),
		Stdout:   &stdout,
		Stderr:   &stderr,
		Signals:  sigs,
		Registry: registryWith(h),
		Load:     load,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := Main(ctx, args, env)
	return runResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func gpuSpec(amount int64) resources.Spec {
	return resources.Spec{Name: "gpu", Amount: amount, YarnKey: "yarn.io/gpu", Factory: "fake",
		Params: map[string]string{ParamVendor: "nvidia"}}
}

func fpgaSpec(amount int64) resources.Spec {
	return resources.Spec{Name: "fpga", Amount: amount, Factory: "com.example.FakeFactory"}
}

// TestRunWorkerSeesEnvAndInfoFile checks what a worker is told: the
// environment and the info file, against a golden file.
func TestRunWorkerSeesEnvAndInfoFile(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 4
	h.devices["fpga"] = 2
	h.devices["my.fancy-dev"] = 1
	h.props["gpu"] = []string{"uuid", "pci.bus-id"}
	out := t.TempDir()
	script := `env | grep -E '^(XRES_|CUDA_|ROCR_|HIP_|KEEP=)' | sed "s#$XRES_RESOURCES_FILE#<INFO_FILE>#" | sort > "$1/env"; cat "$XRES_RESOURCES_FILE" > "$1/info.json"`
	r := runMain(t, h, fixedSpecs(gpuSpec(2), fpgaSpec(1),
		resources.Spec{Name: "my.fancy-dev", Amount: 1, Factory: "fake"},
		resources.Spec{Name: "nodriver", Amount: 1}),
		nil, "--", "sh", "-c", script, "worker", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "no driver factory configured")

	got, err := os.ReadFile(filepath.Join(out, "env"))
	require.NoError(t, err)
	golden(t, "run-env.golden", got)
	info, err := os.ReadFile(filepath.Join(out, "info.json"))
	require.NoError(t, err)
	golden(t, "run-info.golden.json", info)

	// The temporary info file is gone and every device is free again.
	require.Empty(t, h.Held("gpu"))
	require.Empty(t, h.Held("fpga"))
	require.Equal(t, 1, h.Releases("gpu"))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), string(got))
}

// TestRunExitCodes checks that the worker's exit code is passed on and the
// launcher's own failures get their reserved codes, with devices released
// in every case.
func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		specs   []resources.Spec
		setup   func(h *fakeHost)
		args    []string
		code    int
		stderr  string // substring expected on stderr
		workerR bool   // the worker must have run
	}{
		{name: "worker ok", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--", "true"}, code: 0},
		{name: "worker code passes through", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--", "sh", "-c", "exit 3"}, code: 3},
		{name: "worker code 143 passes through", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--", "sh", "-c", "exit 143"}, code: 143},
		{name: "worker killed by signal is 128+sig", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--", "sh", "-c", "kill -9 $$"}, code: 137},
		{name: "no resources configured still runs", args: []string{"sh", "-c", "exit 4"}, code: 4},
		{name: "no worker command", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--"}, code: ExitUsage, stderr: "no worker command"},
		{name: "unknown flag", args: []string{"--bogus", "--", "true"}, code: ExitUsage, stderr: "bogus"},
		{name: "bad log level", args: []string{"--log-level", "loud", "--", "true"}, code: ExitUsage, stderr: "XRES_LOG_LEVEL"},
		{name: "worker not found", specs: []resources.Spec{gpuSpec(1)}, args: []string{"--", "/nonexistent/worker"}, code: ExitWorkerStart, stderr: "/nonexistent/worker"},
		{
			name:   "unknown factory is a config error naming the key",
			specs:  []resources.Spec{fpgaSpec(1), {Name: "gpu", Amount: 1, Factory: "org.example.Nope"}},
			args:   []string{"--", "true"},
			code:   ExitConfig,
			stderr: "external-resource.gpu.driver-factory.class",
		},
		{
			name:   "factory rejecting its params is a config error",
			specs:  []resources.Spec{{Name: "gpu", Amount: 1, Factory: "fake", Params: map[string]string{"reject": "bad"}}},
			args:   []string{"--", "true"},
			code:   ExitConfig,
			stderr: "param reject",
		},
		{
			name:   "no devices left is a discovery failure",
			specs:  []resources.Spec{gpuSpec(5)},
			args:   []string{"--", "true"},
			code:   ExitDiscovery,
			stderr: "not enough devices",
		},
		{
			name:   "later resource failing releases the earlier one",
			specs:  []resources.Spec{gpuSpec(2), fpgaSpec(1)},
			setup:  func(h *fakeHost) { h.fail["fpga"] = errBoom },
			args:   []string{"--", "true"},
			code:   ExitDiscovery,
			stderr: "fell off the bus",
		},
		{
			name:   "--resources names an unknown resource",
			specs:  []resources.Spec{gpuSpec(1)},
			args:   []string{"--resources", "gpu,tpu", "--", "true"},
			code:   ExitConfig,
			stderr: `"tpu" is not a configured resource`,
		},
		{
			name:  "--resources limits discovery",
			specs: []resources.Spec{gpuSpec(1), fpgaSpec(9)}, // fpga would fail
			args:  []string{"--resources", "gpu", "--", "true"},
			code:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = 4
			h.devices["fpga"] = 2
			if tc.setup != nil {
				tc.setup(h)
			}
			r := runMain(t, h, fixedSpecs(tc.specs...), nil, tc.args...)
			require.Equal(t, tc.code, r.code, "stderr:\n%s", r.stderr)
			if tc.stderr != "" {
				require.Contains(t, r.stderr, tc.stderr)
			}
			require.Empty(t, h.Held("gpu"), "gpu devices left held")
			require.Empty(t, h.Held("fpga"), "fpga devices left held")
		})
	}
}

// TestRunForwardsSignals: a worker that traps SIGTERM and exits 7 makes
// the launcher exit 7; the devices are released afterwards.
func TestRunForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			if signal.Ignored(sig) {
				// Started under nohup (or by a daemon that ignores it): the
				// worker inherits the ignored signal, and a shell cannot trap
				// a signal ignored at its start.
				t.Skipf("%v is ignored by this test process, so the worker could not trap it", sig)
			}
			h := newFakeHost()
			h.devices["gpu"] = 2
			ready := filepath.Join(t.TempDir(), "ready")
			sigs := make(chan os.Signal, 1)
			done := make(chan runResult, 1)
			name := strings.TrimPrefix(strings.ToUpper(sigName(sig)), "SIG")
			script := `trap 'exit 7' ` + name + `; touch "$1"; while :; do sleep 0.02; done`
			go func() {
				done <- runMain(t, h, fixedSpecs(gpuSpec(1)), sigs, "--", "sh", "-c", script, "worker", ready)
			}()
			waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
			require.Equal(t, []string{"0"}, h.Held("gpu"), "held while the worker runs")
			sigs <- sig
			select {
			case r := <-done:
				require.Equal(t, 7, r.code, r.stderr)
				require.Contains(t, r.stderr, "forwarding signal")
			case <-time.After(10 * time.Second):
				t.Fatal("launcher did not end after the signal")
			}
			require.Empty(t, h.Held("gpu"))
		})
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGQUIT:
		return "QUIT"
	}
	return s.String()
}

// TestRunSignalBeforeWorker: SIGTERM during discovery stops the launch
// with 143, never starts the worker and releases what was reserved.
func TestRunSignalBeforeWorker(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 2
	h.devices["fpga"] = 1
	h.block["fpga"] = true
	marker := filepath.Join(t.TempDir(), "ran")
	sigs := make(chan os.Signal, 1)
	done := make(chan runResult, 1)
	go func() {
		done <- runMain(t, h, fixedSpecs(gpuSpec(1), fpgaSpec(1)), sigs, "--", "touch", marker)
	}()
	require.Equal(t, "gpu", <-h.started)
	require.Equal(t, "fpga", <-h.started)
	sigs <- syscall.SIGTERM
	r := <-done
	require.Equal(t, 143, r.code, r.stderr)
	require.NoFileExists(t, marker)
	require.Empty(t, h.Held("gpu"))
	require.Equal(t, 1, h.Releases("gpu"))
	require.Equal(t, 1, h.Releases("fpga"))
}

// TestRunWorkerNotStartedReleases: a worker that cannot start still has
// its devices released, and the temporary info file is removed.
func TestRunInfoFileLocation(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 1
	explicit := filepath.Join(t.TempDir(), "sub-info.json")
	r := runMain(t, h, fixedSpecs(gpuSpec(1)), nil, "--info-file", explicit, "--",
		"sh", "-c", `test "$XRES_RESOURCES_FILE" = "$1" && test -s "$1"`, "w", explicit)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, explicit, "an explicit info file stays")

	tmp := t.TempDir()
	var stderr syncBuffer
	code := Main(context.Background(), []string{"--", "sh", "-c", `echo "$XRES_RESOURCES_FILE" > "$0"`, filepath.Join(tmp, "path")}, Env{
		Getenv:   func(k string) string { return map[string]string{"TMPDIR": tmp}[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(1)),
	})
	require.Equal(t, 0, code, stderr.String())
	p, err := os.ReadFile(filepath.Join(tmp, "path"))
	require.NoError(t, err)
	path := strings.TrimSpace(string(p))
	require.True(t, strings.HasPrefix(path, tmp+string(os.PathSeparator)+"xres-resources-"), path)
	require.NoFileExists(t, path, "the temporary info file is removed after the worker")

	// In a YARN container the file is external-resources.json in the
	// working directory.
	dir := t.TempDir()
	code = Main(context.Background(), []string{"--", "sh", "-c", `test "$XRES_RESOURCES_FILE" = "$PWD/external-resources.json"`}, Env{
		Getenv:   func(k string) string { return map[string]string{"CONTAINER_ID": "container_1_0001_01_000002"}[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Dir:      dir,
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(1)),
	})
	require.Equal(t, 0, code, stderr.String())
	require.FileExists(t, filepath.Join(dir, InfoFileName))
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestResourceEnv(t *testing.T) {
	require.Equal(t, "XRES_RESOURCE_GPU_PCI_BUS_ID", ResourceEnv("gpu", "pci.bus-id"))
}

func TestVisibleDevicesUseMIGUUID(t *testing.T) {
	env := grantEnv([]Grant{{
		Spec:   resources.Spec{Name: "gpu"},
		Vendor: gpu.NewFactory().(driver.VendorReporter),
		Devices: []resources.Info{
			resources.Properties{"index": "0", "uuid": "GPU-aaaa"},
			resources.Properties{"index": "1", "uuid": "MIG-bbbb"},
			resources.Properties{"uuid": "GPU-cccc"},
		},
	}}, "")
	require.Equal(t, "0,MIG-bbbb,GPU-cccc", env["CUDA_VISIBLE_DEVICES"])
	require.Equal(t, "0,1,", env["XRES_RESOURCE_GPU_INDEX"])
	require.NotContains(t, env, EnvResourcesFile)
}

// TestOneVendorsVariablesNameAllItsDevices: the launcher asks a vendor's
// driver once for all the devices of that vendor, whatever resource they
// were granted for, and sets exactly what the driver returns: two AMD
// resources give one ROCR_VISIBLE_DEVICES of both GPUs and HIP numbers
// 0…n-1 over them (HIP renumbers what ROCr leaves visible); two NVIDIA
// resources one CUDA_VISIBLE_DEVICES, in grant order.
func TestOneVendorsVariablesNameAllItsDevices(t *testing.T) {
	amdGPU := amd.NewFactory().(driver.VendorReporter)
	nv := gpu.NewFactory().(driver.VendorReporter)
	env := grantEnv([]Grant{
		{Spec: resources.Spec{Name: "a"}, Vendor: amdGPU, Devices: []resources.Info{resources.Properties{"index": "0", "uuid": "GPU-aa"}}},
		{Spec: resources.Spec{Name: "g"}, Vendor: nv, Devices: []resources.Info{resources.Properties{"index": "3"}}},
		{Spec: resources.Spec{Name: "b"}, Vendor: amdGPU, Devices: []resources.Info{resources.Properties{"index": "1", "uuid": "GPU-bb"}}},
		{Spec: resources.Spec{Name: "h"}, Vendor: nv, Devices: []resources.Info{resources.Properties{"index": "1"}}},
		{Spec: resources.Spec{Name: "f"}, Devices: []resources.Info{resources.Properties{"index": "7"}}},
	}, "")
	want := map[string]string{}
	for k, v := range amdGPU.Environment([]resources.Info{resources.Properties{"index": "0", "uuid": "GPU-aa"}, resources.Properties{"index": "1", "uuid": "GPU-bb"}}) {
		want[k] = v
	}
	for k, v := range nv.Environment([]resources.Info{resources.Properties{"index": "3"}, resources.Properties{"index": "1"}}) {
		want[k] = v
	}
	require.Len(t, want, 4, "each driver words its own variables")
	require.Equal(t, "GPU-aa,GPU-bb", env["ROCR_VISIBLE_DEVICES"])
	require.Equal(t, "0,1", env["HIP_VISIBLE_DEVICES"])
	require.Equal(t, "3,1", env["CUDA_VISIBLE_DEVICES"])
	for k, v := range want {
		require.Equal(t, v, env[k], k)
	}
	for k := range env {
		if !strings.HasPrefix(k, "XRES_") {
			require.Contains(t, want, k, "the launcher sets no vendor variable of its own")
		}
	}
}

func TestExitCodesDistinct(t *testing.T) {
	codes := []int{ExitUsage, ExitConfig, ExitDiscovery, ExitWorkerStart, ExitInternal}
	seen := map[int]bool{}
	for _, c := range codes {
		require.False(t, seen[c], "duplicate exit code %d", c)
		seen[c] = true
		require.NotEqual(t, "worker", ExitCodeName(c))
		// Clear of shell (126, 127) and signal (128+1 … 128+64) codes.
		require.True(t, c > 128+64 && c < 256, "code %d collides with common codes", c)
	}
}

func TestNormalizeArgsDynamic(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "flink style and separate", in: []string{"-Da=b", "-D", "c=d", "--conf", "x", "--", "-Dworker=flag"},
			want: []string{"-D", "a=b", "-D", "c=d", "--conf", "x", "--", "-Dworker=flag"}},
		{name: "worker without --", in: []string{"--strict", "-Da=b", "java", "-Dx=y", "Main"},
			want: []string{"--strict", "-D", "a=b", "java", "-Dx=y", "Main"}},
		{name: "flag value that looks like -D", in: []string{"--info-file", "-Dodd", "-Da=b", "true"},
			want: []string{"--info-file", "-Dodd", "-D", "a=b", "true"}},
		{name: "flag=value", in: []string{"--conf=x", "-Da=b"}, want: []string{"--conf=x", "-D", "a=b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			var c common
			c.register(fs)
			fs.String("info-file", "", "")
			require.Equal(t, tc.want, normalizeArgs(fs, tc.in))
		})
	}
}

// TestRunWorkerArgsUntouched: without "--", the worker's own -D arguments
// reach it unchanged.
func TestRunWorkerArgsUntouched(t *testing.T) {
	h := newFakeHost()
	out := filepath.Join(t.TempDir(), "args")
	r := runMain(t, h, fixedSpecs(), nil, "-Dsome.key=1", "sh", "-c", `echo "$@" > "$0"`, out, "-Dx=y", "--", "z")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "-Dx=y -- z\n", string(b))
}

// The usage text's exit codes are resources.LauncherExits's, each with
// its name or meaning.
func TestUsageListsEveryExitCode(t *testing.T) {
	_, list, ok := strings.Cut(usageText, "exit codes:")
	require.True(t, ok)
	list = strings.Join(strings.Fields(list), " ")
	for _, e := range resources.LauncherExits[1:] {
		word := strings.SplitN(e.Name, "-", 2)[0]
		require.Contains(t, list, fmt.Sprintf("%d %s", e.Code, word), "exit %d (%s)", e.Code, e.Name)
	}
}

// A launcher killed before it removed its temporary info file leaves it
// in $TMPDIR; a later launch removes it (beside its launch, which does not
// wait for the folder to be read), and leaves a running launcher's.
func TestLaunchRemovesKilledLaunchersInfoFile(t *testing.T) {
	tmp := t.TempDir()
	ns, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	gone := exec.Command("true")
	require.NoError(t, gone.Run()) // its pid is no longer running
	stale := filepath.Join(tmp, fmt.Sprintf("xres-resources-%d-%s-1.json", gone.Process.Pid, ns))
	live := filepath.Join(tmp, fmt.Sprintf("xres-resources-%d-%s-2.json", os.Getpid(), ns))
	for _, f := range []string{stale, live} {
		require.NoError(t, os.WriteFile(f, []byte("{}"), 0o600))
	}
	h := newFakeHost()
	h.devices["gpu"] = 1
	var stderr syncBuffer
	code := Main(context.Background(), []string{"--", "true"}, Env{
		Getenv:   func(k string) string { return map[string]string{"TMPDIR": tmp}[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(1)),
	})
	require.Equal(t, 0, code, stderr.String())
	waitFor(t, func() bool { _, err := os.Stat(stale); return os.IsNotExist(err) })
	require.FileExists(t, live, "a running launcher's file stays")
}

// TestWorkerNotFoundReservesNothing: a worker command that is not there
// fails the launch before any device is reserved (nothing to release).
func TestWorkerNotFoundReservesNothing(t *testing.T) {
	for _, args := range [][]string{{"--", "no-such-worker-in-path"}, {"--per-device", "--", "no-such-worker-in-path"}} {
		h := newFakeHost()
		h.devices["gpu"] = 4
		r := runMain(t, h, fixedSpecs(gpuSpec(1)), nil, args...)
		require.Equal(t, ExitWorkerStart, r.code, "%v stderr:\n%s", args, r.stderr)
		require.Contains(t, r.stderr, "no-such-worker-in-path")
		require.Zero(t, h.Releases("gpu"), "%v: a device was reserved for a worker that cannot start", args)
	}
}
