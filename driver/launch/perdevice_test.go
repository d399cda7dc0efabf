package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// perDeviceScript is a worker that records what it sees in $1: its
// environment (env-<rank>), its info file (info-<rank>.json) and the CPUs
// its own process may run on (cpus-<rank>, from /proc).
const perDeviceScript = `out=$1; r=$XRES_DEVICE_RANK
env | grep -E '^(XRES_|CUDA_|ROCR_|HIP_|KEEP=)' | sort > "$out/env-$r.tmp"
cp "$XRES_RESOURCES_FILE" "$out/info-$r.json"
echo "$XRES_RESOURCES_FILE" > "$out/path-$r"
if [ -r /proc/$$/status ]; then sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status > "$out/cpus-$r"; fi
mv "$out/env-$r.tmp" "$out/env-$r"`

// seen is what worker rank recorded.
type seen struct {
	env      map[string]string
	info     map[string][]map[string]string
	cpus     string
	infoPath string
}

func readSeen(t *testing.T, out string, rank int) seen {
	t.Helper()
	var s seen
	b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("env-%d", rank)))
	require.NoError(t, err, "worker %d did not run", rank)
	s.env = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		s.env[k] = v
	}
	b, err = os.ReadFile(filepath.Join(out, fmt.Sprintf("info-%d.json", rank)))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &s.info), string(b))
	if b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("cpus-%d", rank))); err == nil {
		s.cpus = strings.TrimSpace(string(b))
	}
	b, err = os.ReadFile(filepath.Join(out, fmt.Sprintf("path-%d", rank)))
	require.NoError(t, err)
	s.infoPath = strings.TrimSpace(string(b))
	return s
}

// expectCPUs is what a worker on a device with local CPUs local may run
// on: those the test process may use too, or all of those when none is.
func expectCPUs(t *testing.T, local string) string {
	t.Helper()
	allowed, err := allowedCPUs()
	require.NoError(t, err)
	if local == "" {
		return formatCPUList(allowed)
	}
	l, err := parseList(local)
	require.NoError(t, err)
	if in := intersectCPUs(l, allowed); len(in) > 0 {
		return formatCPUList(in)
	}
	return formatCPUList(allowed)
}

// expectPinned is XRES_DEVICE_CPUS for a device with local CPUs local:
// those the test process may use, "" when none is (unpinned).
func expectPinned(t *testing.T, local string) string {
	t.Helper()
	if local == "" {
		return ""
	}
	allowed, err := allowedCPUs()
	require.NoError(t, err)
	l, err := parseList(local)
	require.NoError(t, err)
	return formatCPUList(intersectCPUs(l, allowed))
}

func parseList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

func needLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is Linux only")
	}
}

// TestPerDeviceEachWorkerSeesItsDevice: three GPUs give three workers,
// each told only its own GPU (info file, XRES_RESOURCE_GPU_*,
// CUDA_VISIBLE_DEVICES) and its rank, the FPGA shared by all, and each
// pinned to its GPU's local CPUs (a fake host's local-cpus of 0, 1 and
// none).
func TestPerDeviceEachWorkerSeesItsDevice(t *testing.T) {
	needLinux(t)
	h := newFakeHost()
	h.devices["gpu"] = 3
	h.devices["fpga"] = 1
	h.props["gpu"] = []string{"uuid"}
	h.extra["gpu"] = []resources.Properties{{InfoLocalCPUs: "0"}, {InfoLocalCPUs: "1"}, {}}
	out := t.TempDir()
	r := runMain(t, h, fixedSpecs(fpgaSpec(1), gpuSpec(3)), nil,
		"--per-device=gpu", "--", "sh", "-c", perDeviceScript, "worker", out)
	require.Equal(t, 0, r.code, r.stderr)

	paths := map[string]bool{}
	for rank := 0; rank < 3; rank++ {
		s := readSeen(t, out, rank)
		idx := strconv.Itoa(rank)
		require.Equal(t, idx, s.env[EnvDeviceRank])
		require.Equal(t, "3", s.env[EnvDeviceCount])
		require.Equal(t, "gpu", s.env[EnvDeviceResource])
		require.Equal(t, "0", s.env[EnvDeviceRestarts])
		require.Equal(t, idx, s.env["CUDA_VISIBLE_DEVICES"], "the base environment's CUDA_VISIBLE_DEVICES=9 is replaced")
		require.Equal(t, idx, s.env["XRES_RESOURCE_GPU_INDEX"])
		require.Equal(t, "gpu-uuid-"+idx, s.env["XRES_RESOURCE_GPU_UUID"])
		require.Equal(t, "1", s.env["XRES_RESOURCE_GPU_AMOUNT"])
		require.Equal(t, "fpga,gpu", s.env[EnvResources])
		require.Equal(t, "0", s.env["XRES_RESOURCE_FPGA_INDEX"], "the other resource is shared")
		require.Equal(t, "me", s.env["KEEP"])
		require.Len(t, s.info["gpu"], 1)
		require.Equal(t, idx, s.info["gpu"][0]["index"])
		require.Equal(t, []map[string]string{{"index": "0"}}, s.info["fpga"])
		require.False(t, paths[s.infoPath], "each worker has its own info file")
		paths[s.infoPath] = true
		require.NoFileExists(t, s.infoPath, "temporary info files are removed")

		local := []string{"0", "1", ""}[rank]
		require.Equal(t, expectCPUs(t, local), s.cpus, "rank %d", rank)
		require.Equal(t, expectPinned(t, local), s.env[EnvDeviceCPUs], "XRES_DEVICE_CPUS names the pinned CPUs")
		t.Logf("rank %d: local-cpus %q, runs on %s", rank, local, s.cpus)
	}
	require.Empty(t, h.Held("gpu"))
	require.Empty(t, h.Held("fpga"))
	require.Equal(t, 1, h.Releases("gpu"))
}

// TestPerDeviceUnpinned: --pin-cpus=false leaves every worker on the
// launcher's CPUs.
func TestPerDeviceUnpinned(t *testing.T) {
	needLinux(t)
	h := newFakeHost()
	h.devices["gpu"] = 2
	h.extra["gpu"] = []resources.Properties{{InfoLocalCPUs: "0"}, {InfoLocalCPUs: "1"}}
	out := t.TempDir()
	r := runMain(t, h, fixedSpecs(gpuSpec(2)), nil,
		"--per-device", "--pin-cpus=false", "--", "sh", "-c", perDeviceScript, "worker", out)
	require.Equal(t, 0, r.code, r.stderr)
	for rank := 0; rank < 2; rank++ {
		s := readSeen(t, out, rank)
		require.Equal(t, expectCPUs(t, ""), s.cpus)
		require.Empty(t, s.env[EnvDeviceCPUs])
	}
}

// TestPerDeviceBadLocalCPUs: a malformed local-cpus info is a warning
// naming the key; the worker runs unpinned.
func TestPerDeviceBadLocalCPUs(t *testing.T) {
	needLinux(t)
	h := newFakeHost()
	h.devices["gpu"] = 1
	h.extra["gpu"] = []resources.Properties{{InfoLocalCPUs: "3-1"}}
	out := t.TempDir()
	r := runMain(t, h, fixedSpecs(gpuSpec(1)), nil, "--per-device", "--", "sh", "-c", perDeviceScript, "worker", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "info local-cpus")
	require.Contains(t, r.stderr, "descending")
	require.Equal(t, expectCPUs(t, ""), readSeen(t, out, 0).cpus)
}

// TestPerDeviceInfoFiles: with --info-file each worker's file is the path
// with its rank inserted; in a YARN container they are
// external-resources-<rank>.json in the working directory.
func TestPerDeviceInfoFiles(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 2
	explicit := filepath.Join(t.TempDir(), "info.json")
	r := runMain(t, h, fixedSpecs(gpuSpec(2)), nil, "--per-device", "--info-file", explicit, "--",
		"sh", "-c", `test "$XRES_RESOURCES_FILE" = "$1/info-$XRES_DEVICE_RANK.json"`, "w", filepath.Dir(explicit))
	require.Equal(t, 0, r.code, r.stderr)
	for _, name := range []string{"info-0.json", "info-1.json"} {
		got, err := contract.ReadInfoFile(filepath.Join(filepath.Dir(explicit), name))
		require.NoError(t, err)
		require.Len(t, got["gpu"], 1)
	}

	dir := t.TempDir()
	var stderr syncBuffer
	code := Main(t.Context(), []string{"--per-device", "--", "sh", "-c",
		`test "$XRES_RESOURCES_FILE" = "$PWD/external-resources-$XRES_DEVICE_RANK.json"`}, Env{
		Getenv:   func(k string) string { return map[string]string{"CONTAINER_ID": "container_1_0001_01_000002"}[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Dir:      dir,
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(2)),
	})
	require.Equal(t, 0, code, stderr.String())
	require.FileExists(t, filepath.Join(dir, "external-resources-0.json"))
	require.FileExists(t, filepath.Join(dir, "external-resources-1.json"))
}

// TestPerDeviceStopOnFailure: when one worker fails the others get
// SIGTERM, the failing worker's code is the launcher's, and the devices
// are released after all ended.
func TestPerDeviceStopOnFailure(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 3
	out := t.TempDir()
	script := `out=$1; r=$XRES_DEVICE_RANK
if [ "$r" = 1 ]; then
	while [ ! -e "$out/ready-0" ] || [ ! -e "$out/ready-2" ]; do sleep 0.01; done
	exit 5
fi
trap 'touch "$out/term-$r"; exit 0' TERM
touch "$out/ready-$r"
while :; do sleep 0.02; done`
	r := runMain(t, h, fixedSpecs(gpuSpec(3)), nil, "--per-device", "--", "sh", "-c", script, "w", out)
	require.Equal(t, 5, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "term-0"))
	require.FileExists(t, filepath.Join(out, "term-2"))
	require.NoFileExists(t, filepath.Join(out, "term-1"))
	require.Contains(t, r.stderr, "worker failed: stopping all workers")
	require.Empty(t, h.Held("gpu"))
	require.Equal(t, 1, h.Releases("gpu"))
}

// TestPerDeviceSuccessLeavesOthersRunning: a worker that exits 0 is done;
// the others go on, and the launcher exits 0 when all have.
func TestPerDeviceSuccessLeavesOthersRunning(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 2
	out := t.TempDir()
	script := `out=$1; r=$XRES_DEVICE_RANK
if [ "$r" = 0 ]; then touch "$out/done-0"; exit 0; fi
while [ ! -e "$out/done-0" ]; do sleep 0.01; done
sleep 0.1; touch "$out/done-1"`
	r := runMain(t, h, fixedSpecs(gpuSpec(2)), nil, "--per-device", "--", "sh", "-c", script, "w", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "done-1"), "rank 1 was not stopped by rank 0's success")
}

// TestPerDeviceRestart: --on-failure restart starts a failing worker
// again on the same device up to --max-restarts times.
func TestPerDeviceRestart(t *testing.T) {
	tests := []struct {
		name   string
		script string // rank 1's behaviour; rank 0 exits 0
		args   []string
		code   int
		starts string // what rank 1 recorded, one line per start
	}{
		{
			name:   "always failing: 1+2 starts, then its code",
			script: `exit 3`,
			args:   []string{"--on-failure", "restart", "--max-restarts", "2"},
			code:   3,
			starts: "1 0\n1 1\n1 2\n",
		},
		{
			name:   "recovers on the first restart",
			script: `[ "$XRES_DEVICE_RESTARTS" -ge 1 ] || exit 3`,
			args:   []string{"--on-failure=restart"},
			code:   0,
			starts: "1 0\n1 1\n",
		},
		{
			name:   "killed by a signal counts as a failure",
			script: `[ "$XRES_DEVICE_RESTARTS" -ge 1 ] || kill -9 $$`,
			args:   []string{"--on-failure", "restart", "--max-restarts", "1"},
			code:   0,
			starts: "1 0\n1 1\n",
		},
		{
			name:   "max-restarts 0 stops at once",
			script: `exit 4`,
			args:   []string{"--on-failure", "restart", "--max-restarts", "0"},
			code:   4,
			starts: "1 0\n",
		},
		{
			name:   "stop policy never restarts",
			script: `exit 6`,
			code:   6,
			starts: "1 0\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = 2
			out := t.TempDir()
			script := `out=$1; r=$XRES_DEVICE_RANK
[ "$r" = 0 ] && exit 0
echo "$XRES_DEVICE_RANK $XRES_DEVICE_RESTARTS" >> "$out/starts"
` + tc.script
			args := append([]string{"--per-device=gpu", "--restart-delay", "10ms"}, tc.args...)
			args = append(args, "--", "sh", "-c", script, "w", out)
			r := runMain(t, h, fixedSpecs(gpuSpec(2)), nil, args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			b, err := os.ReadFile(filepath.Join(out, "starts"))
			require.NoError(t, err)
			require.Equal(t, tc.starts, string(b))
			require.Empty(t, h.Held("gpu"))
		})
	}
}

// TestPerDeviceSignalToAll: a signal to the launcher reaches every
// worker's process group; nothing is restarted afterwards, and the
// devices are released.
func TestPerDeviceSignalToAll(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 3
	out := t.TempDir()
	script := `out=$1; r=$XRES_DEVICE_RANK
trap 'touch "$out/term-$r"; exit 7' TERM
echo x >> "$out/starts-$r"
touch "$out/ready-$r"
while :; do sleep 0.02; done`
	sigs := make(chan os.Signal, 1)
	done := make(chan runResult, 1)
	go func() {
		done <- runMain(t, h, fixedSpecs(gpuSpec(3)), sigs, "--per-device", "--on-failure", "restart",
			"--restart-delay", "1ms", "--", "sh", "-c", script, "w", out)
	}()
	for rank := 0; rank < 3; rank++ {
		waitForFile(t, filepath.Join(out, fmt.Sprintf("ready-%d", rank)), 10*time.Second)
	}
	require.Equal(t, []string{"0", "1", "2"}, h.Held("gpu"), "held while the workers run")
	sigs <- syscall.SIGTERM
	select {
	case r := <-done:
		require.Equal(t, 7, r.code, r.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("launcher did not end after SIGTERM")
	}
	for rank := 0; rank < 3; rank++ {
		require.FileExists(t, filepath.Join(out, fmt.Sprintf("term-%d", rank)))
		b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("starts-%d", rank)))
		require.NoError(t, err)
		require.Equal(t, "x\n", string(b), "rank %d restarted after the signal", rank)
	}
	require.Empty(t, h.Held("gpu"))
}

// TestPerDeviceFlags: flag combinations and resource choice.
func TestPerDeviceFlags(t *testing.T) {
	nodriver := resources.Spec{Name: "nodriver", Amount: 1}
	tests := []struct {
		name   string
		specs  []resources.Spec
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{name: "XRES_PER_DEVICE names the resource", specs: []resources.Spec{fpgaSpec(2), gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "gpu", "XRES_ON_FAILURE": "restart", "XRES_MAX_RESTARTS": "1", "XRES_RESTART_DELAY": "1ms"},
			args: []string{"--", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = gpu && test "$XRES_DEVICE_RESTARTS" = 1`}},
		{name: "XRES_PER_DEVICE=true picks the first", specs: []resources.Spec{fpgaSpec(2), gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "true"},
			args: []string{"--", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = fpga`}},
		{name: "the flag wins over the variable", specs: []resources.Spec{fpgaSpec(2), gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "fpga", "XRES_ON_FAILURE": "restart"},
			args: []string{"--per-device=gpu", "--on-failure", "stop", "--", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = gpu || exit 1; exit 8`}, code: 8},
		{name: "variables without per-device are ignored", specs: []resources.Spec{gpuSpec(1)},
			env:  map[string]string{"XRES_ON_FAILURE": "restart", "XRES_MAX_RESTARTS": "2"},
			args: []string{"--", "sh", "-c", `test -z "$XRES_DEVICE_RANK"`}},
		{name: "XRES_PER_DEVICE=false", specs: []resources.Spec{gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "false"},
			args: []string{"--", "sh", "-c", `test -z "$XRES_DEVICE_RANK"`}},
		{name: "malformed variable names it", specs: []resources.Spec{gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "gpu", "XRES_MAX_RESTARTS": "many"},
			args: []string{"--", "true"}, code: ExitUsage, stderr: `XRES_MAX_RESTARTS="many" (default of --max-restarts)`},
		{name: "bad policy from the variable names it", specs: []resources.Spec{gpuSpec(1)},
			env:  map[string]string{"XRES_PER_DEVICE": "gpu", "XRES_ON_FAILURE": "retry"},
			args: []string{"--", "true"}, code: ExitUsage, stderr: `XRES_ON_FAILURE "retry": want stop or restart`},
		{name: "--on-failure without --per-device", specs: []resources.Spec{gpuSpec(1)},
			args: []string{"--on-failure", "restart", "--", "true"}, code: ExitUsage, stderr: "--on-failure needs --per-device"},
		{name: "bad policy", specs: []resources.Spec{gpuSpec(1)},
			args: []string{"--per-device", "--on-failure", "retry", "--", "true"}, code: ExitUsage, stderr: `--on-failure "retry"`},
		{name: "--max-restarts with stop", specs: []resources.Spec{gpuSpec(1)},
			args: []string{"--per-device", "--max-restarts", "2", "--", "true"}, code: ExitUsage, stderr: "--max-restarts needs --on-failure restart"},
		{name: "negative --max-restarts", specs: []resources.Spec{gpuSpec(1)},
			args: []string{"--per-device", "--on-failure", "restart", "--max-restarts", "-1", "--", "true"}, code: ExitUsage, stderr: "must be 0 or more"},
		{name: "unknown resource", specs: []resources.Spec{gpuSpec(1)},
			args: []string{"--per-device=tpu", "--", "true"}, code: ExitConfig, stderr: "--per-device tpu: not a selected resource (selected: gpu)"},
		{name: "resource outside --resources", specs: []resources.Spec{gpuSpec(1), fpgaSpec(1)},
			args: []string{"--resources", "fpga", "--per-device=gpu", "--", "true"}, code: ExitConfig, stderr: "selected: fpga"},
		{name: "resource without driver", specs: []resources.Spec{nodriver, gpuSpec(1)},
			args: []string{"--per-device=nodriver", "--", "true"}, code: ExitConfig, stderr: "external-resource.nodriver.driver-factory.class"},
		{name: "no resource with a driver", specs: []resources.Spec{nodriver},
			args: []string{"--per-device", "--", "true"}, code: ExitConfig, stderr: "no selected resource has a driver-factory.class"},
		{name: "bare picks the first with a driver", specs: []resources.Spec{nodriver, fpgaSpec(2), gpuSpec(1)},
			args: []string{"--per-device", "--", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = fpga && test "$XRES_DEVICE_COUNT" = 2`}},
		{name: "name as a separate word before --", specs: []resources.Spec{fpgaSpec(2), gpuSpec(1)},
			args: []string{"--per-device", "gpu", "--", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = gpu`}},
		{name: "without -- the next word is the worker", specs: []resources.Spec{gpuSpec(2)},
			args: []string{"--per-device", "sh", "-c", `test "$XRES_DEVICE_RESOURCE" = gpu && exit 4`}, code: 4},
		{name: "worker not found", specs: []resources.Spec{gpuSpec(2)},
			args: []string{"--per-device", "--", "/nonexistent/worker"}, code: ExitWorkerStart, stderr: "/nonexistent/worker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = 2
			h.devices["fpga"] = 2
			r := runMainEnv(t, h, fixedSpecs(tc.specs...), nil, tc.env, tc.args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			if tc.stderr != "" {
				require.Contains(t, r.stderr, tc.stderr)
			}
			require.Empty(t, h.Held("gpu"))
			require.Empty(t, h.Held("fpga"))
		})
	}
}

// TestPerDeviceRealDrivers runs --per-device with the built-in drivers on
// fake hosts: NVIDIA GPUs from driver/gpu's fake nvidia-smi with their
// local CPUs in a fake sysfs (found through pci.bus-id), and the FPGAs of
// driver/pci's two-fpgas tree (local-cpus from sysfs).
func TestPerDeviceRealDrivers(t *testing.T) {
	needLinux(t)
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	require.NoError(t, err)
	twoFPGAs, err := filepath.Abs("../pci/testdata/two-fpgas/sys")
	require.NoError(t, err)
	gpuSysfs := t.TempDir()
	for i, cpus := range []string{"0\n", "1\n"} {
		dir := filepath.Join(gpuSysfs, "bus", "pci", "devices", fmt.Sprintf("0000:%02x:00.0", 16+i))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "local_cpulist"), []byte(cpus), 0o644))
	}
	amdSysfs, err := filepath.Abs("../amd/testdata/four-gpus/sys")
	require.NoError(t, err)
	state := filepath.Join(t.TempDir(), "coord.state")
	tests := []struct {
		name  string
		spec  resources.Spec
		check func(t *testing.T, rank int, s seen, stderr string)
	}{
		{
			name: "AMD GPUs, KFD topology",
			spec: resources.Spec{Name: "amdgpu", Amount: 2, Factory: "xres.amd-gpu",
				Params: map[string]string{"sysfs-root": amdSysfs, "coordination.file": state}},
			check: func(t *testing.T, rank int, s seen, stderr string) {
				uuid := []string{"GPU-74ec1f464356ea00", "GPU-ac9a80b87e94126a"}[rank]
				require.Equal(t, uuid, s.env["ROCR_VISIBLE_DEVICES"])
				require.Equal(t, "0", s.env["HIP_VISIBLE_DEVICES"], "HIP numbers the one GPU ROCr leaves visible")
				require.Empty(t, s.env["CUDA_VISIBLE_DEVICES"])
				local := s.info["amdgpu"][0][InfoLocalCPUs]
				require.Equal(t, "0-31,64-95", local)
				require.Equal(t, expectCPUs(t, local), s.cpus)
			},
		},
		{
			name: "NVIDIA GPUs, local_cpulist by pci.bus-id",
			spec: resources.Spec{Name: "gpu", Amount: 2, Factory: "org.apache.flink.externalresource.gpu.GPUDriverFactory",
				Params: map[string]string{"discovery.source": "nvidia-smi", "coordination.file": state, ParamSysfsRoot: gpuSysfs}},
			check: func(t *testing.T, rank int, s seen, stderr string) {
				idx := strconv.Itoa(rank)
				require.Equal(t, idx, s.env["CUDA_VISIBLE_DEVICES"])
				require.Equal(t, fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", rank), s.env["XRES_RESOURCE_GPU_UUID"])
				require.Equal(t, fmt.Sprintf("00000000:%02X:00.0", 16+rank), s.info["gpu"][0]["pci.bus-id"])
				require.Equal(t, expectCPUs(t, idx), s.cpus)
			},
		},
		{
			name: "FPGAs from sysfs, local-cpus info",
			spec: resources.Spec{Name: "fpga", Amount: 2, Factory: "org.apache.flink.externalresource.fpga.FPGADriverFactory",
				Params: map[string]string{"vendor": "0x10ee", "device": "0x5005", "sysfs-root": twoFPGAs, "coordination.file": state}},
			check: func(t *testing.T, rank int, s seen, stderr string) {
				addr := []string{"0000:3b:00.1", "0000:d8:00.1"}[rank]
				local := []string{"0-15,32-47", "16-31,48-63"}[rank]
				require.Equal(t, addr, s.env["XRES_RESOURCE_FPGA_ADDRESS"])
				require.Equal(t, local, s.env["XRES_RESOURCE_FPGA_LOCAL_CPUS"])
				require.Equal(t, addr, s.info["fpga"][0]["pci"])
				require.Empty(t, s.env["CUDA_VISIBLE_DEVICES"])
				require.Equal(t, expectCPUs(t, local), s.cpus)
				require.Equal(t, expectPinned(t, local), s.env[EnvDeviceCPUs])
				if expectPinned(t, local) == "" {
					require.Contains(t, stderr, "none of the device's local CPUs may be used by this launcher")
					require.Contains(t, stderr, `local_cpus="`+local+`"`)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := builtin.NewRegistry(func(string) string { return "" })
			require.NoError(t, err)
			out, tmp := t.TempDir(), t.TempDir()
			getenv := func(k string) string {
				return map[string]string{"TMPDIR": tmp, "PATH": fakebin + ":" + os.Getenv("PATH")}[k]
			}
			var stderr syncBuffer
			code := Main(t.Context(), []string{"--per-device", "--", "sh", "-c", perDeviceScript, "w", out}, Env{
				Getenv:   getenv,
				Environ:  []string{"PATH=" + fakebin + ":" + os.Getenv("PATH"), "XRES_FAKE_GPUS=2"},
				Stderr:   &stderr,
				Registry: reg,
				Load:     fixedSpecs(tc.spec),
			})
			require.Equal(t, 0, code, stderr.String())
			for rank := 0; rank < 2; rank++ {
				s := readSeen(t, out, rank)
				require.Equal(t, strconv.Itoa(rank), s.env[EnvDeviceRank])
				require.Equal(t, "2", s.env[EnvDeviceCount])
				require.Len(t, s.info[tc.spec.Name], 1)
				tc.check(t, rank, s, stderr.String())
			}
			// Released: the coordination state holds nothing, so the
			// next launch gets both devices again.
			code = Main(t.Context(), []string{"--", "true"}, Env{
				Getenv:   getenv,
				Environ:  []string{"PATH=" + fakebin + ":" + os.Getenv("PATH"), "XRES_FAKE_GPUS=2"},
				Stderr:   &stderr,
				Registry: reg,
				Load:     fixedSpecs(tc.spec),
			})
			require.Equal(t, 0, code, stderr.String())
		})
	}
}

// TestPerDeviceBinary runs the built container-launcher with --per-device
// on a fake 2-GPU host and sends it SIGTERM: the real __exec-pinned path,
// the signal reaching both workers, the devices free afterwards.
func TestPerDeviceBinary(t *testing.T) {
	needLinux(t)
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 2, 2)
	sysfs := filepath.Join(h.dir, "sys")
	for i := 0; i < 2; i++ {
		dir := filepath.Join(sysfs, "bus", "pci", "devices", fmt.Sprintf("0000:%02x:00.0", 16+i))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "local_cpulist"), []byte(strconv.Itoa(i)+"\n"), 0o644))
	}
	out := t.TempDir()
	script := perDeviceScript + `
trap 'touch "$out/term-$r"; exit 0' TERM
touch "$out/ready-$r"
while :; do sleep 0.02; done`
	cmd := h.command(bin, "--conf", h.conf, "-Dexternal-resource.gpu.param.sysfs-root="+sysfs,
		"--per-device", "gpu", "--", "sh", "-c", script, "w", out)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	for rank := 0; rank < 2; rank++ {
		waitForFile(t, filepath.Join(out, fmt.Sprintf("ready-%d", rank)), 20*time.Second)
	}
	require.Len(t, h.probe(t, bin).Resources[0].Coordination.Holders, 2, "both GPUs held while the workers run")
	for rank := 0; rank < 2; rank++ {
		s := readSeen(t, out, rank)
		require.Equal(t, strconv.Itoa(rank), s.env["CUDA_VISIBLE_DEVICES"])
		require.Equal(t, expectCPUs(t, strconv.Itoa(rank)), s.cpus)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	require.NoError(t, err, stderr.String())
	require.FileExists(t, filepath.Join(out, "term-0"))
	require.FileExists(t, filepath.Join(out, "term-1"))
	require.Empty(t, h.probe(t, bin).Resources[0].Coordination.Holders, "released")
}

// newTestSupervisor is a supervisor for sh workers without signals.
func newTestSupervisor(t *testing.T) (*supervisor, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	log, err := newLogger(&logs, "debug", "debug", func(string) string { return "" })
	require.NoError(t, err)
	gate := newSignalGate(nil, nil, log)
	t.Cleanup(gate.Stop)
	return &supervisor{gate: gate, log: log, grace: 5 * time.Second, restartDelay: time.Millisecond,
		stdout: &logs, stderr: &logs}, &logs
}

func shWorker(t *testing.T, rank int, script string, args ...string) *deviceWorker {
	t.Helper()
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	return &deviceWorker{rank: rank, path: sh, args: append([]string{"sh", "-c", script, "w"}, args...),
		env: []string{"PATH=" + os.Getenv("PATH"), fmt.Sprintf("%s=%d", EnvDeviceRank, rank)}}
}

// TestSupervisorPinAfterStart: without the launcher's executable the
// worker is pinned right after it started (the fallback); a process it
// starts afterwards runs on those CPUs.
func TestSupervisorPinAfterStart(t *testing.T) {
	needLinux(t)
	allowed, err := allowedCPUs()
	require.NoError(t, err)
	target := allowed[len(allowed)-1]
	s, logs := newTestSupervisor(t)
	out := filepath.Join(t.TempDir(), "cpus")
	w := shWorker(t, 0, `sleep 0.2; sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > "$1"`, out)
	w.cpus = []int{target}
	code, err := s.run(t.Context(), []*deviceWorker{w})
	require.NoError(t, err)
	require.Equal(t, 0, code, logs.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(target), strings.TrimSpace(string(b)))
}

// TestSupervisorCancelDuringRestartDelay: a cancelled launch stops the
// running workers and drops a pending restart; the failed worker's code
// is the result.
func TestSupervisorCancelDuringRestartDelay(t *testing.T) {
	s, logs := newTestSupervisor(t)
	s.restart, s.maxRestarts, s.restartDelay = true, 5, time.Hour
	dir := t.TempDir()
	fail := shWorker(t, 0, `exit 9`)
	run := shWorker(t, 1, `touch "$1/ready"; while :; do sleep 0.02; done`, dir)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code, err := s.run(ctx, []*deviceWorker{fail, run})
		require.NoError(t, err)
		done <- code
	}()
	waitForFile(t, filepath.Join(dir, "ready"), 10*time.Second)
	waitFor(t, func() bool { return strings.Contains(logs.String(), "restarting it") })
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 9, code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor did not end after cancel")
	}
	require.Equal(t, 1, fail.restarts, "counted once, never started again")
}

// TestPerDeviceSignalDuringRestartDelay: a signal while the only worker
// waits for its restart ends the launch at once with the worker's code;
// it is not started again.
func TestPerDeviceSignalDuringRestartDelay(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 1
	out := t.TempDir()
	sigs := make(chan os.Signal, 1)
	done := make(chan runResult, 1)
	go func() {
		done <- runMain(t, h, fixedSpecs(gpuSpec(1)), sigs, "--per-device", "--on-failure", "restart",
			"--restart-delay", "1h", "--", "sh", "-c", `echo x >> "$1/starts"; exit 3`, "w", out)
	}()
	waitForFile(t, filepath.Join(out, "starts"), 10*time.Second)
	time.Sleep(50 * time.Millisecond) // let the launcher see the exit (either order ends the same)
	sigs <- syscall.SIGTERM
	select {
	case r := <-done:
		require.Equal(t, 3, r.code, r.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("launcher waited for the restart delay after SIGTERM")
	}
	b, err := os.ReadFile(filepath.Join(out, "starts"))
	require.NoError(t, err)
	require.Equal(t, "x\n", string(b))
	require.Empty(t, h.Held("gpu"))
}

// TestSupervisorKillsAfterGrace: a worker that ignores the SIGTERM of a
// stop gets SIGKILL once the grace period is over; the failing worker's
// code stays the result.
func TestSupervisorKillsAfterGrace(t *testing.T) {
	s, logs := newTestSupervisor(t)
	s.grace = 200 * time.Millisecond
	dir := t.TempDir()
	stubborn := shWorker(t, 0, `trap '' TERM; touch "$1/ready"; while :; do sleep 0.02; done`, dir)
	failing := shWorker(t, 1, `while [ ! -e "$1/ready" ]; do sleep 0.01; done; exit 2`, dir)
	code, err := s.run(t.Context(), []*deviceWorker{stubborn, failing})
	require.NoError(t, err)
	require.Equal(t, 2, code, logs.String())
	require.Contains(t, logs.String(), "worker outlived the grace period: killing")
	require.Contains(t, logs.String(), "exit_code=\"137 (signal killed)\"")
}
