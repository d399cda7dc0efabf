package am

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/security"
)

// slowNM blocks every start on the node "slow" until released (or a
// fail-safe bound) and starts the others at once; it records how many
// starts were in flight at most, overall and on "slow".
type slowNM struct {
	fakeNM
	release  chan struct{}
	mu       sync.Mutex
	inflight map[string]int // node → starts in flight
	peak     map[string]int
	peakAll  int
}

func (s *slowNM) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	s.mu.Lock()
	s.inflight[c.Host()]++
	s.peak[c.Host()] = max(s.peak[c.Host()], s.inflight[c.Host()])
	all := 0
	for _, n := range s.inflight {
		all += n
	}
	s.peakAll = max(s.peakAll, all)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[c.Host()]--
		s.mu.Unlock()
	}()
	if c.Host() == "slow" {
		// Until the test releases them, or the run's context ends (a sequential AM, whose
		// loop a hanging start blocks, fails so: a fixed fail-safe of 2 s released them
		// before a loaded host had run the heartbeats the test counts).
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.fakeNM.StartContainer(ctx, c, tok, l)
}

func (s *slowNM) blocked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight["slow"]
}

// TestSlowNodeHoldsUpNothing: six containers land on a NodeManager whose
// starts hang, four on a healthy one. The heartbeat goes on while the slow
// starts hang, the healthy node's workers start, and the starts in flight
// stay within MaxStartsPerNode (2) and MaxStarts (4). Counted in calls, not
// time: the RM counts the heartbeats it got while starts were hanging.
func TestSlowNodeHoldsUpNothing(t *testing.T) {
	var cs []yarn.Container
	for i := range 10 {
		node := "slow"
		if i%5 >= 3 { // 3, 4, 8, 9
			node = "fast"
		}
		cs = append(cs, ctr(i+2, node))
	}
	nm := &slowNM{release: make(chan struct{}), inflight: map[string]int{}, peak: map[string]int{}}
	beatsWhileBlocked := 0
	fastStarted := func() int {
		nm.fakeNM.mu.Lock()
		defer nm.fakeNM.mu.Unlock()
		n := 0
		for _, id := range nm.started {
			for _, c := range cs {
				if c.ID == id && c.Host() == "fast" {
					n++
				}
			}
		}
		return n
	}
	rm := &fakeRM{register: gpuLimits}
	var fastWhileBlocked int
	rm.steps = append(rm.steps, alloc(cs...), func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		// Wait (bounded, for an AM that never starts them) until the starts are under way.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if nm.blocked() == 2 && fastStarted() == 4 {
				break
			}
		}
		return yarn.AllocateResponse{}, nil
	})
	for range 5 {
		rm.steps = append(rm.steps, func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if nm.blocked() > 0 {
				beatsWhileBlocked++
				fastWhileBlocked = fastStarted()
			}
			return yarn.AllocateResponse{}, nil
		})
	}
	rm.steps = append(rm.steps, func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		close(nm.release)
		return yarn.AllocateResponse{}, nil
	})
	var completions []yarn.Completed
	for _, c := range cs {
		completions = append(completions, done(c, 0))
	}
	rm.steps = append(rm.steps, func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		// The RM reports the containers done once they all ran.
		for {
			nm.fakeNM.mu.Lock()
			n := len(nm.started)
			nm.fakeNM.mu.Unlock()
			if n == len(cs) {
				return yarn.AllocateResponse{Completed: completions}, nil
			}
			time.Sleep(time.Millisecond)
		}
	})
	cfg := testConfig(len(cs), 0)
	cfg.MaxStarts, cfg.MaxStartsPerNode = 4, 2
	a, err := New(cfg, rm, nm, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)

	require.Equal(t, 5, beatsWhileBlocked, "heartbeats while the slow node's starts hung")
	require.Equal(t, 4, fastWhileBlocked, "the healthy node's workers started while the slow node's hung")
	require.Equal(t, 2, nm.peak["slow"], "starts in flight on one node")
	require.LessOrEqual(t, nm.peakAll, 4, "starts in flight overall")
	require.Len(t, nm.started, len(cs))
}

// TestBookkeepingWorkPerContainer counts the AM's work as the workers grow
// fourfold (1,000 and 4,000 delivered over four heartbeats, all started and
// completed): no container event walks the whole worker list (the roster
// counts its walks), and the allocations per container stay flat. A
// per-event scan of the workers, as the AM once did for every start, makes
// the walks grow with the square of the workers.
func TestBookkeepingWorkPerContainer(t *testing.T) {
	run := func(n int) (mallocs uint64, scans int) {
		var cs []yarn.Container
		for i := range n {
			cs = append(cs, ctr(i+2, fmt.Sprintf("nm%d", i%20)))
		}
		rm := &fakeRM{register: gpuLimits}
		for q := range 4 {
			rm.steps = append(rm.steps, alloc(cs[q*n/4:(q+1)*n/4]...))
		}
		var completions []yarn.Completed
		for _, c := range cs {
			completions = append(completions, done(c, 0))
		}
		rm.steps = append(rm.steps, complete(completions...))
		a, err := New(testConfig(n, 0), rm, &fakeNM{}, nil)
		require.NoError(t, err)
		a.cfg.After = settled(a, ready)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := a.Run(context.Background())
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
		require.Equal(t, n, a.workers.count[amstatus.StateSucceeded])
		return after.Mallocs - before.Mallocs, a.workers.scans
	}
	small, smallScans := run(1000)
	large, largeScans := run(4000)
	require.Zero(t, smallScans, "walks over every worker while running 1,000")
	require.Zero(t, largeScans, "walks over every worker while running 4,000")
	perSmall, perLarge := float64(small)/1000, float64(large)/4000
	t.Logf("allocations per container: %.1f at 1,000 workers, %.1f at 4,000", perSmall, perLarge)
	require.Less(t, perLarge, 1.5*perSmall, "allocations per container grow with the workers")
}

// TestStartsShareOneConnectionPerNode: 400 containers on 4 NodeManagers
// (1 ms a call), started up to 16 at a time per node, go over one
// connection per NodeManager, as Hadoop's NMClientAsync reuses its cached
// proxies.
func TestStartsShareOneConnectionPerNode(t *testing.T) {
	const n, nodes = 400, 4
	s := newSimCluster(t, nodes, time.Millisecond)
	s.allocate = func(call int, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error) {
		resp := &hadoopyarn.AllocateResponseProto{}
		switch call {
		case 1:
			for i := range int64(n) {
				resp.AllocatedContainers = append(resp.AllocatedContainers, s.container(i+2))
			}
			resp.NmTokens = s.nmTokens()
		case 2:
			for i := range int64(n) {
				resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, s.completedStatus(i+2, 0))
			}
		}
		return resp, nil
	}
	a := s.newAM(testConfig(n, 0))
	a.cfg.After = settled(a, ready)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Len(t, s.starts, n)
	for i, nm := range s.nms {
		require.EqualValues(t, 1, nm.Connects(), "connections to NodeManager %d", i)
	}
}

// TestStartsBatchPerNode: the three containers the RM gives on one node go
// in one startContainers call; the one the NodeManager refuses is released
// and replaced, the other two run.
func TestStartsBatchPerNode(t *testing.T) {
	s := newSimCluster(t, 1, 0)
	s.refuse = map[string]bool{s.cid(3): true}
	s.allocate = func(call int, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error) {
		resp := &hadoopyarn.AllocateResponseProto{}
		switch call {
		case 1:
			resp.AllocatedContainers = []*hadoopyarn.ContainerProto{s.container(2), s.container(3), s.container(4)}
			resp.NmTokens = s.nmTokens()
		case 2:
			if len(req.GetRelease()) != 1 || len(req.GetAsk()) != 1 || req.GetAsk()[0].GetNumContainers() != 1 {
				t.Errorf("after the refusal: release %v, ask %v; want the refused container released and one asked", req.GetRelease(), req.GetAsk())
			}
			resp.AllocatedContainers = []*hadoopyarn.ContainerProto{s.container(5)}
		case 3:
			for _, n := range []int64{2, 4, 5} {
				resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, s.completedStatus(n, 0))
			}
		}
		return resp, nil
	}
	a := s.newAM(testConfig(3, 1))
	a.cfg.After = settled(a, ready)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []int{3, 1}, s.batches, "containers per startContainers call")
	require.Equal(t, map[string]int{s.cid(2): 1, s.cid(4): 1, s.cid(5): 1}, s.starts)
	require.Equal(t, 1, s.releases[s.cid(3)])
	st := a.Status()
	require.Equal(t, 1, st.Failed)
	require.Contains(t, st.Containers[1].Diagnostics, "refused")
}
