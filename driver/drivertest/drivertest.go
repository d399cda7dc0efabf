// Package drivertest provides hand-written fakes of the driver seams, built
// with options: a Fake that is both a driver.Enumerator and a driver.Driver,
// and builders for devices.
//
//	f := drivertest.New(drivertest.Devices(
//		drivertest.GPU("0", drivertest.WithUUID("GPU-a")),
//		drivertest.GPU("1", drivertest.WithUUID("GPU-b"), drivertest.WithMemoryMiB(81920)),
//	))
//	f = drivertest.New(drivertest.FailWith(errors.New("boom")), drivertest.Slow(time.Second))
package drivertest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// DeviceOption sets a property of a device built by GPU or Device.
type DeviceOption func(*driver.Device)

// GPU builds a GPU device with the given index. Its key is its UUID when
// WithUUID is given, else "index:<index>".
func GPU(index string, opts ...DeviceOption) driver.Device {
	d := driver.Device{Key: "index:" + index, Info: resources.Properties{"index": index}}
	for _, o := range opts {
		o(&d)
	}
	return d
}

// WithUUID sets the uuid property and makes it the device key.
func WithUUID(uuid string) DeviceOption {
	return func(d *driver.Device) { d.Info["uuid"] = uuid; d.Key = uuid }
}

// WithName sets the name property.
func WithName(name string) DeviceOption {
	return func(d *driver.Device) { d.Info["name"] = name }
}

// WithMemoryMiB sets the memory.total property (MiB).
func WithMemoryMiB(mib uint64) DeviceOption {
	return func(d *driver.Device) { d.Info["memory.total"] = strconv.FormatUint(mib, 10) }
}

// WithBusID sets the pci.bus-id property.
func WithBusID(bus string) DeviceOption {
	return func(d *driver.Device) { d.Info["pci.bus-id"] = bus }
}

// WithKey overrides the device key.
func WithKey(key string) DeviceOption {
	return func(d *driver.Device) { d.Key = key }
}

// WithProperty sets any property.
func WithProperty(k, v string) DeviceOption {
	return func(d *driver.Device) { d.Info[k] = v }
}

// GPUs builds n GPUs with indices 0..n-1 and UUIDs GPU-fake-<i>.
func GPUs(n int) []driver.Device {
	out := make([]driver.Device, n)
	for i := range out {
		out[i] = GPU(strconv.Itoa(i), WithUUID(fmt.Sprintf("GPU-fake-%d", i)))
	}
	return out
}

// Option configures a Fake.
type Option func(*Fake)

// Devices sets the devices the Fake lists.
func Devices(ds ...driver.Device) Option {
	return func(f *Fake) { f.devices = append(f.devices, ds...) }
}

// FailWith makes every call fail with err.
func FailWith(err error) Option { return func(f *Fake) { f.err = err } }

// Slow makes every call wait d first (or until the context ends).
func Slow(d time.Duration) Option { return func(f *Fake) { f.delay = d } }

// Fake is a driver.Enumerator and a driver.Driver (and Releaser) over a
// fixed list of devices. As a Driver it returns the first amount devices'
// infos. It counts calls and is safe for concurrent use.
type Fake struct {
	devices []driver.Device
	err     error
	delay   time.Duration

	mu        sync.Mutex
	enumerate int
	discover  int
	release   int
}

var (
	_ driver.Enumerator = (*Fake)(nil)
	_ driver.Driver     = (*Fake)(nil)
	_ driver.Releaser   = (*Fake)(nil)
)

// New returns a Fake configured by opts.
func New(opts ...Option) *Fake {
	f := &Fake{}
	for _, o := range opts {
		o(f)
	}
	return f
}

func (f *Fake) wait(ctx context.Context) error {
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return f.err
}

// Enumerate implements driver.Enumerator; it returns copies of the devices.
func (f *Fake) Enumerate(ctx context.Context) ([]driver.Device, error) {
	f.mu.Lock()
	f.enumerate++
	f.mu.Unlock()
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	out := make([]driver.Device, len(f.devices))
	for i, d := range f.devices {
		d.Info = d.Info.Clone()
		out[i] = d
	}
	return out, nil
}

// Discover implements driver.Driver.
func (f *Fake) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	f.mu.Lock()
	f.discover++
	f.mu.Unlock()
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	if amount > int64(len(f.devices)) {
		return nil, fmt.Errorf("fake: %w: %d requested, %d available", driver.ErrNotEnoughDevices, amount, len(f.devices))
	}
	out := make([]resources.Info, 0, amount)
	for _, d := range f.devices[:amount] {
		out = append(out, d.Info)
	}
	return out, nil
}

// Release implements driver.Releaser.
func (f *Fake) Release(context.Context) error {
	f.mu.Lock()
	f.release++
	f.mu.Unlock()
	return nil
}

// Calls reports how often Enumerate, Discover and Release were called.
func (f *Fake) Calls() (enumerate, discover, release int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enumerate, f.discover, f.release
}

// Factory returns a driver.Factory that always builds this Fake.
func (f *Fake) Factory() driver.Factory {
	return driver.FactoryFunc(func(driver.Options) (driver.Driver, error) { return f, nil })
}
