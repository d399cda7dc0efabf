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
//	CUDA_VISIBLE_DEVICES            NVIDIA GPU resources: index per device (the
//	                                uuid for MIG instances, MIG-…, and the
//	                                device's visible-id where the driver set one:
//	                                its uuid under isolation)
//	CUDA_DEVICE_ORDER               PCI_BUS_ID with CUDA_VISIBLE_DEVICES, so that
//	                                an index means what NVML and nvidia-smi mean
//	ROCR_VISIBLE_DEVICES            AMD GPU resources: uuid per device (index
//	                                where a GPU has no uuid)
//	HIP_VISIBLE_DEVICES             AMD GPU resources: 0…n-1 (HIP renumbers
//	                                the GPUs ROCr leaves visible)
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

// Vendor names which device-selection variables a resource gets: the
// driver's (driver.VendorReporter) unless the resource's
// visible-devices.vendor param names one (driver.VendorOf).
type Vendor = driver.Vendor

// Vendors known to the launcher.
const (
	VendorNone   = driver.VendorNone
	VendorNVIDIA = driver.VendorNVIDIA
	VendorAMD    = driver.VendorAMD
)

// Grant is what one resource got: the devices to hand to the worker.
type Grant struct {
	Spec    resources.Spec
	Vendor  Vendor
	Devices []resources.Info
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
		for k, v := range g.Vendor.Environment(g.Devices) {
			if prev, ok := env[k]; ok && prev != "" {
				v = prev + "," + v // two resources of one vendor
			}
			env[k] = v
		}
	}
	if _, ok := env["CUDA_VISIBLE_DEVICES"]; ok {
		env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID" // CUDA's default is fastest first
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
