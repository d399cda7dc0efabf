package resources

import "sort"

// The driver factory catalog: every factory name the container-launcher's
// registry knows, for checks that run where the drivers are not linked in
// (`am resources` on the submitting host). driver/builtin registers exactly
// these (a test there compares the two).
var builtinFactories = map[string][]string{ // primary name -> aliases
	"xres.gpu":     {"org.apache.flink.externalresource.gpu.GPUDriverFactory"},
	"xres.pci":     {"org.apache.flink.externalresource.fpga.FPGADriverFactory"},
	"xres.amd-gpu": nil,
	"xres.plugin":  nil,
}

// PluginPrefix starts a driver-factory.class that names a device plugin by
// its folder under the plugins root ("plugin:<dir>").
const PluginPrefix = "plugin:"

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
