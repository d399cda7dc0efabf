// Package gpu is xres's NVIDIA GPU driver, registered as "xres.gpu" and
// under Flink's factory class name. It has two modes:
//
//   - script mode, when param discovery-script.path names a script that
//     exists: Flink's discovery-script protocol, exactly (the script picks
//     and, if its args ask, coordinates the indices itself);
//   - built-in mode otherwise (also when Flink's default script path is
//     configured but not installed): NVML through go-nvml, falling back to
//     nvidia-smi where the NVIDIA library is absent, with host coordination
//     (driver/coord) on by default.
//
// In built-in mode the units handed out are whole GPUs or, with param
// mig.strategy single or mixed, NVIDIA MIG instances (see MIGNone). A MIG
// instance's infos are index "<gpu>:<instance>", uuid MIG-…, mig.profile,
// mig.index, gpu.index, gpu.uuid, pci.bus-id, name, memory.total (and from
// NVML mig.gi, mig.ci); its coordination key is its MIG uuid, which is
// also what CUDA_VISIBLE_DEVICES takes, and its parent the GPU's key: a
// whole GPU is never handed out while one of its instances is held, nor an
// instance while its GPU is held whole, so resources with different
// strategies can share a host.
//
// Unless param health.enabled is false, every discovery asks afresh which
// GPUs are unfit and leaves them out: pages pending retirement, row
// remapping pending or failed, a GPU lost from the bus (NVML; nvidia-smi's
// retired_pages.pending and --query-remapped-rows). XID errors are not
// seen: NVML reports them only as events to a process listening when they
// happen. The coordination layer names the GPUs it left out, and why.
//
// Time limits (discovery-script.timeout, nvidia-smi.timeout) default to
// driver.Options.Timeout (xres.discovery.timeout), else 10 s.
package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xres/xres/conf/factoryname"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// BridgeResource is the resource the discovery bridge discovers with the
// GPU driver where none is configured (Spark's executors: gpu).
const BridgeResource = "gpu"

// Names the driver is registered under.
const (
	FactoryName       = factoryname.GPU
	FlinkFactoryClass = factoryname.GPUFlink
)

// Params (external-resource.<name>.param.<key>).
const (
	ParamScriptPath     = "discovery-script.path"     // Flink's
	ParamScriptArgs     = coord.ParamScriptArgs       // Flink's
	ParamScriptTimeout  = "discovery-script.timeout"  // default 10 s
	ParamScriptProtocol = "discovery-script.protocol" // auto | flink | spark
	ParamSource         = "discovery.source"          // auto | nvml | nvidia-smi
	ParamNvidiaSMI      = "nvidia-smi.path"           // default: nvidia-smi on PATH
	ParamNVMLLibrary    = "nvml.library"              // default: libnvidia-ml.so.1
	ParamCoordEnabled   = coord.ParamEnabled          // default true (built-in mode)
	ParamCoordFile      = coord.ParamFile             // default coord.DefaultStateFile
	ParamSMITimeout     = "nvidia-smi.timeout"        // default xres.discovery.timeout, else 10 s
	ParamMIGStrategy    = "mig.strategy"              // none (default) | single | mixed
	ParamMIGProfile     = "mig.profile"               // only MIG instances of this profile, e.g. 1g.10gb
	ParamHealth         = "health.enabled"            // default true: unhealthy GPUs are not handed out
)

// Defaults.
const (
	// FlinkDefaultScript is Flink's default discovery-script.path, relative
	// to $FLINK_HOME.
	FlinkDefaultScript   = "plugins/external-resource-gpu/nvidia-gpu-discovery.sh"
	DefaultScriptTimeout = driver.DefaultTimeout
)

// Configuration errors (returned by New, i.e. by Factory.NewDriver).
var (
	ErrInvalidParam        = driver.ErrInvalidParam
	ErrScriptNotFound      = errors.New("discovery script not found")
	ErrScriptNotExecutable = errors.New("discovery script not executable")
	// ErrNVMLUnavailable: the NVIDIA management library could not be loaded
	// or initialised (or the binary was built without cgo).
	ErrNVMLUnavailable = errors.New("NVML unavailable")
	// ErrNVMLHelperMissing: a launcher built without cgo found no xres-nvml
	// helper (NVMLHelperName) to read NVML with; it comes with
	// ErrNVMLUnavailable.
	ErrNVMLHelperMissing = errors.New("NVML helper missing")
)

// NewFactory returns the GPU driver factory.
func NewFactory() driver.Factory { return factory{} }

// factory is the GPU driver's factory: its devices are selected for the
// worker by CUDA_VISIBLE_DEVICES (Vendor), and it says how
// its drivers coordinate (CoordinationOf: a Flink script coordinates
// itself).
type factory struct{}

var (
	_ driver.VendorReporter       = factory{}
	_ driver.CoordinationReporter = factory{}
	_ driver.ParamChecker         = factory{}
)

// NewDriver implements driver.Factory.
func (factory) NewDriver(opts driver.Options) (driver.Driver, error) { return New(opts) }

// Vendor implements driver.VendorReporter.
func (factory) Vendor() driver.Vendor { return Vendor }

// Environment implements driver.VendorReporter.
func (factory) Environment(devices []resources.Info) map[string]string { return Environment(devices) }

// Coordination implements driver.CoordinationReporter.
func (factory) Coordination(resource string, params map[string]string, getenv func(string) string) (driver.Coordination, error) {
	return CoordinationOf(resource, params, getenv)
}

// CheckParams implements driver.ParamChecker (CheckParams).
func (factory) CheckParams(resource string, params map[string]string) error {
	return CheckParams(resource, params)
}

// CheckParams checks every param the GPU driver reads, in either mode,
// without the host (params.CheckGPU, which am runs without the driver):
// the discovery script is not looked for (whether it is installed is the
// host's business; a missing one is a discovery failure of that host), nor
// NVML or nvidia-smi. New runs it first, so its errors are New's own.
func CheckParams(resource string, p map[string]string) error {
	if err := params.CheckGPU(resource, p); err != nil {
		return err
	}
	return checkHealthParams(resource, p) // healthfactory.go
}

// Register adds the GPU driver to r as FactoryName, with Flink's GPU
// factory class name as an alias.
func Register(r *driver.Registry) error {
	return r.Register(FactoryName, NewFactory(), FlinkFactoryClass)
}

// New builds the GPU driver for one resource from its params. A bad param
// is CheckParams's error (a configuration error, the same on every host);
// a discovery script missing or not executable here (ErrScriptNotFound,
// ErrScriptNotExecutable) is this host's, as are errors from Discover.
func New(opts driver.Options) (driver.Driver, error) {
	return newDriver(opts, deps{})
}

// deps are the seams tests replace.
type deps struct {
	nvml    driver.Enumerator // nil: the real NVML
	gpusDir string            // "": NVIDIAGPUsDir
}

func newDriver(opts driver.Options, d deps) (driver.Driver, error) {
	log := driver.LoggerOrDiscard(opts.Log).WithField("resource", opts.Resource)
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := CheckParams(opts.Resource, opts.Params); err != nil {
		return nil, err
	}
	timeout, err := scriptTimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
	if err != nil {
		return nil, err
	}
	co, err := CoordinationOf(opts.Resource, opts.Params, getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range co.Warnings {
		log.Warn(w)
	}
	units, err := parseUnitOptions(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	if co.Script != "" {
		if units.wantMIG() {
			log.Warnf("%s is ignored: the discovery script picks the devices", migStrategyParam.Key(opts.Resource))
		}
		if err := checkScript(scriptPathParam.Key(opts.Resource), co.Script); err != nil {
			return nil, err
		}
		if opts.DryRun && co.Mode == CoordScript {
			log.Info("dry run: the discovery script coordinates by itself and will record its choice")
		}
		protocol, err := protocolParam.Choice(opts.Resource, opts.Params)
		if err != nil {
			return nil, err
		}
		settings, err := coord.ParseParams(opts.Resource, opts.Params)
		if err != nil {
			return nil, err
		}
		args := strings.Fields(coord.ScriptArgsParam.Get(opts.Params))
		opts.Log = log
		smiTimeout, err := smiTimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
		if err != nil {
			return nil, err
		}
		return &scriptDriver{resource: opts.Resource, path: co.Script, args: args, protocol: protocol, timeout: timeout, log: log,
			nvidia: namesNVIDIA(opts.Params), gpusDir: d.gpusDir,
			smi: nvidiaSMIParam.Get(opts.Params), getenv: getenv, smiTimeout: smiTimeout,
			xresCoord: co.Mode == CoordXres && protocol != ProtocolSpark,
			spark:     &sparkSelect{opts: opts, settings: settings}}, nil
	}

	// Built-in mode.
	source, err := sourceParam.Choice(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	smiTimeout, err := smiTimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
	if err != nil {
		return nil, err
	}
	nv := d.nvml
	if nv == nil {
		nv = newNVMLEnumerator(nvmlOptions{resource: opts.Resource, lib: nvmlLibraryParam.Get(opts.Params), units: units, timeout: smiTimeout, getenv: getenv, log: log})
	}
	smi := nvidiaSMIParam.Get(opts.Params)
	lookup, err := newYarnLookup(opts, getenv, smiTimeout, log)
	if err != nil {
		return nil, err
	}
	minors := &minorFiller{smi: smi, getenv: getenv, timeout: smiTimeout, gpusDir: d.gpusDir}
	enum := &autoSource{source: source, nvml: nv, smi: smi, getenv: getenv, timeout: smiTimeout, units: units,
		nvmlLib: nvmlLibraryParam.Get(opts.Params), log: log,
		minors: minors, needMinors: !lookup.off && lookup.inYarn()}

	opts.Log = log
	settings := coord.Settings{Enabled: co.Mode == CoordXres, StateFile: co.StateFile, FlinkFile: co.FlinkFile}
	if lookup.off || !lookup.inYarn() {
		placer, err := newTopoPlacer(opts.Resource, opts.Params, settings, &topoSource{resource: opts.Resource, source: source,
			smi: smi, nvmlLib: nvmlLibraryParam.Get(opts.Params), getenv: getenv, timeout: smiTimeout, log: log})
		if err != nil {
			return nil, err
		}
		sel, err := settings.CoordinatedPlaced(opts, enum, placer)
		if err != nil {
			return nil, err
		}
		return sel, nil
	}
	// In a YARN container: YARN's assignment, where its NodeManager makes
	// one, filters the (host-wide cached) listing per Discover.
	var inner driver.Enumerator = enum
	if settings.Enabled {
		inner = coord.Cached(enum, settings.StateFile, log)
	}
	filter := &yarnFilter{inner: inner, minors: minors}
	sel, err := settings.Coordinated(opts, filter)
	if err != nil {
		return nil, err
	}
	return newYarnDriver(sel, lookup, filter, log), nil
}

// resolveScript applies Flink's rule: a relative path is relative to
// $FLINK_HOME when set, else to the working directory.
func resolveScript(raw string, getenv func(string) string) string {
	if filepath.IsAbs(raw) {
		return raw
	}
	if home := getenv("FLINK_HOME"); home != "" {
		return filepath.Join(home, raw)
	}
	if abs, err := filepath.Abs(raw); err == nil {
		return abs
	}
	return raw
}

func checkScript(key, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s = %s (relative paths are resolved against $FLINK_HOME, else the working directory)", ErrScriptNotFound, key, path)
		}
		return fmt.Errorf("%w: %s = %s: %v", ErrScriptNotFound, key, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s = %s is not a regular file", ErrScriptNotExecutable, key, path)
	}
	if err := syscall.Access(path, 0x1 /* X_OK */); err != nil {
		return fmt.Errorf("%w: %s = %s: %v (chmod +x it)", ErrScriptNotExecutable, key, path, err)
	}
	return nil
}

// ParseDuration reads a duration the way Flink writes them: "10 s",
// "10000 ms", "2 min", a bare number of milliseconds, or Go's "1m30s"
// (driver.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return driver.ParseDuration(s) }
