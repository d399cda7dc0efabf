package params

import (
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/factoryname"
	"github.com/xres/xres/resources"
)

// StepTimeout is the time limit of one run of rocm-smi or of a device
// plugin (driver.TimeoutParam declares it).
var StepTimeout = Param{Name: "timeout", Type: conf.TypeDuration}

// AMDSource is the AMD GPU driver's (xres.amd-gpu) source of GPUs;
// driver/amd declares it.
var AMDSource = Param{Name: "source", Type: conf.TypeString, Values: []string{"auto", "kfd", "rocm-smi"}}

// CheckAMD is the AMD GPU driver's check of its params (CheckParams): the
// time limit, the source, then the coordination params.
func CheckAMD(resource string, params map[string]string) error {
	if _, err := StepTimeout.Timeout(resource, params, 0); err != nil {
		return err
	}
	if _, err := AMDSource.Choice(resource, params); err != nil {
		return err
	}
	_, err := ParseCoordination(resource, params)
	return err
}

// Plugin names the device plugin xres.plugin runs; driver/plugin declares
// it.
var Plugin = Param{Name: "plugin", Type: conf.TypeString}

// PluginName is the plugin a resource runs and the key that names it: for
// xres.plugin (named false) its plugin param; for plugin:<dir> (named) dir,
// which a plugin param must not contradict.
func PluginName(resource string, params map[string]string, named bool, dir string) (name, key string, err error) {
	p, set := Plugin.Lookup(params)
	if !named {
		if !set {
			return "", "", fmt.Errorf("%s: missing; name the plugin directory or executable: %w", Plugin.Key(resource), ErrInvalidParam)
		}
		return p, Plugin.Key(resource), nil
	}
	key = resources.Key(resource, resources.SuffixFactory)
	if dir == "" {
		return "", "", fmt.Errorf("%s: %q names no plugin; write %s<dir>: %w", key, resources.PluginPrefix, resources.PluginPrefix, ErrInvalidParam)
	}
	if set && p != dir {
		return "", "", fmt.Errorf("%s names plugin %q but %s names %q; keep one: %w", key, dir, Plugin.Key(resource), p, ErrInvalidParam)
	}
	return dir, key, nil
}

// CheckPlugin is a device plugin factory's check of its params
// (CheckParams): the plugin named, its time limit and the coordination
// params, without looking for the plugin (whether it is installed is the
// host's business).
func CheckPlugin(resource string, params map[string]string, named bool, dir string) error {
	if _, _, err := PluginName(resource, params, named, dir); err != nil {
		return err
	}
	if _, err := StepTimeout.Timeout(resource, params, 0); err != nil {
		return err
	}
	_, err := ParseCoordination(resource, params)
	return err
}

// The built-in factories' primary names.
const (
	factoryGPU    = factoryname.GPU
	factoryPCI    = factoryname.PCI
	factoryAMDGPU = factoryname.AMDGPU
	factoryPlugin = factoryname.Plugin
)
