package topo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// NVMLGPU is what NVML tells about one GPU's links: what the xres-nvml
// helper's --topology mode prints (a JSON array, one per GPU in index
// order) and FromNVML reads.
type NVMLGPU struct {
	Index int    `json:"index"`
	BusID string `json:"bus_id"` // nvmlDeviceGetPciInfo's busId
	NUMA  int    `json:"numa"`   // nvmlDeviceGetNumaNodeId (else sysfs numa_node); -1 unknown
	CPUs  string `json:"cpus"`   // nvmlDeviceGetCpuAffinity as a CPU list
	// Ancestor[j] is nvmlDeviceGetTopologyCommonAncestor with GPU j
	// (NVML's level: 0 internal, 10 single switch, 20 multiple switches,
	// 30 host bridge, 40 NUMA node, 50 system); -1 unknown; itself 0.
	Ancestor []int `json:"ancestor"`
	// NVLinks are the remote PCI bus ids of its active NVLinks
	// (nvmlDeviceGetNvLinkState enabled, nvmlDeviceGetNvLinkRemotePciInfo),
	// one per link: another GPU's, or an NVSwitch's.
	NVLinks []string `json:"nvlinks,omitempty"`
}

// FromNVML builds the topology from what NVML tells. Two GPUs linked by
// NVLink directly are NV<links between them>; two GPUs that both have
// links to NVSwitches (remote ids that are no GPU's) are NV<the fewer of
// their switch links>; else the PCIe/socket class of their common
// ancestor.
func FromNVML(gpus []NVMLGPU) (*Topology, error) {
	n := len(gpus)
	t := &Topology{Links: make([][]Link, n), NUMA: make([]int, n), CPUs: make([]string, n), Source: "nvml"}
	byBus := map[string]int{}
	for i, g := range gpus {
		if g.Index != i {
			return nil, fmt.Errorf("%w: GPU %d of %d has index %d", ErrBadTopology, i+1, n, g.Index)
		}
		if len(g.Ancestor) != n {
			return nil, fmt.Errorf("%w: GPU %d has %d common ancestors for %d GPUs", ErrBadTopology, i, len(g.Ancestor), n)
		}
		if g.BusID != "" {
			byBus[normBus(g.BusID)] = i
		}
		t.NUMA[i], t.CPUs[i] = g.NUMA, g.CPUs
		t.Links[i] = make([]Link, n)
	}
	direct := make([][]int, n)
	switchLinks := make([]int, n)
	for i, g := range gpus {
		direct[i] = make([]int, n)
		for _, r := range g.NVLinks {
			if j, ok := byBus[normBus(r)]; ok && j != i {
				direct[i][j]++
			} else if !ok {
				switchLinks[i]++
			}
		}
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			a, b := gpus[i].Ancestor[j], gpus[j].Ancestor[i]
			if a != b {
				return nil, fmt.Errorf("%w: GPU%d-GPU%d common ancestor %d but GPU%d-GPU%d %d", ErrBadTopology, i, j, a, j, i, b)
			}
			var l Link
			switch {
			case direct[i][j] > 0 || direct[j][i] > 0:
				l = Link{Class: ClassNV, NVLinks: max(direct[i][j], direct[j][i])}
			case switchLinks[i] > 0 && switchLinks[j] > 0:
				l = Link{Class: ClassNV, NVLinks: min(switchLinks[i], switchLinks[j])}
			default:
				l = Link{Class: ancestorClass(a)}
			}
			t.Links[i][j] = l
		}
	}
	return t, t.Validate()
}

// ancestorClass maps NVML's topology level to the link class.
func ancestorClass(level int) Class {
	switch {
	case level < 0:
		return ClassUnknown
	case level <= 10:
		return ClassPIX
	case level <= 20:
		return ClassPXB
	case level <= 30:
		return ClassPHB
	case level <= 40:
		return ClassNODE
	default:
		return ClassSYS
	}
}

// normBus writes a PCI bus id one way: lower case, a 4-digit domain
// ("00000000:3B:00.0" and "0000:3b:00.0" are one).
func normBus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if dom, rest, ok := strings.Cut(s, ":"); ok && len(dom) > 4 {
		s = dom[len(dom)-4:] + ":" + rest
	}
	return s
}

// UnmarshalNVML reads the helper's --topology output.
func UnmarshalNVML(b []byte) (*Topology, error) {
	var gpus []NVMLGPU
	if err := json.Unmarshal(b, &gpus); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	return FromNVML(gpus)
}
