package driver

import (
	"time"

	"github.com/xres/xres/resources/params"
)

// ErrInvalidParam is wrapped by every error about a malformed driver param
// (external-resource.<name>.param.<key>); the message names the full key.
// The built-in drivers' own ErrInvalidParam variables are this value.
var ErrInvalidParam = params.ErrInvalidParam

// DefaultTimeout bounds one discovery step (a script, nvidia-smi, rocm-smi,
// a plugin) when neither the resource's params nor Options.Timeout set one.
const DefaultTimeout = params.DefaultTimeout

// ParamKey names a driver param in full, as users write it:
// external-resource.<resource>.param.<param> ("param.<param>" without a
// resource).
func ParamKey(resource, param string) string { return params.Key(resource, param) }

// ParseDuration reads a duration the way Flink writes them: "10 s",
// "10000 ms", "2 min", a bare number of milliseconds, or Go's "1m30s".
func ParseDuration(s string) (time.Duration, error) { return params.ParseDuration(s) }

// Params shared by several drivers, declared once here.
var (
	// TimeoutParam is the time limit of one run of rocm-smi or a device
	// plugin.
	TimeoutParam = Declare(params.StepTimeout.WithDoc("AMD GPU driver (rocm-smi) and device plugins: time limit of one run; on expiry a plugin's " +
		"whole process group is killed. Unset: xres.discovery.timeout."))
)

// ParamVisibleDevicesVendor names the vendor whose device-selection
// variables a resource's devices get (VendorOf): a plugin or a discovery
// script standing for GPUs. The GPU driver declares it, with the text of
// the vendors it knows.
const ParamVisibleDevicesVendor = "visible-devices.vendor"
