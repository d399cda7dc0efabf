package am

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
)

// A launcher that exits gpu-failed (216: a GPU of its worker failed and is
// quarantined on its host) is the cluster's fault: the worker is replaced
// without counting toward yarn.maximum-failed-containers (0 here), and the
// node is not blacklisted (its other GPUs are fine).
func TestAMReplacesWorkerWhoseGPUFailed(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1),
		complete(done(c1, resources.LauncherExitGPUFailed)),
		alloc(c2),
		complete(done(c2, 0)),
	}}
	cfg := testConfig(1, 0)
	cfg.DeviceExits = resources.DeviceExitCodes()
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 0, a.Status().Failed)
	require.Equal(t, 1, a.Status().Restarts)
	for _, r := range rm.requests {
		require.Empty(t, r.BlacklistAdd, "the node keeps its healthy GPUs in use")
	}
	require.Equal(t, []int{resources.LauncherExitGPUFailed}, resources.DeviceExitCodes())
}
