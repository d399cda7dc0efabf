package coord

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/jsonfile"
)

// DeviceCacheTTL is how long a host-wide device listing is reused: the
// launchers starting on a host within it (a job's workers, a restart
// wave) run the discovery tool (nvidia-smi, rocm-smi, a plugin) once
// instead of once each. Health verdicts are as old as the listing.
const DeviceCacheTTL = 2 * time.Second

// CacheKeyer is an Enumerator whose listing may be shared between the
// launchers of a host for DeviceCacheTTL: DeviceCacheKey names everything
// the listing depends on (source, tool paths, the environment it reads).
// Enumerators that do not implement it are run every time.
type CacheKeyer interface {
	driver.Enumerator
	DeviceCacheKey() string
}

// deviceCache is an Enumerator that shares its inner Enumerator's listing
// through a file in the coordination folder, named after the inner
// DeviceCacheKey and stamped with the boot id and the time. One launcher lists at a time (an
// flock), so launchers starting together wait for the first one's listing
// instead of each running the tool. A missing, stale or unreadable cache
// is a miss; errors are never cached.
type deviceCache struct {
	inner driver.Enumerator
	path  string
	boot  string
	ttl   time.Duration
	now   func() time.Time
	log   logrus.FieldLogger
}

// deviceCacheFile is the cache's content, in JSON: what json.Marshal writes
// for it, written and read by hand (jsonfile).
type deviceCacheFile struct {
	Boot    string          `json:"boot"`
	Time    time.Time       `json:"time"`
	Devices []driver.Device `json:"devices"`
}

// newDeviceCache caches inner's listing beside stateFile.
func newDeviceCache(inner CacheKeyer, stateFile string, log logrus.FieldLogger) *deviceCache {
	sum := sum256([]byte(inner.DeviceCacheKey()))
	name := ".devices-" + hex.EncodeToString(sum[:8]) + ".json"
	return &deviceCache{inner: inner, path: filepath.Join(filepath.Dir(stateFile), name),
		boot: defaultProc.bootID(), ttl: DeviceCacheTTL, now: time.Now, log: driver.LoggerOrDiscard(log)}
}

// Enumerate implements driver.Enumerator.
func (c *deviceCache) Enumerate(ctx context.Context) ([]driver.Device, error) {
	if devs, ok := c.load(); ok {
		return devs, nil
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return c.inner.Enumerate(ctx)
	}
	if _, err := checkFolder(filepath.Dir(c.path)); err != nil {
		c.log.WithError(err).Warn("device cache not used")
		return c.inner.Enumerate(ctx)
	}
	h := &Host{lock: c.path + ".lock", proc: defaultProc}
	f, err := h.lockPath(ctx, "device cache lock", c.path+".lock", os.O_RDONLY|os.O_CREATE)
	if err != nil {
		c.log.WithError(err).Debug("device cache lock; listing without it")
		return c.inner.Enumerate(ctx)
	}
	defer unlock(f)
	if devs, ok := c.load(); ok { // listed by the launcher we waited for
		return devs, nil
	}
	devs, err := c.inner.Enumerate(ctx)
	if err != nil {
		return nil, err
	}
	c.store(devs)
	return devs, nil
}

// load reads the cache when it can be trusted: a regular file (not
// followed through a symbolic link) in a safe folder, not writable by
// every user, and in a folder every user may write, owned by root or by
// this user (trustedOwner). Anything else is a miss, logged.
func (c *deviceCache) load() ([]driver.Device, bool) {
	folder, err := checkFolder(filepath.Dir(c.path))
	if err != nil {
		return nil, false
	}
	f, err := openRegular("device cache", c.path, os.O_RDONLY, 0)
	if err != nil {
		if !os.IsNotExist(err) {
			c.log.WithError(err).Warn("device cache not used")
		}
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	if err := trustedOwner("device cache", c.path, fi, folder); err != nil {
		c.log.WithError(err).Warn("device cache not used")
		return nil, false
	}
	b, err := readAllBounded(f, maxStateSize)
	if err != nil {
		return nil, false
	}
	cf, err := readDeviceCache(b)
	if err != nil || cf.Boot != c.boot || cf.Boot == "" {
		return nil, false
	}
	if age := c.now().Sub(cf.Time); age < 0 || age > c.ttl {
		return nil, false
	}
	return cf.Devices, true
}

// store writes the listing atomically (no fsync: a lost cache is a miss).
func (c *deviceCache) store(devs []driver.Device) {
	b := appendDeviceCache(nil, deviceCacheFile{Boot: c.boot, Time: c.now(), Devices: devs})
	tmp, err := localfile.CreateTemp(filepath.Dir(c.path), filepath.Base(c.path)+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	_ = tmp.Chmod(0o644) // never writable by others: a cache they wrote is not trusted
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), c.path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

func appendDeviceCache(b []byte, cf deviceCacheFile) []byte {
	b = append(b, `{"boot":`...)
	b = jsonfile.AppendString(b, cf.Boot)
	b = append(b, `,"time":`...)
	b = jsonfile.AppendTime(b, cf.Time)
	b = append(b, `,"devices":`...)
	if cf.Devices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, d := range cf.Devices {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Key":`...)
			b = jsonfile.AppendString(b, d.Key)
			b = append(b, `,"Info":`...)
			b = jsonfile.AppendStringMap(b, d.Info)
			b = append(b, `,"Parent":`...)
			b = jsonfile.AppendString(b, d.Parent)
			b = append(b, `,"Unhealthy":`...)
			b = jsonfile.AppendString(b, d.Unhealthy)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// readDeviceCache reads what appendDeviceCache wrote; anything else is an
// error (a miss).
func readDeviceCache(b []byte) (deviceCacheFile, error) {
	var cf deviceCacheFile
	r := jsonfile.NewReader(b)
	err := r.Object(func(key string) (err error) {
		switch key {
		case "boot":
			cf.Boot, err = r.String()
		case "time":
			cf.Time, err = r.Time()
		case "devices":
			cf.Devices = nil
			err = r.Array(func() error {
				var d driver.Device
				err := r.Object(func(key string) (err error) {
					switch key {
					case "Key":
						d.Key, err = r.String()
					case "Info":
						d.Info, err = r.StringMap()
					case "Parent":
						d.Parent, err = r.String()
					case "Unhealthy":
						d.Unhealthy, err = r.String()
					default:
						err = jsonfile.Unknown(key)
					}
					return err
				})
				cf.Devices = append(cf.Devices, d)
				return err
			})
		default:
			err = jsonfile.Unknown(key)
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	return cf, err
}
