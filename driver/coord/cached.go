package coord

import (
	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
)

// Cached shares enum's listing between the launchers of a host for
// DeviceCacheTTL through a file beside stateFile, as Settings.Coordinated
// does for a CacheKeyer: for a driver that filters the listing per
// container after it (the GPU driver under YARN's GPU plugin) and hands
// Coordinated the filter, which is no CacheKeyer.
func Cached(enum CacheKeyer, stateFile string, log logrus.FieldLogger) driver.Enumerator {
	return newDeviceCache(enum, stateFile, log)
}
