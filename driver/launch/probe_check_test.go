package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// fullRegistry holds the fake host's factory, the built-in drivers and
// the plugins under testdata/plugins, as the command's registry does.
func fullRegistry(t *testing.T, h *fakeHost) Registry {
	t.Helper()
	r, err := builtin.Over(registryWith(h).Registry, func(k string) string {
		return map[string]string{"XRES_PLUGINS_DIR": "testdata/plugins"}[k]
	})
	require.NoError(t, err)
	return r
}

func runSub(t *testing.T, reg Registry, load Loader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = Main(ctx, args, Env{
		Getenv:   func(string) string { return "" },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Stdout:   &out,
		Stderr:   &errb,
		Registry: reg,
		Load:     load,
	})
	return code, out.String(), errb.String()
}

func TestProbe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "coord.state")
	// This test process holds device "3" of gpu in the state file.
	host, err := coord.New(coord.Options{StateFile: state})
	require.NoError(t, err)
	_, err = host.Reserve(context.Background(), "gpu", []string{"3"}, 1, false)
	require.NoError(t, err)

	gpu := gpuSpec(2)
	gpu.Params = map[string]string{ParamVendor: "nvidia", "coordination.file": state}
	tests := []struct {
		name    string
		specs   []resources.Spec
		code    int
		check   func(t *testing.T, rep ProbeReport)
		devices int
	}{
		{
			name:  "what a launcher would get, and who holds what",
			specs: []resources.Spec{gpu},
			check: func(t *testing.T, rep ProbeReport) {
				r := rep.Resources[0]
				require.Empty(t, r.Error)
				require.Equal(t, []resources.Properties{{"index": "0"}, {"index": "1"}}, r.Devices)
				require.Equal(t, "0,1", r.Env["CUDA_VISIBLE_DEVICES"])
				require.Equal(t, "nvidia", r.Vendor)
				require.Equal(t, "xres", r.Coordination.Mode)
				require.Equal(t, state, r.Coordination.StateFile)
				require.Len(t, r.Coordination.Holders, 1)
				require.Equal(t, "3", r.Coordination.Holders[0].Device)
				require.Equal(t, os.Getpid(), r.Coordination.Holders[0].PID)
				require.True(t, r.Coordination.Holders[0].Alive)
			},
		},
		{
			name:  "a failing resource carries its error and exit code",
			specs: []resources.Spec{fpgaSpec(5)},
			code:  ExitDiscovery,
			check: func(t *testing.T, rep ProbeReport) {
				require.Contains(t, rep.Resources[0].Error, "not enough devices")
				require.Equal(t, ExitDiscovery, rep.Resources[0].ExitCode)
			},
		},
		{
			name:  "coordination off",
			specs: []resources.Spec{{Name: "gpu", Amount: 1, Factory: "fake", Params: map[string]string{"coordination.enabled": "false"}}},
			check: func(t *testing.T, rep ProbeReport) {
				require.Equal(t, "off", rep.Resources[0].Coordination.Mode)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = 4
			h.devices["fpga"] = 2
			code, stdout, stderr := runSub(t, registryWith(h), fixedSpecs(tc.specs...), "probe", "--json")
			require.Equal(t, tc.code, code, stderr)
			var rep ProbeReport
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
			require.Equal(t, tc.code, rep.ExitCode)
			require.Len(t, rep.Resources, len(tc.specs))
			tc.check(t, rep)
			require.Empty(t, h.Held("gpu"), "probe holds nothing")
			require.Empty(t, h.Held("fpga"), "probe holds nothing")
			require.Equal(t, len(tc.specs), h.dryRuns, "drivers are built for a dry run")

			// The text form says the same.
			code, text, _ := runSub(t, registryWith(h), fixedSpecs(tc.specs...), "probe")
			require.Equal(t, tc.code, code)
			require.Contains(t, text, tc.specs[0].Name+": amount")
		})
	}
}

func TestProbeText(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 4
	h.props["gpu"] = []string{"uuid"}
	_, text, _ := runSub(t, registryWith(h), fixedSpecs(gpuSpec(2)), "probe")
	for _, want := range []string{
		"gpu: amount 2, driver fake, yarn yarn.io/gpu",
		"would get:",
		"INDEX  UUID",
		"0      gpu-uuid-0",
		"env CUDA_VISIBLE_DEVICES=0,1",
		"coordination: on, state file " + coord.DefaultStateFile,
	} {
		require.Contains(t, text, want)
	}
	code, text, _ := runSub(t, registryWith(h), fixedSpecs(), "probe")
	require.Zero(t, code)
	require.Contains(t, text, "no external resources configured")
	code, _, stderr := runSub(t, registryWith(h), nil, "probe", "--conf", "testdata/conf/bad-amount")
	require.Equal(t, ExitConfig, code, stderr)
}

func TestCheck(t *testing.T) {
	tmp := t.TempDir()
	coordOK := "-Dexternal-resource.gpu.param.coordination.file=" + filepath.Join(tmp, "coord.state")
	script := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata/check", name))
		require.NoError(t, err)
		return "-Dexternal-resource.gpu.param.discovery-script.path=" + p
	}
	tests := []struct {
		name    string
		args    []string
		devices int
		code    int
		want    []string // substrings of stdout
	}{
		{name: "clean", args: []string{"--conf", "testdata/check/ok.yaml", coordOK}, devices: 2,
			want: []string{"checking testdata/check/ok.yaml", "ok      gpu: a launcher would get 1 device(s): 0", "no problems found"}},
		{name: "misspelled resource", args: []string{"--conf", "testdata/check/typo.yaml", coordOK}, devices: 2, code: ExitConfig,
			want: []string{"error   external-resource.gpus.amount (testdata/check/typo.yaml:2):", "did you mean gpu?"}},
		{name: "unknown factory", args: []string{"--conf", "testdata/check/unknown-factory.yaml", coordOK}, devices: 2, code: ExitConfig,
			want: []string{"error   external-resource.gpu.driver-factory.class (testdata/check/unknown-factory.yaml:4):", `"com.example.MissingPluginFactory" is not known`, "Flink plugin jars are not loaded"}},
		{name: "coordination off is a warning", args: []string{"--conf", "testdata/check/coordination-off.yaml"}, devices: 2,
			want: []string{"warning external-resource.gpu.param.coordination.enabled (testdata/check/coordination-off.yaml:5): host coordination is off", "0 error(s), 1 warning(s)"}},
		{name: "coordination off fails --strict", args: []string{"--strict", "--conf", "testdata/check/coordination-off.yaml"}, devices: 2, code: ExitConfig,
			want: []string{"host coordination is off"}},
		{name: "coordination directory not writable", args: []string{"--conf", "testdata/check/ok.yaml", "-Dexternal-resource.gpu.param.coordination.file=/proc/xres-test/state"}, devices: 2, code: ExitDiscovery,
			want: []string{"error   external-resource.gpu.param.coordination.file (-D): host coordination cannot work", "/proc/xres-test"}},
		{name: "no devices on this host", args: []string{"--conf", "testdata/check/ok.yaml", coordOK}, devices: 0, code: ExitDiscovery,
			want: []string{"trial discovery of 1 device(s) failed", "not enough devices"}},
		{name: "script missing", args: []string{"--conf", "testdata/check/script.yaml", "-Dexternal-resource.gpu.param.discovery-script.path=/nonexistent/discover.sh"}, code: ExitDiscovery,
			want: []string{"error   external-resource.gpu.param.discovery-script.path (-D):", "/nonexistent/discover.sh", "install the discovery script"}},
		{name: "script not executable", args: []string{"--conf", "testdata/check/script.yaml", script("not-executable.sh")}, code: ExitDiscovery,
			want: []string{"not-executable.sh", "chmod +x"}},
		{name: "script exits non-zero", args: []string{"--conf", "testdata/check/script.yaml", script("failing-script.sh")}, code: ExitDiscovery,
			want: []string{"trial discovery of 1 device(s) failed", "failing-script.sh", "no GPUs on this box", "run the script by hand"}},
		{name: "script fine", args: []string{"--conf", "testdata/check/script.yaml", script("good-script.sh")},
			want: []string{"no problems found"}},
		// Issue 12, finding 4: check tries the configured amount.
		{name: "script prints too few for the amount", args: []string{"--conf", "testdata/check/script.yaml", "-Dexternal-resource.gpu.amount=2", script("one-index.sh")}, code: ExitDiscovery,
			want: []string{"trial discovery of 2 device(s) failed", "one-index.sh", "2 requested, it printed 1", "must print 2 distinct"}},
		{name: "script repeats an index", args: []string{"--conf", "testdata/check/script.yaml", "-Dexternal-resource.gpu.amount=2", script("repeated-index.sh")}, code: ExitDiscovery,
			want: []string{"trial discovery of 2 device(s) failed", "repeated-index.sh"}},
		{name: "plugin missing", args: []string{"--conf", "testdata/check/ok.yaml", coordOK, "-Dexternal-resource.gpu.driver-factory.class=plugin:nosuch"}, code: ExitDiscovery,
			want: []string{"error   external-resource.gpu.driver-factory.class (-D):", "nosuch", "install the plugin executable"}},
		{name: "unknown factory suggests a plugin", args: []string{"--conf", "testdata/check/ok.yaml", coordOK, "-Dexternal-resource.gpu.driver-factory.class=nosuch"}, code: ExitConfig,
			want: []string{"is not known", "xres.gpu", "xres.amd-gpu", "xres.pci", "install a device plugin as ", "/plugins/nosuch/nosuch"}},
		{name: "misspelt Flink factory", args: []string{"--conf", "testdata/check/ok.yaml", coordOK, "-Dexternal-resource.gpu.driver-factory.class=org.apache.flink.externalresource.gpu.GpuDriverFactory"}, code: ExitConfig,
			want: []string{"is not known", "did you mean org.apache.flink.externalresource.gpu.GPUDriverFactory?"}},
		{name: "--resources names an unlisted resource", args: []string{"--conf", "testdata/check/ok.yaml", coordOK, "--resources", "fpga"}, devices: 2, code: ExitConfig,
			want: []string{`"fpga" is not a configured resource`}},
		{name: "--resources skips the failing resource", args: []string{"--conf", "testdata/check/ok.yaml", coordOK, "-Dexternal-resources=gpu;tpu", "-Dexternal-resource.tpu.amount=1",
			"-Dexternal-resource.tpu.yarn.config-key=x/tpu", "-Dexternal-resource.tpu.driver-factory.class=nosuch", "--resources", "gpu"}, devices: 2,
			want: []string{"no problems found"}},
		{name: "missing config file", args: []string{"--conf", "testdata/check/nope.yaml"}, code: ExitConfig,
			want: []string{"error", "testdata/check/nope.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = tc.devices
			code, stdout, stderr := runSub(t, fullRegistry(t, h), nil, append([]string{"check"}, tc.args...)...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if strings.HasPrefix(line, "error") || strings.HasPrefix(line, "warning") {
					require.Contains(t, line, "(fix: ", "every problem has a fix: %s", line)
				}
			}
			require.Empty(t, h.Held("gpu"), "check holds nothing")
		})
	}
}

// Issue 12: "-D some.password hunter2" (a space instead of '=') stops at the
// key; the value is named nowhere, nor run as a worker.
func TestDynamicWithSpaceHidesValue(t *testing.T) {
	for _, args := range [][]string{
		{"check", "-D", "some.password", "hunter2"},
		{"probe", "-D", "some.password", "hunter2"},
		{"-D", "some.password", "hunter2", "--", "true"},
		{"-Dsome.password", "hunter2", "--", "true"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runSub(t, fullRegistry(t, newFakeHost()), fixedSpecs(), args...)
			require.Equal(t, ExitUsage, code, stderr)
			require.Contains(t, stderr, "some.password")
			require.NotContains(t, stdout+stderr, "hunter2")
		})
	}
}

func TestProbeAndCheckUsage(t *testing.T) {
	for _, args := range [][]string{{"probe", "extra"}, {"check", "--nope"}, {"probe", "--log-level", "chatty"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := runSub(t, driver.NewRegistry(), fixedSpecs(), args...)
			require.Equal(t, ExitUsage, code)
			require.Contains(t, stderr, "usage:")
		})
	}
	code, stdout, _ := runSub(t, driver.NewRegistry(), fixedSpecs(), "help")
	require.Zero(t, code)
	require.True(t, bytes.Contains([]byte(stdout), []byte("container-launcher probe")))
}

// TestProbeFlinkScriptHolders: a Flink discovery script in coordination
// mode keeps "<index> <pid>" lines; probe shows them with liveness.
func TestProbeFlinkScriptHolders(t *testing.T) {
	file := filepath.Join(t.TempDir(), "flink-gpu-coordination")
	require.NoError(t, os.WriteFile(file, []byte("0 "+strconv.Itoa(os.Getpid())+"\n1 2147483646\n"), 0o644))
	scriptPath, err := filepath.Abs("testdata/check/good-script.sh")
	require.NoError(t, err)
	spec := resources.Spec{Name: "gpu", Amount: 1, Factory: "org.apache.flink.externalresource.gpu.GPUDriverFactory", Params: map[string]string{
		"discovery-script.path": scriptPath,
		"discovery-script.args": "--enable-coordination-mode --coordination-file " + file,
	}}
	code, stdout, stderr := runSub(t, fullRegistry(t, newFakeHost()), fixedSpecs(spec), "probe", "--json")
	require.Zero(t, code, stderr)
	var rep ProbeReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	co := rep.Resources[0].Coordination
	require.Equal(t, "script", co.Mode)
	require.Equal(t, file, co.StateFile)
	require.Equal(t, []ProbeHolder{{Device: "0", PID: os.Getpid(), Alive: true}, {Device: "1", PID: 2147483646}}, co.Holders)
	require.Equal(t, []resources.Properties{{"index": "0"}}, rep.Resources[0].Devices)
}

// Issue 12: a failing discovery script's error hides the values of its
// secret-looking args (conf.RedactArgs).
func TestCheckHidesSecretScriptArgs(t *testing.T) {
	p, err := filepath.Abs("testdata/check/failing-script.sh")
	require.NoError(t, err)
	code, stdout, stderr := runSub(t, fullRegistry(t, newFakeHost()), nil, "check", "--conf", "testdata/check/script.yaml",
		"-Dexternal-resource.gpu.param.discovery-script.path="+p,
		"-Dexternal-resource.gpu.param.discovery-script.args=--enable-coordination-mode --api-token s3cr3t")
	require.Equal(t, ExitDiscovery, code, stderr)
	require.Contains(t, stdout, "--api-token (hidden)")
	require.NotContains(t, stdout+stderr, "s3cr3t")
}

// Issue 29: a discovery script or device plugin missing (or not
// executable) on this host is a problem of the host, the same in a run,
// check and probe: exit 212 (ExitDiscovery), so that the AM blacklists
// the host and tries another, as check's advice (install it on every
// worker host) implies. Malformed params stay exit 211 everywhere.
func TestNotInstalledHereIsTheHostsEverywhere(t *testing.T) {
	tmp := t.TempDir()
	coordOK := "-Dexternal-resource.gpu.param.coordination.file=" + filepath.Join(tmp, "coord.state")
	notExec, err := filepath.Abs("testdata/check/not-executable.sh")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"script missing", []string{"-Dexternal-resource.gpu.param.discovery-script.path=" + filepath.Join(tmp, "nosuch.sh")}, ExitDiscovery},
		{"script not executable", []string{"-Dexternal-resource.gpu.param.discovery-script.path=" + notExec}, ExitDiscovery},
		{"plugin missing", []string{coordOK, "-Dexternal-resource.gpu.driver-factory.class=plugin:nosuch"}, ExitDiscovery},
		{"malformed param", []string{"-Dexternal-resource.gpu.param.discovery-script.protocol=slurm",
			"-Dexternal-resource.gpu.param.discovery-script.path=" + filepath.Join(tmp, "nosuch.sh")}, ExitConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--conf", "testdata/check/script.yaml"}, tc.args...)
			reg := fullRegistry(t, newFakeHost())
			code, _, stderr := runSub(t, reg, nil, append(args, "--", "true")...)
			require.Equal(t, tc.code, code, "run: %s", stderr)
			code, stdout, _ := runSub(t, reg, nil, append([]string{"check"}, args...)...)
			require.Equal(t, tc.code, code, "check: %s", stdout)
			code, stdout, _ = runSub(t, reg, nil, append([]string{"probe"}, args...)...)
			require.Equal(t, tc.code, code, "probe: %s", stdout)
		})
	}
}

// Issue 29: launchers that reserved nothing because the coordination
// state is corrupt fail with the state's error alone (exit 212): no
// "release devices" error after it, and no resource named twice.
func TestCorruptStateReleasesNothing(t *testing.T) {
	sysfs, err := filepath.Abs("../pci/testdata/two-fpgas/sys")
	require.NoError(t, err)
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(state, []byte("garbage{{\n"), 0o644))
	spec := resources.Spec{Name: "fpga", Amount: 1, Factory: "xres.pci",
		Params: map[string]string{"vendor": "0x10ee", "sysfs-root": sysfs, "coordination.file": state}}
	code, _, stderr := runSub(t, fullRegistry(t, newFakeHost()), fixedSpecs(spec), "--", "true")
	require.Equal(t, ExitDiscovery, code, stderr)
	require.Contains(t, stderr, "coordination state file is corrupt")
	require.NotContains(t, stderr, "release devices")
	require.NotContains(t, stderr, "release fpga")
	after, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Equal(t, "garbage{{\n", string(after), "left as it was for the operator")
}

// A releaser's error that names its resource already is not named again.
func TestReleaseNamesTheResourceOnce(t *testing.T) {
	r := &Reservation{log: driver.LoggerOrDiscard(nil), held: []held{
		{name: "gpu", rel: releaseFunc(func() error { return errors.New("release gpu: state not writable") })},
		{name: "acc", rel: releaseFunc(func() error { return errors.New("daemon gone") })},
	}}
	err := r.Release(context.Background())
	require.EqualError(t, err, "release acc: daemon gone\nrelease gpu: state not writable")
}

type releaseFunc func() error

func (f releaseFunc) Release(context.Context) error { return f() }

// Issue 29: a worker command that reads as a mistyped (or misplaced)
// subcommand is a usage error naming both, unless -- says a worker is
// meant; help for a subcommand is its own and exits 0.
func TestSubcommandMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr, or in stdout for code 0
	}{
		{[]string{"chek"}, ExitUsage, `"chek" is not a subcommand (did you mean "check"?); to run a worker named chek, put -- before it`},
		{[]string{"--strict", "probe"}, ExitUsage, `"probe" is a subcommand: give it first`},
		{[]string{"--cnof", "x", "--", "true"}, ExitUsage, "unknown flag --cnof; did you mean --conf?"},
		{[]string{"help", "prob"}, ExitUsage, `did you mean "probe"?`},
		{[]string{"check", "--help"}, ExitOK, "container-launcher check [flags]"},
		{[]string{"help", "probe"}, ExitOK, "--json"},
		{[]string{"-version"}, ExitOK, "container-launcher"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runSub(t, driver.NewRegistry(), fixedSpecs(), tc.args...)
			require.Equal(t, tc.code, code, stderr)
			if tc.code == ExitOK {
				require.Contains(t, stdout, tc.want)
				require.Empty(t, stderr)
			} else {
				require.Contains(t, stderr, tc.want)
			}
		})
	}
	for _, w := range []string{"python", "./chek", "echo", "true"} {
		require.NoError(t, notASubcommand(w, false), w)
	}
	require.NoError(t, notASubcommand("chek", true), "after --")
}
