package amd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/xres/xres/driver/pci"
)

// KFDNodesDir is the KFD topology, relative to the sysfs root. The amdgpu
// kernel driver publishes one directory per HSA node, CPU sockets first:
//
//	/sys/class/kfd/kfd -> ../../devices/virtual/kfd/kfd
//	/sys/class/kfd/kfd/topology/nodes/<n>/gpu_id      "24718\n"   0 for a CPU node
//	/sys/class/kfd/kfd/topology/nodes/<n>/name        "aldebaran\n"
//	/sys/class/kfd/kfd/topology/nodes/<n>/properties  one "name value\n" per line,
//	                                                   decimal values:
//	    location_id 768            PCI bus<<8 | device<<3 | function
//	    domain 0                   PCI domain
//	    drm_render_minor 128       /dev/dri/renderD128
//	    unique_id 8425143389541296640   0 when the GPU has none
//	    device_id 29711            PCI device id (0x740f)
//	    gfx_target_version 90010   gfx90a
//
// ROCr numbers the GPU nodes it can use (gpu_id != 0 and render node
// openable) from 0 in node order; that number is the index
// ROCR_VISIBLE_DEVICES takes.
const KFDNodesDir = "class/kfd/kfd/topology/nodes"

// Node is one KFD topology node.
type Node struct {
	ID         int    // directory number
	GPUID      uint32 // 0 for a CPU node
	Name       string
	Properties map[string]uint64
	path       string
}

// IsGPU reports whether the node is a GPU (KFD gives CPU nodes gpu_id 0).
func (n Node) IsGPU() bool { return n.GPUID != 0 }

// PCIBusID is the node's PCI address, 0000:03:00.0.
func (n Node) PCIBusID() string {
	loc := n.Properties["location_id"]
	return fmt.Sprintf("%04x:%02x:%02x.%x", n.Properties["domain"], loc>>8&0xff, loc>>3&0x1f, loc&7)
}

// RenderMinor is the DRM render minor, 0 when unknown.
func (n Node) RenderMinor() uint64 { return n.Properties["drm_render_minor"] }

// UniqueID is the GPU's unique id, 0 when it has none.
func (n Node) UniqueID() uint64 { return n.Properties["unique_id"] }

// GFX is the target name derived from gfx_target_version (90010 →
// gfx90a), "" when unknown.
func (n Node) GFX() string {
	v, ok := n.Properties["gfx_target_version"]
	if !ok || v == 0 {
		return ""
	}
	return fmt.Sprintf("gfx%d%x%x", v/10000, v/100%100, v%100)
}

// errNodeHidden marks a node whose gpu_id the process may not read (KFD
// answers EPERM for GPUs outside the process's device cgroup).
var errNodeHidden = errors.New("node hidden")

// ReadTopology reads every KFD node under the sysfs root in node order.
// GPU nodes need location_id, domain and drm_render_minor; every value
// must be a decimal number. Nodes the process may not read (EPERM) are
// left out, as ROCr leaves them out.
func ReadTopology(root string) ([]Node, error) {
	dir := filepath.Join(root, KFDNodesDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var ids []int
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil || id < 0 {
			continue // not a node directory
		}
		ids = append(ids, id)
	}
	sort.Ints(ids)
	nodes := make([]Node, 0, len(ids))
	for _, id := range ids {
		n, err := readNode(filepath.Join(dir, strconv.Itoa(id)), id)
		if errors.Is(err, errNodeHidden) {
			continue
		}
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func readNode(path string, id int) (Node, error) {
	n := Node{ID: id, path: path}
	b, err := os.ReadFile(filepath.Join(path, "gpu_id"))
	if errors.Is(err, fs.ErrPermission) {
		return n, errNodeHidden
	}
	if err != nil {
		return n, readErr(filepath.Join(path, "gpu_id"), err)
	}
	gid, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return n, fmt.Errorf("read %s: %q is not a gpu_id", filepath.Join(path, "gpu_id"), strings.TrimSpace(string(b)))
	}
	n.GPUID = uint32(gid)
	if b, err := os.ReadFile(filepath.Join(path, "name")); err == nil {
		n.Name = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return n, readErr(filepath.Join(path, "name"), err)
	}
	propsPath := filepath.Join(path, "properties")
	b, err = os.ReadFile(propsPath)
	if err != nil {
		return n, readErr(propsPath, err)
	}
	if n.Properties, err = ParseProperties(b); err != nil {
		return n, fmt.Errorf("read %s%w", propsPath, err)
	}
	if n.IsGPU() {
		for _, k := range []string{"location_id", "domain", "drm_render_minor"} {
			if _, ok := n.Properties[k]; !ok {
				return n, fmt.Errorf("read %s: GPU node (gpu_id %d) has no %s", propsPath, n.GPUID, k)
			}
		}
		if n.RenderMinor() == 0 {
			return n, fmt.Errorf("read %s: GPU node (gpu_id %d) has drm_render_minor 0", propsPath, n.GPUID)
		}
	}
	return n, nil
}

// ParseProperties parses a KFD properties file: one "name value" pair per
// line, value a decimal unsigned number. Errors start with ":<line>: " so
// the caller can prefix the file name.
func ParseProperties(b []byte) (map[string]uint64, error) {
	props := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf(":%d: %q is not \"name value\"", line, text)
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf(":%d: %s: %q is not a decimal number", line, fields[0], fields[1])
		}
		if _, dup := props[fields[0]]; dup {
			return nil, fmt.Errorf(":%d: %s given twice", line, fields[0])
		}
		props[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf(":%d: %w", line+1, err)
	}
	return props, nil
}

// readErr says which file could not be read, once.
func readErr(path string, err error) error {
	return fmt.Errorf("read %s: %w", path, pci.PathCause(err))
}
