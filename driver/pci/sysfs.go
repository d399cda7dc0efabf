package pci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/params"
)

// DevicesDir is where sysfs lists PCI functions, relative to the sysfs root.
// Each entry is a symlink into the device tree:
//
//	/sys/bus/pci/devices/0000:3b:00.1 -> ../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1
//
// and the directory it points to holds one attribute per file:
//
//	vendor         "0x10ee\n"        hex, 16 bit
//	device         "0x5005\n"        hex, 16 bit
//	class          "0x120000\n"      hex, 24 bit: base class, subclass, prog-if
//	numa_node      "0\n" or "-1\n"   decimal, -1 when the platform does not say
//	local_cpulist  "0-15,32-47\n"    CPUs close to the device
//	driver         -> ../../../../bus/pci/drivers/xocl   (only when bound)
//	drm/renderD128/                                      (only for DRM drivers:
//	                                                      amdgpu, XRT's xocl)
const DevicesDir = driver.DevicesDir

// Function is one PCI function as sysfs describes it.
type Function struct {
	Address   string // domain:bus:device.function, e.g. 0000:3b:00.1
	Vendor    uint16
	Device    uint16
	Class     uint32 // 24 bit class code
	NUMANode  int    // -1 when unknown
	LocalCPUs string // as sysfs prints it, "" when the file is absent
	Driver    string // bound kernel driver, "" when none
	// RenderNodes are the function's DRM render nodes ("renderD128"), the
	// device files a worker opens under /dev/dri; none for most devices.
	RenderNodes []string
}

// VendorHex is the vendor id as sysfs prints it ("0x10ee").
func (f Function) VendorHex() string { return fmt.Sprintf("0x%04x", f.Vendor) }

// DeviceHex is the device id as sysfs prints it ("0x5005").
func (f Function) DeviceHex() string { return fmt.Sprintf("0x%04x", f.Device) }

// ClassHex is the class code as sysfs prints it ("0x120000").
func (f Function) ClassHex() string { return fmt.Sprintf("0x%06x", f.Class) }

// ReadFunction reads the PCI function at address under the sysfs root
// (normally "/sys"). vendor, device and class must be present and valid;
// numa_node, local_cpulist and driver are optional, but a value that is
// present and malformed is an error naming the file.
func ReadFunction(root, address string) (Function, error) {
	dir := filepath.Join(root, DevicesDir, address)
	f := Function{Address: address, NUMANode: -1}
	v, err := readHex(filepath.Join(dir, "vendor"), 16)
	if err != nil {
		return f, err
	}
	f.Vendor = uint16(v)
	d, err := readHex(filepath.Join(dir, "device"), 16)
	if err != nil {
		return f, err
	}
	f.Device = uint16(d)
	c, err := readHex(filepath.Join(dir, "class"), 24)
	if err != nil {
		return f, err
	}
	f.Class = uint32(c)
	return f, readLocality(dir, &f)
}

// readLocality fills the optional attributes: NUMA node, local CPUs, driver.
func readLocality(dir string, f *Function) error {
	if s, ok, err := readOptional(filepath.Join(dir, "numa_node")); err != nil {
		return err
	} else if ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			return fmt.Errorf("read %s: %q is not a NUMA node number", filepath.Join(dir, "numa_node"), s)
		}
		f.NUMANode = n
	}
	if s, ok, err := readOptional(filepath.Join(dir, "local_cpulist")); err != nil {
		return err
	} else if ok {
		if _, err := ParseCPUList(s); err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(dir, "local_cpulist"), err)
		}
		f.LocalCPUs = s
	}
	if target, err := os.Readlink(filepath.Join(dir, "driver")); err == nil {
		f.Driver = filepath.Base(target)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, "driver"), err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "drm"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return readErr(filepath.Join(dir, "drm"), err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "renderD") {
			f.RenderNodes = append(f.RenderNodes, e.Name())
		}
	}
	return nil
}

// readOptional reads a one-line attribute; ok is false when the file does
// not exist.
func readOptional(path string) (value string, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, readErr(path, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// readHex reads a sysfs attribute printed as "0x…\n" of at most bits bits.
func readHex(path string, bits int) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, readErr(path, err)
	}
	s := strings.TrimSpace(string(b))
	v, err := ParseHex(s, bits)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return v, nil
}

// readErr says which file could not be read, once: the path error's own
// operation and path are dropped.
func readErr(path string, err error) error {
	return fmt.Errorf("read %s: %w", path, PathCause(err))
}

// PathCause strips a *fs.PathError down to its cause, for messages that
// name the path themselves.
func PathCause(err error) error { return driver.PathCause(err) }

// ParseHex parses a hexadecimal id as sysfs prints it ("0x10ee") or as a
// user writes it ("10EE", "0X10ee"), allowing at most bits bits.
func ParseHex(s string, bits int) (uint64, error) { return params.ParseHex(s, bits) }

// ParseCPUList parses a Linux CPU list ("0-15,32-47", "3", "") into CPU
// numbers in the order written. Ranges must be ascending.
func ParseCPUList(s string) ([]int, error) { return driver.ParseCPUList(s) }

// maxCPUs bounds a CPU list (the kernel's NR_CPUS maximum is 8192).
const maxCPUs = 8192
