package coord

import (
	"time"

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

// CachedListing is a host-wide cached Enumerator (CachedFor) that can also
// be read without running its inner Enumerator.
type CachedListing interface {
	driver.Enumerator
	// Peek returns the cached listing when a fresh one is there, without
	// running the inner Enumerator or waiting for the lock.
	Peek() ([]driver.Device, bool)
}

// CachedFor is Cached with its own time to live: for what changes more
// rarely than the device listing (the GPUs' topology).
func CachedFor(enum CacheKeyer, stateFile string, ttl time.Duration, log logrus.FieldLogger) CachedListing {
	c := newDeviceCache(enum, stateFile, log)
	c.ttl = ttl
	return c
}

// Peek implements CachedListing.
func (c *deviceCache) Peek() ([]driver.Device, bool) { return c.load() }
