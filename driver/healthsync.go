package driver

import (
	"context"
	"errors"
	"time"
)

// ErrAssignedQuarantined: the NodeManager (YARN's GPU plugin) assigned
// this container a device that is quarantined on its host. The launcher
// refuses it at once (exit 216, gpu-failed) rather than hand the worker a
// failed GPU: the application master replaces the worker, and the
// replacement lands on YARN's next assignment (docs/gpu-health.md).
var ErrAssignedQuarantined = errors.New("YARN assigned a quarantined device")

// HealthSyncer is a Reserver that keeps a host-wide quarantine of unfit
// devices (driver/coord; docs/gpu-health.md). Coordinated calls it with
// each (non-dry-run) discovery's listing, after the reservation: devices
// discovery's health checks found unhealthy are quarantined, and
// quarantined devices that have earned it return (their keys).
type HealthSyncer interface {
	SyncHealth(ctx context.Context, resource string, listed []Device, ret QuarantineReturn) ([]string, error)
}

// QuarantineReturn is how a quarantined device returns by itself: once
// Quiet (> 0) has passed since its last critical event and, with Probed,
// discovery lists it healthy.
type QuarantineReturn struct {
	Quiet  time.Duration
	Probed bool
}

// syncHealth hands a discovery's listing to the reserver's quarantine. A
// failure is logged, not fatal: the unhealthy devices are left out of this
// discovery anyway, and a state that cannot be read fails the reservation
// itself with its own error.
func (c *Coordinated) syncHealth(ctx context.Context, listed []Device) []string {
	hs, ok := c.opts.Reserver.(HealthSyncer)
	if !ok || c.opts.DryRun {
		return nil
	}
	back, err := hs.SyncHealth(ctx, c.resource, listed, c.opts.Return)
	if err != nil {
		c.log.WithError(err).Warn("could not bring the host-wide quarantine up to date with this discovery")
	}
	return back
}

// DeviceEvent is something a driver's health watch reported about one of
// the host's devices while workers ran (docs/gpu-health.md).
type DeviceEvent struct {
	// Key is the device's key (a GPU's uuid); "" when the driver could not
	// say which device (every watched device may be affected).
	Key string
	// Critical: the device must leave service (quarantined host-wide);
	// false for events the application caused.
	Critical bool
	// Event names the kind ("xid", "ecc-double-bit", "gpu-lost"); XID
	// the Xid of an "xid" event.
	Event string
	XID   uint64
	// Reason says what happened, for people and the quarantine.
	Reason string
	// UntilSeen: the device returns only once seen gone and then healthy
	// again (a GPU fallen off the bus), never by the quiet period alone.
	UntilSeen bool
	Time      time.Time
}

// HealthWatch is a running health watch.
type HealthWatch interface {
	// Watched and Unwatched name the devices the watch covers and those
	// it cannot (no such events on them).
	Watched() []string
	Unwatched() []string
	// Done is closed when the watch has ended; Err then says why (a watch
	// never ends by itself: an end while not stopped is the watch lost).
	Done() <-chan struct{}
	Err() error
	// Stop ends the watch and waits for it.
	Stop()
}

// HealthWatcher is implemented by a Factory whose devices can be watched
// while workers run (the GPU driver: NVML's events through xres-nvml).
type HealthWatcher interface {
	// WatchHealth starts watching the host's devices of opts.Resource; fn
	// gets each event, in order, from one goroutine. ErrHealthUnwatched
	// when it cannot be watched here (no helper, no NVML); a malformed
	// param is an error wrapping ErrInvalidParam.
	WatchHealth(ctx context.Context, opts Options, fn func(DeviceEvent)) (HealthWatch, error)
}

// ErrHealthUnwatched: the devices cannot be watched on this host.
var ErrHealthUnwatched = errors.New("device health cannot be watched here")
