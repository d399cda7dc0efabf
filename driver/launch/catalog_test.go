package launch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/plugin"
	"github.com/xres/xres/resources"
)

// The factory catalog `am resources` checks against (resources, which
// cannot import the drivers) names exactly what the launcher registers.
func TestFactoryCatalogMatchesRegistry(t *testing.T) {
	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	require.Equal(t, r.Names(), resources.BuiltinFactoryNames())
	require.Equal(t, plugin.ClassPrefix, resources.PluginPrefix)
}
