// Package pci is the built-in driver for FPGAs and any other PCI
// accelerator: it finds devices in sysfs (/sys/bus/pci/devices) by vendor,
// device id and class, and lists them, keyed by PCI address, for the shared
// coordination layer to choose from.
//
// Params (external-resource.<name>.param.*):
//
//	vendor      required  hex vendor ids, comma-separated: 0x10ee (Xilinx/AMD), 0x8086 (Intel), 0x1172 (Altera)
//	device      optional  hex device ids, comma-separated: 0x5005
//	class       optional  hex class-code prefixes, comma-separated: 0x12 (processing accelerators), 0x1200, 0x120000
//	sysfs-root  optional  where sysfs is mounted, default /sys (tests and demos point it at a fake tree)
//	dev-root    optional  where device nodes are, default /dev; a function with DRM render
//	                      nodes (XRT's xocl, amdgpu) none of which the process can open
//	                      (device cgroup, not in the container) is left out. When
//	                      sysfs-root is set and dev-root is not, this check is off.
//	coordination.enabled, coordination.file
//	                      host coordination, as the GPU driver: on by default
//
// Infos per device: index, address, pci, vendor, device, class,
// numa-node (absent when the platform does not say), local-cpus, driver
// (the bound kernel driver, absent when none), render-node (absent when
// the function has none).
package pci

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/xres/xres/conf/factoryname"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// FactoryName is the driver-factory.class that selects this driver.
const FactoryName = factoryname.PCI

// FlinkFPGAFactory is the Flink-style class name accepted as an alias.
const FlinkFPGAFactory = factoryname.PCIFlink

// DefaultSysfsRoot is where sysfs is mounted.
const DefaultSysfsRoot = driver.DefaultSysfsRoot

// Param keys, as written after external-resource.<name>.param.
const (
	ParamVendor    = "vendor"
	ParamDevice    = "device"
	ParamClass     = "class"
	ParamSysfsRoot = driver.ParamSysfsRoot
	ParamDevRoot   = "dev-root"
)

// The PCI driver's params, declared once (driver.Declare) and read only
// through these declarations. SysfsRootParam and DevRootParam are shared
// with the AMD GPU driver (and the launcher's CPU affinity).
var (
	vendorParam = driver.Declare(params.PCIVendor.WithDoc("PCI driver (xres.pci), required: hex vendor ids, comma-separated, e.g. 0x10ee (Xilinx/AMD), " +
		"0x8086 (Intel), 0x1172 (Altera)."))
	deviceParam = driver.Declare(params.PCIDevice.WithDoc("PCI driver: hex device ids, comma-separated, e.g. 0x5005. Unset: any device of the vendor."))
	classParam  = driver.Declare(params.PCIClass.WithDoc("PCI driver: hex class-code prefixes, comma-separated, e.g. 0x12 (processing accelerators). " +
		"Unset: any class."))
	// SysfsRootParam is where sysfs is mounted (declared in package driver:
	// the locality rule every driver's devices share reads it too).
	SysfsRootParam = driver.SysfsRootParam
	// DevRootParam is where device nodes are.
	DevRootParam = driver.Declare(driver.Param{
		Name: ParamDevRoot, Type: conf.TypeString, Default: "/dev",
		Doc: "PCI and AMD GPU drivers: where device nodes are; a device whose node the process " +
			"cannot open is left out. When sysfs-root is set and dev-root is not, this check is off.",
	})
)

// Params lists every param the PCI driver reads.
func Params() []driver.Param {
	return []driver.Param{vendorParam, deviceParam, classParam, SysfsRootParam, DevRootParam,
		coord.EnabledParam, coord.FileParam}
}

// ErrInvalidParam is wrapped by every error about a malformed or missing
// param; the message names the full config key. When sysfs lists no
// matching device, Enumerate fails with driver.ErrNotEnoughDevices.
var ErrInvalidParam = driver.ErrInvalidParam

// Filter says which PCI functions a resource uses (params.PCIFilter: the
// vendor ids, at least one; the device ids, empty for any; the hex-digit
// prefixes of the 6-digit class code, empty for any).
type Filter params.PCIFilter

// Match reports whether f passes the filter.
func (flt Filter) Match(f Function) bool {
	if !containsID(flt.Vendors, f.Vendor) {
		return false
	}
	if len(flt.Devices) > 0 && !containsID(flt.Devices, f.Device) {
		return false
	}
	if len(flt.Classes) == 0 {
		return true
	}
	code := fmt.Sprintf("%06x", f.Class)
	for _, prefix := range flt.Classes {
		if strings.HasPrefix(code, prefix) {
			return true
		}
	}
	return false
}

func containsID(ids []uint16, id uint16) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Enumerator lists the PCI functions that match a Filter, in PCI address
// order. It implements driver.Enumerator.
type Enumerator struct {
	Root   string // sysfs root, "/sys" when empty
	Filter Filter
	// DevRoot is where device nodes are; "" skips the render-node check.
	DevRoot string
	Log     logrus.FieldLogger
	// open checks that a device node can be opened; nil uses the file
	// system. Tests replace it.
	open func(path string) error
}

var _ driver.Enumerator = (*Enumerator)(nil)

// New builds an Enumerator from a resource's options, validating the
// params; errors name the full config key and wrap ErrInvalidParam.
func New(opts driver.Options) (*Enumerator, error) {
	flt, err := params.ReadPCIFilter(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	root, devRoot := SysfsRootDevRoot(opts.Params)
	return &Enumerator{Root: root, Filter: Filter(flt), DevRoot: devRoot, Log: opts.Log}, nil
}

// SysfsRootDevRoot reads sysfs-root and dev-root: a sysfs-root that is set
// switches the device-node check off (a fake sysfs tree has no device
// nodes) unless dev-root is set too.
func SysfsRootDevRoot(params map[string]string) (sysfsRoot, devRoot string) {
	sysfsRoot, devRoot = SysfsRootParam.Get(params), DevRootParam.Default
	if _, ok := SysfsRootParam.Lookup(params); ok {
		devRoot = ""
	}
	if d, ok := DevRootParam.Lookup(params); ok {
		devRoot = d
	}
	return sysfsRoot, devRoot
}

// Enumerate implements driver.Enumerator. It reads only what it needs: the
// vendor of every function, device and class of those whose vendor
// matches, locality of those that match fully. A function it cannot decide
// on (missing or malformed vendor, device or class) is an error naming the
// file; functions of other vendors are never read further.
func (e *Enumerator) Enumerate(ctx context.Context) ([]driver.Device, error) {
	fns, err := e.Functions(ctx)
	if err != nil {
		return nil, err
	}
	devs := make([]driver.Device, 0, len(fns))
	for i, f := range fns {
		devs = append(devs, driver.Device{Key: f.Address, Info: Info(i, f)})
	}
	return devs, nil
}

// Functions lists the matching functions in PCI address order.
func (e *Enumerator) Functions(ctx context.Context) ([]Function, error) {
	root := e.Root
	if root == "" {
		root = DefaultSysfsRoot
	}
	dir := filepath.Join(root, DevicesDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pci: list %s: %w", dir, err)
	}
	addrs := make([]string, 0, len(entries))
	for _, ent := range entries {
		addrs = append(addrs, ent.Name())
	}
	sort.Slice(addrs, func(i, j int) bool { return addressLess(addrs[i], addrs[j]) })

	log := driver.LoggerOrDiscard(e.Log)
	var out []Function
	hidden := 0
	for _, addr := range addrs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pci: scan %s: %w", dir, err)
		}
		f, ok, err := e.read(root, addr)
		if err != nil {
			return nil, fmt.Errorf("pci: %w", err)
		}
		if !ok {
			continue
		}
		usable, err := e.usable(f)
		if err != nil {
			return nil, fmt.Errorf("pci: %s: %w", addr, err)
		}
		if !usable {
			hidden++
			log.WithFields(logrus.Fields{"address": addr, "render_nodes": strings.Join(f.RenderNodes, ",")}).Debug("pci: no render node of the function can be opened, left out")
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		if hidden > 0 {
			return nil, fmt.Errorf("pci: %d functions under %s with %s, but the process can open none of their render nodes under %s: %w", hidden, dir, e.Filter, filepath.Join(e.DevRoot, "dri"), driver.ErrNotEnoughDevices)
		}
		return nil, fmt.Errorf("pci: %d functions under %s, none with %s: %w", len(addrs), dir, e.Filter, driver.ErrNotEnoughDevices)
	}
	log.WithFields(logrus.Fields{"scanned": len(addrs), "matched": len(out), "filter": e.Filter.String()}).Debug("pci: scanned sysfs")
	return out, nil
}

// read reads one function as far as the filter needs.
func (e *Enumerator) read(root, addr string) (Function, bool, error) {
	dir := filepath.Join(root, DevicesDir, addr)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Function{}, false, fmt.Errorf("%s: dangling link: %w", dir, err)
		}
		return Function{}, false, fmt.Errorf("%s: %w", dir, err)
	}
	f := Function{Address: addr, NUMANode: -1}
	v, err := readHex(filepath.Join(dir, "vendor"), 16)
	if err != nil {
		return f, false, err
	}
	f.Vendor = uint16(v)
	if !containsID(e.Filter.Vendors, f.Vendor) {
		return f, false, nil
	}
	d, err := readHex(filepath.Join(dir, "device"), 16)
	if err != nil {
		return f, false, err
	}
	f.Device = uint16(d)
	c, err := readHex(filepath.Join(dir, "class"), 24)
	if err != nil {
		return f, false, err
	}
	f.Class = uint32(c)
	if !e.Filter.Match(f) {
		return f, false, nil
	}
	if err := readLocality(dir, &f); err != nil {
		return f, false, err
	}
	return f, true, nil
}

// String describes the filter for messages: "vendor 0x10ee device 0x5005 class 0x12*".
func (flt Filter) String() string {
	var b strings.Builder
	b.WriteString("vendor ")
	b.WriteString(joinIDs(flt.Vendors))
	if len(flt.Devices) > 0 {
		b.WriteString(" device ")
		b.WriteString(joinIDs(flt.Devices))
	}
	if len(flt.Classes) > 0 {
		b.WriteString(" class ")
		for i, c := range flt.Classes {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("0x" + c + "*")
		}
	}
	return b.String()
}

func joinIDs(ids []uint16) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("0x%04x", id)
	}
	return strings.Join(parts, ",")
}

// usable reports whether the process can use f: true when the check is
// off or f has no render nodes, else when one of them opens. Missing (not
// in this container) and permission denied (device cgroup) mean "not
// ours"; other errors are errors.
func (e *Enumerator) usable(f Function) (bool, error) {
	if e.DevRoot == "" || len(f.RenderNodes) == 0 {
		return true, nil
	}
	open := e.open
	if open == nil {
		open = OpenDevice
	}
	for _, n := range f.RenderNodes {
		path := filepath.Join(e.DevRoot, "dri", n)
		err := open(path)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM):
		default:
			return false, fmt.Errorf("open %s: %w", path, PathCause(err))
		}
	}
	return false, nil
}

// OpenDevice opens a device node read-write and closes it again: the
// check ROCm and XRT make before they use a render node.
func OpenDevice(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// Info is what a worker is told about the i-th matching function.
func Info(i int, f Function) resources.Properties {
	p := resources.Properties{
		"index":   strconv.Itoa(i),
		"address": f.Address,
		"pci":     f.Address,
		"vendor":  f.VendorHex(),
		"device":  f.DeviceHex(),
		"class":   f.ClassHex(),
	}
	if f.NUMANode >= 0 {
		p["numa-node"] = strconv.Itoa(f.NUMANode)
	}
	if f.LocalCPUs != "" {
		p["local-cpus"] = f.LocalCPUs
	}
	if f.Driver != "" {
		p["driver"] = f.Driver
	}
	if len(f.RenderNodes) > 0 {
		nodes := make([]string, len(f.RenderNodes))
		for i, n := range f.RenderNodes {
			nodes[i] = "/dev/dri/" + n
		}
		p["render-node"] = strings.Join(nodes, ",")
	}
	return p
}

// addressLess orders PCI addresses numerically (domain, bus, device,
// function), falling back to string order for names that do not parse.
func addressLess(a, b string) bool {
	ka, okA := ParseAddress(a)
	kb, okB := ParseAddress(b)
	if okA && okB {
		for i := range ka {
			if ka[i] != kb[i] {
				return ka[i] < kb[i]
			}
		}
		return false
	}
	if okA != okB {
		return okA
	}
	return a < b
}

// ParseAddress reads a PCI address, domain:bus:device.function, each part
// hex of at most 32 bits, into its four numbers; ok is false when s is not
// one.
func ParseAddress(s string) ([4]uint64, bool) {
	var k [4]uint64
	dom, rest, ok := strings.Cut(s, ":")
	if !ok {
		return k, false
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return k, false
	}
	dev, fn, ok := strings.Cut(rest, ".")
	if !ok {
		return k, false
	}
	for i, part := range []string{dom, bus, dev, fn} {
		v, err := strconv.ParseUint(part, 16, 32)
		if err != nil {
			return k, false
		}
		k[i] = v
	}
	return k, true
}
