package gpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// Params of YARN's assignment (external-resource.<name>.param.<key>).
const (
	ParamYarnAssignment = "yarn.assignment"    // auto (default) | off
	ParamYarnResource   = "yarn.resource-name" // yarn.io/gpu | nvidia.com/gpu; default from yarn.config-key
	ParamYarnCAFile     = "yarn.nm-ca-file"    // PEM CAs for an HTTPS NodeManager, beside the system's
)

// yarnSource says where the container's GPUs were learnt.
type yarnSource int

const (
	fromREST   yarnSource = iota + 1 // the NodeManager's REST, by minor number
	fromDocker                       // NVIDIA_VISIBLE_DEVICES
)

// yarnAssignment is what YARN gave this container.
type yarnAssignment struct {
	source   yarnSource
	resource string // yarn.io/gpu or nvidia.com/gpu
	url      string // the REST asked
	// byMinor: ids are minor numbers (REST; Docker under nvidia.com/gpu);
	// else host indices (Docker under yarn.io/gpu).
	byMinor bool
	ids     []int
	// buses, where the REST gives them (the device framework's busID),
	// are what the GPUs are matched by: YARN's NvidiaGPUPluginForRuntimeV2
	// records nvidia-smi's index as the "minor number".
	buses []string
	gpus  []NMGPU // the REST's entries, for messages
	total int     // GPUs the NodeManager manages (REST)
	note  string  // why the REST was not used (Docker fallback)
}

func (a *yarnAssignment) describe() string {
	parts := make([]string, len(a.ids))
	for i, id := range a.ids {
		switch {
		case len(a.buses) > 0:
			parts[i] = fmt.Sprintf("bus %s (index %d)", a.buses[i], id)
		case a.source == fromREST && a.gpus[i].Index >= 0:
			parts[i] = fmt.Sprintf("minor %d (index %d)", id, a.gpus[i].Index)
		case a.byMinor:
			parts[i] = fmt.Sprintf("minor %d", id)
		default:
			parts[i] = fmt.Sprintf("index %d", id)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (a *yarnAssignment) from() string {
	if a.source == fromDocker {
		return EnvNvidiaVisibleDevices
	}
	return "the NodeManager's REST " + a.url
}

// yarnLookup finds out what YARN assigned to this container.
type yarnLookup struct {
	resource string // the xres resource name
	yarnName string // the YARN resource asked about
	off      bool
	caFile   string
	timeout  time.Duration
	getenv   func(string) string
	log      logrus.FieldLogger
}

// yarnResourceName is the YARN resource whose assignment a resource
// reads: yarn.resource-name, else the resource's yarn.config-key when a
// GPU plugin serves it, else yarn.io/gpu.
func yarnResourceName(params map[string]string, yarnKey string) string {
	if v, ok := yarnResourceParam.Lookup(params); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	if k := strings.TrimSpace(yarnKey); k == YarnGPU || k == YarnNvidiaGPU {
		return k
	}
	return YarnGPU
}

func newYarnLookup(opts driver.Options, getenv func(string) string, timeout time.Duration, log logrus.FieldLogger) (*yarnLookup, error) {
	mode, err := yarnAssignmentParam.Choice(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	ca, _ := yarnCAParam.Lookup(opts.Params)
	return &yarnLookup{resource: opts.Resource, yarnName: yarnResourceName(opts.Params, opts.YarnKey), off: mode == "off",
		caFile: ca, timeout: timeout, getenv: getenv, log: driver.LoggerOrDiscard(log)}, nil
}

// inYarn: the process runs in a YARN container.
func (y *yarnLookup) inYarn() bool {
	return y.getenv(EnvContainerID) != "" && y.getenv(EnvNMHost) != "" && y.getenv(EnvNMHTTPPort) != ""
}

// dockerIDs reads NVIDIA_VISIBLE_DEVICES as YARN's Docker runtime writes
// it: numbers (indices for yarn.io/gpu, minor numbers for nvidia.com/gpu).
// ok is false when it is unset or not a list of numbers.
func (y *yarnLookup) dockerIDs() ([]int, bool) {
	v := strings.TrimSpace(y.getenv(EnvNvidiaVisibleDevices))
	if v == "" {
		return nil, false
	}
	var ids []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, false
		}
		ids = append(ids, n)
	}
	return ids, true
}

// resolve returns YARN's assignment for this container, with the node's
// mode; nil where YARN assigns nothing here (not a YARN container,
// switched off, a NodeManager that only counts): host coordination
// applies. Where the NodeManager may be assigning but cannot say what, the
// error matches driver.ErrAssignmentUnknown.
//
// The decision when the REST cannot be reached (down, refusing, 5xx,
// SPNEGO without credentials, garbage): NVIDIA_VISIBLE_DEVICES set by
// YARN's Docker runtime is used instead; else a yarn-site.xml in
// $HADOOP_CONF_DIR that proves the NodeManager has no plugin for the
// resource means host coordination (counted); anything else fails closed.
func (y *yarnLookup) resolve(ctx context.Context) (*yarnAssignment, driver.NodeAssignment, error) {
	answer, _ := y.start(ctx)
	return answer()
}

// start begins resolve: the request to the NodeManager is sent beside the
// caller (plain HTTP: connected and written in a goroutine of its own, as
// the connection's hand-overs through the network poller cost the
// launcher 0.1-0.3 ms when waited for), and answer reads the answer and
// decides. The launcher lists the host's GPUs in between, while the
// NodeManager answers. drop closes a request whose answer is not wanted;
// ctx ended first, it does not wait for the connection.
func (y *yarnLookup) start(ctx context.Context) (answer func() (*yarnAssignment, driver.NodeAssignment, error), drop func()) {
	na := driver.NodeAssignment{YarnResource: y.yarnName}
	switch {
	case y.off:
		na.Mode, na.Action = driver.NodeModeOff, fmt.Sprintf("%s is off: host coordination picks the GPUs", ParamYarnAssignment)
		return func() (*yarnAssignment, driver.NodeAssignment, error) { return nil, na, nil }, func() {}
	case !y.inYarn():
		na.Mode, na.Action = driver.NodeModeHost, "not in a YARN container: host coordination picks the GPUs"
		return func() (*yarnAssignment, driver.NodeAssignment, error) { return nil, na, nil }, func() {}
	}
	na.Container = y.getenv(EnvContainerID)
	site := readSiteConf(y.getenv)
	c := &nmClient{host: y.getenv(EnvNMHost), port: y.getenv(EnvNMHTTPPort), user: y.getenv("USER"), https: site.httpsOnly(),
		caFile: y.caFile, timeout: y.timeout, getenv: y.getenv}
	var sent *plainCall
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		sent = c.send(ctx, y.yarnName)
	}()
	answer = func() (*yarnAssignment, driver.NodeAssignment, error) {
		<-sending
		ans, err := c.finish(ctx, y.yarnName, sent)
		return y.decide(na, site, ans, err)
	}
	drop = func() {
		<-sending
		if sent != nil {
			sent.cancel()
		}
	}
	return answer, drop
}

// decide reads the NodeManager's answer (resolve).
func (y *yarnLookup) decide(na driver.NodeAssignment, site *siteConf, ans nmAnswer, err error) (*yarnAssignment, driver.NodeAssignment, error) {
	container := na.Container
	na.URL = ans.url
	var info NMResourceInfo
	switch {
	case err != nil:
	case ans.status == statusNotFound:
		// A NodeManager without the resources endpoint (before Hadoop 3.1)
		// has no GPU plugin either.
		na.Mode, na.Action = driver.NodeModeCounted, "the NodeManager has no resource plugin endpoint (404): host coordination picks the GPUs"
		return nil, na, nil
	case ans.status != statusOK:
		err = fmt.Errorf("GET %s: HTTP %d: %s", ans.url, ans.status, clip(strings.TrimSpace(string(ans.body)), 200))
	default:
		if info, err = ParseNMResourceInfo(ans.body); err != nil {
			err = fmt.Errorf("GET %s: %w", ans.url, err)
		}
	}
	if err != nil {
		return y.unreachable(na, site, err)
	}
	if !info.Plugin {
		na.Mode, na.Action = driver.NodeModeCounted, "the NodeManager has no "+y.yarnName+" plugin (it only counts GPUs): host coordination picks the GPUs"
		return nil, na, nil
	}
	mine := info.For(container)
	slices.SortFunc(mine, func(a, b NMGPU) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return a.Minor - b.Minor
	})
	a := &yarnAssignment{source: fromREST, resource: y.yarnName, url: ans.url, byMinor: true, gpus: mine, total: len(info.Total)}
	if y.yarnName == YarnNvidiaGPU {
		// The device framework's NVIDIA plugin takes nvidia-smi's index
		// for the minor number; its busID is the GPU's PCI address.
		a.byMinor = false
	}
	for _, g := range mine {
		a.ids = append(a.ids, g.Minor)
		if g.BusID != "" && len(a.buses) == len(a.ids)-1 {
			a.buses = append(a.buses, g.BusID)
		}
	}
	if len(a.buses) != len(a.ids) {
		a.buses = nil
	}
	na.Mode, na.Total, na.Assigned = driver.NodeModePlugin, a.total, strings.Split(a.describe(), ", ")
	if len(mine) == 0 {
		na.Assigned = nil
	}
	if _, docker := y.dockerIDs(); docker {
		na.Mode = driver.NodeModeDocker
	}
	by := "minor number"
	if len(a.buses) > 0 {
		by = "PCI bus id"
	} else if !a.byMinor {
		by = "index"
	}
	na.Action = "the GPUs YARN assigned to " + container + " (" + a.describe() + "), matched by " + by + ", named by uuid and recorded in the host state"
	return a, na, nil
}

// unreachable decides what a failed REST call means (see resolve).
func (y *yarnLookup) unreachable(na driver.NodeAssignment, site *siteConf, err error) (*yarnAssignment, driver.NodeAssignment, error) {
	if ids, ok := y.dockerIDs(); ok {
		// Both YARN plugins write nvidia-smi indices there (the device
		// framework's NVIDIA plugin calls them minor numbers).
		a := &yarnAssignment{source: fromDocker, resource: y.yarnName, ids: ids,
			note: err.Error()}
		y.log.WithError(err).Warnf("the NodeManager's REST did not answer; using %s=%s", EnvNvidiaVisibleDevices, y.getenv(EnvNvidiaVisibleDevices))
		na.Mode, na.Assigned, na.Problem = driver.NodeModeDocker, strings.Split(a.describe(), ", "), err.Error()
		na.Action = "the GPUs " + EnvNvidiaVisibleDevices + " gives the container (" + a.describe() + "), named by uuid and recorded in the host state"
		return a, na, nil
	}
	if on, known := site.pluginConfigured(y.yarnName); known && !on {
		y.log.WithError(err).Warnf("the NodeManager's REST did not answer; %s enables no %s plugin: host coordination", site.path, y.yarnName)
		na.Mode, na.Problem = driver.NodeModeCounted, err.Error()
		na.Action = site.path + " enables no " + y.yarnName + " plugin: host coordination picks the GPUs"
		return nil, na, nil
	}
	why := "nothing proves the NodeManager only counts GPUs"
	if on, known := site.pluginConfigured(y.yarnName); known && on {
		why = site.path + " enables the " + y.yarnName + " plugin"
	}
	na.Mode, na.Problem = driver.NodeModeUnknown, err.Error()
	na.Action = "none: the launcher fails (exit 215) rather than guess"
	fix := "let the container reach its NodeManager's REST"
	if errors.Is(err, errNMUnknownCA) {
		// HTTPS_ONLY with a private CA (Hadoop's clients read it from a JKS
		// truststore, which the launcher does not): name the param that trusts it.
		fix = "name the CA that signed the NodeManager's certificate (PEM) in " + yarnCAParam.Key(y.resource)
	}
	return nil, na, fmt.Errorf("%w: resource %s in container %s: which %s GPUs YARN assigned is unknown (%s): %v; "+
		"fix: %s, or set %s: off where the NodeManager only counts GPUs",
		driver.ErrAssignmentUnknown, y.resource, y.getenv(EnvContainerID), y.yarnName, why, err, fix, yarnAssignmentParam.Key(y.resource))
}

// yarnFilter is the Enumerator the selection layer sees under YARN: the
// host's listing, less every GPU YARN did not assign to this container
// where it assigned some (all of them, or an error), named by uuid. The
// NodeManager is asked while the host's GPUs are listed (pending).
type yarnFilter struct {
	inner  driver.Enumerator
	minors *minorFiller

	mu      sync.Mutex
	pending *yarnPending
}

// yarnPending is one Discover's question to the NodeManager: sent when
// Discover begins, its answer read (once) when the host's GPUs have been
// listed.
type yarnPending struct {
	once   sync.Once
	answer func() (*yarnAssignment, driver.NodeAssignment, error)
	a      *yarnAssignment
	na     driver.NodeAssignment
	err    error
	amount int64
	check  func(a *yarnAssignment, amount int64) error
}

var _ driver.Enumerator = (*yarnFilter)(nil)

// wait reads the NodeManager's answer, once (its reading is bounded by
// the Discover's context and the REST timeout).
func (p *yarnPending) wait() {
	p.once.Do(func() { p.a, p.na, p.err = p.answer() })
}

func (f *yarnFilter) set(p *yarnPending) {
	f.mu.Lock()
	f.pending = p
	f.mu.Unlock()
}

// Enumerate implements driver.Enumerator.
func (f *yarnFilter) Enumerate(ctx context.Context) ([]driver.Device, error) {
	devs, err := f.inner.Enumerate(ctx)
	f.mu.Lock()
	p := f.pending
	f.mu.Unlock()
	if p != nil {
		p.wait()
		if p.err != nil {
			return nil, p.err
		}
	}
	if err != nil {
		return nil, err
	}
	if p == nil || p.a == nil {
		return devs, nil
	}
	if err := p.check(p.a, p.amount); err != nil {
		return nil, err
	}
	return f.pick(ctx, p.a, devs)
}

// pick returns the devices of a's ids, in a's order.
func (f *yarnFilter) pick(ctx context.Context, a *yarnAssignment, devs []driver.Device) ([]driver.Device, error) {
	whole := 0
	for _, d := range devs {
		if d.Parent == "" {
			whole++
		}
	}
	if len(a.buses) > 0 {
		return pickByBus(a, devs)
	}
	if !a.byMinor && whole == len(a.ids) && len(devs) == whole {
		// The container's own view (Docker renumbers from 0): all of them.
		return namedByUUID(devs), nil
	}
	if a.byMinor {
		var err error
		if devs, err = f.minors.fill(ctx, devs); err != nil {
			return nil, err
		}
	}
	var out []driver.Device
	for _, id := range a.ids {
		n := 0
		for _, d := range devs {
			v, ok := idOf(d, a.byMinor)
			if ok && v == id {
				out = append(out, d)
				n++
			}
		}
		if n == 0 {
			what := "index"
			if a.byMinor {
				what = "minor number"
			}
			return nil, fmt.Errorf("%w: %s gives this container the GPU of %s %d, which this host's discovery does not list (it lists %s)",
				driver.ErrAssignmentMismatch, a.from(), what, id, listed(devs, a.byMinor))
		}
	}
	return namedByUUID(out), nil
}

// pickByBus returns the whole GPUs at a's PCI addresses, in a's order.
func pickByBus(a *yarnAssignment, devs []driver.Device) ([]driver.Device, error) {
	var out []driver.Device
	for _, bus := range a.buses {
		n := 0
		for _, d := range devs {
			if d.Parent == "" && d.Info["pci.bus-id"] != "" && procBusDir(d.Info["pci.bus-id"]) == procBusDir(bus) {
				out = append(out, d)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %s gives this container the GPU at PCI address %s, which this host's discovery does not list (it lists %s)",
				driver.ErrAssignmentMismatch, a.from(), bus, listedBuses(devs))
		}
	}
	return namedByUUID(out), nil
}

func listedBuses(devs []driver.Device) string {
	var parts []string
	for _, d := range devs {
		parts = append(parts, d.Info["pci.bus-id"])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// idOf is a device's minor number (byMinor) or host index (its GPU's,
// for a MIG instance).
func idOf(d driver.Device, byMinor bool) (int, bool) {
	if byMinor {
		return minorOf(d)
	}
	ix := d.Info["index"]
	if d.Parent != "" {
		ix = d.Info["gpu.index"]
	}
	n, err := strconv.Atoi(ix)
	return n, err == nil
}

func namedByUUID(devs []driver.Device) []driver.Device {
	out := make([]driver.Device, len(devs))
	for i, d := range devs {
		d.Info = d.Info.Clone()
		if u := d.Info["uuid"]; u != "" {
			d.Info[driver.InfoVisibleID] = u
		}
		out[i] = d
	}
	return out
}

func listed(devs []driver.Device, byMinor bool) string {
	if len(devs) == 0 {
		return "none"
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		m := d.Info[InfoMinor]
		if m == "" {
			m = "?"
		}
		parts[i] = fmt.Sprintf("index %s minor %s", d.Info["index"], m)
	}
	return strings.Join(parts, ", ")
}

// yarnDriver is the built-in GPU driver under YARN: each Discover asks
// what YARN assigned to this container and, where it assigned GPUs, hands
// out exactly those (recorded in the host state like any grant, so that no
// host-coordinated launcher, bridge call or Flink script takes them).
type yarnDriver struct {
	*driver.Coordinated
	lookup *yarnLookup
	filter *yarnFilter
	log    logrus.FieldLogger

	// early is the request sent when the driver was made (newYarnDriver),
	// answered while the launcher gets ready (its signal subscription);
	// the first Discover reads it. dropEarly ends it unread.
	mu        sync.Mutex
	early     func() (*yarnAssignment, driver.NodeAssignment, error)
	dropEarly func()
}

// newYarnDriver makes the driver and sends its request to the
// NodeManager at once (a GET: nothing is held). Its answer stands for the
// container's life: YARN assigns a container's GPUs once, at its start.
func newYarnDriver(sel *driver.Coordinated, lookup *yarnLookup, filter *yarnFilter, log logrus.FieldLogger) *yarnDriver {
	y := &yarnDriver{Coordinated: sel, lookup: lookup, filter: filter, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	answer, drop := lookup.start(ctx)
	y.early = func() (*yarnAssignment, driver.NodeAssignment, error) {
		defer cancel()
		return answer()
	}
	y.dropEarly = func() { cancel(); drop() } // cancelled first: drop need not wait for a slow connection
	return y
}

// answer returns the pending request for a Discover: the early one the
// first time (ended with ctx, should it end first), else a fresh one.
// done ends it unless read.
func (y *yarnDriver) answer(ctx context.Context) (answer func() (*yarnAssignment, driver.NodeAssignment, error), done func()) {
	y.mu.Lock()
	early, drop := y.early, y.dropEarly
	y.early, y.dropEarly = nil, nil
	y.mu.Unlock()
	if early == nil {
		return y.lookup.start(ctx)
	}
	stop := context.AfterFunc(ctx, drop)
	return early, func() { stop(); drop() }
}

var (
	_ driver.Driver         = (*yarnDriver)(nil)
	_ driver.Releaser       = (*yarnDriver)(nil)
	_ driver.HealthReporter = (*yarnDriver)(nil)
)

// Release implements driver.Releaser: it also ends an early request no
// Discover read (a driver made and released unused).
func (y *yarnDriver) Release(ctx context.Context) error {
	y.mu.Lock()
	drop := y.dropEarly
	y.early, y.dropEarly = nil, nil
	y.mu.Unlock()
	if drop != nil {
		drop()
	}
	return y.Coordinated.Release(ctx)
}

// Discover implements driver.Driver.
func (y *yarnDriver) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	start := time.Now()
	// The request is on its way while the host's GPUs are listed; the
	// answer is read once they are (yarnFilter), or here.
	answer, done := y.answer(ctx)
	defer done()
	p := &yarnPending{answer: answer, amount: amount, check: y.check}
	y.filter.set(p)
	infos, err := y.Coordinated.Discover(ctx, amount)
	p.wait()
	if err != nil && p.a != nil && hostStateUnusable(err) {
		// YARN assigned these GPUs to this container: they are the worker's
		// whether or not this user may use the host's coordination state (a
		// host shared by several Unix users, whose folder is another's).
		if devs, ferr := y.filter.Enumerate(ctx); ferr == nil {
			y.log.WithError(err).WithField("assigned", p.a.describe()).
				Warn("this user cannot use the host's coordination state; the GPUs YARN assigned are handed out without being recorded there (YARN's assignment is the truth on this host)")
			infos = make([]resources.Info, 0, len(devs))
			for _, d := range devs {
				infos = append(infos, d.Info.Clone())
			}
			err = nil
		}
	}
	if err != nil && p.a != nil && errors.Is(err, coord.ErrQuarantined) {
		err = fmt.Errorf("%w (%s): %w", driver.ErrAssignedQuarantined, p.a.describe(), err)
	}
	y.log.WithField("duration", time.Since(start).Round(time.Microsecond).String()).WithField("node_mode", p.na.Mode).Debug("asked the NodeManager")
	if p.a != nil && err == nil {
		y.log.WithFields(logrus.Fields{"node_mode": p.na.Mode, "assigned": p.a.describe(), "from": p.a.from()}).Info("took the GPUs YARN assigned to this container")
	}
	return infos, err
}

// check refuses an assignment of another number of GPUs than asked.
func (y *yarnDriver) check(a *yarnAssignment, amount int64) error {
	if int64(len(a.ids)) == amount {
		return nil
	}
	return fmt.Errorf("%w: YARN assigned %d %s GPU(s) to container %s (%s, from %s), but resource %s asks %d: "+
		"make the container's %s request and external-resource.%s.amount agree",
		driver.ErrAssignmentMismatch, len(a.ids), a.resource, y.lookup.getenv(EnvContainerID), a.describe(), a.from(),
		y.lookup.resource, amount, a.resource, y.lookup.resource)
}

// NodeAssignment implements driver.AssignmentReporter for the factory.
func (factory) NodeAssignment(ctx context.Context, opts driver.Options) (driver.NodeAssignment, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	timeout, err := smiTimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
	if err != nil {
		return driver.NodeAssignment{}, err
	}
	y, err := newYarnLookup(opts, getenv, timeout, opts.Log)
	if err != nil {
		return driver.NodeAssignment{}, err
	}
	_, na, err := y.resolve(ctx)
	if err != nil && na.Mode == "" {
		return na, err
	}
	if na.Mode == driver.NodeModePlugin && isolated(nvidiaDevDir, na) {
		na.Mode = driver.NodeModeIsolated
	}
	if na.Mode == driver.NodeModePlugin || na.Mode == driver.NodeModeIsolated || na.Mode == driver.NodeModeDocker || na.Mode == driver.NodeModeUnknown {
		if co, cerr := CoordinationOf(opts.Resource, opts.Params, getenv); cerr == nil && co.Script != "" {
			na.Action = "the discovery script " + co.Script + " picks the GPUs: YARN's assignment is NOT applied; " +
				"unset " + scriptPathParam.Key(opts.Resource) + " to let xres take the GPUs YARN assigned"
		}
	}
	return na, nil
}

// nvidiaDevDir holds the GPUs' device nodes, /dev/nvidia<minor>.
var nvidiaDevDir = "/dev"

// isolated tells whether this container is kept off the GPUs YARN did not
// assign to it: opening the device node of such a GPU is refused (a
// devices cgroup) or the node is absent (a container runtime). false
// where a node of another container's GPU opens, or none is known.
func isolated(devDir string, na driver.NodeAssignment) bool {
	mine := map[string]bool{}
	for _, a := range na.Assigned {
		mine[strings.Fields(a + " ?")[1]] = true // "minor 2 (index 1)"
	}
	seen := false
	for m := 0; m < 64 && !seen; m++ {
		if mine[strconv.Itoa(m)] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(devDir, "nvidia"+strconv.Itoa(m)), os.O_RDONLY, 0)
		switch {
		case err == nil:
			_ = f.Close()
			return false
		case errors.Is(err, os.ErrPermission):
			seen = true
		}
	}
	return seen
}

// hostStateUnusable: a Discover failed, recording nothing, because this
// user may not use the host's coordination state (its folder or files
// are another user's, or unsafe), not because a device is held.
func hostStateUnusable(err error) bool {
	if !errors.Is(err, driver.ErrNothingReserved) {
		return false
	}
	return errors.Is(err, coord.ErrUnsafeFolder) || errors.Is(err, coord.ErrUnsafeFile) || errors.Is(err, fs.ErrPermission)
}
