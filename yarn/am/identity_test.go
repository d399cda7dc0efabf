package am

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// TestResyncRedeliversContainers plays an RM restart over Hadoop RPC: the
// AM got containers 2 and 3 and started them, then the RM answers
// ApplicationMasterNotRegisteredException, the AM registers again, and the
// RM delivers 2 and 3 a second time (as a recovering RM may; TonY #361).
// They are running workers: neither is started twice nor released (on a
// real RM a release kills the running worker), and the ask sent after the
// re-registration covers only the worker still missing.
func TestResyncRedeliversContainers(t *testing.T) {
	tests := []struct {
		name    string
		workers int
		// after the re-delivery: the ask the RM must see, and what it
		// allocates for it
		wantAsk int32
		extra   []int64
	}{
		{name: "every worker placed", workers: 2, wantAsk: 0},
		{name: "a worker still wanted", workers: 3, wantAsk: 1, extra: []int64{4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimCluster(t, 2, 0)
			var asks []int32
			s.allocate = func(n int, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error) {
				for _, a := range req.GetAsk() {
					asks = append(asks, a.GetNumContainers())
				}
				resp := &hadoopyarn.AllocateResponseProto{}
				switch n {
				case 1:
					resp.AllocatedContainers = []*hadoopyarn.ContainerProto{s.container(2), s.container(3)}
					resp.NmTokens = s.nmTokens()
				case 2:
					return nil, errNotRegistered
				case 3:
					// The re-sent ask comes with the first heartbeat
					// after registering again.
					if len(req.GetAsk()) != 1 || req.GetAsk()[0].GetNumContainers() != tc.wantAsk {
						t.Errorf("ask after re-registering: %v, want %d containers", req.GetAsk(), tc.wantAsk)
					}
					resp.AllocatedContainers = []*hadoopyarn.ContainerProto{s.container(2), s.container(3)}
				case 4:
					for _, c := range tc.extra {
						resp.AllocatedContainers = append(resp.AllocatedContainers, s.container(c))
					}
				case 5:
					for _, c := range append([]int64{2, 3}, tc.extra...) {
						resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, s.completedStatus(c, 0))
					}
				}
				return resp, nil
			}
			a := s.newAM(testConfig(tc.workers, 0))
			a.cfg.After = settled(a, ready)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := a.Run(ctx)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)

			s.mu.Lock()
			defer s.mu.Unlock()
			require.Equal(t, 2, s.registers)
			for _, n := range append([]int64{2, 3}, tc.extra...) {
				id := s.cid(n)
				require.Equal(t, 1, s.starts[id], "starts of %s", id)
				require.Zero(t, s.releases[id], "%s is a running worker and was released", id)
			}
			require.Empty(t, s.stops)
			require.Equal(t, hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED, s.finished.GetFinalApplicationStatus())
			require.Len(t, a.Status().Containers, tc.workers)
		})
	}
}

// TestIdentityOfContainers: a surplus container delivered again is not
// released a second time, and a container from a previous attempt is
// adopted as a running worker without being started.
func TestIdentityOfContainers(t *testing.T) {
	prev, c2, c3 := ctr(1, "nm1"), ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c2, c3), // c3 is surplus: prev already fills one of the two
		alloc(c3, prev, c2),
		complete(done(prev, 0), done(c2, 0)),
	}}
	rm.register.PreviousContainers = []yarn.Container{prev}
	nm := &fakeNM{}
	res, err, a := runAM(t, testConfig(2, 0), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []string{c2.ID}, nm.started, "the previous attempt's worker is not started again")
	var released []string
	for _, r := range rm.requests {
		released = append(released, r.Release...)
	}
	require.Equal(t, []string{c3.ID}, released, "c3 released once; nothing known released")
	require.Len(t, a.Status().Containers, 2)
	require.Equal(t, 2, a.workers.count[amstatus.StateSucceeded])
}
