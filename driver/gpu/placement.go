package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/topo"
	"github.com/xres/xres/resources/params"
)

// Placement by topology (issue 45): which free GPUs an ask gets.
//
// The host's topology is read from NVML through the xres-nvml helper's
// topology mode, else from `nvidia-smi topo -m` (as discovery.source
// says), only when an ask for two or more GPUs needs it, and shared
// host-wide through a file beside the coordination state for TopologyTTL
// (a host whose topology cannot be read caches that too, so that no
// launcher on it runs the tools again within the TTL). An ask for one GPU
// uses the topology only when the host's cache already holds it: it
// never runs a tool. Without host coordination every worker gets the
// first devices, as before.

var placementParam = driver.Declare(params.GPUPlacement.WithDoc("GPU driver, built-in discovery with host coordination: " +
	"which free GPUs an ask gets. `topology`: for amount 2 or more the set whose worst link (NVLink, then one PCIe switch, " +
	"several switches, host bridge, NUMA node, inter-socket link) is the best the free GPUs offer, then the one that leaves " +
	"the best-connected sets free; for amount 1 the GPU whose taking breaks the fewest good sets (the topology from NVML " +
	"through xres-nvml, else `nvidia-smi topo -m`; a host that tells none gets first-free). `first-free`: the first free " +
	"GPUs in index order (Flink's, Spark's and YARN's default). `spread`: as many NUMA nodes as possible. " +
	"The choice and its worst link are in the infos (placement.*) and the log."))

// TopologyTTL is how long a host's topology read by one launcher is
// reused by the others.
const TopologyTTL = time.Minute

// Info keys the placement adds to each granted GPU's infos.
const (
	InfoPlacement     = "placement"            // the policy that chose
	InfoPlacementLink = "placement.worst-link" // the worst link among the granted GPUs (NV2, PIX, SYS…)
	InfoPlacementBest = "placement.best-link"  // the best worst link the whole host offers for this amount
	InfoPlacementCost = "placement.cost"       // the worst link's cost (topo.Link.Cost)
	InfoPlacementFrom = "placement.topology"   // where the topology came from
)

// topoSource reads the host's topology, for coord's host-wide cache: a
// listing of one pseudo-device per GPU (encodeTopology), or one "none"
// device saying why the host tells none.
type topoSource struct {
	resource string
	source   string // discovery.source: auto | nvml | nvidia-smi
	smi      string
	nvmlLib  string
	getenv   func(string) string
	timeout  time.Duration
	log      logrus.FieldLogger
	helper   string // "": findNVMLHelper
}

func (s *topoSource) DeviceCacheKey() string {
	return fmt.Sprintf("xres.gpu topology source=%s smi=%s nvml=%s PATH=%s LD_LIBRARY_PATH=%s %s=%s",
		s.source, s.smi, s.nvmlLib, s.getenv("PATH"), s.getenv("LD_LIBRARY_PATH"), EnvNvidiaVisibleDevices, s.getenv(EnvNvidiaVisibleDevices))
}

// Enumerate implements driver.Enumerator; it never fails (a host that
// tells no topology is cached as such).
func (s *topoSource) Enumerate(ctx context.Context) ([]driver.Device, error) {
	t, err := s.load(ctx)
	if err != nil {
		driver.LoggerOrDiscard(s.log).WithError(err).Info("GPU topology unknown: GPUs are placed first-free")
		return []driver.Device{{Key: "none", Info: map[string]string{"error": err.Error()}}}, nil
	}
	return encodeTopology(t), nil
}

// errNoTopologyTool: neither NVML nor nvidia-smi answered.
var errNoTopologyTool = errors.New("no GPU topology source")

func (s *topoSource) load(ctx context.Context) (*topo.Topology, error) {
	timeout := s.timeout
	if timeout <= 0 {
		timeout = driver.DefaultTimeout
	}
	var nvmlErr error
	if s.source != "nvidia-smi" {
		t, err := s.fromHelper(ctx, timeout)
		if err == nil || s.source == "nvml" {
			return t, err
		}
		nvmlErr = err
	}
	path, err := driver.LookPath(s.smi, s.getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v; %v", errNoTopologyTool, nvmlErr, err)
	}
	res, err := run(ctx, path, []string{"topo", "-m"}, nil, timeout)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s topo -m: %w", path, err)
	case res.timedOut:
		return nil, fmt.Errorf("%s topo -m: timed out after %s (%s)", path, timeout, smiTimeoutParam.Key(s.resource))
	case res.exitCode != 0:
		return nil, fmt.Errorf("%s topo -m exited %d: %s", path, res.exitCode, strings.TrimSpace(string(res.stderr)+" "+string(res.stdout)))
	}
	t, err := topo.ParseSMI(res.stdout)
	if err != nil {
		return nil, fmt.Errorf("%s topo -m: %w", path, err)
	}
	return t, nil
}

func (s *topoSource) fromHelper(ctx context.Context, timeout time.Duration) (*topo.Topology, error) {
	path := s.helper
	if path == "" {
		var err error
		if path, err = findTopologyHelper(s.getenv); err != nil {
			return nil, err
		}
	}
	args := []string{"topology"}
	if s.nvmlLib != "" {
		args = append(args, "--library", s.nvmlLib)
	}
	res, err := run(ctx, path, args, nil, timeout)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s topology: %w", path, err)
	case res.timedOut:
		return nil, fmt.Errorf("%s topology: timed out after %s", path, timeout)
	case res.exitCode != 0:
		return nil, fmt.Errorf("%s topology exited %d: %s", path, res.exitCode, strings.TrimSpace(string(res.stderr)))
	}
	return topo.UnmarshalNVML(res.stdout)
}

// encodeTopology writes t as pseudo-devices for the device cache: one per
// GPU, "links" its row of the matrix (X for itself), "numa", "cpus".
func encodeTopology(t *topo.Topology) []driver.Device {
	out := make([]driver.Device, t.N())
	for i := range out {
		links := make([]string, t.N())
		for j := range links {
			if i == j {
				links[j] = "X"
			} else {
				links[j] = t.Link(i, j).String()
			}
		}
		out[i] = driver.Device{Key: "gpu" + strconv.Itoa(i), Info: map[string]string{
			"links": strings.Join(links, ","), "numa": strconv.Itoa(t.NUMA[i]), "cpus": t.CPUs[i], "source": t.Source}}
	}
	return out
}

// decodeTopology reads what encodeTopology wrote; nil for a host that
// told none (or a listing that is not one).
func decodeTopology(devs []driver.Device) *topo.Topology {
	n := len(devs)
	if n == 0 || devs[0].Key == "none" {
		return nil
	}
	t := &topo.Topology{Links: make([][]topo.Link, n), NUMA: make([]int, n), CPUs: make([]string, n)}
	for i, d := range devs {
		cells := strings.Split(d.Info["links"], ",")
		if d.Key != "gpu"+strconv.Itoa(i) || len(cells) != n {
			return nil
		}
		t.Links[i] = make([]topo.Link, n)
		for j, c := range cells {
			if i == j {
				continue
			}
			l, err := topo.ParseLink(c)
			if err != nil {
				return nil
			}
			t.Links[i][j] = l
		}
		numa, err := strconv.Atoi(d.Info["numa"])
		if err != nil {
			return nil
		}
		t.NUMA[i], t.CPUs[i], t.Source = numa, d.Info["cpus"], d.Info["source"]
	}
	if t.Validate() != nil {
		return nil
	}
	return t
}

// topoPlacer is the GPU driver's driver.Placer.
type topoPlacer struct {
	policy string
	// cache is the host-wide cached topology, made on first use: an ask
	// that has no choice to make never names it.
	cache func() coord.CachedListing
	log   logrus.FieldLogger
}

// Placement implements driver.Placer.
func (p *topoPlacer) Placement(ctx context.Context, devices []driver.Device, amount int) (driver.Placement, error) {
	if p.policy == topo.PolicyFirstFree {
		return nil, nil
	}
	index := make(map[string]int, len(devices))
	for _, d := range devices {
		if d.Parent != "" {
			return nil, nil // MIG instances: no choice of links
		}
		i, err := strconv.Atoi(d.Info["index"])
		if err != nil || i < 0 {
			return nil, nil
		}
		index[d.Key] = i
	}
	if amount >= len(index) {
		return nil, nil // every GPU listed: no set to choose, no topology read
	}
	var devs []driver.Device
	if amount >= 2 {
		devs, _ = p.cache().Enumerate(ctx)
	} else {
		var ok bool
		if devs, ok = p.cache().Peek(); !ok {
			return nil, nil
		}
	}
	t := decodeTopology(devs)
	if t == nil {
		return nil, nil
	}
	for _, i := range index {
		if i >= t.N() {
			return nil, nil // the listing and the topology disagree
		}
	}
	return &topoPlacement{t: t, index: index, policy: p.policy, amount: amount, log: p.log}, nil
}

// topoPlacement is one ask's driver.Placement.
type topoPlacement struct {
	t      *topo.Topology
	index  map[string]int // device key -> topology index
	policy string
	amount int
	log    logrus.FieldLogger
}

// Pick implements driver.Placement.
func (p *topoPlacement) Pick(free []driver.Candidate, amount int) []driver.Candidate {
	byIndex := make(map[int]driver.Candidate, len(free))
	idx := make([]int, 0, len(free))
	for _, c := range free {
		i, ok := p.index[c.Key]
		if !ok {
			return free[:amount]
		}
		byIndex[i] = c
		idx = append(idx, i)
	}
	ch, err := p.t.Pick(idx, amount, p.policy)
	if err != nil {
		driver.LoggerOrDiscard(p.log).WithError(err).Warn("topology placement failed; first free GPUs granted")
		return free[:amount]
	}
	out := make([]driver.Candidate, len(ch.GPUs))
	for k, i := range ch.GPUs {
		out[k] = byIndex[i]
	}
	return out
}

// Describe implements driver.Placement.
func (p *topoPlacement) Describe(chosen []string) map[string]string {
	m := map[string]string{InfoPlacement: p.policy, InfoPlacementFrom: p.t.Source}
	if len(chosen) < 2 {
		return m
	}
	set := make([]int, 0, len(chosen))
	for _, k := range chosen {
		set = append(set, p.index[k])
	}
	w := p.t.Worst(set)
	m[InfoPlacementLink] = w.String()
	m[InfoPlacementCost] = strconv.Itoa(w.Cost())
	m[InfoPlacementBest] = p.t.BestWorst(len(chosen)).String()
	return m
}

// newTopoPlacer returns the placer for the built-in driver's params; nil
// when placement is first-free or coordination is off.
func newTopoPlacer(resource string, p map[string]string, settings coord.Settings, src *topoSource) (driver.Placer, error) {
	policy, err := placementParam.Choice(resource, p)
	if err != nil {
		return nil, err
	}
	if policy == topo.PolicyFirstFree || !settings.Enabled {
		return nil, nil
	}
	if src.getenv == nil {
		src.getenv = os.Getenv
	}
	cache := sync.OnceValue(func() coord.CachedListing { return coord.CachedFor(src, settings.StateFile, TopologyTTL, src.log) })
	return &topoPlacer{policy: policy, cache: cache, log: src.log}, nil
}
