package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
)

// Coordination modes reported by CoordinationOf (driver's).
const (
	CoordXres   = driver.CoordXres   // xres's host coordination (driver/coord)
	CoordScript = driver.CoordScript // a Flink discovery script coordinates by itself
	CoordOff    = driver.CoordOff    // nobody coordinates: every worker gets the first devices
)

// FlinkDefaultCoordinationFile is where Flink's script coordinates when its
// args name no file.
const FlinkDefaultCoordinationFile = coord.FlinkDefaultFile

// Coordination is how the GPU driver built from the same params coordinates
// devices on the host (driver.Coordination, which the factory reports).
type Coordination = driver.Coordination

// CoordinationOf works out, without side effects, how the GPU driver for
// resource with these params picks its mode and coordinates: script mode
// when discovery-script.path names an existing file (Flink's default path,
// not installed, means built-in), where a Flink script coordinates itself
// when its args say so and a Spark one (discovery-script.protocol spark) is
// coordinated by xres as in built-in mode; in built-in mode coordination is on by
// default, off with coordination.enabled=false unless Flink's
// --enable-coordination-mode is in discovery-script.args; the state file is
// coordination.file, else Flink's --coordination-file, else
// coord.DefaultStateFile. A Flink-protocol script without Flink's
// coordination flags is left uncoordinated by default (Flink's behaviour),
// but an explicit coordination.enabled: true is honoured: xres's
// coordination reserves among what the script prints (CoordXres).
// getenv nil means os.Getenv.
func CoordinationOf(resource string, param map[string]string, getenv func(string) string) (Coordination, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	// The same reading of coordination.* and Flink's flags as every other
	// built-in driver; script mode only adds its own rules on top.
	s, err := coord.ParseParams(resource, param)
	if err != nil {
		return Coordination{}, err
	}
	c := Coordination{Warnings: append([]string(nil), s.Flink.Warnings...)}
	if raw, ok := scriptPathParam.Lookup(param); ok {
		path := resolveScript(raw, getenv)
		_, statErr := os.Stat(path)
		if errors.Is(statErr, os.ErrNotExist) && filepath.Clean(raw) == FlinkDefaultScript {
			c.Warnings = append(c.Warnings, "Flink's default GPU discovery script "+path+" is not installed; using built-in discovery (NVML, else nvidia-smi)")
		} else {
			c.Script = path
			protocol, err := protocolParam.Choice(resource, param)
			if err != nil {
				return Coordination{}, err
			}
			if protocol == ProtocolSpark {
				// A Spark script lists every device: xres coordinates.
				c.Warnings = append(c.Warnings, s.Warnings[len(s.Flink.Warnings):]...)
				c.Mode, c.StateFile = CoordOff, ""
				if s.Enabled {
					c.Mode, c.StateFile = CoordXres, s.StateFile
				}
				return c, nil
			}
			if !s.Flink.Enabled {
				c.Mode = CoordOff
				if explicitlyEnabled(param) {
					// The script picks without coordinating (Flink's
					// default mode hands every worker the first devices):
					// xres reserves around its pick (scriptDriver).
					c.Mode, c.StateFile = CoordXres, s.StateFile
				}
				return c, nil
			}
			c.Mode = CoordScript
			c.StateFile = abs(orDefault(s.Flink.File, FlinkDefaultCoordinationFile))
			return c, nil
		}
	}
	c.Warnings = append(c.Warnings, s.Warnings[len(s.Flink.Warnings):]...)
	if !s.Enabled {
		c.Mode = CoordOff
		return c, nil
	}
	c.Mode = CoordXres
	c.StateFile = s.StateFile
	c.FlinkFile = s.FlinkFile
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

// explicitlyEnabled reports whether coordination.enabled is set, to true,
// in params (not merely defaulted).
func explicitlyEnabled(params map[string]string) bool {
	v, ok := coord.EnabledParam.Lookup(params)
	return ok && strings.EqualFold(v, "true")
}
