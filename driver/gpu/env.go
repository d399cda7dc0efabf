package gpu

import (
	"strings"

	"github.com/xres/xres/conf"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Vendor is the NVIDIA runtime's vendor name (visible-devices.vendor:
// nvidia): the GPU driver's devices, and those of any resource that names
// it, get Environment's variables.
const Vendor driver.Vendor = "nvidia"

// The variables the CUDA runtime reads to select devices.
const (
	EnvCudaVisibleDevices = "CUDA_VISIBLE_DEVICES"
	EnvCudaDeviceOrder    = "CUDA_DEVICE_ORDER"
)

// Environment returns what a worker given devices needs to see them and
// only them (nil when no device has an id):
//
//	CUDA_VISIBLE_DEVICES  driver.VisibleID per device: the index, the uuid
//	                      of a MIG instance (MIG-…), the device's
//	                      visible-id where the driver set one (its uuid
//	                      under isolation)
//	CUDA_DEVICE_ORDER     PCI_BUS_ID, so that an index means what NVML and
//	                      nvidia-smi mean (CUDA's default is fastest first)
func Environment(devices []resources.Info) map[string]string {
	var ids []string
	for _, d := range devices {
		if id := driver.VisibleID(d); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return map[string]string{EnvCudaVisibleDevices: strings.Join(ids, ","), EnvCudaDeviceOrder: "PCI_BUS_ID"}
}

// VisibleDevicesVendorParam says which vendor's visible-devices variables
// the launcher sets for a resource's devices (driver.VendorOf).
var VisibleDevicesVendorParam = driver.Declare(driver.Param{
	Name: driver.ParamVisibleDevicesVendor, Type: conf.TypeString,
	Doc: "For plugins and discovery scripts standing for GPUs: nvidia sets CUDA_VISIBLE_DEVICES, amd " +
		"ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES for the worker, none neither (any other value counts as none). " +
		"Default: nvidia for xres.gpu, amd for xres.amd-gpu.",
})

// namesNVIDIA says whether a resource with params is NVIDIA's:
// visible-devices.vendor unset (the GPU driver's own) or nvidia.
func namesNVIDIA(params map[string]string) bool {
	v, ok := VisibleDevicesVendorParam.Lookup(params)
	return !ok || driver.Vendor(strings.ToLower(v)) == Vendor
}
