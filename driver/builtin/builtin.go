// Package builtin registers xres's built-in driver factories, under their
// own names and Flink's factory class names, in a driver.Registry, and adds
// the device plugins' names on top (WithPlugins). The caller (cmd/, the
// launcher) does it explicitly; nothing registers itself in init(). A new
// built-in driver is its folder plus its line in RegisterBuiltins (and its
// params in Params).
package builtin

import (
	"fmt"
	"sort"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/amd"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/driver/plugin"
)

// RegisterBuiltins registers every built-in driver factory in r:
//
//	xres.gpu      alias org.apache.flink.externalresource.gpu.GPUDriverFactory
//	xres.pci      alias org.apache.flink.externalresource.fpga.FPGADriverFactory
//	xres.amd-gpu
//	xres.plugin   (out-of-process plugins named by param.plugin)
func RegisterBuiltins(r *driver.Registry) error {
	for _, register := range []func(*driver.Registry) error{gpu.Register, pci.Register, amd.Register, plugin.Register} {
		if err := register(r); err != nil {
			return fmt.Errorf("register built-in drivers: %w", err)
		}
	}
	return nil
}

// Params lists, by factory name, the params each built-in driver reads
// (a device plugin reads its own besides, which xres hands it unread).
func Params() map[string][]driver.Param {
	return map[string][]driver.Param{
		gpu.FactoryName:    gpu.Params(),
		pci.FactoryName:    pci.Params(),
		amd.FactoryName:    amd.Params(),
		plugin.FactoryName: plugin.Params(),
	}
}

// LauncherParams lists the params the launcher itself reads for every
// resource, whatever its driver: which visible-devices variables to set,
// and where sysfs is for CPU affinity.
func LauncherParams() []driver.Param {
	return []driver.Param{gpu.VisibleDevicesVendorParam, driver.SysfsRootParam, driver.NUMAMemoryParam}
}

// UnknownParams lists, sorted, the params set for a resource whose
// built-in driver (factory, a name or Flink alias) declares none of that
// name, nor the launcher: most likely typos, which the driver would ignore.
// A device plugin takes any param, so xres.plugin and unknown factories
// give none.
func UnknownParams(factory string, params map[string]string) []string {
	r := driver.NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		return nil
	}
	name, ok := r.Canonical(factory)
	if !ok || name == plugin.FactoryName {
		return nil
	}
	known := map[string]bool{}
	for _, p := range append(Params()[name], LauncherParams()...) {
		known[p.Name] = true
	}
	var out []string
	for k := range params {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// GPUFactory is the built-in GPU driver's name: the discovery bridge's
// driver for a gpu resource configured without one.
const GPUFactory = gpu.FactoryName

// GPUScriptParams are the GPU driver's params about a discovery script.
// The discovery bridge, which is that script, drops them and discovers
// built in.
var GPUScriptParams = []string{gpu.ParamScriptPath, gpu.ParamScriptArgs, gpu.ParamScriptProtocol, gpu.ParamScriptTimeout}
