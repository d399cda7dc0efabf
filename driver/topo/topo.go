// Package topo models how a host's GPUs are linked to each other (NVLink,
// PCIe switches, host bridges, NUMA nodes, sockets) and picks, among the
// free GPUs, the set an ask should get (issue 45): for amount >= 2 a set
// whose worst pairwise link is the best the free GPUs offer, then the one
// that leaves the best-connected sets free for later asks; for amount 1
// the GPU whose taking breaks the fewest good sets.
//
// A Topology comes from `nvidia-smi topo -m` (ParseSMI) or from NVML
// through the xres-nvml helper (its `--topology` mode, wire form Wire).
// The package imports nothing beyond the standard library and does no
// work at init: the launcher loads it only when an ask for two or more
// GPUs needs it.
package topo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Class is a class of link between two GPUs, best first.
type Class uint8

// The link classes, as nvidia-smi topo -m names them.
const (
	ClassNV      Class = iota + 1 // NVLink (NV#: a bonded set of # links)
	ClassPIX                      // at most one PCIe switch between them
	ClassPXB                      // several PCIe switches, no host bridge
	ClassPHB                      // through a PCIe host bridge (the CPU)
	ClassNODE                     // between host bridges of one NUMA node
	ClassSYS                      // across the inter-socket link (QPI/UPI)
	ClassUnknown                  // not told
)

var classNames = [...]string{"", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "unknown"}

func (c Class) String() string {
	if int(c) < len(classNames) && c != 0 {
		return classNames[c]
	}
	return "unknown"
}

// Link is the link between two GPUs: its class and, for NVLink, the
// number of bonded links.
type Link struct {
	Class   Class
	NVLinks int // ClassNV only: 1..
}

// maxNVLinks bounds the link count the cost tells apart (NVLink 4 has 18).
const maxNVLinks = 18

// Cost is the link's cost: lower is faster. NVLink costs 1..18 (fewer the
// more links), then each PCIe/socket class 10 more than the one before:
// PIX 30, PXB 40, PHB 50, NODE 60, SYS 70, unknown 80.
func (l Link) Cost() int {
	if l.Class == ClassNV {
		n := l.NVLinks
		if n < 1 {
			n = 1
		}
		if n > maxNVLinks {
			n = maxNVLinks
		}
		return maxNVLinks + 1 - n
	}
	if l.Class == 0 || l.Class > ClassUnknown {
		return int(ClassUnknown)*10 + 10
	}
	return int(l.Class)*10 + 10
}

func (l Link) String() string {
	if l.Class == ClassNV {
		return "NV" + strconv.Itoa(l.NVLinks)
	}
	return l.Class.String()
}

// ParseLink reads one cell of nvidia-smi's matrix: NV#, PIX, PXB, PHB,
// NODE, SYS (SOC, its old name for SYS).
func ParseLink(s string) (Link, error) {
	switch s {
	case "PIX":
		return Link{Class: ClassPIX}, nil
	case "PXB":
		return Link{Class: ClassPXB}, nil
	case "PHB":
		return Link{Class: ClassPHB}, nil
	case "NODE":
		return Link{Class: ClassNODE}, nil
	case "SYS", "SOC":
		return Link{Class: ClassSYS}, nil
	}
	if rest, ok := strings.CutPrefix(s, "NV"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 1 && n <= 64 {
			return Link{Class: ClassNV, NVLinks: n}, nil
		}
	}
	return Link{}, fmt.Errorf("%w %q (want NV#, PIX, PXB, PHB, NODE or SYS)", ErrBadLink, s)
}

// Sentinel errors.
var (
	ErrBadLink     = errors.New("unknown link")
	ErrBadTopology = errors.New("malformed GPU topology")
)

// Topology is how a host's GPUs are linked. GPUs are numbered by their
// NVML index (0..N-1, nvidia-smi's GPU#).
type Topology struct {
	// Links[i][j] is the link between GPU i and GPU j (i != j); symmetric.
	Links [][]Link
	// NUMA[i] is GPU i's NUMA node, -1 when not told.
	NUMA []int
	// CPUs[i] is GPU i's CPU affinity as Linux prints a CPU list, "" when
	// not told.
	CPUs []string
	// Source says where it came from ("nvidia-smi topo -m", "nvml").
	Source string
}

// N is the number of GPUs.
func (t *Topology) N() int { return len(t.Links) }

// Link is the link between GPUs i and j.
func (t *Topology) Link(i, j int) Link { return t.Links[i][j] }

// Validate checks that the matrix is square and symmetric and the other
// columns have one entry per GPU.
func (t *Topology) Validate() error {
	n := len(t.Links)
	for i := range t.Links {
		if len(t.Links[i]) != n {
			return fmt.Errorf("%w: row GPU%d has %d links for %d GPUs", ErrBadTopology, i, len(t.Links[i]), n)
		}
		for j := 0; j < i; j++ {
			if t.Links[i][j] != t.Links[j][i] {
				return fmt.Errorf("%w: GPU%d-GPU%d is %s but GPU%d-GPU%d is %s", ErrBadTopology, i, j, t.Links[i][j], j, i, t.Links[j][i])
			}
		}
	}
	if len(t.NUMA) != n || len(t.CPUs) != n {
		return fmt.Errorf("%w: %d GPUs but %d NUMA and %d CPU entries", ErrBadTopology, n, len(t.NUMA), len(t.CPUs))
	}
	return nil
}

// NUMANodes reports the distinct NUMA nodes of gpus (indices), -1 left out.
func (t *Topology) NUMANodes(gpus []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, g := range gpus {
		if g < 0 || g >= len(t.NUMA) || t.NUMA[g] < 0 || seen[t.NUMA[g]] {
			continue
		}
		seen[t.NUMA[g]] = true
		out = append(out, t.NUMA[g])
	}
	return out
}

// Worst returns the worst link among the pairs of gpus (the zero Link for
// fewer than two).
func (t *Topology) Worst(gpus []int) Link {
	var worst Link
	wc := -1
	for a := 0; a < len(gpus); a++ {
		for b := a + 1; b < len(gpus); b++ {
			l := t.Links[gpus[a]][gpus[b]]
			if c := l.Cost(); c > wc {
				worst, wc = l, c
			}
		}
	}
	return worst
}
