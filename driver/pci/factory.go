package pci

import (
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
)

// Coordination params, the same keys and defaults as the GPU driver's.
const (
	ParamCoordEnabled = "coordination.enabled" // default true
	ParamCoordFile    = "coordination.file"    // default coord.DefaultStateFile
)

// NewFactory returns the PCI driver factory: the Enumerator behind the
// shared coordinated selection layer.
func NewFactory() driver.Factory {
	return driver.FactoryFunc(func(opts driver.Options) (driver.Driver, error) {
		enum, err := New(opts)
		if err != nil {
			return nil, err
		}
		return Coordinated(opts, enum)
	})
}

// Register adds the PCI driver to r as FactoryName, with Flink's FPGA
// factory class name as an alias.
func Register(r *driver.Registry) error {
	return r.Register(FactoryName, NewFactory(), FlinkFPGAFactory)
}

// Coordinated wraps an Enumerator in the shared selection layer with host
// coordination as the resource's params say. It serves every sysfs-based
// built-in driver (pci, amd) and exec plugins.
func Coordinated(opts driver.Options, enum driver.Enumerator) (*driver.Coordinated, error) {
	res, err := HostCoordination(opts.Resource, opts.Params, opts.Log)
	if err != nil {
		return nil, err
	}
	return driver.NewCoordinated(opts.Resource, enum, driver.CoordinatedOptions{
		Reserver: res, DryRun: opts.DryRun, Log: opts.Log,
	}), nil
}

// HostCoordination returns the host-wide Reserver for a resource, or nil
// when param coordination.enabled is false. coordination.file names the
// state file (default coord.DefaultStateFile).
func HostCoordination(resource string, params map[string]string, log logrus.FieldLogger) (driver.Reserver, error) {
	enabled := true
	switch v := strings.TrimSpace(params[ParamCoordEnabled]); {
	case v == "", strings.EqualFold(v, "true"):
	case strings.EqualFold(v, "false"):
		enabled = false
	default:
		return nil, fmt.Errorf("%s: %q, want true or false: %w", paramKey(resource, ParamCoordEnabled), v, ErrInvalidParam)
	}
	if !enabled {
		driver.LoggerOrDiscard(log).Info("host coordination is off: every worker on this host gets the first devices")
		return nil, nil
	}
	h, err := coord.New(coord.Options{StateFile: strings.TrimSpace(params[ParamCoordFile]), Log: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", paramKey(resource, ParamCoordFile), err)
	}
	return h, nil
}
