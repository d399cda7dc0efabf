package driver_test

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

// fakeReserver grants the candidates at the given positions.
type fakeReserver struct {
	pick     []int
	grant    []string // overrides pick when set
	err      error
	dryRuns  []bool
	released []string
}

func (f *fakeReserver) Reserve(_ context.Context, _ string, candidates []string, amount int, dryRun bool) ([]string, error) {
	f.dryRuns = append(f.dryRuns, dryRun)
	if f.err != nil {
		return nil, f.err
	}
	if f.grant != nil {
		return f.grant, nil
	}
	var out []string
	for _, i := range f.pick[:amount] {
		out = append(out, candidates[i])
	}
	return out, nil
}

func (f *fakeReserver) Release(_ context.Context, resource string) error {
	f.released = append(f.released, resource)
	return nil
}

func uuids(infos []resources.Info) []string {
	var out []string
	for _, in := range infos {
		u, _ := in.Property("uuid")
		out = append(out, u)
	}
	return out
}

func TestCoordinatedDiscover(t *testing.T) {
	four := drivertest.New(drivertest.Devices(drivertest.GPUs(4)...))
	boom := errors.New("boom")
	tests := []struct {
		name     string
		enum     driver.Enumerator
		reserver *fakeReserver
		amount   int64
		want     []string
		errIs    error
		errHas   string
	}{
		{name: "no coordination: the first devices", enum: four, amount: 2, want: []string{"GPU-fake-0", "GPU-fake-1"}},
		{name: "reserver chooses", enum: four, reserver: &fakeReserver{pick: []int{3, 1}}, amount: 2, want: []string{"GPU-fake-3", "GPU-fake-1"}},
		{name: "too few devices on the host", enum: four, amount: 5, errIs: driver.ErrNotEnoughDevices, errHas: "5 requested but the host has 4"},
		{name: "no devices at all", enum: drivertest.New(), amount: 1, errIs: driver.ErrNotEnoughDevices, errHas: "none found"},
		{name: "zero amount", enum: four, amount: 0, errHas: "amount must be positive"},
		{name: "enumeration fails", enum: drivertest.New(drivertest.FailWith(boom)), amount: 1, errIs: boom},
		{name: "reserver fails", enum: four, reserver: &fakeReserver{err: boom}, amount: 1, errIs: boom},
		{name: "reserver returns an unknown key", enum: four, reserver: &fakeReserver{grant: []string{"GPU-x"}}, amount: 1, errHas: "unknown device key"},
		{name: "duplicate keys", enum: drivertest.New(drivertest.Devices(drivertest.GPU("0", drivertest.WithUUID("u")), drivertest.GPU("1", drivertest.WithUUID("u")))),
			amount: 1, errHas: `device key "u" listed twice`},
		{name: "empty key", enum: drivertest.New(drivertest.Devices(drivertest.GPU("0", drivertest.WithKey("")))), amount: 1, errHas: "empty key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := driver.CoordinatedOptions{}
			if tc.reserver != nil {
				opts.Reserver = tc.reserver
			}
			c := driver.NewCoordinated("gpu", tc.enum, opts)
			infos, err := c.Discover(context.Background(), tc.amount)
			if tc.errIs != nil || tc.errHas != "" {
				require.Error(t, err)
				if tc.errIs != nil {
					require.ErrorIs(t, err, tc.errIs)
				}
				require.Contains(t, err.Error(), tc.errHas)
				require.Contains(t, err.Error(), "discover gpu")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, uuids(infos))
		})
	}
}

func TestCoordinatedInfosAreCopies(t *testing.T) {
	f := drivertest.New(drivertest.Devices(drivertest.GPU("0", drivertest.WithUUID("u"))))
	c := driver.NewCoordinated("gpu", f, driver.CoordinatedOptions{})
	infos, err := c.Discover(context.Background(), 1)
	require.NoError(t, err)
	infos[0].(resources.Properties)["index"] = "changed"
	again, err := c.Discover(context.Background(), 1)
	require.NoError(t, err)
	ix, _ := again[0].Property("index")
	require.Equal(t, "0", ix)
}

func TestCoordinatedReleaseAndDryRun(t *testing.T) {
	four := drivertest.New(drivertest.Devices(drivertest.GPUs(4)...))

	r := &fakeReserver{pick: []int{0}}
	c := driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{Reserver: r})
	_, err := c.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.NoError(t, c.Release(context.Background()))
	require.Equal(t, []bool{false}, r.dryRuns)
	require.Equal(t, []string{"gpu"}, r.released)

	probe := &fakeReserver{pick: []int{0}}
	p := driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{Reserver: probe, DryRun: true})
	_, err = p.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.NoError(t, p.Release(context.Background()))
	require.Equal(t, []bool{true}, probe.dryRuns, "a dry run asks the reserver not to record")
	require.Empty(t, probe.released, "a dry run holds nothing to release")

	require.NoError(t, driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{}).Release(context.Background()))
}

func TestCoordinatedHonoursContext(t *testing.T) {
	slow := drivertest.New(drivertest.Devices(drivertest.GPUs(1)...), drivertest.Slow(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := driver.NewCoordinated("gpu", slow, driver.CoordinatedOptions{}).Discover(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// unhealthyEnum lists GPUs 0-3 of which 1 and 3 are unhealthy.
func unhealthyEnum() driver.Enumerator {
	devs := drivertest.GPUs(4)
	devs[1].Unhealthy = "retired pages pending"
	devs[3].Unhealthy = "row remapping failed"
	return drivertest.New(drivertest.Devices(devs...))
}

func TestCoordinatedLeavesUnhealthyOut(t *testing.T) {
	tests := []struct {
		name     string
		reserver *fakeReserver
		amount   int64
		want     []string
		errIs    error
		errHas   []string
	}{
		{name: "healthy ones only", amount: 2, want: []string{"GPU-fake-0", "GPU-fake-2"}},
		{name: "the reserver never sees them", reserver: &fakeReserver{pick: []int{1, 0}}, amount: 2, want: []string{"GPU-fake-2", "GPU-fake-0"}},
		{name: "too few healthy: each named with why", amount: 3, errIs: driver.ErrNotEnoughDevices, errHas: []string{
			"3 requested but the host has 2 healthy (GPU-fake-0, GPU-fake-2)",
			"unhealthy: gpu 1 (GPU-fake-1): retired pages pending; gpu 3 (GPU-fake-3): row remapping failed"}},
		{name: "held by others: the unhealthy ones are named too", reserver: &fakeReserver{err: driver.ErrNotEnoughDevices}, amount: 1,
			errIs: driver.ErrNotEnoughDevices, errHas: []string{"unhealthy: gpu 1 (GPU-fake-1): retired pages pending"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := driver.CoordinatedOptions{}
			if tc.reserver != nil {
				opts.Reserver = tc.reserver
			}
			c := driver.NewCoordinated("gpu", unhealthyEnum(), opts)
			infos, err := c.Discover(context.Background(), tc.amount)
			require.Len(t, c.Unhealthy(), 2, "reported whatever the outcome")
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				for _, s := range tc.errHas {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, uuids(infos))
		})
	}
}

func TestCoordinatedUnhealthyReport(t *testing.T) {
	c := driver.NewCoordinated("gpu", unhealthyEnum(), driver.CoordinatedOptions{})
	require.Empty(t, c.Unhealthy(), "nothing before the first discovery")
	_, err := c.Discover(context.Background(), 1)
	require.NoError(t, err)
	got := c.Unhealthy()
	require.Equal(t, "GPU-fake-1", got[0].Key)
	require.Equal(t, "retired pages pending", got[0].Reason)
	ix, _ := got[0].Info.Property("index")
	require.Equal(t, "1", ix)
	got[0].Info["index"] = "changed"
	again := c.Unhealthy()
	require.Equal(t, "1", again[0].Info["index"], "the report is a copy")

	// An index-less device is named by its key alone.
	dev := driver.Device{Key: "0000:3b:00.0", Info: resources.Properties{"address": "0000:3b:00.0"}, Unhealthy: "link down"}
	f := driver.NewCoordinated("fpga", drivertest.New(drivertest.Devices(dev)), driver.CoordinatedOptions{})
	_, err = f.Discover(context.Background(), 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), "unhealthy: fpga 0000:3b:00.0: link down")
}

// partitionReserver records the candidates it is offered and grants the
// first amount.
type partitionReserver struct {
	fakeReserver
	offered []driver.Candidate
}

func (p *partitionReserver) ReserveCandidates(_ context.Context, _ string, cands []driver.Candidate, amount int, _ bool) ([]string, error) {
	p.offered = cands
	var out []string
	for _, c := range cands[:amount] {
		out = append(out, c.Key)
	}
	return out, nil
}

// listEnum lists fixed devices as they are (drivertest.Fake copies only
// Key, Info and Unhealthy).
type listEnum []driver.Device

func (l listEnum) Enumerate(context.Context) ([]driver.Device, error) {
	return append([]driver.Device(nil), l...), nil
}

// A reserver that knows partitions gets each healthy device's parent; a
// plain one still gets the keys alone.
func TestCoordinatedPassesParents(t *testing.T) {
	devs := []driver.Device{
		{Key: "MIG-a", Parent: "GPU-0", Info: resources.Properties{"uuid": "MIG-a"}},
		{Key: "MIG-b", Parent: "GPU-0", Info: resources.Properties{"uuid": "MIG-b"}, Unhealthy: "row remapping pending"},
		{Key: "GPU-1", Info: resources.Properties{"uuid": "GPU-1"}},
	}
	enum := listEnum(devs)

	pr := &partitionReserver{}
	infos, err := driver.NewCoordinated("gpu", enum, driver.CoordinatedOptions{Reserver: pr}).Discover(context.Background(), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-a", "GPU-1"}, uuids(infos))
	require.Equal(t, []driver.Candidate{{Key: "MIG-a", Parent: "GPU-0"}, {Key: "GPU-1"}}, pr.offered)
	require.Nil(t, pr.dryRuns, "Reserve is not called when ReserveCandidates is there")

	plain := &fakeReserver{pick: []int{1}}
	infos, err = driver.NewCoordinated("gpu", enum, driver.CoordinatedOptions{Reserver: plain}).Discover(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-1"}, uuids(infos))
}

// Issue 29: a driver whose Reserve recorded nothing (never called, or
// failed with ErrNothingReserved: a corrupt state file, too few free
// devices) releases nothing and leaves the state alone; one whose Reserve
// failed otherwise (it may have recorded) still releases.
func TestCoordinatedReleasesOnlyWhatItMayHold(t *testing.T) {
	four := drivertest.New(drivertest.Devices(drivertest.GPUs(4)...))
	ctx := context.Background()

	never := &fakeReserver{pick: []int{0}}
	require.NoError(t, driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{Reserver: never}).Release(ctx))
	require.Empty(t, never.released, "never discovered: nothing to release")

	corrupt := &fakeReserver{err: driver.NothingReserved(errors.New("reserve gpu: coordination state file is corrupt"))}
	c := driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{Reserver: corrupt})
	_, err := c.Discover(ctx, 1)
	require.ErrorIs(t, err, driver.ErrNothingReserved)
	require.Equal(t, "discover gpu: reserve gpu: coordination state file is corrupt", err.Error(), "the mark changes no message")
	require.NoError(t, c.Release(ctx))
	require.Empty(t, corrupt.released, "nothing was recorded: nothing to release")

	unsure := &fakeReserver{err: errors.New("reserve gpu: Flink's file not writable")}
	c = driver.NewCoordinated("gpu", four, driver.CoordinatedOptions{Reserver: unsure})
	_, err = c.Discover(ctx, 1)
	require.Error(t, err)
	require.NoError(t, c.Release(ctx))
	require.Equal(t, []string{"gpu"}, unsure.released, "it may have recorded: released")
}
