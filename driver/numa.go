package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// NUMA locality of a device (issue 45): the node whose memory the
// launcher binds (or prefers for) the worker's memory to. Told like the
// local CPUs: the info InfoNUMANode, else <sysfs-root>/bus/pci/devices/
// <pci.bus-id>/numa_node.

// InfoNUMANode is the info key that tells a device's NUMA node.
const InfoNUMANode = "numa-node"

// Memory policies (NUMAMemoryParam).
const (
	NUMAMemoryPreferred = "preferred" // MPOL_PREFERRED: the GPUs' node first, others when it is full
	NUMAMemoryBind      = "bind"      // MPOL_BIND: the GPUs' node(s) only
	NUMAMemoryOff       = "off"       // the worker keeps the default policy
)

// NUMAMemoryParam is the memory policy the launcher gives the worker for
// the NUMA node of a resource's devices.
var NUMAMemoryParam = Declare(params.NUMAMemory.WithDoc("The launcher: the worker's memory policy for the NUMA node of this " +
	"resource's devices (sysfs numa_node of their pci.bus-id, or the info numa-node), set on the thread that starts it and " +
	"inherited across exec. `preferred` (MPOL_PREFERRED: that node first; not set when the devices span several nodes), " +
	"`bind` (MPOL_BIND: only their nodes), `off`."))

// LocalNUMANode returns device d's NUMA node and where it came from;
// ErrNoLocality when the host does not tell (no bus id, no sysfs entry,
// or -1: a host without NUMA).
func LocalNUMANode(params map[string]string, d resources.Info) (int, string, error) {
	if s, ok := d.Property(InfoNUMANode); ok && strings.TrimSpace(s) != "" {
		src := "info " + InfoNUMANode
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return -1, src, &localityInfoError{src: src, err: fmt.Errorf("%q is not a node number", s)}
		}
		if n < 0 {
			return -1, src, ErrNoLocality
		}
		return n, src, nil
	}
	bus, ok := d.Property(InfoPCIBusID)
	if !ok || strings.TrimSpace(bus) == "" {
		return -1, "", ErrNoLocality
	}
	addr, err := SysfsAddress(bus)
	if err != nil {
		src := "info " + InfoPCIBusID
		return -1, src, &localityInfoError{src: src, err: err}
	}
	path := filepath.Join(SysfsRootParam.Get(params), DevicesDir, addr, "numa_node")
	b, err := localfile.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, path, ErrNoLocality
	}
	if err != nil {
		return -1, path, fmt.Errorf("read %s: %w", path, PathCause(err))
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1, path, fmt.Errorf("read %s: %q is not a node number", path, strings.TrimSpace(string(b)))
	}
	if n < 0 {
		return -1, path, ErrNoLocality
	}
	return n, path, nil
}
