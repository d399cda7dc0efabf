package pci

import (
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources/params"
)

// Coordination params, the same keys and defaults as every built-in
// driver's (driver/coord reads them).
const (
	ParamCoordEnabled = coord.ParamEnabled // default true
	ParamCoordFile    = coord.ParamFile    // default coord.DefaultStateFile
)

// NewFactory returns the PCI driver factory: the Enumerator behind the
// shared coordinated selection layer.
func NewFactory() driver.Factory {
	f := coord.Factory(New)
	f.Check = params.CheckPCI // New's checks, which am runs without the driver
	return f
}

// Register adds the PCI driver to r as FactoryName, with Flink's FPGA
// factory class name as an alias.
func Register(r *driver.Registry) error {
	return r.Register(FactoryName, NewFactory(), FlinkFPGAFactory)
}
