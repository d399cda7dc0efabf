package pci

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

func addressesOf(infos []resources.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i], _ = in.Property("address")
	}
	return out
}

func TestRegisterAndCoordinate(t *testing.T) {
	r := driver.NewRegistry()
	require.NoError(t, Register(r))
	f, err := r.Lookup(FlinkFPGAFactory)
	require.NoError(t, err)
	name, _ := r.Canonical(FlinkFPGAFactory)
	require.Equal(t, FactoryName, name)

	state := filepath.Join(t.TempDir(), "coordination.state")
	params := map[string]string{"vendor": "0x10ee", "device": "0x5005", "sysfs-root": twoFPGAs, "coordination.file": state}
	newDriver := func(dryRun bool) driver.Driver {
		d, err := f.NewDriver(driver.Options{Resource: "fpga", Params: params, DryRun: dryRun})
		require.NoError(t, err)
		return d
	}
	ctx := context.Background()

	probe, err := newDriver(true).Discover(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:3b:00.1", "0000:d8:00.1"}, addressesOf(probe), "a dry run reserves nothing")

	first := newDriver(false)
	got, err := first.Discover(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:3b:00.1"}, addressesOf(got))

	second := newDriver(false)
	got, err = second.Discover(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:d8:00.1"}, addressesOf(got), "the first FPGA is held")

	_, err = newDriver(false).Discover(ctx, 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)

	require.NoError(t, first.(driver.Releaser).Release(ctx))
	require.NoError(t, second.(driver.Releaser).Release(ctx))
	got, err = newDriver(false).Discover(ctx, 2)
	require.NoError(t, err)
	require.Len(t, got, 2)

	_, err = newDriver(false).Discover(ctx, 3)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
}

func TestCoordinationParams(t *testing.T) {
	f := NewFactory()
	_, err := f.NewDriver(driver.Options{Resource: "fpga", Params: map[string]string{"vendor": "0x10ee", "coordination.enabled": "yes"}})
	require.ErrorIs(t, err, ErrInvalidParam)
	require.ErrorContains(t, err, `external-resource.fpga.param.coordination.enabled: "yes", want true or false`)

	// Off: every caller gets the first devices, nothing is recorded.
	params := map[string]string{"vendor": "0x10ee", "class": "0x12", "sysfs-root": twoFPGAs, "coordination.enabled": "false"}
	for i := 0; i < 2; i++ {
		d, err := f.NewDriver(driver.Options{Resource: "fpga", Params: params})
		require.NoError(t, err)
		got, err := d.Discover(context.Background(), 2)
		require.NoError(t, err)
		require.Equal(t, []string{"0000:3b:00.0", "0000:3b:00.1"}, addressesOf(got))
	}

	_, err = f.NewDriver(driver.Options{Resource: "fpga", Params: map[string]string{}})
	require.ErrorContains(t, err, "external-resource.fpga.param.vendor: missing")
}

// A scan that fails reserves nothing: the state file is untouched and a
// later good scan gets every device.
func TestFailedScanReservesNothing(t *testing.T) {
	root := drivertest.CopyTree(t, twoFPGAs)
	state := filepath.Join(t.TempDir(), "coordination.state")
	params := map[string]string{"vendor": "0x10ee", "device": "0x5005", "sysfs-root": root, "coordination.file": state}
	drivertest.Write("devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/numa_node", "garbage\n")(t, root)
	d, err := NewFactory().NewDriver(driver.Options{Resource: "fpga", Params: params})
	require.NoError(t, err)
	_, err = d.Discover(context.Background(), 1)
	require.ErrorContains(t, err, `numa_node: "garbage" is not a NUMA node number`)
	require.NoError(t, d.(driver.Releaser).Release(context.Background()))

	drivertest.Write("devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/numa_node", "1\n")(t, root)
	d, err = NewFactory().NewDriver(driver.Options{Resource: "fpga", Params: params})
	require.NoError(t, err)
	got, err := d.Discover(context.Background(), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:3b:00.1", "0000:d8:00.1"}, addressesOf(got))
	require.NoError(t, d.(driver.Releaser).Release(context.Background()))
}
