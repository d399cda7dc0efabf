package params

import (
	"fmt"

	"github.com/xres/xres/conf"
)

// The GPU driver's (xres.gpu) params that its check reads; driver/gpu
// declares them, with the same name, type, default and values.
var (
	GPUScriptPath     = Param{Name: "discovery-script.path", Type: conf.TypeString}
	GPUScriptProtocol = Param{Name: "discovery-script.protocol", Type: conf.TypeString, Values: []string{"auto", "flink", "spark"}}
	GPUScriptTimeout  = Param{Name: "discovery-script.timeout", Type: conf.TypeDuration}
	GPUSource         = Param{Name: "discovery.source", Type: conf.TypeString, Values: []string{"auto", "nvml", "nvidia-smi"}}
	GPUSMITimeout     = Param{Name: "nvidia-smi.timeout", Type: conf.TypeDuration}
	GPUMIGStrategy    = Param{Name: "mig.strategy", Type: conf.TypeString, Values: []string{MIGNone, MIGSingle, MIGMixed}}
	GPUMIGProfile     = Param{Name: "mig.profile", Type: conf.TypeString}
	GPUHealth         = Param{Name: "health.enabled", Type: conf.TypeBool, Default: "true"}
	GPUYarnAssignment = Param{Name: "yarn.assignment", Type: conf.TypeString, Values: []string{"auto", "off"}, Default: "auto"}
	GPUYarnResource   = Param{Name: "yarn.resource-name", Type: conf.TypeString, Values: []string{"yarn.io/gpu", "nvidia.com/gpu"}}
	GPUPlacement      = Param{Name: "placement", Type: conf.TypeString, Values: []string{"topology", "first-free", "spread"}, Default: "topology"}
)

// The GPU driver's MIG strategies (mig.strategy).
const (
	MIGNone   = "none"
	MIGSingle = "single"
	MIGMixed  = "mixed"
)

// GPUUnits are mig.strategy, mig.profile and health.enabled as read: a
// profile without a MIG strategy is an error naming both keys.
type GPUUnits struct {
	MIG     string
	Profile string
	Health  bool
}

// ReadGPUUnits reads mig.strategy, mig.profile and health.enabled.
func ReadGPUUnits(resource string, params map[string]string) (GPUUnits, error) {
	var u GPUUnits
	mig, err := GPUMIGStrategy.Choice(resource, params)
	if err != nil {
		return u, err
	}
	u.MIG = mig
	u.Profile = GPUMIGProfile.Get(params)
	if u.Profile != "" && u.MIG == MIGNone {
		return u, fmt.Errorf("%w %s: %q is set but %s is none; set it to single or mixed", ErrInvalidParam,
			GPUMIGProfile.Key(resource), u.Profile, GPUMIGStrategy.Key(resource))
	}
	h, err := GPUHealth.Bool(resource, params)
	if err != nil {
		return u, err
	}
	u.Health = h
	return u, nil
}

// CheckGPU checks every param the GPU driver reads, in either mode,
// without the host: the discovery script is not looked for (whether it is
// installed is the host's business; a missing one is a discovery failure
// of that host), nor NVML or nvidia-smi. It is the GPU driver's
// CheckParams, which its NewDriver runs first.
func CheckGPU(resource string, params map[string]string) error {
	if _, err := GPUScriptTimeout.Timeout(resource, params, 0); err != nil {
		return err
	}
	if _, err := ParseCoordination(resource, params); err != nil {
		return err
	}
	if _, ok := GPUScriptPath.Lookup(params); ok {
		if _, err := GPUScriptProtocol.Choice(resource, params); err != nil {
			return err
		}
	}
	if _, err := ReadGPUUnits(resource, params); err != nil {
		return err
	}
	if _, err := GPUSource.Choice(resource, params); err != nil {
		return err
	}
	if _, err := GPUSMITimeout.Timeout(resource, params, 0); err != nil {
		return err
	}
	if _, err := GPUYarnAssignment.Choice(resource, params); err != nil {
		return err
	}
	if _, err := GPUPlacement.Choice(resource, params); err != nil {
		return err
	}
	if _, ok := GPUYarnResource.Lookup(params); ok {
		if _, err := GPUYarnResource.Choice(resource, params); err != nil {
			return err
		}
	}
	return nil
}
