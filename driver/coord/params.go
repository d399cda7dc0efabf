package coord

import (
	"fmt"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/params"
)

// The params (external-resource.<name>.param.<key>) that switch host
// coordination, read the same way by every built-in driver (gpu, pci,
// amd) and by exec plugins.
const (
	ParamEnabled    = "coordination.enabled"  // default true
	ParamFile       = "coordination.file"     // default DefaultStateFile
	ParamScriptArgs = "discovery-script.args" // Flink's; its coordination flags count
)

// The declarations of those params (driver.Declare), read through them.
var (
	EnabledParam = driver.Declare(params.CoordEnabled.WithDoc("Reserve devices host-wide so that two workers on one host never get the same device " +
		"(built-in discovery and device plugins). Set false only when the cluster isolates devices itself."))
	FileParam = driver.Declare(params.CoordFile.WithDoc("Host-wide reservation state file, an absolute path (a lock file is kept beside it). Every worker " +
		"on a host must use the same file. Flink's coordination file (`--coordination-file` in discovery-script.args) is " +
		"honoured beside it in Flink's format, never used as it: naming it here is refused (exit 211, and by am submit)."))
	ScriptArgsParam = driver.Declare(params.ScriptArgs.WithDoc("Arguments passed to the discovery script after the amount. Flink's " +
		"`--enable-coordination-mode` and `--coordination-file <path>` also switch on xres coordination."))
)

// FlinkDefaultFile is where Flink's script coordinates when its args name
// no file.
const FlinkDefaultFile = params.FlinkDefaultFile

// Flink's discovery-script flags.
const (
	FlinkFlagEnable = params.FlinkFlagEnable
	FlinkFlagFile   = params.FlinkFlagFile
)

// FlinkArgs is what Flink's coordination flags in discovery-script.args say.
type FlinkArgs = params.FlinkArgs

// ParseFlinkArgs reads Flink's --enable-coordination-mode and
// --coordination-file (also --coordination-file=<file>) from the
// resource's discovery-script.args. --coordination-file without a file is
// an error wrapping driver.ErrInvalidParam.
func ParseFlinkArgs(resource string, p map[string]string) (FlinkArgs, error) {
	return params.ParseFlinkArgs(resource, p)
}

// Settings is how a built-in driver coordinates a resource's devices
// (params.Coordination, which am reads without the drivers).
type Settings params.Coordination

// ParseParams works out, without side effects, how a built-in driver
// coordinates (params.ParseCoordination): on unless coordination.enabled
// is false, and Flink's --enable-coordination-mode in
// discovery-script.args switches it back on (with a warning); the state
// file is coordination.file, else DefaultStateFile; Flink's coordination
// file (FlinkFile) is kept apart. Malformed values are errors naming the
// key and wrapping driver.ErrInvalidParam.
func ParseParams(resource string, p map[string]string) (Settings, error) {
	s, err := params.ParseCoordination(resource, p)
	return Settings(s), err
}

// Reserver opens the host coordination s describes for the process
// holder (0: this one): nil when it is off. An unusable state file is an
// error naming coordination.file.
func (s Settings) Reserver(resource string, holder int, log logrus.FieldLogger) (driver.Reserver, error) {
	if !s.Enabled {
		return nil, nil
	}
	var owner Owner
	if holder != 0 {
		var err error
		if owner, err = ProcessOwner(holder); err != nil {
			return nil, fmt.Errorf("reserve %s for its caller: %w", resource, err)
		}
	}
	h, err := New(Options{StateFile: s.StateFile, FlinkFile: s.FlinkFile, Owner: owner, Log: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", driver.ParamKey(resource, ParamFile), err)
	}
	return h, nil
}

// NewCoordinated is the one way built-in drivers and plugins put an
// Enumerator behind the shared selection layer: it reads the coordination
// params of opts (ParseParams), logs their warnings, and opens the host
// coordination unless it is off.
func NewCoordinated(opts driver.Options, enum driver.Enumerator) (*driver.Coordinated, error) {
	s, err := ParseParams(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	log := driver.LoggerOrDiscard(opts.Log)
	for _, w := range s.Warnings {
		log.Warn(w)
	}
	return s.Coordinated(opts, enum)
}

// Coordinated puts enum behind the shared selection layer with the host
// coordination s describes (none when it is off, which is logged).
func (s Settings) Coordinated(opts driver.Options, enum driver.Enumerator) (*driver.Coordinated, error) {
	return s.CoordinatedPlaced(opts, enum, nil)
}

// CoordinatedPlaced is Coordinated where placer (nil: none) chooses among
// the free devices (driver.CoordinatedOptions.Placer).
func (s Settings) CoordinatedPlaced(opts driver.Options, enum driver.Enumerator, placer driver.Placer) (*driver.Coordinated, error) {
	res, err := s.Reserver(opts.Resource, opts.Holder, opts.Log)
	if err != nil {
		return nil, err
	}
	if res == nil {
		driver.LoggerOrDiscard(opts.Log).Info("host coordination is off: every worker on this host gets the first devices")
	} else if ck, ok := enum.(CacheKeyer); ok {
		enum = newDeviceCache(ck, s.StateFile, opts.Log)
	}
	ret, err := params.ReadQuarantineReturn(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	return driver.NewCoordinated(opts.Resource, enum, driver.CoordinatedOptions{
		Reserver: res, DryRun: opts.DryRun, Placer: placer, Log: opts.Log,
		Return: driver.QuarantineReturn{Quiet: ret.Quiet, Probed: ret.Probed},
	}), nil
}

// CoordinationOf is how a driver that coordinates through NewCoordinated
// (every built-in driver but a GPU discovery script, and every plugin)
// coordinates resource's devices with these params: xres's host
// coordination with its state file and Flink's file beside it, or off.
// It is also the launcher's reading for a factory that implements no
// driver.CoordinationReporter. Malformed params are ParseParams's errors.
func CoordinationOf(resource string, params map[string]string) (driver.Coordination, error) {
	s, err := ParseParams(resource, params)
	if err != nil {
		return driver.Coordination{}, err
	}
	if !s.Enabled {
		return driver.Coordination{Mode: driver.CoordOff}, nil
	}
	return driver.Coordination{Mode: driver.CoordXres, StateFile: s.StateFile, FlinkFile: s.FlinkFile}, nil
}

// Factory is a built-in driver's factory: newEnum builds its Enumerator
// from the options (a bad param is a configuration error) and
// NewCoordinated puts it behind the shared selection layer. newEnum must
// only read the options, never the host (Enumerate does that): the
// factory's CheckParams runs it with the params alone, then ParseParams,
// as NewDriver does before it opens the host coordination. It implements
// driver.CoordinationReporter (CoordinationOf) and driver.ParamChecker.
func Factory[E driver.Enumerator](newEnum func(driver.Options) (E, error)) *EnumFactory {
	return &EnumFactory{
		New: func(opts driver.Options) (driver.Driver, error) {
			enum, err := newEnum(opts)
			if err != nil {
				return nil, err
			}
			sel, err := NewCoordinated(opts, enum)
			if err != nil {
				return nil, err
			}
			return sel, nil
		},
		Check: func(resource string, params map[string]string) error {
			if _, err := newEnum(driver.Options{Resource: resource, Params: params, Getenv: noEnv}); err != nil {
				return err
			}
			_, err := ParseParams(resource, params)
			return err
		},
	}
}

// noEnv is the empty environment CheckParams builds an Enumerator with.
func noEnv(string) string { return "" }

// EnumFactory is what Factory returns: a driver.Factory whose drivers
// coordinate through NewCoordinated, so it reports their coordination.
type EnumFactory struct {
	New func(driver.Options) (driver.Driver, error)
	// Check checks a resource's params without the host (CheckParams);
	// nil checks none.
	Check func(resource string, params map[string]string) error
}

var (
	_ driver.Factory              = (*EnumFactory)(nil)
	_ driver.CoordinationReporter = (*EnumFactory)(nil)
	_ driver.ParamChecker         = (*EnumFactory)(nil)
)

// NewDriver implements driver.Factory.
func (f *EnumFactory) NewDriver(opts driver.Options) (driver.Driver, error) { return f.New(opts) }

// Coordination implements driver.CoordinationReporter.
func (f *EnumFactory) Coordination(resource string, params map[string]string, _ func(string) string) (driver.Coordination, error) {
	return CoordinationOf(resource, params)
}

// CheckParams implements driver.ParamChecker.
func (f *EnumFactory) CheckParams(resource string, params map[string]string) error {
	if f.Check == nil {
		return nil
	}
	return f.Check(resource, params)
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
