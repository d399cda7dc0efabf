package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xres/xres/driver/coord"
)

// Coordination modes reported by CoordinationOf.
const (
	CoordXres   = "xres"   // xres's host coordination (driver/coord)
	CoordScript = "script" // a Flink discovery script coordinates by itself
	CoordOff    = "off"    // nobody coordinates: every worker gets the first devices
)

// FlinkDefaultCoordinationFile is where Flink's script coordinates when its
// args name no file.
const FlinkDefaultCoordinationFile = "/var/tmp/flink-gpu-coordination"

// Coordination is how the GPU driver built from the same params coordinates
// devices on the host.
type Coordination struct {
	Mode      string `json:"mode"`                 // CoordXres, CoordScript or CoordOff
	StateFile string `json:"state_file,omitempty"` // absolute; empty when off
	// Script is the resolved discovery script in script mode.
	Script string `json:"script,omitempty"`
	// Warnings are the notices the driver logs for these params (ignored
	// flags, conflicting settings, a missing default script).
	Warnings []string `json:"warnings,omitempty"`
}

// CoordinationOf works out, without side effects, how the GPU driver for
// resource with these params picks its mode and coordinates: script mode
// when discovery-script.path names an existing file (Flink's default path,
// not installed, means built-in); in built-in mode coordination is on by
// default, off with coordination.enabled=false unless Flink's
// --enable-coordination-mode is in discovery-script.args; the state file is
// coordination.file, else Flink's --coordination-file, else
// coord.DefaultStateFile. getenv nil means os.Getenv.
func CoordinationOf(resource string, param map[string]string, getenv func(string) string) (Coordination, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	p := params{resource: resource, m: param}
	var c Coordination
	args := strings.Fields(p.get(ParamScriptArgs))
	flinkOn, flinkFile := false, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--enable-coordination-mode":
			flinkOn = true
		case a == "--enable-coordination":
			c.Warnings = append(c.Warnings, p.key(ParamScriptArgs)+" has --enable-coordination, which Flink's script silently ignores; the flag is --enable-coordination-mode")
		case a == "--coordination-file":
			if i+1 >= len(args) {
				return Coordination{}, fmt.Errorf("%w %s: --coordination-file needs a file", ErrInvalidParam, p.key(ParamScriptArgs))
			}
			i++
			flinkFile = args[i]
		case strings.HasPrefix(a, "--coordination-file="):
			flinkFile = strings.TrimPrefix(a, "--coordination-file=")
		}
	}
	enabled, err := p.boolean(ParamCoordEnabled, true)
	if err != nil {
		return Coordination{}, err
	}

	if raw := strings.TrimSpace(p.get(ParamScriptPath)); raw != "" {
		path := resolveScript(raw, getenv)
		_, statErr := os.Stat(path)
		if errors.Is(statErr, os.ErrNotExist) && filepath.Clean(raw) == FlinkDefaultScript {
			c.Warnings = append(c.Warnings, "Flink's default GPU discovery script "+path+" is not installed; using built-in discovery (NVML, else nvidia-smi)")
		} else {
			c.Script = path
			if !flinkOn {
				c.Mode = CoordOff
				return c, nil
			}
			c.Mode = CoordScript
			c.StateFile = abs(orDefault(flinkFile, FlinkDefaultCoordinationFile))
			return c, nil
		}
	}

	if !enabled && flinkOn {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s is false but %s has --enable-coordination-mode; coordinating", p.key(ParamCoordEnabled), p.key(ParamScriptArgs)))
		enabled = true
	}
	if !enabled {
		c.Mode = CoordOff
		return c, nil
	}
	file := strings.TrimSpace(p.get(ParamCoordFile))
	if file != "" && flinkFile != "" && file != flinkFile {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s and --coordination-file in %s differ; using %s", p.key(ParamCoordFile), p.key(ParamScriptArgs), file))
	}
	c.Mode = CoordXres
	c.StateFile = abs(orDefault(orDefault(file, flinkFile), coord.DefaultStateFile))
	return c, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
