package launch

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// enumFunc lists fixed devices and says when it was first asked.
type enumFunc func(ctx context.Context) ([]driver.Device, error)

func (f enumFunc) Enumerate(ctx context.Context) ([]driver.Device, error) { return f(ctx) }

// orderReserver records whether the signal subscription was complete when
// it was asked to reserve.
type orderReserver struct {
	subscribed *atomic.Bool
	mu         sync.Mutex
	reserves   []bool // subscribed, at each Reserve
}

func (r *orderReserver) Reserve(_ context.Context, _ string, keys []string, amount int, _ bool) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserves = append(r.reserves, r.subscribed.Load())
	return keys[:amount], nil
}

func (r *orderReserver) Release(context.Context, string) error { return nil }

// The launcher holds nothing before its signal subscription is complete
// (a signal must find it able to free what it holds), yet it does not
// wait for the subscription (0.3-0.4 ms) with the host's listing still to
// do: a driver built on driver.Coordinated lists and chooses meanwhile and
// waits just before it reserves. A driver that does not say it waits
// (not ReserveGated) starts only once the subscription is complete.
func TestSubscriptionCompleteBeforeReservation(t *testing.T) {
	for _, gated := range []bool{true, false} {
		t.Run(map[bool]string{true: "coordinated driver", false: "other driver"}[gated], func(t *testing.T) {
			var subscribed atomic.Bool
			listed := make(chan struct{})
			var listOnce sync.Once
			res := &orderReserver{subscribed: &subscribed}
			var discoverSawSubscribed atomic.Bool
			reg := driver.NewRegistry()
			require.NoError(t, reg.Register("fake", driver.FactoryFunc(func(o driver.Options) (driver.Driver, error) {
				enum := enumFunc(func(context.Context) ([]driver.Device, error) {
					listOnce.Do(func() { close(listed) })
					return []driver.Device{
						{Key: "GPU-a", Info: resources.Properties{"index": "0"}},
						{Key: "GPU-b", Info: resources.Properties{"index": "1"}},
					}, nil
				})
				c := driver.NewCoordinated(o.Resource, enum, driver.CoordinatedOptions{Reserver: res})
				if gated {
					return c, nil
				}
				return ungated{c, &subscribed, &discoverSawSubscribed}, nil
			})))
			var overlapped atomic.Bool
			env := Env{
				Getenv:   func(k string) string { return map[string]string{"TMPDIR": t.TempDir()}[k] },
				Environ:  []string{"PATH=" + os.Getenv("PATH")},
				Dir:      t.TempDir(),
				Stdout:   &syncBuffer{},
				Stderr:   &syncBuffer{},
				Signals:  make(chan os.Signal),
				Registry: reg,
				Load:     fixedSpecs(gpuSpec(1)),
				// The subscription ends once the devices are listed, or
				// after a while where the launcher waits for it first
				// (expected of the other driver: a short while).
				Notify: func() (wait func()) {
					done := make(chan struct{})
					go func() {
						defer close(done)
						select {
						case <-listed:
							overlapped.Store(true)
						case <-time.After(map[bool]time.Duration{true: 20 * time.Second, false: 100 * time.Millisecond}[gated]):
						}
						subscribed.Store(true)
					}()
					return func() { <-done }
				},
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := Main(ctx, []string{"--", "true"}, env)
			require.Equal(t, ExitOK, code, env.Stderr.(*syncBuffer).String())
			res.mu.Lock()
			defer res.mu.Unlock()
			require.Equal(t, []bool{true}, res.reserves, "one reservation, made once the signals were subscribed")
			if gated {
				require.True(t, overlapped.Load(), "the coordinated driver listed the devices while the subscription was being made")
			} else {
				require.False(t, overlapped.Load(), "a driver that does not wait for the subscription itself was started before it was complete")
				require.True(t, discoverSawSubscribed.Load())
			}
		})
	}
}

// ungated hides Coordinated's ReserveGated.
type ungated struct {
	c          *driver.Coordinated
	subscribed *atomic.Bool
	saw        *atomic.Bool
}

func (u ungated) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	u.saw.Store(u.subscribed.Load())
	return u.c.Discover(ctx, amount)
}

func (u ungated) Release(ctx context.Context) error { return u.c.Release(ctx) }
