package driver

import (
	"strings"

	"github.com/xres/xres/resources"
)

// Vendor names the runtime that selects a worker's devices by environment
// variables ("nvidia", "amd"). The driver that owns a vendor declares its
// name and its variables (VendorReporter); this package knows neither.
type Vendor string

// VendorNone is no vendor: the worker gets no device-selection variables.
const VendorNone Vendor = ""

// VendorReporter is implemented by a Factory whose devices a vendor's
// runtime selects by environment variables: the launcher hands the worker
// what Environment returns for the devices the resource was granted, as a
// device plugin's Reserve returns its variables. A factory that does not
// implement it gives none, unless the resource's visible-devices.vendor
// param names a vendor some registered factory reports (VendorOf).
type VendorReporter interface {
	Vendor() Vendor
	// Environment returns the variables the vendor's runtime reads to
	// select devices (nil for none). devices are every device of this
	// vendor granted to one worker, in grant order.
	Environment(devices []resources.Info) map[string]string
}

// VendorFinder says which vendor a resource's params name (the
// visible-devices.vendor param, declared by the driver that words it), so
// that a plugin's or a script's devices get a built-in driver's variables:
// named is false where the params name none; vr is nil where they name a
// vendor no registered factory reports (none). The launcher's registry
// implements it.
type VendorFinder interface {
	NamedVendor(params map[string]string) (vr VendorReporter, named bool)
}

// VendorOf says whose variables a resource built by factory f with params
// gets: the vendor its params name (find), else f's own (VendorReporter),
// else none (nil).
func VendorOf(f Factory, params map[string]string, find VendorFinder) VendorReporter {
	if find != nil {
		if vr, named := find.NamedVendor(params); named {
			return vr
		}
	}
	if vr, ok := f.(VendorReporter); ok && vr.Vendor() != VendorNone {
		return vr
	}
	return nil
}

// Vendor returns the first factory, by name, that reports v.
func (r *Registry) Vendor(v Vendor) (VendorReporter, bool) {
	if v == VendorNone {
		return nil, false
	}
	for _, n := range r.Names() {
		f, err := r.Lookup(n)
		if err != nil {
			continue
		}
		if vr, ok := f.(VendorReporter); ok && vr.Vendor() == v {
			return vr, true
		}
	}
	return nil, false
}

// VisibleID is how a device is named in a vendor's visible-devices
// variable: its InfoVisibleID where the driver set one, else the index, or
// the UUID for a partition (MIG-…, which has no index of its own) or where
// no index is known.
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
