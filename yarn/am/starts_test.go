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

// In pilot mode a node's first start goes alone and the node's others wait
// until it is warm; then they go in batches. Other nodes are not held up,
// and a node warmed before its pilot went (a report from an adopted
// worker) has none.
func TestStartQueuePilot(t *testing.T) {
	q := newStartQueue(10, 10)
	q.pilot = true
	for i := range 5 {
		q.push(&worker{c: ctr(i+2, "a")})
	}
	q.push(&worker{c: ctr(9, "b")})
	q.push(&worker{c: ctr(10, "b")})

	first := q.next(32)
	require.Len(t, first, 1, "the pilot of node a")
	second := q.next(32)
	require.Len(t, second, 1, "the pilot of node b")
	require.Nil(t, q.next(32), "both nodes wait for their pilots")
	require.True(t, q.held("a:45454"))

	q.done(first)
	require.Nil(t, q.next(32), "a pilot's start answered is not yet a warm node")
	require.True(t, q.warm("a:45454"))
	rest := q.next(32)
	require.Len(t, rest, 4, "node a's others in one batch")
	require.Equal(t, "a:45454", rest[0].c.NodeID)
	require.False(t, q.warm("a:45454"), "warm once")

	q.push(&worker{c: ctr(11, "c")})
	q.warm("c:45454")
	require.Len(t, q.next(32), 1)
	q.push(&worker{c: ctr(12, "c")})
	q.push(&worker{c: ctr(13, "c")})
	require.Len(t, q.next(32), 2, "a node warm before its pilot has none")
}

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
