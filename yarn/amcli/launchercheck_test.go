package amcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/launch"
	"github.com/xres/xres/resources"
)

// launcherRun runs container-launcher (launch.Main, with the command's
// registry) with args in an environment of envs alone.
func launcherRun(t *testing.T, envs map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	getenv := func(k string) string { return envs[k] }
	reg, err := builtin.NewRegistry(getenv)
	require.NoError(t, err)
	var out, errb lockedBuffer // the worker's output is copied in by exec's goroutines
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = launch.Main(ctx, args, launch.Env{Getenv: getenv, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Dir: t.TempDir(), Stdout: &out, Stderr: &errb, Registry: reg})
	return code, out.String(), errb.String()
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAmRefusesWhatEveryLauncherRefuses: each configuration goes through a
// launch (container-launcher -- true), container-launcher check and am
// resources (whose checks am submit shares, workerSpecs). What every
// launcher refuses with exit 211, whatever its host, am resources refuses
// too (exit 3), with the launcher's own message; what a launcher accepts,
// or refuses only for its host (212: a script or plugin not installed
// there), am resources accepts.
func TestAmRefusesWhatEveryLauncherRefuses(t *testing.T) {
	dir := t.TempDir()
	sysfs, err := filepath.Abs(filepath.Join("..", "..", "driver", "pci", "testdata", "two-fpgas", "sys"))
	require.NoError(t, err)
	state := filepath.Join(dir, "coordination.state")
	flinkFile := filepath.Join(dir, "flink-gpu-coordination")
	fpga := func(lines ...string) []string {
		return append([]string{
			"external-resources: fpga",
			"external-resource.fpga.amount: 1",
			"external-resource.fpga.yarn.config-key: yarn.io/fpga",
			"external-resource.fpga.driver-factory.class: org.apache.flink.externalresource.fpga.FPGADriverFactory",
			"external-resource.fpga.param.sysfs-root: " + sysfs,
			"external-resource.fpga.param.coordination.file: " + state,
		}, lines...)
	}
	gpu := func(lines ...string) []string {
		return append([]string{
			"external-resources: gpu",
			"external-resource.gpu.amount: 1",
			"external-resource.gpu.yarn.config-key: yarn.io/gpu",
			"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		}, lines...)
	}
	withFactory := func(class string, lines ...string) []string {
		return append([]string{
			"external-resources: acc",
			"external-resource.acc.amount: 1",
			"external-resource.acc.yarn.config-key: yarn.io/acc",
			"external-resource.acc.driver-factory.class: " + class,
			"external-resource.acc.param.coordination.file: " + state,
		}, lines...)
	}
	// The README's worker groups with the prep group's FPGA as the seed had
	// it: no param.vendor.
	groups := []string{
		"xres.worker-groups: trainer;prep",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"xres.worker-group.trainer.external-resources: gpu",
		"xres.worker-group.trainer.external-resource.gpu.amount: 4",
		"xres.worker-group.trainer.workers: 2",
		"xres.worker-group.prep.external-resources: fpga",
		"xres.worker-group.prep.external-resource.fpga.amount: 1",
		"xres.worker-group.prep.external-resource.fpga.yarn.config-key: yarn.io/fpga",
		"xres.worker-group.prep.external-resource.fpga.driver-factory.class: org.apache.flink.externalresource.fpga.FPGADriverFactory",
		"xres.worker-group.prep.external-resource.fpga.param.sysfs-root: " + sysfs,
		"xres.worker-group.prep.external-resource.fpga.param.coordination.file: " + state,
		"xres.worker-group.prep.workers: 3",
	}

	tests := []struct {
		name  string
		lines []string
		group string // XRES_WORKER_GROUP of the launcher
		// refused: the launcher's message (after "config error (exit
		// 211): "), which am resources must give as its one error; ""
		// means every side accepts it.
		refused string
		// launch is the launcher's exit code when it accepts (0 or a
		// failure of this host).
		launch int
	}{
		{name: "FPGA without param.vendor (the seed's worker groups)", lines: groups, group: "prep",
			refused: "create driver org.apache.flink.externalresource.fpga.FPGADriverFactory for resource fpga: external-resource.fpga.param.vendor: missing; name the PCI vendor id, e.g. 0x10ee: invalid driver param"},
		{name: "FPGA without param.vendor", lines: fpga(),
			refused: "create driver org.apache.flink.externalresource.fpga.FPGADriverFactory for resource fpga: external-resource.fpga.param.vendor: missing; name the PCI vendor id, e.g. 0x10ee: invalid driver param"},
		{name: "FPGA vendor not hex", lines: fpga("external-resource.fpga.param.vendor: xilinx"),
			refused: "create driver org.apache.flink.externalresource.fpga.FPGADriverFactory for resource fpga: external-resource.fpga.param.vendor: "},
		{name: "FPGA class not hex", lines: fpga("external-resource.fpga.param.vendor: 0x10ee", "external-resource.fpga.param.class: accel"),
			refused: "create driver org.apache.flink.externalresource.fpga.FPGADriverFactory for resource fpga: external-resource.fpga.param.class: "},
		{name: "coordination.file is Flink's --coordination-file", lines: gpu(
			"external-resource.gpu.param.discovery-script.args: --enable-coordination-mode --coordination-file "+flinkFile,
			"external-resource.gpu.param.coordination.file: "+flinkFile),
			refused: "create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: external-resource.gpu.param.coordination.file is Flink's coordination file"},
		{name: "coordination.enabled not a bool", lines: gpu("external-resource.gpu.param.coordination.enabled: maybe"),
			refused: `create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: external-resource.gpu.param.coordination.enabled: "maybe", want true or false: invalid driver param`},
		{name: "GPU mig.profile without a MIG strategy", lines: gpu("external-resource.gpu.param.mig.profile: 1g.10gb"),
			refused: "create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: invalid driver param external-resource.gpu.param.mig.profile: "},
		{name: "GPU source unknown", lines: gpu("external-resource.gpu.param.discovery.source: cuda"),
			refused: "create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: external-resource.gpu.param.discovery.source: "},
		{name: "GPU script protocol unknown", lines: gpu("external-resource.gpu.param.discovery-script.path: "+filepath.Join(dir, "nosuch.sh"),
			"external-resource.gpu.param.discovery-script.protocol: slurm"),
			refused: "create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: external-resource.gpu.param.discovery-script.protocol: "},
		{name: "GPU script timeout not a duration", lines: gpu("external-resource.gpu.param.discovery-script.timeout: soon"),
			refused: "create driver org.apache.flink.externalresource.gpu.GPUDriverFactory for resource gpu: external-resource.gpu.param.discovery-script.timeout: "},
		{name: "AMD source unknown", lines: withFactory("xres.amd-gpu", "external-resource.acc.param.source: opencl"),
			refused: "create driver xres.amd-gpu for resource acc: external-resource.acc.param.source: "},
		{name: "xres.plugin without param.plugin", lines: withFactory("xres.plugin"),
			refused: "create driver xres.plugin for resource acc: external-resource.acc.param.plugin: missing; name the plugin directory or executable: invalid driver param"},
		{name: "plugin:<dir> and another param.plugin", lines: withFactory("plugin:a", "external-resource.acc.param.plugin: b"),
			refused: `create driver plugin:a for resource acc: external-resource.acc.driver-factory.class names plugin "a" but external-resource.acc.param.plugin names "b"; keep one: invalid driver param`},
		{name: "plugin timeout not positive", lines: withFactory("plugin:a", "external-resource.acc.param.timeout: 0 s"),
			refused: `create driver plugin:a for resource acc: external-resource.acc.param.timeout: "0 s" must be positive: invalid driver param`},
		{name: "xres.discovery.timeout not a duration", lines: fpga("external-resource.fpga.param.vendor: 0x10ee", "xres.discovery.timeout: later"),
			refused: "config key xres.discovery.timeout ("},
		{name: "xres.rescale.signal one that would stop the worker", lines: fpga("external-resource.fpga.param.vendor: 0x10ee", "xres.rescale.signal: TERM"),
			refused: `xres.rescale.signal: "TERM" is not HUP, USR1, USR2, WINCH`},
		{name: "xres.rescale.interval not positive", lines: fpga("external-resource.fpga.param.vendor: 0x10ee", "xres.rescale.interval: 0 s"),
			refused: "xres.rescale.interval: 0s is not a positive duration"},

		{name: "FPGA with its vendor", lines: fpga("external-resource.fpga.param.vendor: 0x10ee")},
		{name: "a rescaling signal and interval", lines: fpga("external-resource.fpga.param.vendor: 0x10ee", "xres.rescale.signal: SIGUSR1", "xres.rescale.interval: 5 s")},
		{name: "the worker groups with the prep FPGA's vendor", lines: append(groups, "xres.worker-group.prep.external-resource.fpga.param.vendor: 0x10ee"), group: "prep"},
		{name: "a discovery script missing on this host is this host's", lines: gpu(
			"external-resource.gpu.param.discovery-script.path: " + filepath.Join(dir, "nosuch.sh")), launch: resources.LauncherExitDiscovery},
		{name: "a plugin missing on this host is this host's", lines: withFactory("plugin:nosuch"), launch: resources.LauncherExitDiscovery},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, "flink-conf-"+string(rune('a'+i))+".yaml")
			require.NoError(t, os.WriteFile(f, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644))
			envs := map[string]string{"XRES_PLUGINS_DIR": filepath.Join(dir, "plugins")}
			if tc.group != "" {
				envs["XRES_WORKER_GROUP"] = tc.group
			}

			code, _, stderr := launcherRun(t, envs, "--conf", f, "--", "true")
			checkCode, checkOut, _ := launcherRun(t, envs, "check", "--conf", f)
			amCode, amOut, amErr := runAm(t, deps{}, nil, "resources", "--conf", f, "--offline", "--json")
			var rep resourcesReport
			require.NoError(t, json.Unmarshal([]byte(amOut), &rep), amOut+amErr)
			// submit checks before it needs a cluster: without one wired, a
			// configuration it accepts ends in errNotWired (exit 4).
			subCode, _, subErr := runAm(t, deps{}, nil, "submit", "--conf", f, "--", "true")

			if tc.refused == "" {
				require.Equal(t, tc.launch, code, stderr)
				require.NotEqual(t, resources.LauncherExitConfig, checkCode, checkOut)
				require.Equal(t, ExitOK, amCode, amOut+amErr)
				require.Empty(t, rep.Errors)
				require.Equal(t, ExitCluster, subCode, subErr)
				require.Contains(t, subErr, "not wired")
				return
			}
			const prefix = "container-launcher: config error (exit 211): "
			require.Equal(t, resources.LauncherExitConfig, code, stderr)
			require.Contains(t, stderr, prefix+tc.refused)
			line := stderr[strings.Index(stderr, prefix)+len(prefix):]
			line, _, _ = strings.Cut(line, "\n")

			require.Equal(t, resources.LauncherExitConfig, checkCode, checkOut)
			require.Contains(t, checkOut, line, "check gives the launcher's message")

			require.Equal(t, ExitConfig, amCode, amOut+amErr)
			require.Len(t, rep.Errors, 1, amOut)
			require.Equal(t, line, rep.Errors[0].Message, "am resources gives the launcher's message")
			require.Equal(t, ExitConfig, subCode, subErr)
			require.Contains(t, subErr, line, "am submit refuses it with the launcher's message, staging nothing")
			if tc.group != "" {
				require.Equal(t, []string{tc.group}, rep.Errors[0].Groups)
			}
		})
	}
}

// Issue 29: Flink 1.19's nested YAML in the legacy flat flink-conf.yaml is
// refused by am (exit 3) and every launcher (211), naming the file and the
// line, where it gave warnings only and a worker without its GPU.
func TestNestedYAMLInFlatFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(f, []byte("external-resources: gpu\nexternal-resource:\n  gpu:\n    amount: 1\n"+
		"    driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory\n    yarn.config-key: yarn.io/gpu\n"), 0o644))
	want := f + `:2: nested YAML: "external-resource:" opens a block`
	code, _, stderr := runAm(t, deps{}, nil, "resources", "--conf", f, "--offline")
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, stderr, want)
	code, _, stderr = launcherRun(t, nil, "--conf", f, "--", "true")
	require.Equal(t, resources.LauncherExitConfig, code, stderr)
	require.Contains(t, stderr, want)
	code, out, _ := launcherRun(t, nil, "check", "--conf", f)
	require.Equal(t, resources.LauncherExitConfig, code, out)
	require.Contains(t, out, want)
}

// Issue 41: a listed resource without amount, with 0 or a negative amount
// (Flink warns and runs the worker without it), or two names that collide
// in XRES_RESOURCE_*, is refused by every entry point alike: a launch and
// container-launcher check (211), am resources and am submit (3, staging
// nothing), each naming the key. Before, am submit and the launcher only
// warned and ran the worker without its GPU.
func TestEveryEntryPointRefusesABadAmountOrName(t *testing.T) {
	dir := t.TempDir()
	head := []string{
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
	}
	for i, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"amount missing", []string{"external-resources: gpu"}, "external-resource.gpu.amount"},
		{"amount 0", []string{"external-resources: gpu", "external-resource.gpu.amount: 0"}, "external-resource.gpu.amount"},
		{"amount negative", []string{"external-resources: gpu", "external-resource.gpu.amount: -2"}, "external-resource.gpu.amount"},
		{"names colliding in XRES_RESOURCE_*", []string{"external-resources: gpu;GPU", "external-resource.gpu.amount: 1",
			"external-resource.GPU.amount: 1", "external-resource.GPU.yarn.config-key: yarn.io/fpga",
			"external-resource.GPU.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory"},
			`resource names "gpu" and "GPU" collide`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, fmt.Sprintf("flink-conf-%d.yaml", i))
			require.NoError(t, os.WriteFile(f, []byte(strings.Join(append(tc.lines, head...), "\n")+"\n"), 0o644))
			envs := map[string]string{"XRES_PLUGINS_DIR": filepath.Join(dir, "plugins")}
			code, _, stderr := launcherRun(t, envs, "--conf", f, "--", "true")
			require.Equal(t, resources.LauncherExitConfig, code, stderr)
			require.Contains(t, stderr, tc.want)
			code, out, _ := launcherRun(t, envs, "check", "--conf", f)
			require.Equal(t, resources.LauncherExitConfig, code, out)
			require.Contains(t, out, tc.want)
			code, out, errOut := runAm(t, deps{}, nil, "resources", "--conf", f, "--offline")
			require.Equal(t, ExitConfig, code, out+errOut)
			require.Contains(t, out+errOut, tc.want)
			code, _, errOut = runAm(t, deps{}, nil, "submit", "--conf", f, "--", "true")
			require.Equal(t, ExitConfig, code, errOut)
			require.Contains(t, errOut, tc.want)
		})
	}
}
