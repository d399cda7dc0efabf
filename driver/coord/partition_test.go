package coord

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// A host with two GPUs, each with two MIG instances: one resource hands
// out whole GPUs, another MIG instances.
var (
	wholeGPUs = []driver.Candidate{{Key: "GPU-0"}, {Key: "GPU-1"}}
	migs      = []driver.Candidate{
		{Key: "MIG-00", Parent: "GPU-0"}, {Key: "MIG-01", Parent: "GPU-0"},
		{Key: "MIG-10", Parent: "GPU-1"}, {Key: "MIG-11", Parent: "GPU-1"},
	}
)

func reserveC(t *testing.T, h *Host, resource string, cands []driver.Candidate, amount int) ([]string, error) {
	t.Helper()
	return h.ReserveCandidates(ctxT(t), resource, cands, amount, false)
}

// A whole GPU and a MIG instance of it are never held at once, whichever
// comes first; the error names the holder that blocks.
func TestWholeDeviceAndPartitions(t *testing.T) {
	t.Run("whole first", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state")
		whole, mig := newHost(t, state, liveOwner(t)), newHost(t, state, liveOwner(t))
		got, err := reserveC(t, whole, "gpu", wholeGPUs, 1)
		require.NoError(t, err)
		require.Equal(t, []string{"GPU-0"}, got)

		got, err = reserveC(t, mig, "mig", migs, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"MIG-10", "MIG-11"}, got, "no instance of the GPU held whole")

		_, err = reserveC(t, newHost(t, state, liveOwner(t)), "mig", migs, 1)
		require.ErrorIs(t, err, ErrNoDevicesLeft)
		require.Contains(t, err.Error(), "1 requested, 0 free of 4")
		require.Contains(t, err.Error(), fmt.Sprintf("GPU-0 held whole by pid %d (sleep) for gpu since ", whole.Owner().PID))
		require.Contains(t, err.Error(), "so its partitions MIG-00, MIG-01 are not free")
		require.Contains(t, err.Error(), fmt.Sprintf("MIG-10 held by pid %d (sleep) for mig", mig.Owner().PID))

		// The other whole GPU is in use through its instances.
		_, err = reserveC(t, newHost(t, state, liveOwner(t)), "gpu", wholeGPUs, 1)
		require.ErrorIs(t, err, ErrNoDevicesLeft)
		require.Contains(t, err.Error(), fmt.Sprintf("GPU-1 is in use through its partitions: MIG-10 held by pid %d (sleep) for mig since ", mig.Owner().PID))
		require.Contains(t, err.Error(), fmt.Sprintf("MIG-11 held by pid %d", mig.Owner().PID))
	})

	t.Run("partition first", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state")
		mig, whole := newHost(t, state, liveOwner(t)), newHost(t, state, liveOwner(t))
		got, err := reserveC(t, mig, "mig", migs, 1)
		require.NoError(t, err)
		require.Equal(t, []string{"MIG-00"}, got)

		got, err = reserveC(t, whole, "gpu", wholeGPUs, 1)
		require.NoError(t, err)
		require.Equal(t, []string{"GPU-1"}, got, "the GPU with an instance held is not free")

		_, err = reserveC(t, newHost(t, state, liveOwner(t)), "gpu", wholeGPUs, 1)
		require.ErrorIs(t, err, ErrNoDevicesLeft)
		require.Contains(t, err.Error(), fmt.Sprintf("GPU-0 is in use through its partitions: MIG-00 held by pid %d (sleep) for mig", mig.Owner().PID))
		require.Contains(t, err.Error(), fmt.Sprintf("GPU-1 held by pid %d (sleep) for gpu", whole.Owner().PID))

		// The other instance of GPU-0 is still free: instances of one GPU
		// do not conflict.
		got, err = reserveC(t, newHost(t, state, liveOwner(t)), "mig", migs, 1)
		require.NoError(t, err)
		require.Equal(t, []string{"MIG-01"}, got)
	})
}

func TestPartitionsOfOneDeviceBothGranted(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	a, b := newHost(t, state, liveOwner(t)), newHost(t, state, liveOwner(t))
	onGPU0 := migs[:2]
	got, err := reserveC(t, a, "mig", onGPU0, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-00"}, got)
	got, err = reserveC(t, b, "mig", onGPU0, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-01"}, got)

	hs, err := a.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 2)
	for _, h := range hs {
		require.Equal(t, "GPU-0", h.Parent, "holders show the parent")
	}
}

func TestPartitionReleaseFrees(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	whole, mig := newHost(t, state, liveOwner(t)), newHost(t, state, liveOwner(t))
	_, err := reserveC(t, whole, "gpu", wholeGPUs, 2)
	require.NoError(t, err)
	_, err = reserveC(t, mig, "mig", migs, 1)
	require.ErrorIs(t, err, ErrNoDevicesLeft)

	require.NoError(t, whole.Release(ctxT(t), "gpu"))
	got, err := reserveC(t, mig, "mig", migs, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-00", "MIG-01", "MIG-10"}, got)
	_, err = reserveC(t, whole, "gpu", wholeGPUs, 1)
	require.ErrorIs(t, err, ErrNoDevicesLeft, "both GPUs have an instance held")

	require.NoError(t, mig.Release(ctxT(t), "mig"))
	got, err = reserveC(t, whole, "gpu", wholeGPUs, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-0", "GPU-1"}, got, "released instances free their GPUs")
}

func TestPartitionDeadHoldersReclaimed(t *testing.T) {
	tests := []struct {
		name   string
		held   Entry
		cands  []driver.Candidate
		amount int
		want   []string
	}{
		{"GPU held whole by a dead process", Entry{Resource: "gpu", Key: "GPU-0"}, migs, 4, []string{"MIG-00", "MIG-01", "MIG-10", "MIG-11"}},
		{"instance held by a dead process", Entry{Resource: "mig", Key: "MIG-00", Parent: "GPU-0"}, wholeGPUs, 2, []string{"GPU-0", "GPU-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			e := tc.held
			e.Owner = deadOwner(t)
			writeEntries(t, state, e)
			h := newHost(t, state, Owner{})
			got, err := reserveC(t, h, "x", tc.cands, tc.amount)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			hs, err := h.Holders()
			require.NoError(t, err)
			require.Len(t, hs, tc.amount, "the dead holder's entry is gone")
		})
	}
}

// One call never grants a whole device together with a partition of it.
func TestPartitionOverlapWithinOneCall(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, Owner{})
	cands := []driver.Candidate{{Key: "GPU-0"}, {Key: "MIG-00", Parent: "GPU-0"}, {Key: "MIG-10", Parent: "GPU-1"}}
	got, err := h.ReserveCandidates(ctxT(t), "gpu", cands, 2, true)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-0", "MIG-10"}, got)
	_, err = h.ReserveCandidates(ctxT(t), "gpu", cands, 3, true)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), "3 requested, 2 free of 3")
	require.Contains(t, err.Error(), "1 more overlap devices granted in this request")
}

// A state file the previous version wrote keeps its holders under the new
// rules (a GPU it holds whole blocks that GPU's instances), and is
// rewritten as v2 once an instance is recorded.
func TestPreviousVersionStateFile(t *testing.T) {
	self, err := Self()
	require.NoError(t, err)
	if self.PIDNS == "" || self.Boot == "" {
		t.Skip("needs /proc/self/ns/pid and a boot id: the fixture's holders are judged by them")
	}
	b, err := os.ReadFile(filepath.Join("testdata", "state-v1"))
	require.NoError(t, err)
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(state, b, 0o644))
	// The fixture's holders live in another pid namespace (never proven
	// dead), except one recorded before another boot (dead).
	const gpu = "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a6"
	const mig = "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a"
	h := newHost(t, state, self)
	instances := []driver.Candidate{{Key: mig + "01", Parent: gpu + "0"}, {Key: mig + "11", Parent: gpu + "1"}, {Key: mig + "12", Parent: gpu + "1"}}
	got, err := reserveC(t, h, "mig", instances, 1)
	require.NoError(t, err)
	require.Equal(t, []string{mig + "12"}, got, "GPU 0 is held whole; MIG 11 is held by key")

	_, err = reserveC(t, h, "mig", instances, 1)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), gpu+"0 held whole by pid 4711 for gpu since 2026-11-29T13:40:00Z, so its partitions "+mig+"01 are not free")
	require.Contains(t, err.Error(), mig+"11 held by pid 4712 for mig")

	after, err := os.ReadFile(state)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(after), "xres-coordination v2 "), "%s", after)
	hs, err := h.Holders()
	require.NoError(t, err)
	var keys []string
	for _, hd := range hs {
		keys = append(keys, hd.Resource+"/"+hd.Key+"<"+hd.Parent)
	}
	require.Equal(t, []string{"gpu/" + gpu + "0<", "mig/" + mig + "11<", "mig/" + mig + "12<" + gpu + "1"}, keys,
		"the dead holder of GPU 2 is gone, the others kept")

	// Whole GPUs: GPU 1 is in use through its instance, GPU 2 was freed.
	got, err = h.Reserve(ctxT(t), "gpu", []string{gpu + "0", gpu + "1", gpu + "2"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{gpu + "2"}, got)
}
