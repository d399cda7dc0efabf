package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources"
)

// TestRunRealDrivers runs the launcher in-process with the built-in
// drivers on fake hosts (driver/gpu's fake nvidia-smi, driver/amd's fake
// sysfs tree) and checks the vendor variables the worker sees.
func TestRunRealDrivers(t *testing.T) {
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	require.NoError(t, err)
	amdSysfs, err := filepath.Abs("../amd/testdata/four-gpus/sys")
	require.NoError(t, err)
	state := filepath.Join(t.TempDir(), "coord.state")
	tests := []struct {
		name  string
		spec  resources.Spec
		check string // shell test the worker runs
	}{
		{
			name: "NVIDIA via Flink's factory class, nvidia-smi",
			spec: resources.Spec{Name: "gpu", Amount: 2, Factory: "org.apache.flink.externalresource.gpu.GPUDriverFactory",
				Params: map[string]string{"discovery.source": "nvidia-smi", "coordination.file": state}},
			check: `test "$CUDA_VISIBLE_DEVICES" = 0,1 && test "$XRES_RESOURCE_GPU_UUID" = GPU-00000000-0000-4000-8000-000000000000,GPU-00000000-0000-4000-8000-000000000001 && test -z "$ROCR_VISIBLE_DEVICES"`,
		},
		{
			name: "AMD, KFD topology",
			spec: resources.Spec{Name: "amdgpu", Amount: 2, Factory: "xres.amd-gpu",
				Params: map[string]string{"sysfs-root": amdSysfs, "coordination.file": state}},
			check: `test "$ROCR_VISIBLE_DEVICES" = GPU-74ec1f464356ea00,GPU-ac9a80b87e94126a && test "$HIP_VISIBLE_DEVICES" = 0,1 && test "$XRES_RESOURCE_AMDGPU_GFX" = gfx90a,gfx90a && test -z "$CUDA_VISIBLE_DEVICES"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := builtin.NewRegistry(func(string) string { return "" })
			require.NoError(t, err)
			var stderr syncBuffer
			code := Main(t.Context(), []string{"--", "sh", "-c", tc.check}, Env{
				Getenv: func(k string) string {
					return map[string]string{"TMPDIR": t.TempDir(), "PATH": fakebin + ":" + os.Getenv("PATH")}[k]
				},
				Environ:  []string{"PATH=" + fakebin + ":" + os.Getenv("PATH"), "XRES_FAKE_GPUS=4"},
				Stderr:   &stderr,
				Registry: reg,
				Load:     fixedSpecs(tc.spec),
			})
			require.Equal(t, 0, code, stderr.String())
		})
	}
}
