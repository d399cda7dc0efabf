package acme_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/examples/acme"
	"github.com/xres/xres/driver/launch"
)

// registry is a test registry: the built-in drivers and the one line that
// adds acme.
func registry(t *testing.T) launch.Registry {
	t.Helper()
	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	require.NoError(t, acme.Register(r))
	return r
}

func run(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := launch.Main(context.Background(), args, launch.Env{
		Getenv:   func(string) string { return "" },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Dir:      dir,
		Stdout:   &stdout,
		Stderr:   &stderr,
		Registry: registry(t),
	})
	return code, stdout.String(), stderr.String()
}

// TestNewDriverThroughTheContract: a driver the launcher does not name
// gets its worker's environment and its coordination in probe and check
// through the driver contract alone. On a
// launcher that picks the vendor and the coordination by factory name,
// xres.acme would get no CUDA_VISIBLE_DEVICES and xres's own coordination.
func TestNewDriverThroughTheContract(t *testing.T) {
	dir := t.TempDir()
	daemon := filepath.Join(dir, "acme.coordination")
	// Another worker of this host holds device 2, per the vendor daemon.
	require.NoError(t, os.WriteFile(daemon, []byte(fmt.Sprintf("2 %d\n", os.Getpid())), 0o644))
	conf := []string{
		"-D", "external-resources=acc",
		"-D", "external-resource.acc.amount=2",
		"-D", "external-resource.acc.yarn.config-key=yarn.io/gpu",
		"-D", "external-resource.acc.driver-factory.class=" + acme.FactoryName,
		"-D", "external-resource.acc.param." + acme.ParamDevices + "=0,1,2",
		"-D", "external-resource.acc.param." + acme.ParamLocalCPUs + "=0",
		"-D", "external-resource.acc.param." + acme.ParamFile + "=" + daemon,
	}

	t.Run("probe", func(t *testing.T) {
		code, stdout, stderr := run(t, dir, append([]string{"probe", "--json"}, conf...)...)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		var rep launch.ProbeReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
		require.Len(t, rep.Resources, 1)
		r := rep.Resources[0]
		require.Empty(t, r.Error)
		require.Equal(t, acme.FactoryName, r.Driver)
		require.Equal(t, "nvidia", r.Vendor)
		require.Equal(t, "0,1", r.Env["CUDA_VISIBLE_DEVICES"])
		require.Equal(t, "PCI_BUS_ID", r.Env["CUDA_DEVICE_ORDER"])
		require.Equal(t, driver.CoordScript, r.Coordination.Mode)
		require.Equal(t, daemon, r.Coordination.StateFile)
		require.Len(t, r.Coordination.Holders, 1)
		require.Equal(t, "2", r.Coordination.Holders[0].Device)
		require.Equal(t, os.Getpid(), r.Coordination.Holders[0].PID)
		require.True(t, r.Coordination.Holders[0].Alive)

		code, stdout, stderr = run(t, dir, append([]string{"probe"}, conf...)...)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "  env CUDA_VISIBLE_DEVICES=0,1\n")
		require.Contains(t, stdout, "  coordination: by the discovery script, file "+daemon+"\n")
		require.Contains(t, stdout, fmt.Sprintf("    2 held by pid %d (alive)", os.Getpid()))
	})

	t.Run("check", func(t *testing.T) {
		code, stdout, stderr := run(t, dir, append([]string{"check"}, conf...)...)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stdout, "ok      acc: a launcher would get 2 device(s): 0,1\n")
		require.NotContains(t, stdout, "coordination") // neither off nor xres's state file to test
		require.Contains(t, stdout, "no problems found\n")

		// Coordination off is reported as for any driver.
		off := append([]string{"check"}, conf[:len(conf)-2]...)
		code, stdout, _ = run(t, dir, off...)
		require.Equal(t, 0, code)
		require.Contains(t, stdout, "host coordination is off")
	})

	t.Run("launch", func(t *testing.T) {
		out := filepath.Join(dir, "env")
		code, stdout, stderr := run(t, dir, append(conf, "--", "sh", "-c", `echo "$CUDA_VISIBLE_DEVICES $XRES_RESOURCE_ACC_INDEX" > "$0"`, out)...)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, "0,1 0,1\n", string(b))
	})
}
