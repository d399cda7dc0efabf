package examples

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/amd"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/launch"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/driver/plugin"
)

var update = flag.Bool("update", false, "rewrite the golden probe reports")

func TestProbeExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	t.Chdir(root) // the examples' sysfs-root params are relative to the repository root
	state := filepath.Join(t.TempDir(), "coordination.state")

	reg := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(reg))
	for _, register := range []func(*driver.Registry) error{pci.Register, amd.Register, plugin.Register} {
		if err := register(reg); err != nil {
			require.ErrorIs(t, err, driver.ErrDuplicateFactory, "already built in")
		}
	}
	getenv := func(k string) string {
		if k == plugin.EnvPluginsDir {
			return "driver/examples/plugins"
		}
		return ""
	}
	for _, name := range []string{"two-fpgas", "four-amd-gpus", "plugin-fpga"} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := launch.Main(context.Background(), []string{
				"probe", "--json", "--conf", "driver/examples/" + name + ".yaml",
				"-D", "external-resource." + resourceOf(name) + ".param.coordination.file=" + state,
			}, launch.Env{
				Getenv: getenv, Stdout: &stdout, Stderr: &stderr,
				Registry: plugin.Registry{Base: reg, Getenv: getenv},
			})
			require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			got := strings.ReplaceAll(stdout.String(), state, "/var/tmp/xres/coordination.state")
			golden := filepath.Join("driver/examples/testdata", name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), got)
		})
	}
}

func resourceOf(example string) string {
	if strings.Contains(example, "gpu") {
		return "gpu"
	}
	return "fpga"
}
