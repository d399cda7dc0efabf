package driver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

// FuzzEnvTokenAgrees: resources.EnvToken, by which configurations with
// names colliding in XRES_RESOURCE_* are refused, is the launcher's
// mangling (EnvToken) for every input.
func FuzzEnvTokenAgrees(f *testing.F) {
	for _, s := range []string{"gpu", "GPU", "gpu-a", "gpu.a", "pci.bus-id", "é", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, EnvToken(s), resources.EnvToken(s))
	})
}
