package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/resources"
)

// Locality: the CPUs local to a device (its NUMA node), for per-device
// placement. Every driver tells it the same way, through its device infos:
//
//	1. the info InfoLocalCPUs (the PCI and AMD drivers set it from sysfs
//	   local_cpulist), else
//	2. <sysfs-root>/bus/pci/devices/<pci.bus-id>/local_cpulist for a device
//	   whose info carries InfoPCIBusID (NVIDIA GPUs from NVML or nvidia-smi,
//	   which print an 8-digit domain: 00000000:3B:00.0 is 0000:3b:00.0 in
//	   sysfs); sysfs-root is the resource's SysfsRootParam, default /sys.

// Info keys that tell a device's locality.
const (
	InfoLocalCPUs = "local-cpus"
	InfoPCIBusID  = "pci.bus-id"
)

// DefaultSysfsRoot is where sysfs is mounted.
const DefaultSysfsRoot = "/sys"

// ParamSysfsRoot is SysfsRootParam's name.
const ParamSysfsRoot = "sysfs-root"

// SysfsRootParam is where sysfs is mounted, shared by the PCI and AMD GPU
// drivers and the locality rule.
var SysfsRootParam = Declare(Param{
	Name: ParamSysfsRoot, Type: conf.TypeString, Default: DefaultSysfsRoot,
	Doc: "PCI and AMD GPU drivers, and the launcher's CPU affinity: where sysfs is mounted (tests and demos " +
		"point it at a fake tree).",
})

// DevicesDir is where sysfs lists PCI functions, relative to the sysfs root.
const DevicesDir = "bus/pci/devices"

// ErrNoLocality says the host does not tell a device's local CPUs.
var ErrNoLocality = errors.New("no local CPUs known")

// LocalCPUs returns the CPUs local to device d of a resource with params,
// and where they came from (the info key or the sysfs file). ErrNoLocality:
// the host does not tell; any other error names the malformed value's
// source (the info key errors without the resource: the caller adds it).
func LocalCPUs(params map[string]string, d resources.Info) ([]int, string, error) {
	if s, ok := d.Property(InfoLocalCPUs); ok && strings.TrimSpace(s) != "" {
		src := "info " + InfoLocalCPUs
		cpus, err := ParseCPUList(s)
		if err != nil {
			return nil, src, &localityInfoError{src: src, err: err}
		}
		return cpus, src, nil
	}
	bus, ok := d.Property(InfoPCIBusID)
	if !ok || strings.TrimSpace(bus) == "" {
		return nil, "", ErrNoLocality
	}
	addr, err := SysfsAddress(bus)
	if err != nil {
		src := "info " + InfoPCIBusID
		return nil, src, &localityInfoError{src: src, err: err}
	}
	root := SysfsRootParam.Get(params)
	path := filepath.Join(root, DevicesDir, addr, "local_cpulist")
	b, err := localfile.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, ErrNoLocality
	}
	if err != nil {
		return nil, path, fmt.Errorf("read %s: %w", path, PathCause(err))
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return nil, path, fmt.Errorf("read %s: %w", path, err)
	}
	if len(cpus) == 0 {
		return nil, path, ErrNoLocality
	}
	return cpus, path, nil
}

// LocalityInfoError is a malformed locality info: Source is "info <key>".
type localityInfoError struct {
	src string
	err error
}

func (e *localityInfoError) Error() string { return e.src + ": " + e.err.Error() }
func (e *localityInfoError) Unwrap() error { return e.err }

// IsLocalityInfoError reports whether err is LocalCPUs's error for a
// malformed info (which names no resource) rather than a sysfs file's.
func IsLocalityInfoError(err error) bool {
	var ie *localityInfoError
	return errors.As(err, &ie)
}

// SysfsAddress turns a PCI bus id as NVML and nvidia-smi print it
// ("00000000:3B:00.0") into the sysfs name ("0000:3b:00.0"). Ids already
// in sysfs form pass through (lower-cased).
func SysfsAddress(bus string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(bus))
	parts := strings.Split(s, ":")
	if len(parts) == 2 { // bus:device.function, domain 0
		parts = append([]string{"0000"}, parts...)
	}
	if len(parts) != 3 {
		return "", fmt.Errorf("%q is not a PCI bus id (domain:bus:device.function)", bus)
	}
	dom, err := strconv.ParseUint(parts[0], 16, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a PCI bus id: bad domain", bus)
	}
	dev, fn, ok := strings.Cut(parts[2], ".")
	if !ok || !isHex(parts[1], 2) || !isHex(dev, 2) || !isHex(fn, 1) {
		return "", fmt.Errorf("%q is not a PCI bus id (domain:bus:device.function)", bus)
	}
	return fmt.Sprintf("%04x:%s:%s.%s", dom, parts[1], dev, fn), nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 8)
	return err == nil
}

// PathCause strips a *fs.PathError down to its cause, for messages that
// name the path themselves.
func PathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseCPUList parses a Linux CPU list ("0-15,32-47", "3", "") into CPU
// numbers in the order written. Ranges must be ascending.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %s is descending", s, part)
			}
		}
		if b-a > maxCPUs || len(cpus)+b-a > maxCPUs {
			return nil, fmt.Errorf("cpu list %q: more than %d CPUs", s, maxCPUs)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// maxCPUs bounds a CPU list (the kernel's NR_CPUS maximum is 8192).
const maxCPUs = 8192

func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= maxCPUs || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	return n, nil
}
