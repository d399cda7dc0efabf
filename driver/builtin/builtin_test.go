package builtin_test

import (
	"fmt"
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

// check's advice for a GPU host: a missing NVML helper is named as such,
// not taken for a host without the NVIDIA driver.
func TestDiagnoseDiscoverNVML(t *testing.T) {
	missing := fmt.Errorf("discover gpu: %w: %w: xres-nvml is not beside the launcher", gpu.ErrNVMLUnavailable, gpu.ErrNVMLHelperMissing)
	d := builtin.DiagnoseDiscover(missing, 2, false)
	require.Equal(t, gpu.ParamSource, d.Param)
	require.Contains(t, d.Fix, "install xres-nvml beside container-launcher")

	noLib := fmt.Errorf("discover gpu: %w: NVML helper /x/xres-nvml exited 3: init: ERROR_LIBRARY_NOT_FOUND", gpu.ErrNVMLUnavailable)
	d = builtin.DiagnoseDiscover(noLib, 2, false)
	require.Contains(t, d.Fix, "install the NVIDIA driver")
}
