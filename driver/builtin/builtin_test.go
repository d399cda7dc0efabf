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
