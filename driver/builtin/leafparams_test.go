package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// TestLeafParamsAreTheDriversDeclarations: every param resources/params
// checks for a built-in driver (what am checks without the drivers) is one
// that driver declares and lists, with the same name, type, default and
// values; and every factory the registry holds has its check there.
func TestLeafParamsAreTheDriversDeclarations(t *testing.T) {
	byFactory := map[string][]params.Param{
		"xres.gpu": {params.GPUScriptPath, params.GPUScriptProtocol, params.GPUScriptTimeout, params.GPUSource,
			params.GPUSMITimeout, params.GPUMIGStrategy, params.GPUMIGProfile, params.GPUHealth,
			params.GPUYarnAssignment, params.GPUYarnResource, params.ScriptArgs, params.CoordEnabled, params.CoordFile},
		"xres.pci":     {params.PCIVendor, params.PCIDevice, params.PCIClass, params.CoordEnabled, params.CoordFile},
		"xres.amd-gpu": {params.AMDSource, params.StepTimeout, params.CoordEnabled, params.CoordFile},
		"xres.plugin":  {params.Plugin, params.StepTimeout, params.CoordEnabled, params.CoordFile},
	}
	declared := builtin.Params()
	require.Len(t, declared, len(byFactory))
	for factory, leaf := range byFactory {
		got := map[string]driver.Param{}
		for _, p := range declared[factory] {
			got[p.Name] = p
		}
		for _, p := range leaf {
			d, ok := got[p.Name]
			require.True(t, ok, "%s declares %s", factory, p.Name)
			d.Doc = ""
			require.Equal(t, p, d, "%s's %s", factory, p.Name)
		}
	}

	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	for _, name := range r.Names() {
		known, _ := params.Check(name, "acc", map[string]string{})
		require.True(t, known, "resources/params checks %s", name)
		c, ok := resources.CanonicalFactory(name)
		require.True(t, ok, name)
		rc, _ := r.Canonical(name)
		require.Equal(t, rc, c, name)
	}
}
