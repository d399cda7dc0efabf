package drivertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

func TestBuilders(t *testing.T) {
	tests := []struct {
		name string
		dev  driver.Device
		want driver.Device
	}{
		{"index only", drivertest.GPU("3"), driver.Device{Key: "index:3", Info: resources.Properties{"index": "3"}}},
		{"full", drivertest.GPU("0", drivertest.WithUUID("GPU-a"), drivertest.WithName("H100"), drivertest.WithMemoryMiB(81920), drivertest.WithBusID("0000:18:00.0")),
			driver.Device{Key: "GPU-a", Info: resources.Properties{"index": "0", "uuid": "GPU-a", "name": "H100", "memory.total": "81920", "pci.bus-id": "0000:18:00.0"}}},
		{"explicit key wins", drivertest.GPU("0", drivertest.WithUUID("GPU-a"), drivertest.WithKey("k"), drivertest.WithProperty("x", "y")),
			driver.Device{Key: "k", Info: resources.Properties{"index": "0", "uuid": "GPU-a", "x": "y"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.dev)
		})
	}
	require.Len(t, drivertest.GPUs(8), 8)
	require.Equal(t, "GPU-fake-7", drivertest.GPUs(8)[7].Key)
}

func TestFake(t *testing.T) {
	ctx := context.Background()
	f := drivertest.New(drivertest.Devices(drivertest.GPUs(2)...))
	devs, err := f.Enumerate(ctx)
	require.NoError(t, err)
	require.Len(t, devs, 2)
	infos, err := f.Discover(ctx, 2)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	_, err = f.Discover(ctx, 3)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.NoError(t, f.Release(ctx))
	e, d, r := f.Calls()
	require.Equal(t, [3]int{1, 2, 1}, [3]int{e, d, r})

	boom := errors.New("boom")
	_, err = drivertest.New(drivertest.FailWith(boom)).Enumerate(ctx)
	require.ErrorIs(t, err, boom)

	slow := drivertest.New(drivertest.Slow(time.Minute))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = slow.Discover(cctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// Enumerate hands out copies that keep every field of the device (a MIG
// instance's parent, health), not just its key and infos.
func TestEnumerateKeepsDeviceFields(t *testing.T) {
	mig := driver.Device{Key: "MIG-a", Parent: "GPU-0", Unhealthy: "row remapping pending",
		Info: resources.Properties{"uuid": "MIG-a"}}
	f := drivertest.New(drivertest.Devices(mig))
	got, err := f.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, []driver.Device{mig}, got)
	got[0].Info["uuid"] = "changed"
	require.Equal(t, "MIG-a", mig.Info["uuid"], "infos are copied")
}
