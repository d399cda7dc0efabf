package launch

import (
	"strconv"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// Environment variables the launcher exports to the worker.
//
//	variable                        value
//	------------------------------  ---------------------------------------------
//	XRES_RESOURCES_FILE             path of the JSON info file (every resource)
//	XRES_RESOURCES                  names of the resources granted, comma-joined
//	XRES_RESOURCE_<NAME>_AMOUNT     number of devices granted
//	XRES_RESOURCE_<NAME>_<KEY>      property KEY of every device, comma-joined in
//	                                device order ("" for a device without it):
//	                                _INDEX, _UUID, _NAME, _MEMORY_TOTAL, _PCI_BUS_ID…
//	(the vendor's own)              what the driver of a resource whose devices a
//	                                vendor's runtime selects returns for them
//	                                (driver.VendorReporter: the GPU driver's
//	                                CUDA variables, the AMD driver's ROCm ones)
//
// <NAME> and <KEY> are upper-cased with every character other than A-Z and
// 0-9 replaced by "_": resource "gpu" and key "pci.bus-id" give
// XRES_RESOURCE_GPU_PCI_BUS_ID.
const (
	EnvResourcesFile = contract.EnvResourcesFile
	EnvResources     = "XRES_RESOURCES"
	EnvResourcePfx   = "XRES_RESOURCE_"
	EnvLogLevel      = "XRES_LOG_LEVEL"
)

// Grant is what one resource got: the devices to hand to the worker, and
// the vendor whose runtime selects them.
type Grant struct {
	Spec    resources.Spec
	Devices []resources.Info
	// Vendor gives the variables the vendor's runtime reads to select the
	// devices (nil: none): the driver's own (driver.VendorReporter) unless
	// the resource's visible-devices.vendor param names another
	// (driver.VendorOf).
	Vendor driver.VendorReporter
}

// VendorName is the name of g's vendor, "" for none.
func (g Grant) VendorName() string {
	if g.Vendor == nil {
		return ""
	}
	return string(g.Vendor.Vendor())
}

// ResourceEnv names XRES_RESOURCE_<NAME>_<KEY> for resource name and
// property key.
func ResourceEnv(name, key string) string {
	return EnvResourcePfx + driver.EnvToken(name) + "_" + driver.EnvToken(key)
}

// grantEnv returns the variables for the grants, sorted by name. infoFile
// is the path of the info file ("" leaves XRES_RESOURCES_FILE out).
func grantEnv(grants []Grant, infoFile string) map[string]string {
	env := map[string]string{}
	if infoFile != "" {
		env[EnvResourcesFile] = infoFile
	}
	names := make([]string, 0, len(grants))
	for _, g := range grants {
		names = append(names, g.Spec.Name)
		env[ResourceEnv(g.Spec.Name, "amount")] = strconv.Itoa(len(g.Devices))
		keys := map[string]bool{}
		for _, d := range g.Devices {
			for _, k := range d.Keys() {
				keys[k] = true
			}
		}
		for k := range keys {
			vals := make([]string, len(g.Devices))
			for i, d := range g.Devices {
				vals[i], _ = d.Property(k)
			}
			env[ResourceEnv(g.Spec.Name, k)] = strings.Join(vals, ",")
		}
	}
	// One vendor's variables name all its devices, of every resource, at
	// once (a runtime renumbers what it is left to see).
	var vendors []driver.Vendor
	byVendor := map[driver.Vendor][]resources.Info{}
	reporter := map[driver.Vendor]driver.VendorReporter{}
	for _, g := range grants {
		if g.Vendor == nil {
			continue
		}
		v := g.Vendor.Vendor()
		if _, ok := reporter[v]; !ok {
			vendors = append(vendors, v)
			reporter[v] = g.Vendor
		}
		byVendor[v] = append(byVendor[v], g.Devices...)
	}
	for _, v := range vendors {
		for k, val := range reporter[v].Environment(byVendor[v]) {
			env[k] = val
		}
	}
	env[EnvResources] = strings.Join(names, ",")
	return env
}

// mergeEnv returns base (KEY=value entries) with vars set, replacing earlier
// values of the same keys; the result is sorted by key for new entries and
// keeps the order of base otherwise.
func mergeEnv(base []string, vars map[string]string) []string {
	out := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range sortedKeys(vars) {
		out = append(out, k+"="+vars[k])
	}
	return out
}
