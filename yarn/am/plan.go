package am

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/resources"
)

// Configuration keys the AM reads. All but the rest.* and xres.* ones are
// Flink's, with Flink's meaning.
const (
	KeyParallelism      = "parallelism.default"                       // int, default 1
	KeySlotsPerWorker   = "taskmanager.numberOfTaskSlots"             // int, default 1
	KeyMaxSlots         = "slotmanager.number-of-slots.max"           // int, default unlimited
	KeyRedundantWorkers = "slotmanager.redundant-taskmanager-num"     // int, default 0
	KeyProcessSize      = "taskmanager.memory.process.size"           // memory size, default 1728m
	KeyCPUCores         = "taskmanager.cpu.cores"                     // double, unset
	KeyYarnVcores       = "yarn.containers.vcores"                    // int, default -1 (unset)
	KeyMaxFailed        = "yarn.maximum-failed-containers"            // int, default: the initial worker count
	KeyHeartbeat        = "yarn.heartbeat.interval"                   // seconds, default 5
	KeyRequestHeartbeat = "yarn.heartbeat.container-request-interval" // duration (plain number = ms), default 500 ms
	KeyWorkerEnvPrefix  = "containerized.taskmanager.env."            // + VAR: worker environment
	KeyMasterEnvPrefix  = "containerized.master.env."                 // + VAR: AM environment
	KeyBindAddress      = "rest.bind-address"                         // tracking server address, default 0.0.0.0
	KeyBindPort         = "rest.bind-port"                            // port or range "50100-50200", default 0 (any)
)

// DefaultProcessSize is used when taskmanager.memory.process.size is unset:
// the value Flink's shipped flink-conf.yaml carries.
const DefaultProcessSize = "1728m"

// Default heartbeat intervals (Flink's yarn.heartbeat.* defaults).
const (
	DefaultHeartbeat        = 5 * time.Second
	DefaultRequestHeartbeat = 500 * time.Millisecond
)

// ErrBadConfig is wrapped by every configuration error of this package.
var ErrBadConfig = errors.New("invalid configuration")

// Lookup reads one configuration value; ok is false when the key is unset.
type Lookup func(key string) (value string, ok bool)

// MapLookup adapts a flat key/value map to Lookup.
func MapLookup(m map[string]string) Lookup {
	return func(key string) (string, bool) {
		v, ok := m[key]
		return v, ok
	}
}

// Resource is a YARN container size: memory in MiB, virtual cores and the
// extended resources (YARN resource-type name such as yarn.io/gpu → amount).
type Resource struct {
	MemoryMB int64            `json:"memory-mb"`
	VCores   int64            `json:"vcores"`
	Extra    map[string]int64 `json:"resources,omitempty"`
}

// String renders r like YARN does: <memory:1728, vCores:1, yarn.io/gpu: 2>.
func (r Resource) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<memory:%d, vCores:%d", r.MemoryMB, r.VCores)
	for _, k := range sortedKeys(r.Extra) {
		fmt.Fprintf(&b, ", %s: %d", k, r.Extra[k])
	}
	b.WriteString(">")
	return b.String()
}

// Plan is what the AM will ask for: how many workers and of which size.
type Plan struct {
	BaseWorkers         int      `json:"base-workers"`          // ceil(parallelism / slots), or --workers
	Spares              int      `json:"spares"`                // slotmanager.redundant-taskmanager-num
	Workers             int      `json:"workers"`               // containers asked: base + spares, capped
	SlotsPerWorker      int      `json:"slots-per-worker"`      // taskmanager.numberOfTaskSlots
	MaxFailedContainers int      `json:"max-failed-containers"` // failures replaced before the app fails
	Profile             Resource `json:"profile"`               // one worker container
	Warnings            []string `json:"warnings,omitempty"`
}

// PlanWorkers computes the worker plan from the configuration, with Flink's
// meaning for every key, and the external resources to ask (specs, as
// parsed from external-resource.<name>.*). workers > 0 overrides the
// count derived from parallelism.default (the --workers flag).
//
// Rules:
//   - base workers = ceil(parallelism.default / taskmanager.numberOfTaskSlots);
//   - plus slotmanager.redundant-taskmanager-num spares;
//   - the total is capped at floor(slotmanager.number-of-slots.max / slots),
//     as Flink's slot manager refuses any worker (spares included) that would
//     pass the slot maximum;
//   - memory = taskmanager.memory.process.size in MiB, truncating;
//   - vcores = ceil(taskmanager.cpu.cores) if set, else yarn.containers.vcores
//     if > 0, else the slot count;
//   - each resource with a yarn.config-key adds <key>: <amount>.
func PlanWorkers(get Lookup, specs []resources.Spec, workers int) (Plan, error) {
	var p Plan
	var errs []error
	intOpt := func(key string, def int64) int64 {
		v, err := intOption(get, key, def)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	parallelism := intOpt(KeyParallelism, 1)
	slots := intOpt(KeySlotsPerWorker, 1)
	maxSlots := intOpt(KeyMaxSlots, math.MaxInt32)
	spares := intOpt(KeyRedundantWorkers, 0)
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	switch {
	case parallelism < 1:
		errs = append(errs, fmt.Errorf("%w: %s must be at least 1, got %d", ErrBadConfig, KeyParallelism, parallelism))
	case slots < 1:
		errs = append(errs, fmt.Errorf("%w: %s must be at least 1, got %d", ErrBadConfig, KeySlotsPerWorker, slots))
	case maxSlots < slots:
		errs = append(errs, fmt.Errorf("%w: %s (%d) is below %s (%d): no worker fits",
			ErrBadConfig, KeyMaxSlots, maxSlots, KeySlotsPerWorker, slots))
	case spares < 0:
		errs = append(errs, fmt.Errorf("%w: %s must not be negative, got %d", ErrBadConfig, KeyRedundantWorkers, spares))
	case workers < 0:
		errs = append(errs, fmt.Errorf("%w: --workers must be at least 1, got %d", ErrBadConfig, workers))
	}
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	p.SlotsPerWorker = int(slots)
	if workers > 0 {
		p.BaseWorkers = workers
	} else {
		p.BaseWorkers = int((parallelism + slots - 1) / slots)
	}
	p.Spares = int(spares)
	total := int64(p.BaseWorkers) + spares
	if limit := maxSlots / slots; total > limit {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s=%d caps the workers at %d (of %d asked)",
			KeyMaxSlots, maxSlots, limit, total))
		total = limit
	}
	p.Workers = int(total)

	maxFailed, err := intOption(get, KeyMaxFailed, int64(p.Workers))
	if err != nil {
		errs = append(errs, err)
	} else if maxFailed < 0 {
		errs = append(errs, fmt.Errorf("%w: %s must not be negative, got %d", ErrBadConfig, KeyMaxFailed, maxFailed))
	}
	p.MaxFailedContainers = int(maxFailed)

	mem, err := processMemoryMB(get)
	if err != nil {
		errs = append(errs, err)
	}
	vcores, err := containerVcores(get, slots)
	if err != nil {
		errs = append(errs, err)
	}
	extra, warns, err := yarnResources(specs)
	if err != nil {
		errs = append(errs, err)
	}
	p.Warnings = append(p.Warnings, warns...)
	p.Profile = Resource{MemoryMB: mem, VCores: vcores, Extra: extra}
	return p, errors.Join(errs...)
}

func processMemoryMB(get Lookup) (int64, error) {
	text, ok := get(KeyProcessSize)
	if !ok || strings.TrimSpace(text) == "" {
		text = DefaultProcessSize
	}
	bytes, err := ParseMemorySize(text)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrBadConfig, KeyProcessSize, err)
	}
	mb := bytes >> 20
	if mb < 1 {
		return 0, fmt.Errorf("%w: %s=%q is below 1 MiB", ErrBadConfig, KeyProcessSize, text)
	}
	return mb, nil
}

func containerVcores(get Lookup, slots int64) (int64, error) {
	if text, ok := get(KeyCPUCores); ok && strings.TrimSpace(text) != "" {
		cores, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsNaN(cores) || math.IsInf(cores, 0) {
			return 0, fmt.Errorf("%w: %s=%q is not a number", ErrBadConfig, KeyCPUCores, text)
		}
		if cores <= 0 {
			return 0, fmt.Errorf("%w: %s must be positive, got %s", ErrBadConfig, KeyCPUCores, text)
		}
		up := math.Ceil(cores)
		if up > math.MaxInt32 {
			return 0, fmt.Errorf("%w: %s=%s is too large", ErrBadConfig, KeyCPUCores, text)
		}
		return int64(up), nil
	}
	v, err := intOption(get, KeyYarnVcores, -1)
	if err != nil {
		return 0, err
	}
	if v > 0 {
		return v, nil
	}
	return slots, nil
}

// yarnResources maps each spec with a yarn.config-key to its amount. A
// spec without a key is not asked from YARN (warning); two specs with the
// same key, or a key naming memory-mb or vcores, are errors (Flink lets one
// win at random).
func yarnResources(specs []resources.Spec) (map[string]int64, []string, error) {
	out := map[string]int64{}
	owner := map[string]string{}
	var warns []string
	var errs []error
	for _, s := range specs {
		key := strings.TrimSpace(s.YarnKey)
		if key == "" {
			warns = append(warns, fmt.Sprintf("resource %s: external-resource.%s.yarn.config-key is not set; it is not asked from YARN", s.Name, s.Name))
			continue
		}
		if key == "memory-mb" || key == "vcores" {
			errs = append(errs, fmt.Errorf("%w: external-resource.%s.yarn.config-key=%s names a built-in resource", ErrBadConfig, s.Name, key))
			continue
		}
		if s.Amount <= 0 {
			errs = append(errs, fmt.Errorf("%w: external-resource.%s.amount must be positive, got %d", ErrBadConfig, s.Name, s.Amount))
			continue
		}
		if prev, dup := owner[key]; dup {
			errs = append(errs, fmt.Errorf("%w: resources %s and %s both set yarn.config-key %s", ErrBadConfig, prev, s.Name, key))
			continue
		}
		owner[key] = s.Name
		out[key] = s.Amount
	}
	if len(out) == 0 {
		out = nil
	}
	return out, warns, errors.Join(errs...)
}

func intOption(get Lookup, key string, def int64) (int64, error) {
	text, ok := get(key)
	if !ok || strings.TrimSpace(text) == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not a 32-bit integer", ErrBadConfig, key, text)
	}
	return v, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
