package launch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// CPU affinity for --per-device: each worker is pinned to the CPUs local to
// its device's NUMA node when the host tells them (driver.LocalCPUs: the
// device's info "local-cpus", else sysfs local_cpulist for its
// "pci.bus-id" under the resource's param.sysfs-root), intersected with
// the CPUs the launcher itself may run on (a cgroup cpuset or an outer
// taskset narrows them). Nothing told, or nothing left after the
// intersection: the worker runs unpinned (with a warning for the latter).

// ParamSysfsRoot is the resource param naming where sysfs is mounted; the
// launcher reads local_cpulist under it.
const ParamSysfsRoot = driver.ParamSysfsRoot

// Info keys the launcher reads for affinity.
const (
	InfoLocalCPUs = driver.InfoLocalCPUs
	InfoPCIBusID  = driver.InfoPCIBusID
)

// errNoLocality says the host did not tell a device's local CPUs.
var errNoLocality = driver.ErrNoLocality

// deviceCPUs returns the CPUs local to device d of resource spec and where
// they came from (the info key or the sysfs file). errNoLocality: the host
// does not tell; any other error names the malformed value's source.
func deviceCPUs(spec resources.Spec, d resources.Info) ([]int, string, error) {
	cpus, src, err := driver.LocalCPUs(spec.Params, d)
	if err != nil && driver.IsLocalityInfoError(err) {
		err = fmt.Errorf("resource %s: %w", spec.Name, err)
	}
	return cpus, src, err
}

// sysfsAddress turns a PCI bus id as NVML and nvidia-smi print it
// ("00000000:3B:00.0") into the sysfs name ("0000:3b:00.0").
func sysfsAddress(bus string) (string, error) { return driver.SysfsAddress(bus) }

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
