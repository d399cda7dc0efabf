//go:build !linux

package gpu

import (
	"context"

	"github.com/xres/xres/driver"
)

// WatchHealth implements driver.HealthWatcher: NVML is read on Linux only.
func (factory) WatchHealth(context.Context, driver.Options, func(driver.DeviceEvent)) (driver.HealthWatch, error) {
	return nil, driver.ErrHealthUnwatched
}
