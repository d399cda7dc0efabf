package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func indices(infos []resources.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i], _ = in.Property("index")
	}
	return out
}

// unavailableNVML stands for a host without the NVIDIA library.
var unavailableNVML = drivertest.New(drivertest.FailWith(fmt.Errorf("%w: test host", ErrNVMLUnavailable)))

// fakeEnv is the environment of a host whose nvidia-smi is the fake one.
func fakeEnv(t *testing.T, extra map[string]string) func(string) string {
	t.Helper()
	fakebin, err := filepath.Abs(filepath.Join("testdata", "fakebin"))
	require.NoError(t, err)
	return func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		if k == "PATH" {
			return fakebin + ":" + os.Getenv("PATH")
		}
		return os.Getenv(k)
	}
}

func TestScriptMode(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		body   string
		args   string
		amount int64
		want   []string
		errIs  error
		errHas []string
	}{
		{name: "flink protocol: amount first, args after, no null",
			body: `[ "$#" = 3 ] && [ "$1" = 2 ] && [ "$2" = --a ] && [ "$3" = b ] || { echo "args: $*"; exit 3; }
echo "0, 1"`,
			args: "  --a\tb ", amount: 2, want: []string{"0", "1"}},
		{name: "no args: no literal null",
			body: `[ "$#" = 1 ] || { echo "args: $*"; exit 3; }; echo 5`, amount: 1, want: []string{"5"}},
		// Issue 41: Flink passes every index on; the worker would get 3
		// GPUs where YARN granted 2. The first amount are kept.
		{name: "more than requested: the first amount only",
			body: "echo 2,0,1,3", amount: 2, want: []string{"2", "0"}},
		// Issue 41: what is not a GPU index never reaches
		// CUDA_VISIBLE_DEVICES; the error names the script and the line.
		{name: "letters", body: "echo a,b", amount: 2, errIs: ErrScriptOutput,
			errHas: []string{`device "a" is not a GPU index`, `stdout: "a,b"`}},
		{name: "hexadecimal", body: "echo 0x1,0x2", amount: 2, errIs: ErrScriptOutput,
			errHas: []string{`device "0x1" is not a GPU index`, `stdout: "0x1,0x2"`}},
		{name: "decimal fraction", body: "echo 0.0,1.0", amount: 2, errIs: ErrScriptOutput,
			errHas: []string{`device "0.0" is not a GPU index`}},
		{name: "20 digits", body: "echo 12345678901234567890", amount: 1, errIs: ErrScriptOutput,
			errHas: []string{`device "12345678901234567890" is not a GPU index`}},
		{name: "leading zero names GPU 0 twice", body: "echo 0,00", amount: 2, errIs: ErrScriptOutput,
			errHas: []string{`device "00" is not a GPU index`}},
		{name: "a uuid with a path", body: "echo GPU-../../etc", amount: 1, errIs: ErrScriptOutput,
			errHas: []string{`device "GPU-../../etc" is not an NVIDIA uuid`}},
		{name: "uuids and MIG devices pass", body: "echo GPU-8c1d2a3b-0000-1111-2222-33334444aaaa,0:1,MIG-77aa0000-1111-2222-3333-444455556666", amount: 3,
			want: []string{"GPU-8c1d2a3b-0000-1111-2222-33334444aaaa", "0:1", "MIG-77aa0000-1111-2222-3333-444455556666"}},
		{name: "non-zero exit names code, stdout and stderr",
			body: `echo "Could not get enough GPU resources."; echo "nvidia-smi: not found" >&2; exit 7`, amount: 1,
			errIs: ErrScriptFailed, errHas: []string{"exit code 7", "Could not get enough GPU resources.", "nvidia-smi: not found"}},
		{name: "too few indices",
			body: "echo 0", amount: 2, errIs: driver.ErrNotEnoughDevices, errHas: []string{"2 requested, it printed 1", "exit code 0", `stdout: "0"`}},
		{name: "duplicates: the error quotes what the script printed",
			body: "echo 0,0", amount: 2, errIs: driver.ErrNotEnoughDevices, errHas: []string{"2 requested, it printed 1 distinct", "exit code 0", `stdout: "0,0"`}},
		{name: "duplicates collapse, as in Flink",
			body: "echo 1,0,1", amount: 2, want: []string{"1", "0"}},
		{name: "negative index",
			body: "echo -1,1", amount: 2, errIs: ErrScriptOutput, errHas: []string{"index -1 is negative", "exit code 0", `stdout: "-1,1"`}},
		{name: "negative index in Spark's JSON",
			body: `echo '{"name":"gpu","addresses":["-1"]}'`, amount: 1, errIs: ErrScriptOutput, errHas: []string{`"-1"`, "exit code 0"}},
		{name: "empty output",
			body: "exit 0", amount: 1, errIs: driver.ErrNotEnoughDevices},
		{name: "garbage",
			body: `printf '\001\002 zz\n'`, amount: 1, errIs: ErrScriptOutput, errHas: []string{"exit code 0", "stdout: "}},
		{name: "killed by a signal",
			body: "kill -9 $$", amount: 1, errIs: ErrScriptFailed, errHas: []string{"killed by a signal"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeScript(t, dir, "s"+strconv.Itoa(i)+".sh", tc.body)
			d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
				ParamScriptPath: path, ParamScriptArgs: tc.args,
			}})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), tc.amount)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				require.Contains(t, err.Error(), path, "the error names the script")
				for _, s := range tc.errHas {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, indices(infos))
			for _, in := range infos {
				require.Equal(t, []string{"index"}, in.Keys(), "script mode reports only the index")
			}
		})
	}
}

func TestScriptConfigErrors(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec.sh")
	require.NoError(t, os.WriteFile(noExec, []byte("#!/bin/sh\necho 0\n"), 0o644))
	tests := []struct {
		name   string
		params map[string]string
		errIs  error
		has    string
	}{
		{"missing", map[string]string{ParamScriptPath: filepath.Join(dir, "nope.sh")}, ErrScriptNotFound, "external-resource.gpu.param.discovery-script.path"},
		{"not executable", map[string]string{ParamScriptPath: noExec}, ErrScriptNotExecutable, "chmod +x"},
		{"directory", map[string]string{ParamScriptPath: dir}, ErrScriptNotExecutable, "not a regular file"},
		{"bad timeout", map[string]string{ParamScriptTimeout: "soon"}, ErrInvalidParam, "external-resource.gpu.param.discovery-script.timeout"},
		{"zero timeout", map[string]string{ParamScriptTimeout: "0 s"}, ErrInvalidParam, "must be positive"},
		{"bad coordination flag", map[string]string{ParamCoordEnabled: "yes please"}, ErrInvalidParam, "coordination.enabled"},
		{"bad source", map[string]string{ParamSource: "opencl"}, ErrInvalidParam, "discovery.source"},
		{"coordination file without value", map[string]string{ParamScriptArgs: "--coordination-file"}, ErrInvalidParam, "needs a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(driver.Options{Resource: "gpu", Params: tc.params})
			require.ErrorIs(t, err, tc.errIs)
			require.Contains(t, err.Error(), tc.has)
		})
	}
}

func TestScriptRelativePath(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plugins", "gpu"), 0o755))
	writeScript(t, filepath.Join(home, "plugins", "gpu"), "d.sh", "echo 3\n")
	d, err := New(driver.Options{Resource: "gpu",
		Params: map[string]string{ParamScriptPath: "plugins/gpu/d.sh"},
		Getenv: func(k string) string {
			if k == "FLINK_HOME" {
				return home
			}
			return ""
		}})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"3"}, indices(infos))
}

func TestScriptTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := writeScript(t, dir, "hang.sh", fmt.Sprintf("sleep 60 &\necho $! > %s\nwait\n", pidFile))
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
		ParamScriptPath: path, ParamScriptTimeout: "300 ms"}})
	require.NoError(t, err)
	start := time.Now()
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptTimeout)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "300ms")
	require.Less(t, time.Since(start), 30*time.Second, "returns soon after the timeout (well before the child's 60 s), although a child holds the pipes")

	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			return true // gone
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	}, 5*time.Second, 20*time.Millisecond, "the script's child was killed with it")
	_ = syscall.Kill(child, syscall.SIGKILL)
}

// Issue 29, item 4: on a host whose NVIDIA driver lists 4 GPUs, a script
// printing an index the host cannot have is an error naming the script,
// its exit code and its output. Only an index beyond the driver's folder
// asks nvidia-smi, whose count, where it answers, decides (a fake host's,
// in tests and demos); where the count is unknown, or the indices are not
// NVIDIA's, they are passed on.
func TestScriptIndicesBeyondHost(t *testing.T) {
	dir := t.TempDir()
	gpus := filepath.Join(dir, "gpus")
	for i := 0; i < 4; i++ {
		require.NoError(t, os.MkdirAll(filepath.Join(gpus, fmt.Sprintf("0000:%02x:00.0", 0x10+i)), 0o755))
	}
	fakebin, err := filepath.Abs(filepath.Join("testdata", "fakebin"))
	require.NoError(t, err)
	noSMI := t.TempDir()
	tests := []struct {
		name    string
		body    string
		params  map[string]string
		gpusDir string
		smiGPUs string // the fake nvidia-smi's GPUs; "": none on PATH
		want    []string
		errHas  []string
	}{
		{name: "within the host", body: "echo 2,3", gpusDir: gpus, want: []string{"2", "3"}},
		{name: "beyond the host", body: "echo 7,9", gpusDir: gpus, smiGPUs: "4",
			errHas: []string{"index 7 is beyond this host's GPUs: it has 4 (indices 0 to 3, per nvidia-smi)", "exit code 0", `stdout: "7,9"`}},
		{name: "beyond the host, no nvidia-smi", body: "echo 7,9", gpusDir: gpus,
			errHas: []string{"index 7 is beyond this host's GPUs: it has 4 (indices 0 to 3, per " + gpus + ")"}},
		{name: "one past the last", body: "echo 3,4", gpusDir: gpus, smiGPUs: "4", errHas: []string{"index 4 is beyond"}},
		{name: "Spark's JSON too", body: `echo '{"name":"gpu","addresses":["0","4"]}'`, gpusDir: gpus, errHas: []string{"index 4 is beyond"}},
		{name: "a fake host's nvidia-smi decides", body: "echo 7,5", gpusDir: gpus, smiGPUs: "8", want: []string{"7", "5"}},
		{name: "uuids are not counted", body: "echo GPU-8c1d2a3b-0000-1111-2222-33334444aaaa,GPU-8c1d2a3b-0000-1111-2222-33334444aaab", gpusDir: gpus,
			want: []string{"GPU-8c1d2a3b-0000-1111-2222-33334444aaaa", "GPU-8c1d2a3b-0000-1111-2222-33334444aaab"}},
		{name: "count unknown", body: "echo 7,9", gpusDir: filepath.Join(dir, "absent"), want: []string{"7", "9"}},
		// Issue 41: without the driver's folder (a container), nvidia-smi
		// on PATH is asked, as the README says.
		{name: "no driver folder: nvidia-smi is asked", body: "echo 7,9", gpusDir: filepath.Join(dir, "absent"), smiGPUs: "4",
			errHas: []string{"index 7 is beyond this host's GPUs: it has 4 (indices 0 to 3, per nvidia-smi)", `stdout: "7,9"`}},
		{name: "no driver folder: within nvidia-smi's", body: "echo 2,3", gpusDir: filepath.Join(dir, "absent"), smiGPUs: "4", want: []string{"2", "3"}},
		{name: "not NVIDIA's indices", body: "echo 7,9", gpusDir: gpus,
			params: map[string]string{driver.ParamVisibleDevicesVendor: "amd"}, want: []string{"7", "9"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeScript(t, dir, "s"+strconv.Itoa(i)+".sh", tc.body+"\n")
			params := map[string]string{ParamScriptPath: path, ParamCoordFile: filepath.Join(dir, "state"+strconv.Itoa(i))}
			for k, v := range tc.params {
				params[k] = v
			}
			pathDir := noSMI
			if tc.smiGPUs != "" {
				pathDir = fakebin
				t.Setenv("XRES_FAKE_GPUS", tc.smiGPUs)
			}
			getenv := func(k string) string {
				if k == "PATH" {
					return pathDir
				}
				return os.Getenv(k)
			}
			d, err := newDriver(driver.Options{Resource: "gpu", Params: params, Getenv: getenv}, deps{gpusDir: tc.gpusDir})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), 2)
			if tc.errHas != nil {
				require.ErrorIs(t, err, ErrScriptOutput)
				require.Contains(t, err.Error(), path, "the error names the script")
				for _, s := range tc.errHas {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, indices(infos))
		})
	}
}

// Issue 29, item 4: a background child of the script that keeps its
// stdout open does not hold discovery up: it returns once the script
// exited, with its whole output, and leaves the child running. The
// script's time limit counts the script only: waiting for the child's
// pipe would run past it and report a timeout.
func TestScriptBackgroundChildDoesNotDelay(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	path := writeScript(t, dir, "bg.sh", fmt.Sprintf("(sleep 5) &\necho $! > %s\necho 0,1\n", pidFile))
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: path, ParamScriptTimeout: "1 s"}})
	require.NoError(t, err)
	start := time.Now()
	infos, err := d.Discover(ctxT(t), 2)
	took := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos), "the output is complete")
	require.Less(t, took, 4*time.Second, "discovery waited for the script's background child")

	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.NoError(t, syscall.Kill(child, 0), "the child still runs: discovery returned while it held the pipe")
}

// A script that writes far more than a pipe buffer to both streams must
// not deadlock.
func TestScriptLargeOutput(t *testing.T) {
	dir := t.TempDir()
	path := writeScript(t, dir, "loud.sh", `echo 0,1
i=0; while [ $i -lt 2000 ]; do echo "noise line $i ......................................................................"; echo "err $i ........................................................................" >&2; i=$((i+1)); done
`)
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: path}})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos))
}

// Our own script with Flink's calling convention and coordination flags,
// against the fake nvidia-smi: what Flink's nvidia-gpu-discovery.sh needs.
func TestFlinkStyleScriptWithCoordination(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("testdata", "scripts", "flink-style-discovery.sh"))
	require.NoError(t, err)
	fakebin, err := filepath.Abs(filepath.Join("testdata", "fakebin"))
	require.NoError(t, err)
	t.Setenv("PATH", fakebin+":"+os.Getenv("PATH"))
	t.Setenv("XRES_FAKE_GPUS", "4")
	file := filepath.Join(t.TempDir(), "flink-coordination")

	newDriver := func(args string) driver.Driver {
		d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
			ParamScriptPath: script, ParamScriptArgs: args}})
		require.NoError(t, err)
		return d
	}
	plain := newDriver("")
	for i := 0; i < 2; i++ {
		infos, err := plain.Discover(ctxT(t), 2)
		require.NoError(t, err)
		require.Equal(t, []string{"0", "1"}, indices(infos), "without coordination every caller gets the first GPUs")
	}
	coordinated := newDriver("--enable-coordination-mode --coordination-file " + file)
	infos, err := coordinated.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos))
	infos, err = coordinated.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, indices(infos), "this process still holds 0 and 1")
	_, err = coordinated.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptFailed)
	require.Contains(t, err.Error(), "Could not get enough GPU resources.")
}

func TestFlinkDefaultScriptMissingFallsBackToBuiltin(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "2")
	state := filepath.Join(t.TempDir(), "state")
	d, err := newDriver(driver.Options{Resource: "gpu",
		Params: map[string]string{ParamScriptPath: FlinkDefaultScript, ParamCoordFile: state},
		Getenv: fakeEnv(t, map[string]string{"FLINK_HOME": t.TempDir()}),
	}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	require.IsType(t, &driver.Coordinated{}, d)
	infos, err := d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos))
	require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
}

func TestBuiltinWithFakeNvidiaSMI(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "3")
	state := filepath.Join(t.TempDir(), "state")
	build := func(params map[string]string, dry bool) driver.Driver {
		d, err := newDriver(driver.Options{Resource: "gpu", Params: params, Getenv: fakeEnv(t, nil), DryRun: dry},
			deps{nvml: unavailableNVML})
		require.NoError(t, err)
		return d
	}
	a := build(map[string]string{ParamCoordFile: state}, false)
	infos, err := a.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, resources.Properties{
		"index": "0", "uuid": "GPU-00000000-0000-4000-8000-000000000000", "name": "NVIDIA Fake GPU 80GB",
		"memory.total": "81920", "pci.bus-id": "00000000:10:00.0",
	}, infos[0])
	require.Equal(t, []string{"0", "1"}, indices(infos))

	// Flink's --coordination-file is honoured beside the state file, in
	// Flink's format.
	flinkFile := filepath.Join(t.TempDir(), "flink-gpu-coordination")
	b := build(map[string]string{ParamCoordFile: state, ParamScriptArgs: "--enable-coordination-mode --coordination-file " + flinkFile}, false)
	infos, err = b.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"2"}, indices(infos))
	fl, err := os.ReadFile(flinkFile)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("2 %d\n", coord.FlinkHolder()), string(fl), "the line names the holder that lives as long as the reservation")

	probe := build(map[string]string{ParamCoordFile: state}, true)
	_, err = probe.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), "held by pid")

	off := build(map[string]string{ParamCoordFile: state, ParamCoordEnabled: "false"}, false)
	infos, err = off.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos), "coordination off: the first devices, like Flink")

	forcedOn := build(map[string]string{ParamCoordFile: state, ParamCoordEnabled: "false", ParamScriptArgs: "--enable-coordination-mode --coordination-file " + flinkFile}, false)
	_, err = forcedOn.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices, "Flink's flag switches coordination back on")

	require.NoError(t, a.(driver.Releaser).Release(ctxT(t)))
	infos, err = probe.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos), "released devices are free again")
	require.NoError(t, b.(driver.Releaser).Release(ctxT(t)))

	_, err = a.Discover(ctxT(t), 4)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), "4 requested but the host has 3")
}

func TestBuiltinSources(t *testing.T) {
	emptyDir := t.TempDir()
	tests := []struct {
		name   string
		nvml   driver.Enumerator
		params map[string]string
		env    map[string]string
		setenv map[string]string
		want   int
		errIs  error
		errHas string
	}{
		{name: "nvml preferred", nvml: drivertest.New(drivertest.Devices(drivertest.GPUs(5)...)), want: 5},
		{name: "nvml unavailable: nvidia-smi", nvml: unavailableNVML, setenv: map[string]string{"XRES_FAKE_GPUS": "8"}, want: 8},
		{name: "source forced to nvidia-smi", nvml: drivertest.New(drivertest.Devices(drivertest.GPUs(5)...)),
			params: map[string]string{ParamSource: "nvidia-smi"}, setenv: map[string]string{"XRES_FAKE_GPUS": "1"}, want: 1},
		{name: "nvml broken after init: no fallback", nvml: drivertest.New(drivertest.FailWith(fmt.Errorf("nvml device 0: unknown error"))),
			errHas: "nvml device 0"},
		{name: "neither", nvml: unavailableNVML, env: map[string]string{"PATH": emptyDir}, errIs: ErrNoGPUSource, errHas: "nvidia-smi not found on PATH"},
		{name: "source nvml only", nvml: unavailableNVML, params: map[string]string{ParamSource: "nvml"}, errIs: ErrNVMLUnavailable},
		{name: "nvidia-smi reports no devices", nvml: unavailableNVML, setenv: map[string]string{"XRES_FAKE_GPUS": "0"},
			errIs: driver.ErrNotEnoughDevices, errHas: "the host has 0"},
		{name: "nvidia-smi driver failure", nvml: unavailableNVML, setenv: map[string]string{
			"XRES_FAKE_NVIDIA_SMI_FIXTURE": "testdata/smi/failed-driver.txt", "XRES_FAKE_NVIDIA_SMI_EXIT": "9"},
			errIs: ErrNvidiaSMI, errHas: "exit code 9: NVIDIA-SMI has failed"},
		{name: "nvidia-smi version mismatch with exit 0", nvml: unavailableNVML, setenv: map[string]string{
			"XRES_FAKE_NVIDIA_SMI_FIXTURE": "testdata/smi/version-mismatch.txt"},
			errIs: ErrNvidiaSMI, errHas: "Driver/library version mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.setenv {
				t.Setenv(k, v)
			}
			params := map[string]string{ParamCoordEnabled: "false"}
			for k, v := range tc.params {
				params[k] = v
			}
			d, err := newDriver(driver.Options{Resource: "gpu", Params: params, Getenv: fakeEnv(t, tc.env)}, deps{nvml: tc.nvml})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), 1)
			if tc.errIs != nil || tc.errHas != "" {
				require.Error(t, err)
				if tc.errIs != nil {
					require.ErrorIs(t, err, tc.errIs)
				}
				require.Contains(t, err.Error(), tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Len(t, infos, 1)
			all, err := d.(*driver.Coordinated).Discover(ctxT(t), int64(tc.want))
			require.NoError(t, err)
			require.Len(t, all, tc.want)
		})
	}
}

func TestUnwritableCoordinationDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	t.Setenv("XRES_FAKE_GPUS", "1")
	d, err := newDriver(driver.Options{Resource: "gpu", Params: map[string]string{ParamCoordFile: filepath.Join(file, "state")}, Getenv: fakeEnv(t, nil)},
		deps{nvml: unavailableNVML})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "create coordination directory "+file)
}

func TestScriptCallerDeadline(t *testing.T) {
	path := writeScript(t, t.TempDir(), "slow.sh", "sleep 30\n")
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: path}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = d.Discover(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrScriptTimeout, "the caller's deadline is not the script's timeout")
}

// Issue 41: a failing discovery script's output is quoted in the error;
// what it prints about credentials ("token=abc", "password=…", "key=…")
// is hidden there by the project's redaction rules (conf.RedactOutput).
func TestScriptFailureOutputIsRedacted(t *testing.T) {
	dir := t.TempDir()
	path := writeScript(t, dir, "auth.sh", `echo "login with secret=stdout1 failed"
echo "auth failed: token=abc123 password=hunter2 key=K3Y" >&2; exit 3
`)
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: path}})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptFailed)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "token=(hidden)")
	for _, s := range []string{"abc123", "hunter2", "K3Y", "stdout1"} {
		require.NotContains(t, err.Error(), s)
	}
}
