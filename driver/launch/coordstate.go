package launch

import (
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
)

// coordination is how a resource's devices are coordinated on the host, as
// the built-in drivers read their params: the GPU driver's own rule
// (gpu.CoordinationOf: a Flink discovery script coordinates itself), and
// the rule every other built-in driver and plugin shares
// (coord.ParseParams).
type coordination struct {
	// Mode is "xres" (our state file), "script" (a Flink discovery script
	// coordinates itself), "off", or "" when unknown (no driver, or params
	// the driver rejects).
	Mode      string `json:"mode"`
	StateFile string `json:"state_file,omitempty"`
	// Script is the GPU driver's discovery script when it runs one.
	Script string `json:"-"`
}

// coordinationOf works out the coordination of spec, whose factory has
// the primary name factory.
func coordinationOf(spec resources.Spec, factory string, getenv func(string) string) coordination {
	switch factory {
	case "":
		return coordination{}
	case gpu.FactoryName:
		c, err := gpu.CoordinationOf(spec.Name, spec.Params, getenv)
		if err != nil {
			return coordination{}
		}
		return coordination{Mode: c.Mode, StateFile: c.StateFile, Script: c.Script}
	}
	s, err := coord.ParseParams(spec.Name, spec.Params)
	if err != nil {
		return coordination{}
	}
	if !s.Enabled {
		return coordination{Mode: gpu.CoordOff}
	}
	return coordination{Mode: gpu.CoordXres, StateFile: s.StateFile}
}
