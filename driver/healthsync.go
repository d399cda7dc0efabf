package driver

import (
	"context"
	"time"
)

// HealthSyncer is a Reserver that keeps a host-wide quarantine of unfit
// devices (driver/coord; docs/gpu-health.md). Coordinated calls it with
// each (non-dry-run) discovery's listing: devices discovery's health checks
// found unhealthy are quarantined, and quarantined devices that have
// earned it return.
type HealthSyncer interface {
	SyncHealth(ctx context.Context, resource string, listed []Device, ret QuarantineReturn) error
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
func (c *Coordinated) syncHealth(ctx context.Context, listed []Device) {
	hs, ok := c.opts.Reserver.(HealthSyncer)
	if !ok || c.opts.DryRun {
		return
	}
	if err := hs.SyncHealth(ctx, c.resource, listed, c.opts.Return); err != nil {
		c.log.WithError(err).Warn("could not bring the host-wide quarantine up to date with this discovery")
	}
}
