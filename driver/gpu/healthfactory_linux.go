//go:build linux

package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/xres/xres/driver"
)

// healthWatchReady bounds the wait for the helper's event set.
const healthWatchReady = 30 * time.Second

// WatchHealth implements driver.HealthWatcher: `xres-nvml watch` (found as
// discovery finds the helper), its events classified with
// health.application-xids.
func (factory) WatchHealth(ctx context.Context, opts driver.Options, fn func(driver.DeviceEvent)) (driver.HealthWatch, error) {
	app, err := appXIDs(opts)
	if err != nil {
		return nil, err
	}
	lib := nvmlLibraryParam.Get(opts.Params)
	if lib == nvmlLibraryParam.Default {
		lib = ""
	}
	helper, err := findNVMLHelper(opts.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrHealthUnwatched, err)
	}
	w, err := StartHealthWatch(ctx, helper, lib, nil, healthWatchReady, func(e HealthEvent) { fn(deviceEvent(e, app)) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrHealthUnwatched, err)
	}
	return healthWatchOf{w}, nil
}

type healthWatchOf struct{ *HealthWatch }

func (h healthWatchOf) Watched() []string   { return h.Ready.Watched }
func (h healthWatchOf) Unwatched() []string { return h.Ready.Unwatched }
