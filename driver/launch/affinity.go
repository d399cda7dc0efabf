package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xres/xres/conf/rawio"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/resources"
)

// CPU affinity for --per-device: each worker is pinned to the CPUs local to
// its device's NUMA node when the host tells them:
//
//	1. the device's info "local-cpus" (the PCI and AMD drivers set it from
//	   sysfs local_cpulist), else
//	2. <sysfs-root>/bus/pci/devices/<pci.bus-id>/local_cpulist for a device
//	   whose info carries "pci.bus-id" (NVIDIA GPUs from NVML or nvidia-smi,
//	   which print an 8-digit domain: 00000000:3B:00.0 is 0000:3b:00.0 in
//	   sysfs); sysfs-root is the resource's param.sysfs-root, default /sys,
//
// intersected with the CPUs the launcher itself may run on (a cgroup
// cpuset or an outer taskset narrows them). Nothing told, or nothing left
// after the intersection: the worker runs unpinned (with a warning for the
// latter).

// ParamSysfsRoot is the resource param naming where sysfs is mounted; the
// launcher reads local_cpulist under it.
const ParamSysfsRoot = pci.ParamSysfsRoot

// Info keys the launcher reads for affinity.
const (
	InfoLocalCPUs = "local-cpus"
	InfoPCIBusID  = "pci.bus-id"
)

// errNoLocality says the host did not tell a device's local CPUs.
var errNoLocality = errors.New("no local CPUs known")

// deviceCPUs returns the CPUs local to device d of resource spec and where
// they came from (the info key or the sysfs file). errNoLocality: the host
// does not tell; any other error names the malformed value's source.
func deviceCPUs(spec resources.Spec, d resources.Info) ([]int, string, error) {
	if s, ok := d.Property(InfoLocalCPUs); ok && strings.TrimSpace(s) != "" {
		src := "info " + InfoLocalCPUs
		cpus, err := pci.ParseCPUList(s)
		if err != nil {
			return nil, src, fmt.Errorf("resource %s: %s: %w", spec.Name, src, err)
		}
		return cpus, src, nil
	}
	bus, ok := d.Property(InfoPCIBusID)
	if !ok || strings.TrimSpace(bus) == "" {
		return nil, "", errNoLocality
	}
	addr, err := sysfsAddress(bus)
	if err != nil {
		return nil, "info " + InfoPCIBusID, fmt.Errorf("resource %s: info %s: %w", spec.Name, InfoPCIBusID, err)
	}
	root := pci.SysfsRootParam.Get(spec.Params)
	path := filepath.Join(root, pci.DevicesDir, addr, "local_cpulist")
	b, err := rawio.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, errNoLocality
	}
	if err != nil {
		return nil, path, fmt.Errorf("read %s: %w", path, pci.PathCause(err))
	}
	cpus, err := pci.ParseCPUList(string(b))
	if err != nil {
		return nil, path, fmt.Errorf("read %s: %w", path, err)
	}
	if len(cpus) == 0 {
		return nil, path, errNoLocality
	}
	return cpus, path, nil
}

// sysfsAddress turns a PCI bus id as NVML and nvidia-smi print it
// ("00000000:3B:00.0") into the sysfs name ("0000:3b:00.0"). Ids already
// in sysfs form pass through (lower-cased).
func sysfsAddress(bus string) (string, error) {
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

// intersectCPUs returns the CPUs of a that are also in b, in the order of a.
func intersectCPUs(a, b []int) []int {
	in := make(map[int]bool, len(b))
	for _, c := range b {
		in[c] = true
	}
	var out []int
	for _, c := range a {
		if in[c] {
			out = append(out, c)
			in[c] = false // once
		}
	}
	return out
}

// formatCPUList writes CPUs the way Linux prints a CPU list: ascending,
// runs as ranges ("0-3,8,10-11"). The input may be in any order.
func formatCPUList(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	seen := map[int]bool{}
	max := 0
	for _, c := range cpus {
		seen[c] = true
		if c > max {
			max = c
		}
	}
	var parts []string
	for c := 0; c <= max; c++ {
		if !seen[c] {
			continue
		}
		lo := c
		for c+1 <= max && seen[c+1] {
			c++
		}
		if lo == c {
			parts = append(parts, strconv.Itoa(c))
		} else {
			parts = append(parts, strconv.Itoa(lo)+"-"+strconv.Itoa(c))
		}
	}
	return strings.Join(parts, ",")
}
