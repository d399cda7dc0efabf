package params

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xres/xres/conf"
)

// The PCI driver's (xres.pci) params that its check reads; driver/pci
// declares them.
var (
	PCIVendor = Param{Name: "vendor", Type: conf.TypeString}
	PCIDevice = Param{Name: "device", Type: conf.TypeString}
	PCIClass  = Param{Name: "class", Type: conf.TypeString}
)

// PCIFilter says which PCI functions a resource uses.
type PCIFilter struct {
	Vendors []uint16 // at least one
	Devices []uint16 // empty: any device id
	Classes []string // hex-digit prefixes of the 6-digit class code; empty: any class
}

// ReadPCIFilter reads vendor (required), device and class. Errors name
// the full key and wrap ErrInvalidParam.
func ReadPCIFilter(resource string, params map[string]string) (PCIFilter, error) {
	var flt PCIFilter
	raw, ok := PCIVendor.Lookup(params)
	if !ok {
		return flt, fmt.Errorf("%s: missing; name the PCI vendor id, e.g. 0x10ee: %w", PCIVendor.Key(resource), ErrInvalidParam)
	}
	var err error
	if flt.Vendors, err = parseIDs(raw); err != nil {
		return flt, fmt.Errorf("%s: %w: %w", PCIVendor.Key(resource), err, ErrInvalidParam)
	}
	if raw, ok := PCIDevice.Lookup(params); ok {
		if flt.Devices, err = parseIDs(raw); err != nil {
			return flt, fmt.Errorf("%s: %w: %w", PCIDevice.Key(resource), err, ErrInvalidParam)
		}
	}
	if raw, ok := PCIClass.Lookup(params); ok {
		if flt.Classes, err = parseClasses(raw); err != nil {
			return flt, fmt.Errorf("%s: %w: %w", PCIClass.Key(resource), err, ErrInvalidParam)
		}
	}
	return flt, nil
}

// CheckPCI is the PCI driver's check of its params (CheckParams): its
// filter, then the coordination params.
func CheckPCI(resource string, params map[string]string) error {
	if _, err := ReadPCIFilter(resource, params); err != nil {
		return err
	}
	_, err := ParseCoordination(resource, params)
	return err
}

// ParseHex parses a hexadecimal id as sysfs prints it ("0x10ee") or as a
// user writes it ("10EE", "0X10ee"), allowing at most bits bits.
func ParseHex(s string, bits int) (uint64, error) {
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if digits == "" || len(digits) > (bits+3)/4 {
		return 0, fmt.Errorf("%q is not a %d-bit hex number", s, bits)
	}
	v, err := strconv.ParseUint(digits, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is not a %d-bit hex number", s, bits)
	}
	return v, nil
}

// parseIDs parses "0x10ee, 0x8086" into 16-bit ids.
func parseIDs(raw string) ([]uint16, error) {
	var ids []uint16
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		v, err := ParseHex(part, 16)
		if err != nil {
			return nil, err
		}
		ids = append(ids, uint16(v))
	}
	return ids, nil
}

// parseClasses parses "0x12, 0x0302" into lower-case hex-digit prefixes.
func parseClasses(raw string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		digits := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(part, "0x"), "0X"))
		if digits == "" || len(digits) > 6 {
			return nil, fmt.Errorf("%q is not a class-code prefix (1 to 6 hex digits)", part)
		}
		if _, err := strconv.ParseUint(digits, 16, 32); err != nil {
			return nil, fmt.Errorf("%q is not a class-code prefix (1 to 6 hex digits)", part)
		}
		out = append(out, digits)
	}
	return out, nil
}
