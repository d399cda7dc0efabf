// Package acme is the example of a driver added to xres from outside the
// launcher: one folder, and one line to register it (acme.Register, in
// driver/builtin for a built-in one). It stands for ACME accelerators, which
// a CUDA runtime selects (the GPU driver's vendor and variables) and which a vendor daemon
// coordinates on the host in a file of Flink's format ("<index> <pid>"
// lines), so xres's own coordination stays out (driver.CoordScript). The
// devices are the indices param.devices lists, each local to the CPUs
// param.local-cpus names. Everything the launcher does with them (the
// worker's environment, check's and probe's coordination, per-device CPU
// affinity from the devices' local-cpus infos) it learns through the
// driver contract: driver/launch names no driver. Its test
// (contract_test.go beside it) proves it for the environment and the
// coordination.
package acme

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
)

// FactoryName is the driver's registry name.
const FactoryName = "xres.acme"

// Param keys, as written after external-resource.<name>.param.
const (
	ParamDevices   = "acme.devices"           // the device indices, comma-separated
	ParamLocalCPUs = "acme.local-cpus"        // the CPU list every device is local to
	ParamFile      = "acme.coordination-file" // the vendor daemon's coordination file
)

var (
	devicesParam = driver.Declare(driver.Param{Name: ParamDevices, Type: conf.TypeString,
		Doc: "Example ACME driver (xres.acme), required: the device indices, comma-separated."})
	localCPUsParam = driver.Declare(driver.Param{Name: ParamLocalCPUs, Type: conf.TypeString,
		Doc: "Example ACME driver: the CPU list every device is local to."})
	fileParam = driver.Declare(driver.Param{Name: ParamFile, Type: conf.TypeString,
		Doc: "Example ACME driver: the vendor daemon's coordination file (Flink's format); unset: off."})
)

// Register adds the driver to r: the one line a new driver needs.
func Register(r *driver.Registry) error { return r.Register(FactoryName, Factory{}) }

// Factory builds the driver and tells the launcher what it needs.
type Factory struct{}

var (
	_ driver.Factory              = Factory{}
	_ driver.VendorReporter       = Factory{}
	_ driver.CoordinationReporter = Factory{}
	_ driver.ParamChecker         = Factory{}
)

// CheckParams implements driver.ParamChecker: what NewDriver refuses,
// checked without the host, so that am submit refuses it too.
func (Factory) CheckParams(resource string, params map[string]string) error {
	if strings.TrimSpace(devicesParam.Get(params)) == "" {
		return fmt.Errorf("%s: missing: %w", devicesParam.Key(resource), driver.ErrInvalidParam)
	}
	return nil
}

// NewDriver implements driver.Factory.
func (f Factory) NewDriver(opts driver.Options) (driver.Driver, error) {
	if err := f.CheckParams(opts.Resource, opts.Params); err != nil {
		return nil, err
	}
	devices := devicesParam.Get(opts.Params)
	var infos []resources.Info
	for _, ix := range strings.Split(devices, ",") {
		p := resources.Properties{"index": strings.TrimSpace(ix)}
		if cpus := localCPUsParam.Get(opts.Params); cpus != "" {
			p[driver.InfoLocalCPUs] = cpus
		}
		infos = append(infos, p)
	}
	return acmeDriver(infos), nil
}

// Vendor implements driver.VendorReporter: a CUDA runtime selects them.
func (Factory) Vendor() driver.Vendor { return gpu.Vendor }

// Environment implements driver.VendorReporter: the CUDA runtime's
// variables, as the GPU driver words them.
func (Factory) Environment(devices []resources.Info) map[string]string {
	return gpu.Environment(devices)
}

// Coordination implements driver.CoordinationReporter: the vendor daemon
// coordinates, in its own file.
func (Factory) Coordination(resource string, params map[string]string, _ func(string) string) (driver.Coordination, error) {
	f := fileParam.Get(params)
	if f == "" {
		return driver.Coordination{Mode: driver.CoordOff}, nil
	}
	abs, err := filepath.Abs(f)
	if err != nil {
		return driver.Coordination{}, err
	}
	return driver.Coordination{Mode: driver.CoordScript, StateFile: abs}, nil
}

// acmeDriver hands out the first devices: the daemon keeps workers apart.
type acmeDriver []resources.Info

func (d acmeDriver) Discover(_ context.Context, amount int64) ([]resources.Info, error) {
	if amount > int64(len(d)) {
		return nil, fmt.Errorf("%w: %d requested, %d listed", driver.ErrNotEnoughDevices, amount, len(d))
	}
	return d[:amount], nil
}
