package params

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/xres/xres/conf"
)

// The params that switch host coordination, read the same way by every
// built-in driver and by device plugins (driver/coord declares them).
var (
	CoordEnabled = Param{Name: "coordination.enabled", Type: conf.TypeBool, Default: "true"}
	CoordFile    = Param{Name: "coordination.file", Type: conf.TypeString, Default: DefaultStateFile}
	// ScriptArgs are the arguments of a discovery script (Flink's); its
	// coordination flags count.
	ScriptArgs = Param{Name: "discovery-script.args", Type: conf.TypeString}
)

// DefaultStateFile is the host-wide reservation state file when
// coordination.file is unset.
const DefaultStateFile = "/var/tmp/xres/coordination.state"

// FlinkDefaultFile is where Flink's script coordinates when its args name
// no file.
const FlinkDefaultFile = "/var/tmp/flink-gpu-coordination"

// Flink's discovery-script flags.
const (
	FlinkFlagEnable = "--enable-coordination-mode"
	FlinkFlagFile   = "--coordination-file"
	// flinkFlagMisspelt is what Flink's docs show; Flink's script ignores it.
	flinkFlagMisspelt = "--enable-coordination"
)

// FlinkArgs is what Flink's coordination flags in discovery-script.args say.
type FlinkArgs struct {
	Enabled  bool     // --enable-coordination-mode is there
	File     string   // --coordination-file <file>, as written; "" when absent
	Warnings []string // flags Flink's script would silently ignore
}

// ParseFlinkArgs reads Flink's --enable-coordination-mode and
// --coordination-file (also --coordination-file=<file>) from the
// resource's discovery-script.args. --coordination-file without a file is
// an error wrapping ErrInvalidParam.
func ParseFlinkArgs(resource string, params map[string]string) (FlinkArgs, error) {
	var f FlinkArgs
	key := ScriptArgs.Key(resource)
	args := strings.Fields(ScriptArgs.Get(params))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == FlinkFlagEnable:
			f.Enabled = true
		case a == flinkFlagMisspelt:
			f.Warnings = append(f.Warnings, key+" has "+flinkFlagMisspelt+", which Flink's script silently ignores; the flag is "+FlinkFlagEnable)
		case a == FlinkFlagFile:
			if i+1 >= len(args) {
				return FlinkArgs{}, fmt.Errorf("%s: %s needs a file: %w", key, FlinkFlagFile, ErrInvalidParam)
			}
			i++
			f.File = args[i]
		case strings.HasPrefix(a, FlinkFlagFile+"="):
			f.File = strings.TrimPrefix(a, FlinkFlagFile+"=")
		}
	}
	return f, nil
}

// Coordination is how a built-in driver coordinates a resource's devices.
type Coordination struct {
	// Enabled: xres's host coordination is on.
	Enabled bool
	// StateFile is the absolute state file; "" when off.
	StateFile string
	// FlinkFile is Flink's coordination file (absolute) that the host
	// coordination honours and writes in Flink's format: the one
	// discovery-script.args name, or Flink's default with
	// --enable-coordination-mode alone; "" when the args name none.
	FlinkFile string
	// Flink is what discovery-script.args say.
	Flink FlinkArgs
	// Warnings are the notices for these params (Flink's, then ours): an
	// ignored flag, conflicting settings.
	Warnings []string
}

// ParseCoordination works out, without side effects, how a built-in
// driver coordinates: on unless coordination.enabled is false, and Flink's
// --enable-coordination-mode in discovery-script.args switches it back on
// (with a warning); the state file is coordination.file, else
// DefaultStateFile; Flink's coordination file (FlinkFile) is kept apart.
// Malformed values are errors naming the key and wrapping ErrInvalidParam.
func ParseCoordination(resource string, params map[string]string) (Coordination, error) {
	fl, err := ParseFlinkArgs(resource, params)
	if err != nil {
		return Coordination{}, err
	}
	enabled, err := CoordEnabled.Bool(resource, params)
	if err != nil {
		return Coordination{}, err
	}
	s := Coordination{Flink: fl, Warnings: append([]string(nil), fl.Warnings...)}
	if !enabled && fl.Enabled {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s is false but %s has %s; coordinating",
			CoordEnabled.Key(resource), ScriptArgs.Key(resource), FlinkFlagEnable))
		enabled = true
	}
	if !enabled {
		return s, nil
	}
	file, _ := CoordFile.Lookup(params)
	if file == "" {
		file = DefaultStateFile
	}
	if !filepath.IsAbs(file) {
		return Coordination{}, fmt.Errorf("%s: %w: %w", CoordFile.Key(resource), ErrRelative(file), ErrInvalidParam)
	}
	if fl.File != "" && !filepath.IsAbs(fl.File) {
		return Coordination{}, fmt.Errorf("%s: %s %w: %w", ScriptArgs.Key(resource), FlinkFlagFile, ErrRelative(fl.File), ErrInvalidParam)
	}
	switch {
	case fl.File != "":
		s.FlinkFile = absPath(fl.File)
	case fl.Enabled:
		s.FlinkFile = FlinkDefaultFile
	}
	if s.FlinkFile != "" && absPath(file) == s.FlinkFile {
		return Coordination{}, fmt.Errorf("%s is Flink's coordination file (%s in %s); xres keeps its own state apart from it: unset %s or name another file: %w",
			CoordFile.Key(resource), FlinkFlagFile, ScriptArgs.Key(resource), CoordFile.Key(resource), ErrInvalidParam)
	}
	s.Enabled = true
	s.StateFile = absPath(file)
	return s, nil
}

// ErrRelative is the error about a relative state or coordination file.
func ErrRelative(path string) error {
	return fmt.Errorf("%q is a relative path: every container has a working folder of its own, so launchers would not coordinate at all; name an absolute host path (e.g. %s)", path, DefaultStateFile)
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
