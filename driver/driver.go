// Package driver discovers the devices a worker may use: the Driver and
// Factory interfaces (Flink's ExternalResourceDriver and its factory), a
// registry of factories by name, and the built-in drivers. Beside them it
// is the contract the launcher holds drivers to, with optional interfaces
// found by type assertion: Releaser and HealthReporter on a Driver;
// VendorReporter (which vendor's runtime selects the devices, and the
// variables it reads: Environment), CoordinationReporter (how the devices are
// coordinated on the host, for check and probe) and ParamChecker (the
// params checked without the host, for the launcher and am submit) on a
// Factory, which can answer before a driver is built; and the locality rule every driver's
// device infos share (LocalCPUs).
package driver

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources"
)

// Driver discovers amount devices of one resource, the counterpart of
// Flink's ExternalResourceDriver.retrieveResourceInfo.
type Driver interface {
	Discover(ctx context.Context, amount int64) ([]resources.Info, error)
}

// Releaser is implemented by drivers that reserve the devices they discover
// on the host (coordination mode). Release frees what this process holds.
type Releaser interface {
	Release(ctx context.Context) error
}

// Options is what a Factory gets to build a Driver for one resource.
type Options struct {
	Resource string            // the resource name, e.g. "gpu"
	Params   map[string]string // external-resource.<name>.param.* with the prefix stripped
	Log      logrus.FieldLogger
	Getenv   func(string) string // environment lookup; nil means os.Getenv
	DryRun   bool                // discover without reserving anything (probe)
	// Timeout is the global xres.discovery.timeout: the time limit of one
	// discovery step (script, nvidia-smi, rocm-smi, plugin) for a resource
	// whose params set none. 0: DefaultTimeout.
	Timeout time.Duration
	// Holder, when not 0, is the pid of the process the reservations are
	// recorded for instead of this one (the discovery bridge reserves for
	// the engine's JVM that called it): they last until that process ends.
	Holder int
	// YarnKey is the resource's yarn.config-key (external-resource.<name>.yarn.config-key):
	// the YARN resource a container asks for it, whose assignment on the
	// NodeManager a driver may read (NodeAssignment). "" when not requested from YARN.
	YarnKey string
}

// Factory builds a Driver from a resource's options, the counterpart of
// Flink's ExternalResourceDriverFactory.
type Factory interface {
	NewDriver(opts Options) (Driver, error)
}

// ParamChecker is implemented by a Factory that can check a resource's
// params without touching the host: no file, program or device is looked
// at, so that the answer is the same on every host and where the job is
// submitted. CheckParams returns the error the factory's NewDriver returns
// for a malformed or missing param (naming the full key, wrapping
// ErrInvalidParam), nil when the params are well-formed. The launcher runs
// it before NewDriver (a refusal is its configuration error, exit 211, on
// every host), and so do am resources and am submit for the built-in
// factories (resources/params.CheckLauncher: the built-in drivers'
// CheckParams are those functions), so that nothing is staged that every
// launcher refuses; what NewDriver
// finds wrong beyond it is a problem of the host (a discovery script or
// plugin missing there). Every built-in factory implements it.
type ParamChecker interface {
	CheckParams(resource string, params map[string]string) error
}

// FactoryFunc adapts a function to Factory.
type FactoryFunc func(opts Options) (Driver, error)

// NewDriver implements Factory.
func (f FactoryFunc) NewDriver(opts Options) (Driver, error) { return f(opts) }

// Device is one candidate device found on the host, before any selection.
type Device struct {
	// Key identifies the device host-wide for coordination: the UUID where
	// known, else a PCI address, else the index. Stable across processes.
	Key string
	// Info is what a worker is told about the device ("index", "uuid", …).
	Info resources.Properties
	// Parent, when not empty, is the Key of the physical device this one is
	// a partition of (a MIG instance's GPU). Coordination then treats the
	// two as overlapping: the whole device is not free while any of its
	// partitions is held, and no partition is free while the whole device
	// is held. Partitions of one parent never conflict with each other.
	Parent string
	// Unhealthy, when not empty, says why the device must not be handed out
	// ("retired pages pending"). Such a device is never a candidate; the
	// coordination layer names it in a warning and in ErrNotEnoughDevices.
	Unhealthy string
}

// InfoVisibleID is the info property a driver sets when a device must be
// named by something other than its index in its vendor's visible-devices
// variable (VendorReporter): under device isolation (cgroups, a container runtime's
// NVIDIA_VISIBLE_DEVICES) the worker's runtime numbers only the devices it
// can see, from 0, so the GPU driver names them by uuid there.
const InfoVisibleID = "visible-id"

// UnhealthyDevice is a device left out of a discovery, and why.
type UnhealthyDevice struct {
	Key    string               `json:"key"`
	Info   resources.Properties `json:"info"`
	Reason string               `json:"reason"`
}

// HealthReporter is implemented by drivers that leave unhealthy devices
// out (Coordinated): Unhealthy lists those of the last Discover.
type HealthReporter interface {
	Unhealthy() []UnhealthyDevice
}

// Enumerator lists every usable device of one kind on the host, in the
// order they should be preferred. Built-in drivers implement it and leave
// choosing and reserving to the shared coordination layer.
type Enumerator interface {
	Enumerate(ctx context.Context) ([]Device, error)
}

// Diagnosis is what `container-launcher check` says about a driver's
// error: the param it is about ("" for the resource's
// driver-factory.class), how to fix it, and whether it is a problem of the
// host (install, chmod) rather than of the configuration. The launcher's
// registry gives it, where it knows the error.
type Diagnosis struct {
	Param string
	Fix   string
	Host  bool
}
