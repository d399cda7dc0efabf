package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/gpu"
)

func TestRegisterBuiltins(t *testing.T) {
	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	for _, name := range []string{"xres.gpu", "org.apache.flink.externalresource.gpu.GPUDriverFactory"} {
		t.Run(name, func(t *testing.T) {
			f, err := r.Lookup(name)
			require.NoError(t, err)
			// Proof that it is the GPU driver: it validates the GPU params.
			_, err = f.NewDriver(driver.Options{Resource: "gpu", Params: map[string]string{gpu.ParamScriptPath: "/nonexistent/discover.sh"}})
			require.ErrorIs(t, err, gpu.ErrScriptNotFound)
		})
	}
	require.ErrorIs(t, builtin.RegisterBuiltins(r), driver.ErrDuplicateFactory, "registering twice is an error")
}

func TestUnknownParams(t *testing.T) {
	params := map[string]string{"discovery-script.pth": "/x.sh", "mig.strategy": "single", "visible-devices.vendor": "nvidia", "sysfs-root": "/s"}
	require.Equal(t, []string{"discovery-script.pth"}, builtin.UnknownParams("org.apache.flink.externalresource.gpu.GPUDriverFactory", params))
	require.Equal(t, []string{"discovery-script.pth", "mig.strategy"}, builtin.UnknownParams("xres.pci", params))
	require.Empty(t, builtin.UnknownParams("xres.plugin", params), "a plugin takes any param")
	require.Empty(t, builtin.UnknownParams("plugin:fpga", params), "not a built-in")
}
