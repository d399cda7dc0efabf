package am

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

// With files to localize, the AM starts one container per node and the
// node's others once its launcher reports.
func TestAMStartsPilotFirst(t *testing.T) {
	c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm1"), ctr(4, "nm1")
	cfg := testConfig(3, 3)
	cfg.Launch.LocalResources = map[string]yarn.LocalResource{"container-launcher": {Size: 1}}
	cfg.PilotWait = time.Hour
	nm := &fakeNM{}
	a, err := New(cfg, &fakeRM{register: gpuLimits}, nm, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.handle(ctx, ctx, yarn.AllocateResponse{Allocated: []yarn.Container{c1, c2, c3}})
	startedIDs := func() []string {
		nm.mu.Lock()
		defer nm.mu.Unlock()
		return slices.Clone(nm.started)
	}
	require.Eventually(t, func() bool { return len(startedIDs()) == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, []string{c1.ID}, startedIDs(), "the node's others wait for the pilot")
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c1.ID, LauncherStarted: time.Now()}))
	require.Eventually(t, func() bool { return len(startedIDs()) == 3 }, 5*time.Second, time.Millisecond)
	cancel()
	a.startWG.Wait()
}
