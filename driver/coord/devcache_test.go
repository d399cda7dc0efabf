package coord

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

type countingEnum struct {
	key   string
	calls atomic.Int32
	err   error
}

func (c *countingEnum) DeviceCacheKey() string { return c.key }
func (c *countingEnum) Enumerate(context.Context) ([]driver.Device, error) {
	c.calls.Add(1)
	time.Sleep(20 * time.Millisecond) // a slow tool: concurrent callers must wait, not run it too
	if c.err != nil {
		return nil, c.err
	}
	return []driver.Device{{Key: "GPU-a", Info: resources.Properties{"index": "0"}}}, nil
}

// Launchers starting together run the discovery tool once; a stale
// listing, another key or an error is never reused.
func TestDeviceCacheShared(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	inner := &countingEnum{key: "k1"}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devs, err := newDeviceCache(inner, state, nil).Enumerate(ctxT(t))
			require.NoError(t, err)
			require.Equal(t, "GPU-a", devs[0].Key)
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, inner.calls.Load(), "8 launchers at once list the devices once")

	other := &countingEnum{key: "k2"}
	_, err := newDeviceCache(other, state, nil).Enumerate(ctxT(t))
	require.NoError(t, err)
	require.EqualValues(t, 1, other.calls.Load(), "another key is another listing")

	late := newDeviceCache(inner, state, nil)
	late.now = func() time.Time { return time.Now().Add(DeviceCacheTTL + time.Second) }
	_, err = late.Enumerate(ctxT(t))
	require.NoError(t, err)
	require.EqualValues(t, 2, inner.calls.Load(), "a stale listing is listed again")

	rebooted := newDeviceCache(inner, state, nil)
	rebooted.boot = "another-boot"
	_, err = rebooted.Enumerate(ctxT(t))
	require.NoError(t, err)
	require.EqualValues(t, 3, inner.calls.Load(), "a listing from another boot is not used")

	failing := &countingEnum{key: "k3", err: errors.New("nvidia-smi failed")}
	for i := 0; i < 2; i++ {
		_, err = newDeviceCache(failing, state, nil).Enumerate(ctxT(t))
		require.Error(t, err)
	}
	require.EqualValues(t, 2, failing.calls.Load(), "errors are not cached")
}
