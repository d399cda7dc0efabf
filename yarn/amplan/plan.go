package amplan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

// Flink's heartbeat and REST server options the AM reads (declared in conf/).
var (
	KeyHeartbeat        = conf.YarnHeartbeat.Key        // whole seconds, default 5
	KeyRequestHeartbeat = conf.YarnRequestHeartbeat.Key // duration (plain number = ms), default 500 ms
	KeyBindAddress      = conf.RestBindAddress.Key      // tracking server address, default 0.0.0.0
	KeyBindPort         = conf.RestBindPort.Key         // port, range or list, default 0 (any)
)

// DefaultProcessSize is used when taskmanager.memory.process.size is unset:
// the value Flink's shipped flink-conf.yaml carries.
const DefaultProcessSize = "1728m"

// Default heartbeat intervals (Flink's yarn.heartbeat.* defaults).
const (
	DefaultHeartbeat        = 5 * time.Second
	DefaultRequestHeartbeat = 500 * time.Millisecond
)

// ErrBadConfig is wrapped by every configuration error of this package:
// conf.ErrInvalid, the one sentinel of configuration errors (an alias kept
// for the many uses in this package).
var ErrBadConfig = conf.ErrInvalid

// Plan is what the AM will ask for: how many workers and of which size.
type Plan struct {
	BaseWorkers         int           `json:"base-workers"`          // ceil(parallelism / slots), or --workers
	Spares              int           `json:"spares"`                // standby spares (slotmanager.redundant-taskmanager-num), capped
	Workers             int           `json:"workers"`               // workers that run the command: base, capped
	SlotsPerWorker      int           `json:"slots-per-worker"`      // taskmanager.numberOfTaskSlots
	MaxFailedContainers int           `json:"max-failed-containers"` // failures replaced before the app fails
	Profile             yarn.Resource `json:"profile"`               // one worker container
	Warnings            []string      `json:"warnings,omitempty"`

	// NodeLabel is yarn.taskmanager.node-label; MaxWorkersPerNode is
	// xres.placement.max-workers-per-node (0: no limit).
	NodeLabel         string `json:"node-label,omitempty"`
	MaxWorkersPerNode int    `json:"max-workers-per-node,omitempty"`

	// Reactive is scheduler-mode: reactive: the application runs once
	// MinWorkers (xres.reactive.min-workers) run and takes more as YARN
	// grants them.
	Reactive   bool `json:"reactive,omitempty"`
	MinWorkers int  `json:"min-workers,omitempty"`

	// How the group's workers find each other (rendezvous.go): the groups
	// whose workers must run first (xres.worker-group.<group>.depends-on),
	// the port its workers serve on (.port: 0 none, PortAuto the launcher
	// picks one, PortWorker the worker does), gang start (.gang, bounded by xres.gang.timeout) and the
	// framework environment (xres.rendezvous: torch, tensorflow).
	DependsOn   []string      `json:"depends-on,omitempty"`
	Port        int           `json:"port,omitempty"`
	Gang        bool          `json:"gang,omitempty"`
	GangTimeout time.Duration `json:"gang-timeout,omitempty"`
	Rendezvous  string        `json:"rendezvous,omitempty"`
}

// Plan.Port for xres.worker-group.<group>.port: auto (the launcher picks a
// free one) and worker (the worker binds one and tells its launcher).
const (
	PortAuto   = -1
	PortWorker = -2
)

// Rendezvous modes (xres.rendezvous).
const (
	RendezvousTorch      = "torch"
	RendezvousTensorflow = "tensorflow"
)

// PlanWorkers computes the worker plan from the configuration, with Flink's
// meaning for every key, and the external resources to ask (specs, from
// resources.Parse). workers > 0 overrides the count derived from
// parallelism.default (the --workers flag). Every problem is reported at
// once, each naming the key and where its value came from (file:line, -D).
//
// Rules:
//   - base workers = ceil(parallelism.default / taskmanager.numberOfTaskSlots);
//   - plus slotmanager.redundant-taskmanager-num standby spares: containers
//     that hold their devices and run no command until a worker fails
//     (rendezvous.go); they count in neither XRES_WORKERS nor SUCCEEDED;
//   - workers and spares together are capped at
//     floor(slotmanager.number-of-slots.max / slots), as Flink's slot
//     manager refuses any worker (spares included) that would pass the slot
//     maximum; the workers are kept first;
//   - yarn.maximum-failed-containers defaults to workers + spares (Flink:
//     the number of workers initially requested);
//   - memory = taskmanager.memory.process.size in MiB, truncating (1728m
//     when unset);
//   - vcores = ceil(taskmanager.cpu.cores) if set, else yarn.containers.vcores
//     if > 0, else the slot count;
//   - each resource with a yarn.config-key adds <key>: <amount>.
func PlanWorkers(cfg *conf.Config, specs []resources.Spec, workers int) (Plan, error) {
	var p Plan
	r := &planReader{cfg: cfg}
	counted, slots := r.count(&p, workers)
	p.MaxFailedContainers = p.Workers + p.Spares
	if _, set := r.cfg.Get(conf.YarnMaxFailedContainers.Key); set {
		v := r.intOpt(conf.YarnMaxFailedContainers)
		if v < 0 {
			r.bad(conf.YarnMaxFailedContainers, "must not be negative, got %d", v)
		}
		p.MaxFailedContainers = int(v)
	}

	r.profile(&p, specs, slots)
	r.scheduling(&p, counted)
	return p, errors.Join(r.errs...)
}

// planReader reads PlanWorkers' keys, collecting every problem.
type planReader struct {
	cfg  *conf.Config
	errs []error
}

// intOpt reads opt as an integer; a bad value is a problem (0 returned).
func (r *planReader) intOpt(opt conf.Option) int64 {
	v, err := r.cfg.Int(opt)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
	}
	return int64(v)
}

// bad records a problem with opt's value, naming its key and origin.
func (r *planReader) bad(opt conf.Option, format string, args ...any) {
	origin := r.cfg.Origin(opt.Key)
	if origin == "" {
		origin = conf.OriginDefault
	}
	r.errs = append(r.errs, fmt.Errorf("%w: config key %s (%s): %s", ErrBadConfig, opt.Key, origin, fmt.Sprintf(format, args...)))
}

// count sets the workers, spares and slots per worker from the parallelism,
// the slots and their maximum (or --workers); counted is false when one
// of those keys is bad (the counts are then left zero). slots is
// taskmanager.numberOfTaskSlots as read.
func (r *planReader) count(p *Plan, workers int) (counted bool, slots int64) {
	parallelism := r.intOpt(conf.ParallelismDefault)
	slots = r.intOpt(conf.TaskManagerSlots)
	maxSlots := r.intOpt(conf.SlotsMax)
	spares := r.intOpt(conf.RedundantWorkers)
	counted = len(r.errs) == 0
	if counted {
		n := len(r.errs)
		if parallelism < 1 {
			r.bad(conf.ParallelismDefault, "must be at least 1, got %d", parallelism)
		}
		if slots < 1 {
			r.bad(conf.TaskManagerSlots, "must be at least 1, got %d", slots)
		} else if maxSlots < slots {
			r.bad(conf.SlotsMax, "%d is below %s (%d): no worker fits", maxSlots, conf.TaskManagerSlots.Key, slots)
		}
		if spares < 0 {
			r.bad(conf.RedundantWorkers, "must not be negative, got %d", spares)
		}
		if workers < 0 {
			r.errs = append(r.errs, fmt.Errorf("%w: --workers must be at least 1, got %d", ErrBadConfig, workers))
		}
		counted = len(r.errs) == n
	}
	if counted {
		p.SlotsPerWorker = int(slots)
		if workers > 0 {
			p.BaseWorkers = workers
		} else {
			p.BaseWorkers = int((parallelism + slots - 1) / slots)
		}
		limit := maxSlots / slots
		base := int64(p.BaseWorkers)
		switch {
		case base+spares <= limit:
		case spares == 0:
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s=%d caps the workers at %d (of %d asked)", conf.SlotsMax.Key, maxSlots, limit, base))
		default:
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s=%d caps workers and spares at %d (of %d workers + %d spares asked)",
				conf.SlotsMax.Key, maxSlots, limit, base, spares))
		}
		p.Workers = int(min(base, limit))
		p.Spares = int(min(spares, limit-int64(p.Workers)))
	}
	return counted, slots
}

// profile sets the container's size: memory, vcores and external resources.
func (r *planReader) profile(p *Plan, specs []resources.Spec, slots int64) {
	mem, err := processMemoryMB(r.cfg)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	if slots < 1 {
		slots = 1 // reported above; keeps the vcores check going
	}
	vcores, err := containerVcores(r.cfg, slots)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	extra, err := yarnResources(specs)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	p.Profile = yarn.Resource{MemoryMB: mem, VCores: vcores, Extra: extra}
}

// scheduling sets the placement, the scheduler mode and the rendezvous, and
// warns of keys that have no effect.
func (r *planReader) scheduling(p *Plan, counted bool) {
	p.NodeLabel, _ = r.cfg.String(conf.YarnTaskManagerNodeLabel)
	p.NodeLabel = strings.TrimSpace(p.NodeLabel)
	if k := r.intOpt(conf.PlacementMaxWorkersPerNode); k < 0 {
		r.bad(conf.PlacementMaxWorkersPerNode, "must not be negative, got %d", k)
	} else {
		p.MaxWorkersPerNode = int(k)
	}
	mode, _ := r.cfg.String(conf.SchedulerMode)
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "":
	case "reactive":
		p.Reactive = true
	default:
		r.bad(conf.SchedulerMode, "%q is not a scheduler mode (reactive, or leave it unset)", mode)
	}
	minWorkers := r.intOpt(conf.ReactiveMinWorkers)
	_, minSet := r.cfg.Get(conf.ReactiveMinWorkers.Key)
	switch {
	case minWorkers < 1:
		r.bad(conf.ReactiveMinWorkers, "must be at least 1, got %d", minWorkers)
	case p.Reactive && counted && int(minWorkers) > p.Workers:
		r.bad(conf.ReactiveMinWorkers, "%d is more than the %d workers asked: the application could never run", minWorkers, p.Workers)
	case p.Reactive:
		p.MinWorkers = int(minWorkers)
	case minSet:
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s (%s) has no effect without %s: reactive",
			conf.ReactiveMinWorkers.Key, r.cfg.Origin(conf.ReactiveMinWorkers.Key), conf.SchedulerMode.Key))
	}
	rv, _ := r.cfg.String(conf.Rendezvous)
	switch rdv := strings.ToLower(strings.TrimSpace(rv)); rdv {
	case "", RendezvousTorch, RendezvousTensorflow:
		p.Rendezvous = rdv
	default:
		r.bad(conf.Rendezvous, "%q is not a rendezvous (torch, tensorflow, or leave it unset)", rdv)
	}
	if _, set := r.cfg.Get(conf.EvenlySpreadOutSlots.Key); set {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s (%s) has no effect on YARN (it spreads slots over a standalone cluster's TaskManagers); to spread the workers over nodes set %s (1: at most one worker per node)",
			conf.EvenlySpreadOutSlots.Key, r.cfg.Origin(conf.EvenlySpreadOutSlots.Key), conf.PlacementMaxWorkersPerNode.Key))
	}
}

// Group is one worker group of the application: its plan (count, size,
// external resources, failure limit, placement), how its containers are
// started, and its YARN keys' resource names (CheckProfile's messages).
// Each group has an ask of its own (allocation_request_id and priority
// 1, 2, … in order) and counts its own failures.
type Group struct {
	Name   string // "" for the only group of an application without xres.worker-groups
	Plan   Plan
	Launch yarn.LaunchContext
	Owners map[string]string
}

// PlannedGroup is one worker group as planned: its plan, its external
// resources, its worker command (nil: the one after --) and the
// environment of its containers (containerized.taskmanager.env.* as its
// view of the configuration sees them).
type PlannedGroup struct {
	Name    string
	Plan    Plan
	Specs   []resources.Spec
	Command []string
	Env     map[string]string
}

// PlanGroups plans the worker groups of xres.worker-groups, each with
// PlanWorkers on its own view of the configuration (conf.Config.Group),
// its count from xres.worker-group.<group>.workers and its command from
// xres.worker-group.<group>.command; without xres.worker-groups, one
// unnamed group from the plain keys. parse reads a view's external
// resources (resources.Parse with the caller's options). workers > 0 is
// the --workers flag, which only an application without groups takes.
// Every group's problems are reported at once, each prefixed with its
// group.
func PlanGroups(cfg *conf.Config, workers int, parse func(*conf.Config) ([]resources.Spec, error)) ([]PlannedGroup, error) {
	names, err := cfg.WorkerGroupNames()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if names == nil {
		specs, err := parse(cfg)
		if err != nil {
			return nil, err
		}
		p, err := PlanWorkers(cfg, specs, workers)
		if err != nil {
			return nil, err
		}
		return []PlannedGroup{{Plan: p, Specs: specs, Env: EnvFromConfig(cfg, WorkerEnvPrefix)}}, nil
	}
	if workers > 0 {
		return nil, fmt.Errorf("%w: --workers cannot be used with %s (%s); set %s for each group",
			ErrBadConfig, conf.WorkerGroups.Key, cfg.Origin(conf.WorkerGroups.Key), conf.WorkerGroupWorkers.Key)
	}
	var out []PlannedGroup
	var errs []error
	for _, name := range names {
		g, err := PlanGroup(cfg, name, parse)
		if err != nil {
			errs = append(errs, fmt.Errorf("worker group %s: %w", name, err))
			continue
		}
		out = append(out, g)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := checkDependencies(cfg, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkDependencies checks every group's depends-on: known groups, not
// itself, no cycle.
func checkDependencies(cfg *conf.Config, gs []PlannedGroup) error {
	deps := map[string][]string{}
	for _, g := range gs {
		deps[g.Name] = g.Plan.DependsOn
	}
	var errs []error
	for _, g := range gs {
		key := conf.WorkerGroupDependsOn.For(g.Name).Key
		for _, d := range g.Plan.DependsOn {
			if _, ok := deps[d]; !ok {
				errs = append(errs, fmt.Errorf("%w: config key %s (%s): %q is not a group of %s", ErrBadConfig, key, cfg.Origin(key), d, conf.WorkerGroups.Key))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// A cycle: depth-first, 1 = on the path, 2 = done.
	state := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = 1
		path = append(path, n)
		for _, d := range deps[n] {
			switch state[d] {
			case 1:
				i := slices.Index(path, d)
				return append(slices.Clone(path[i:]), d)
			case 0:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return nil
	}
	for _, g := range gs {
		if state[g.Name] == 0 {
			if c := visit(g.Name); c != nil {
				key := conf.WorkerGroupDependsOn.For(c[0]).Key
				return fmt.Errorf("%w: config key %s (%s): the groups depend on each other in a cycle (%s), so none could start",
					ErrBadConfig, key, cfg.Origin(key), strings.Join(c, " → "))
			}
		}
	}
	return nil
}

// planCoordination reads group name's depends-on, port and gang keys
// into p.
func planCoordination(cfg *conf.Config, name string, p *Plan) error {
	var errs []error
	depKey := conf.WorkerGroupDependsOn.For(name)
	if _, set := cfg.Get(depKey.Key); set {
		list, err := cfg.List(depKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
		}
		for _, d := range list {
			for _, d := range strings.Split(d, ",") {
				d = strings.TrimSpace(d)
				switch {
				case d == "":
				case d == name:
					errs = append(errs, fmt.Errorf("%w: config key %s (%s): a group cannot depend on itself", ErrBadConfig, depKey.Key, cfg.Origin(depKey.Key)))
				case !slices.Contains(p.DependsOn, d):
					p.DependsOn = append(p.DependsOn, d)
				}
			}
		}
	}
	portKey := conf.WorkerGroupPort.For(name).Key
	if text, set := cfg.Get(portKey); set {
		text = strings.TrimSpace(text)
		n, err := strconv.Atoi(text)
		switch {
		case strings.EqualFold(text, "auto"):
			p.Port = PortAuto
		case strings.EqualFold(text, contract.PortWantedWorker):
			p.Port = PortWorker
			if p.Rendezvous != "" {
				errs = append(errs, fmt.Errorf("%w: config key %s (%s): a worker tells its own port only once it runs, but %s: %s needs the ports before the workers start; use auto or a number",
					ErrBadConfig, portKey, cfg.Origin(portKey), conf.Rendezvous.Key, p.Rendezvous))
			}
		case err != nil || n < 1 || n > 65535:
			errs = append(errs, fmt.Errorf("%w: config key %s (%s): %q is not a port (auto, worker, or 1-65535)", ErrBadConfig, portKey, cfg.Origin(portKey), text))
		default:
			p.Port = n
		}
	}
	gangOpt := conf.WorkerGroupGang.For(name)
	gang, err := cfg.Bool(gangOpt)
	if err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
	}
	if gang && p.Reactive {
		errs = append(errs, fmt.Errorf("%w: config key %s (%s): a gang needs all its workers, %s: reactive runs with fewer; choose one",
			ErrBadConfig, gangOpt.Key, cfg.Origin(gangOpt.Key), conf.SchedulerMode.Key))
	}
	p.Gang = gang
	if gang {
		view := cfg.Group(name)
		d, err := view.Duration(conf.GangTimeout)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
		case d <= 0:
			errs = append(errs, fmt.Errorf("%w: config key %s (%s): must be positive", ErrBadConfig, conf.GangTimeout.Key, view.Origin(conf.GangTimeout.Key)))
		default:
			p.GangTimeout = d
		}
	}
	return errors.Join(errs...)
}

// PlanGroup plans worker group name alone, as PlanGroups does each group
// (its errors without the group's prefix); it does not check that
// xres.worker-groups lists name.
func PlanGroup(cfg *conf.Config, name string, parse func(*conf.Config) ([]resources.Spec, error)) (PlannedGroup, error) {
	g := PlannedGroup{Name: name}
	view := cfg.Group(name)
	n := 0
	countOpt := conf.WorkerGroupWorkers.For(name)
	if _, set := cfg.Get(countOpt.Key); set {
		v, err := cfg.Int(countOpt)
		if err != nil {
			return g, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		if v < 1 {
			return g, fmt.Errorf("%w: config key %s (%s): must be at least 1, got %d", ErrBadConfig, countOpt.Key, cfg.Origin(countOpt.Key), v)
		}
		n = v
	}
	cmdKey := conf.WorkerGroupCommand.For(name).Key
	if text, set := cfg.Get(cmdKey); set {
		argv, err := conf.SplitCommand(text)
		if err == nil && len(argv) == 0 {
			err = errors.New("is empty")
		}
		if err != nil {
			return g, fmt.Errorf("%w: config key %s (%s): %w", ErrBadConfig, cmdKey, cfg.Origin(cmdKey), err)
		}
		g.Command = argv
	}
	g.Env = EnvFromConfig(view, WorkerEnvPrefix)
	specs, err := parse(view)
	if err != nil {
		return g, err
	}
	g.Specs = specs
	g.Plan, err = PlanWorkers(view, specs, n)
	return g, errors.Join(err, planCoordination(cfg, name, &g.Plan))
}

func processMemoryMB(cfg *conf.Config) (int64, error) {
	key := conf.TaskManagerProcessSize.Key
	text, set := cfg.Get(key)
	if !set {
		text = DefaultProcessSize
	}
	bytes, err := conf.ParseMemorySize(text)
	if err != nil {
		return 0, fmt.Errorf("%w: config key %s (%s): %q is not a memory size: %w", ErrBadConfig, key, cfg.Origin(key), text, err)
	}
	mb := bytes >> 20
	if mb < 1 {
		return 0, fmt.Errorf("%w: config key %s (%s): %q is below 1 MiB", ErrBadConfig, key, cfg.Origin(key), text)
	}
	return mb, nil
}

func containerVcores(cfg *conf.Config, slots int64) (int64, error) {
	key := conf.TaskManagerCPUCores.Key
	if text, set := cfg.Get(key); set && strings.TrimSpace(text) != "" {
		cores, err := cfg.Float(conf.TaskManagerCPUCores)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		if math.IsNaN(cores) || cores <= 0 || cores > math.MaxInt32 {
			return 0, fmt.Errorf("%w: config key %s (%s): must be a positive number of cores, got %s", ErrBadConfig, key, cfg.Origin(key), text)
		}
		return int64(math.Ceil(cores)), nil
	}
	v, err := cfg.Int(conf.YarnContainerVcores)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if v > 0 {
		return int64(v), nil
	}
	return slots, nil
}

// yarnResources maps each spec with a yarn.config-key to its amount (as
// resources.YarnResources). A spec without a key is not asked from YARN;
// a key naming memory-mb or vcores is an error.
func yarnResources(specs []resources.Spec) (map[string]int64, error) {
	var errs []error
	var kept []resources.Spec
	for _, s := range specs {
		key := s.YarnKey
		switch {
		case strings.TrimSpace(key) == "":
			// Not asked from YARN; resources.Parse (SideYarn) and Lint
			// report it.
		case key == "memory-mb" || key == "vcores":
			errs = append(errs, fmt.Errorf("%w: %s=%s names a built-in resource", ErrBadConfig,
				conf.ExternalResourceYarnKey.For(s.Name).Key, key))
		case s.Amount <= 0:
			errs = append(errs, fmt.Errorf("%w: %s must be positive, got %d", ErrBadConfig,
				conf.ExternalResourceAmount.For(s.Name).Key, s.Amount))
		default:
			kept = append(kept, s)
		}
	}
	out := resources.YarnResources(kept)
	if len(out) == 0 {
		out = nil
	}
	return out, errors.Join(errs...)
}

// heartbeats reads yarn.heartbeat.interval (whole seconds) and
// yarn.heartbeat.container-request-interval (Flink duration, plain number =
// ms), with Flink's defaults.
func heartbeats(cfg *conf.Config) (normal, request time.Duration, err error) {
	normal, request = DefaultHeartbeat, DefaultRequestHeartbeat
	if v, set, e := cfg.IntKey(KeyHeartbeat); e != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrBadConfig, e)
	} else if set {
		if v < 1 {
			return 0, 0, fmt.Errorf("%w: config key %s (%s): must be at least 1 second, got %d", ErrBadConfig, KeyHeartbeat, cfg.Origin(KeyHeartbeat), v)
		}
		normal = time.Duration(v) * time.Second
	}
	if v, set, e := cfg.DurationKey(KeyRequestHeartbeat); e != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrBadConfig, e)
	} else if set {
		if v <= 0 {
			return 0, 0, fmt.Errorf("%w: config key %s (%s): must be positive", ErrBadConfig, KeyRequestHeartbeat, cfg.Origin(KeyRequestHeartbeat))
		}
		request = v
	}
	return normal, request, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
