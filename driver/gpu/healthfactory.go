package gpu

import (
	"fmt"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/params"
)

var _ driver.HealthWatcher = factory{}

// appXIDs reads health.application-xids.
func appXIDs(opts driver.Options) (XIDSet, error) {
	set, err := ParseXIDs(appXIDsParam.Key(opts.Resource), appXIDsParam.Get(opts.Params))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, driver.ErrInvalidParam)
	}
	return set, nil
}

// deviceEvent is e as the launcher acts on it.
func deviceEvent(e HealthEvent, app XIDSet) driver.DeviceEvent {
	return driver.DeviceEvent{Key: e.UUID, Critical: app.Critical(e), Event: e.Type, XID: e.XID, Reason: e.Describe(),
		UntilSeen: e.Type == EventGPULost || e.Type == EventXID && e.XID == XIDFallenOffBus, Time: e.Time}
}

// The params of the health watch while workers run (docs/gpu-health.md).
var (
	healthActionParam = driver.Declare(params.HealthAction.WithDoc("GPU driver: what the launcher does when a GPU of its worker fails " +
		"while it runs (a critical Xid, a double-bit ECC error, the GPU lost; watched through xres-nvml): `replace` stops the worker " +
		"(SIGTERM, SIGKILL 10 s later) and exits 216 so that the application master replaces it on a healthy GPU; `notify` lets it run " +
		"and appends the event to the file $XRES_GPU_HEALTH_FILE names. Either way the GPU is quarantined on its host."))
	appXIDsParam = driver.Declare(params.HealthAppXIDs.WithDoc("GPU driver: the Xids the application causes (comma-separated): " +
		"logged, never a reason to quarantine the GPU. Default: NVIDIA's Kubernetes device plugin's list (graphics engine exception, " +
		"GPU memory page fault, GPU stopped processing, preemptive cleanup, video processor exception, context switch timeout)."))
)

// checkHealthParams checks health.action and health.application-xids.
func checkHealthParams(resource string, p map[string]string) error {
	if _, err := healthActionParam.Choice(resource, p); err != nil {
		return err
	}
	_, err := appXIDs(driver.Options{Resource: resource, Params: p})
	return err
}
