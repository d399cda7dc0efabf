package launch

import (
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
)

// coordinationOf works out how spec's devices are coordinated on the host,
// as the built-in drivers read their params: the GPU driver's own rule
// (gpu.CoordinationOf: a Flink discovery script coordinates itself), and
// the rule every other built-in driver and plugin shares
// (coord.ParseParams). factory is the primary name of spec's factory. Mode
// is "" when unknown (no driver, or params the driver rejects).
func coordinationOf(spec resources.Spec, factory string, getenv func(string) string) gpu.Coordination {
	switch factory {
	case "":
		return gpu.Coordination{}
	case gpu.FactoryName:
		c, err := gpu.CoordinationOf(spec.Name, spec.Params, getenv)
		if err != nil {
			return gpu.Coordination{}
		}
		return c
	}
	s, err := coord.ParseParams(spec.Name, spec.Params)
	if err != nil {
		return gpu.Coordination{}
	}
	if !s.Enabled {
		return gpu.Coordination{Mode: gpu.CoordOff}
	}
	return gpu.Coordination{Mode: gpu.CoordXres, StateFile: s.StateFile, FlinkFile: s.FlinkFile}
}
