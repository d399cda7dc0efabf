package launch

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
)

// The worker's memory on its devices' NUMA node (issue 45). The launcher
// works out the nodes of the granted devices (driver.LocalNUMANode) and,
// unless numa.memory is off, sets the memory policy on the OS thread that
// forks the worker (startProc locks it), then restores that thread's
// default: the child inherits the policy and keeps it across exec, so the
// worker's every allocation follows it from its first instruction.
// --per-device workers get it through __exec-pinned beside their CPUs.

// memPolicy is a memory policy for a set of NUMA nodes.
type memPolicy struct {
	mode  string // driver.NUMAMemoryPreferred or driver.NUMAMemoryBind
	nodes []int  // ascending
}

func (p memPolicy) String() string {
	if p.mode == "" {
		return ""
	}
	parts := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		parts[i] = strconv.Itoa(n)
	}
	return p.mode + ":" + strings.Join(parts, ",")
}

// parseMemPolicy reads what String wrote.
func parseMemPolicy(s string) (memPolicy, error) {
	mode, list, ok := strings.Cut(s, ":")
	if !ok || (mode != driver.NUMAMemoryPreferred && mode != driver.NUMAMemoryBind) || list == "" {
		return memPolicy{}, errors.New("want preferred:<node> or bind:<nodes>")
	}
	p := memPolicy{mode: mode}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= maxNUMANodes {
			return memPolicy{}, errors.New("bad node " + strconv.Quote(f))
		}
		p.nodes = append(p.nodes, n)
	}
	if mode == driver.NUMAMemoryPreferred && len(p.nodes) != 1 {
		return memPolicy{}, errors.New("preferred takes one node")
	}
	return p, nil
}

// maxNUMANodes bounds the node numbers a policy names (the kernel's
// MAX_NUMNODES is at most 1024).
const maxNUMANodes = 1024

// setMemPolicy is set_mempolicy(2) for the calling thread (a memPolicy
// with no mode restores the default); a variable so that tests can see
// what was asked on hosts whose nodes the test cannot bind to.
var setMemPolicy = setThreadMemPolicy

// grantsMemPolicy is the memory policy for the devices of grants: the
// NUMA nodes of those whose resource does not turn it off, in the mode
// their numa.memory asks (bind wins over preferred when resources
// disagree). None (zero) when no node is known, or when preferred meets
// devices on several nodes (logged: MPOL_PREFERRED names one node).
func grantsMemPolicy(grants []Grant, log logrus.FieldLogger) memPolicy {
	nodes := map[int]bool{}
	mode := ""
	for _, g := range grants {
		m, err := driver.NUMAMemoryParam.Choice(g.Spec.Name, g.Spec.Params)
		if err != nil || m == driver.NUMAMemoryOff {
			if err != nil {
				log.WithError(err).Warn("worker memory policy not set")
			}
			continue
		}
		for _, d := range g.Devices {
			n, src, err := driver.LocalNUMANode(g.Spec.Params, d)
			if err != nil {
				if !errors.Is(err, driver.ErrNoLocality) {
					log.WithError(err).WithField("source", src).Warn("unreadable NUMA node: worker memory policy not set for it")
				}
				continue
			}
			nodes[n] = true
			if mode != driver.NUMAMemoryBind {
				mode = m
			}
		}
	}
	if len(nodes) == 0 {
		return memPolicy{}
	}
	p := memPolicy{mode: mode}
	for n := range nodes {
		p.nodes = append(p.nodes, n)
	}
	sort.Ints(p.nodes)
	if p.mode == driver.NUMAMemoryPreferred && len(p.nodes) > 1 {
		log.WithField("numa_nodes", p.String()).Info("the worker's devices span several NUMA nodes: memory policy left default (numa.memory bind binds to all of them)")
		return memPolicy{}
	}
	return p
}

// memPolicySetup returns the thread setup startProc runs around the
// worker's fork (nil for none): it sets p on the locked thread and
// returns the undo.
func memPolicySetup(p memPolicy, log logrus.FieldLogger) func() func() {
	if p.mode == "" {
		return nil
	}
	return func() func() {
		if err := setMemPolicy(p); err != nil {
			log.WithError(err).WithField("numa_policy", p.String()).Warn("could not set the worker's memory policy: it runs with the default")
			return nil
		}
		log.WithField("numa_policy", p.String()).Debug("worker memory policy set")
		return func() { _ = setMemPolicy(memPolicy{}) }
	}
}

// ProbeNUMA is where the devices a launcher would get sit: their NUMA
// nodes, whether they cross sockets (more than one node: their traffic
// to each other and to host memory crosses the inter-socket link), and
// the memory policy the worker would get.
type ProbeNUMA struct {
	Nodes          []int  `json:"nodes"`
	CrossesSockets bool   `json:"crosses_sockets"`
	MemoryPolicy   string `json:"memory_policy,omitempty"` // "preferred:0", "bind:0,1"; "" the default
}

// probeNUMA reports g's devices' NUMA nodes; nil when none is known.
func probeNUMA(g Grant) *ProbeNUMA {
	seen := map[int]bool{}
	var nodes []int
	for _, d := range g.Devices {
		n, _, err := driver.LocalNUMANode(g.Spec.Params, d)
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil
	}
	sort.Ints(nodes)
	return &ProbeNUMA{Nodes: nodes, CrossesSockets: len(nodes) > 1,
		MemoryPolicy: grantsMemPolicy([]Grant{g}, driver.LoggerOrDiscard(nil)).String()}
}

// writeProbeNUMA writes n for probe's text output.
func writeProbeNUMA(w io.Writer, indent string, n *ProbeNUMA, node *driver.NodeAssignment) {
	if n == nil {
		return
	}
	parts := make([]string, len(n.Nodes))
	for i, x := range n.Nodes {
		parts[i] = strconv.Itoa(x)
	}
	policy := n.MemoryPolicy
	if policy == "" {
		policy = "default"
	}
	if !n.CrossesSockets {
		fmt.Fprintf(w, "%snuma: node %s, worker memory %s\n", indent, parts[0], policy)
		return
	}
	who := "the devices"
	if node != nil && len(node.Assigned) > 0 {
		who = "YARN's NodeManager picked devices that"
	}
	fmt.Fprintf(w, "%snuma: nodes %s: %s cross sockets (their traffic crosses the inter-socket link); worker memory %s\n",
		indent, strings.Join(parts, ","), who, policy)
}
