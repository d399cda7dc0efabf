package builtin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/driver/plugin"
)

// Diagnosis is what `container-launcher check` says about an error of a
// built-in driver or a device plugin (driver.Diagnosis).
type Diagnosis = driver.Diagnosis

// DiagnoseNew explains an error of a factory's NewDriver; ok is false for
// an error it knows nothing special about (then a configuration error in
// the resource's params).
func DiagnoseNew(err error, getenv func(string) string) (Diagnosis, bool) {
	switch {
	case errors.Is(err, plugin.ErrNotFound) || errors.Is(err, plugin.ErrNotExecutable):
		root, from := plugin.Root(getenv)
		return Diagnosis{Host: true, Fix: "install the plugin executable (chmod +x) on every worker host under the plugins root " +
			root + " (from " + from + "; set $" + plugin.EnvPluginsDir + " to move it)"}, true
	case errors.Is(err, gpu.ErrScriptNotFound):
		return Diagnosis{Param: gpu.ParamScriptPath, Host: true,
			Fix: "install the discovery script at that path on every worker host (relative paths are resolved against $FLINK_HOME), or unset it to use built-in discovery"}, true
	case errors.Is(err, gpu.ErrScriptNotExecutable):
		return Diagnosis{Param: gpu.ParamScriptPath, Host: true, Fix: "chmod +x the script (and give it a #! line)"}, true
	}
	return Diagnosis{}, false
}

// DiagnoseDiscover explains a failed trial discovery of amount devices;
// script says the driver runs a discovery script. It is always a problem
// of the host.
func DiagnoseDiscover(err error, amount int64, script bool) Diagnosis {
	d := Diagnosis{Host: true, Fix: "make the devices visible to this host's workers (drivers installed, device nodes readable)"}
	switch {
	case script:
		d.Param = gpu.ParamScriptPath
		d.Fix = fmt.Sprintf("run the script by hand as `<script> %d <args>`; it must print %d distinct comma-separated indices on its first line and exit 0", amount, amount)
	case errors.Is(err, driver.ErrNotEnoughDevices):
		d.Fix = "check that this host has the devices, and that no stale worker holds them (container-launcher probe shows the holders)"
	case errors.Is(err, gpu.ErrNVMLHelperMissing):
		d.Param = gpu.ParamSource
		d.Fix = fmt.Sprintf("install %s beside container-launcher (make build writes it; it needs libnvidia-ml and a C library at least as new as the build machine's), or set %s to nvidia-smi",
			gpu.NVMLHelperName, gpu.ParamSource)
	case errors.Is(err, gpu.ErrNVMLUnavailable) || strings.Contains(err.Error(), "nvidia-smi"):
		d.Param = gpu.ParamSource
		d.Fix = "install the NVIDIA driver (libnvidia-ml, nvidia-smi) on the host, or set param.discovery-script.path to a discovery script"
	}
	return d
}
