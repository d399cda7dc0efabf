package driver

import (
	"strconv"
	"strings"

	"github.com/xres/xres/resources"
)

// Vendor names the runtime that selects a worker's devices by environment
// variables: which device-selection variables the launcher sets for a
// resource's devices (visible-devices.vendor, VendorReporter).
type Vendor string

// The vendors whose runtimes xres tells which devices a worker got.
const (
	VendorNone   Vendor = ""
	VendorNVIDIA Vendor = "nvidia"
	VendorAMD    Vendor = "amd"
)

// VendorReporter is implemented by a Factory whose devices a vendor's
// runtime selects: the launcher sets v.Environment for the devices the
// driver granted (NVIDIA: CUDA_VISIBLE_DEVICES; AMD: ROCR_ and
// HIP_VISIBLE_DEVICES). A factory that does not implement it gets none,
// unless the resource's visible-devices.vendor param names a vendor.
type VendorReporter interface {
	Vendor() Vendor
}

// VendorOf says which vendor's variables a resource built by factory f
// with params gets: the one visible-devices.vendor names (nvidia, amd; any
// other value is none), else f's own (VendorReporter), else none.
func VendorOf(f Factory, params map[string]string) Vendor {
	if v, ok := VisibleDevicesVendorParam.Lookup(params); ok {
		switch Vendor(strings.ToLower(strings.TrimSpace(v))) {
		case VendorNVIDIA:
			return VendorNVIDIA
		case VendorAMD:
			return VendorAMD
		default:
			return VendorNone
		}
	}
	if vr, ok := f.(VendorReporter); ok {
		return vr.Vendor()
	}
	return VendorNone
}

// Environment returns the variables v's runtime reads to select devices
// (nil for none):
//
//	NVIDIA  CUDA_VISIBLE_DEVICES: VisibleID per device
//	AMD     ROCR_VISIBLE_DEVICES: the GPUs' uuids when every GPU has one
//	        (they do not depend on numbering), else their indices;
//	        HIP_VISIBLE_DEVICES: 0,1,…,n-1 (HIP numbers the GPUs ROCr left
//	        visible from 0, so the host indices would be wrong here; set
//	        anyway so that an inherited value cannot hide the granted GPUs)
//
// Devices without an id are left out; no ids, no variables.
func (v Vendor) Environment(devices []resources.Info) map[string]string {
	switch v {
	case VendorNVIDIA:
		var ids []string
		for _, d := range devices {
			if id := VisibleID(d); id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		return map[string]string{"CUDA_VISIBLE_DEVICES": strings.Join(ids, ",")}
	case VendorAMD:
		return amdEnvironment(devices)
	}
	return nil
}

func amdEnvironment(infos []resources.Info) map[string]string {
	var uuids, indices []string
	for _, in := range infos {
		if u, ok := in.Property("uuid"); ok && u != "" {
			uuids = append(uuids, u)
		}
		if i, ok := in.Property("index"); ok && i != "" {
			indices = append(indices, i)
		}
	}
	ids := indices
	if len(uuids) == len(infos) {
		ids = uuids
	}
	if len(ids) == 0 {
		return nil
	}
	hip := make([]string, len(ids))
	for i := range ids {
		hip[i] = strconv.Itoa(i)
	}
	return map[string]string{
		"ROCR_VISIBLE_DEVICES": strings.Join(ids, ","),
		"HIP_VISIBLE_DEVICES":  strings.Join(hip, ","),
	}
}

// VisibleID is how a device is named in CUDA_VISIBLE_DEVICES and its
// siblings: its InfoVisibleID where the driver set one, else the index, or
// the UUID for a MIG instance (which has no index of its own) or where no
// index is known.
func VisibleID(d resources.Info) string {
	if v, ok := d.Property(InfoVisibleID); ok && v != "" {
		return v
	}
	uuid, _ := d.Property("uuid")
	if strings.HasPrefix(uuid, "MIG-") {
		return uuid
	}
	if idx, ok := d.Property("index"); ok && idx != "" {
		return idx
	}
	return uuid
}
