package am

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
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

// The launcher's health report (a critical event on its worker's GPU) is
// kept on the worker, beside its devices (a health report names none), and
// api/status lists it with the worker's host and its replacement.
func TestAMKeepsHealthReport(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1),
		complete(done(c1, resources.LauncherExitGPUFailed)),
		alloc(c2),
	}}
	cfg := testConfig(1, 0)
	cfg.DeviceExits = resources.DeviceExitCodes()
	a, err := New(cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c1.ID, Seq: 1, Reserved: now,
		Resources: map[string][]resources.Properties{"gpu": {{"index": "0", "uuid": "GPU-a"}}}}))
	ev := contract.HealthEvent{Resource: "gpu", Device: "GPU-a", Event: "xid", XID: 94, Reason: "Xid 94 (contained ECC error) on GPU-a (index 0)", Action: "replace", Time: now}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	a.cfg.After = settled(a, func(d time.Duration) <-chan time.Time {
		calls++
		if calls == 1 {
			require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c1.ID, Seq: 2, Health: []contract.HealthEvent{ev}}))
		}
		if calls == 3 {
			cancel()
		}
		return ready(d)
	})
	_, err = a.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)

	srv := httptest.NewServer(amweb.NewTracker(a, nil))
	defer srv.Close()
	var st amstatus.Status
	require.NoError(t, json.Unmarshal([]byte(getBody(t, srv, amweb.PathStatus)), &st))
	var w1 amstatus.WorkerStatus
	for _, w := range st.Containers {
		if w.Container == c1.ID {
			w1 = w
		}
	}
	require.Equal(t, []resources.Properties{{"index": "0", "uuid": "GPU-a"}}, w1.Devices["gpu"], "its devices kept")
	require.NotNil(t, w1.Timeline)
	require.Len(t, w1.Timeline.DeviceEvents, 1)
	require.Len(t, st.DeviceEvents, 1)
	require.Equal(t, c1.ID, st.DeviceEvents[0].Container)
	require.Equal(t, c2.ID, st.DeviceEvents[0].ReplacedBy)
	require.Equal(t, "nm1", st.DeviceEvents[0].Host)
	require.Equal(t, uint64(94), st.DeviceEvents[0].XID)
}
