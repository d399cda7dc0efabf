package resources

import (
	"sort"

	"github.com/xres/xres/conf/factoryname"
)

// The driver factory catalog: every factory name the container-launcher's
// registry knows, for checks that run where the drivers are not linked in
// (`am resources` on the submitting host). driver/builtin registers exactly
// these (a test there compares the two).
var builtinFactories = map[string][]string{ // primary name -> aliases
	factoryname.GPU:    {factoryname.GPUFlink},
	factoryname.PCI:    {factoryname.PCIFlink},
	factoryname.AMDGPU: nil,
	factoryname.Plugin: nil,
}

// PluginPrefix starts a driver-factory.class that names a device plugin by
// its folder under the plugins root ("plugin:<dir>").
const PluginPrefix = factoryname.PluginPrefix

// BuiltinFactoryNames lists every built-in factory name and alias, sorted.
func BuiltinFactoryNames() []string {
	var out []string
	for name, aliases := range builtinFactories {
		out = append(out, name)
		out = append(out, aliases...)
	}
	sort.Strings(out)
	return out
}

// CanonicalFactory returns the primary name a built-in factory name or
// alias stands for.
func CanonicalFactory(name string) (string, bool) {
	for primary, aliases := range builtinFactories {
		if name == primary {
			return primary, true
		}
		for _, a := range aliases {
			if name == a {
				return primary, true
			}
		}
	}
	return "", false
}
