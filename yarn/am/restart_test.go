package am

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amstate"
	"github.com/xres/xres/yarn/security"
)

// memStore is an amstate.Store in memory (the staging folder's file).
type memStore struct {
	mu    sync.Mutex
	data  []byte
	saves int
	err   error
}

func (m *memStore) Load(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data, m.err
}

func (m *memStore) Save(_ context.Context, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = append([]byte(nil), data...)
	m.saves++
	return nil
}

func (m *memStore) state(t *testing.T) amstate.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s amstate.State
	require.NoError(t, json.Unmarshal(m.data, &s))
	return s
}

// runAttempt1 runs a first attempt of 3 workers that is killed (an
// AM_SHUTDOWN stands for the AM's death) after c1 exited 0 while c2 and
// c3 run; it returns the containers.
func runAttempt1(t *testing.T, store *memStore) (c1, c2, c3 yarn.Container) {
	t.Helper()
	c1, c2, c3 = ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1, c2, c3),
		complete(done(c1, 0)),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Shutdown: true}, nil
		},
	}}
	cfg := testConfig(3, 0)
	cfg.State = store
	_, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.ErrorIs(t, err, ErrShutdown)
	s := store.state(t)
	require.Equal(t, 1, s.Groups[0].Succeeded)
	require.Equal(t, []string{c2.ID, c3.ID}, []string{s.Live[0].ID, s.Live[1].ID})
	return c1, c2, c3
}

// Issue 24 item 5: a worker that exited 0 under attempt 1 is not run again
// under attempt 2. Attempt 2 takes the counts attempt 1 saved: with c1
// done and c2, c3 adopted it asks for nothing and succeeds once c2 and c3
// exit 0. Before, it asked for a third worker and ran c1's work again.
func TestAMRestartDoesNotRerunFinishedWorkers(t *testing.T) {
	store := &memStore{}
	_, c2, c3 := runAttempt1(t, store)

	reg := gpuLimits
	reg.PreviousContainers = []yarn.Container{c2, c3}
	rm := &fakeRM{register: reg, steps: []step{
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if len(req.Asks) != 1 || req.Asks[0].Count != 0 {
				return yarn.AllocateResponse{}, fmt.Errorf("attempt 2 asked %+v; want nothing asked", req.Asks)
			}
			return yarn.AllocateResponse{}, nil
		},
		complete(done(c2, 0), done(c3, 0)),
	}}
	cfg := testConfig(3, 0)
	cfg.State = store
	nm := &fakeNM{}
	res, err, a := runAM(t, cfg, rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, "3 workers succeeded (0 replaced)", res.Diagnostics)
	require.Empty(t, nm.started, "nothing started again")
	require.Equal(t, 3, a.Status().Succeeded)
}

// A worker attempt 1 saved as running that exited 0 before attempt 2
// registered is not adopted (the RM no longer has it) but reported
// completed to attempt 2: it counts as done, and nothing is run for it.
func TestAMRestartCountsWorkerThatEndedBetweenAttempts(t *testing.T) {
	store := &memStore{}
	_, c2, c3 := runAttempt1(t, store)

	reg := gpuLimits
	reg.PreviousContainers = []yarn.Container{c3}
	rm := &fakeRM{register: reg, steps: []step{
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c2, 0)}}, nil
		},
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			for _, ask := range req.Asks {
				if ask.Count != 0 {
					return yarn.AllocateResponse{}, fmt.Errorf("asked %+v after c2's completion; want nothing", req.Asks)
				}
			}
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c3, 0)}}, nil
		},
	}}
	cfg := testConfig(3, 0)
	cfg.State = store
	nm := &fakeNM{}
	res, err, _ := runAM(t, cfg, rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Empty(t, nm.started)
}

// A missing, corrupt, foreign or newer state file leaves attempt 2 as a
// first attempt: it asks for every worker not adopted, and runs.
func TestAMRestartIgnoresBadState(t *testing.T) {
	for name, data := range map[string]string{
		"absent":  "",
		"corrupt": `{"version":1,"app":`,
		"version": `{"version":99,"app":"application_1_0001","groups":[{"succeeded":1}]}`,
		"foreign": `{"version":1,"app":"application_1_0002","groups":[{"succeeded":1}]}`,
		"groups":  `{"version":1,"app":"application_1_0001","groups":[{"succeeded":1},{"name":"x"}]}`,
		"counts":  `{"version":1,"app":"application_1_0001","groups":[{"succeeded":-1}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			store := &memStore{}
			if data != "" {
				store.data = []byte(data)
			}
			c := ctr(2, "nm1")
			rm := &fakeRM{register: gpuLimits, steps: []step{
				func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
					if len(req.Asks) != 1 || req.Asks[0].Count != 1 {
						return yarn.AllocateResponse{}, fmt.Errorf("asked %+v; want the one worker", req.Asks)
					}
					return yarn.AllocateResponse{Allocated: []yarn.Container{c}}, nil
				},
				complete(done(c, 0)),
			}}
			cfg := testConfig(1, 0)
			cfg.State = store
			res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
		})
	}
}

// Issue 24 item 5: a container granted to attempt 1 and never started,
// which the RM hands attempt 2 among the previous attempt's, is asked
// about at its NodeManager (getContainerStatuses, over the simulated
// cluster's RPC): the NodeManager does not know it, so it is released and
// another asked for, counted neither failed nor replaced. Before, it was
// adopted as a running worker that never ran: nothing more was asked and
// the application waited for it until its allocation expired.
func TestAMRestartReleasesNeverStartedContainers(t *testing.T) {
	s := newSimCluster(t, 2, 0)
	s.previous = []*hadoopyarn.ContainerProto{s.container(2), s.container(3)}
	s.live = map[string]bool{s.cid(2): true} // container 3 was never started
	s.allocate = func(call int, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error) {
		resp := &hadoopyarn.AllocateResponseProto{}
		s.mu.Lock()
		released, started := s.releases[s.cid(3)] > 0, s.starts[s.cid(4)] > 0
		s.mu.Unlock()
		switch {
		case released && started:
			resp.CompletedContainerStatuses = []*hadoopyarn.ContainerStatusProto{s.completedStatus(2, 0), s.completedStatus(4, 0)}
		case released && len(req.GetAsk()) == 1 && req.GetAsk()[0].GetNumContainers() == 1:
			resp.AllocatedContainers = []*hadoopyarn.ContainerProto{s.container(4)}
		}
		return resp, nil
	}
	a := s.newAM(testConfig(2, 0))
	a.cfg.After = settled(a, func(time.Duration) <-chan time.Time { return time.After(time.Millisecond) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err, "the never-started container was trusted as a worker")
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 1, s.releases[s.cid(3)], "the never-started container is released once")
	require.Equal(t, map[string]int{s.cid(4): 1}, s.starts, "its replacement started; the adopted worker not again")
	st := a.Status()
	require.Zero(t, st.Failed, "no failure counted")
	require.Zero(t, st.Restarts, "no replacement counted")
	require.Equal(t, 2, st.ContainersTotal, "the never-started container is no worker")
}

// An adopted container attempt 1 saved as started is trusted without
// asking its NodeManager.
func TestAMRestartTrustsSavedStarts(t *testing.T) {
	store := &memStore{}
	_, c2, c3 := runAttempt1(t, store)
	reg := gpuLimits
	reg.PreviousContainers = []yarn.Container{c2, c3}
	rm := &fakeRM{register: reg, steps: []step{complete(done(c2, 0), done(c3, 0))}}
	cfg := testConfig(3, 0)
	cfg.State = store
	nm := &statusNM{}
	res, err, _ := runAMWith(t, cfg, rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Zero(t, nm.calls.Load(), "no status asked of containers saved as started")
}

// statusNM is a fakeNM that answers getContainerStatuses (RUNNING) and
// reads nothing else; it counts the status calls in flight at once.
type statusNM struct {
	fakeNM
	gauge
	calls   counter
	wait    time.Duration
	unknown map[string]bool // containers it was never asked to start
}

func (f *statusNM) GetContainerStatus(ctx context.Context, c yarn.Container, _ security.Token) (yarn.ContainerStatus, error) {
	f.calls.Add(1)
	defer f.enter()()
	if f.wait > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(f.wait):
		}
	}
	if f.unknown[c.ID] {
		return yarn.ContainerStatus{}, &yarn.ContainerError{Container: c.ID, Message: "Container " + c.ID + " " + neverStartedMsg}
	}
	return yarn.ContainerStatus{ID: c.ID, State: "RUNNING"}, nil
}

// gauge counts calls in flight and the most at once.
type gauge struct {
	mu        sync.Mutex
	now, peak int
}

func (g *gauge) enter() func() {
	g.mu.Lock()
	g.now++
	g.peak = max(g.peak, g.now)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}
}

func (g *gauge) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Add(d int) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *counter) Load() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// slowReports serves each adopted worker's device report after a while,
// counting the reads in flight and noting whether each had a deadline.
type slowReports struct {
	gauge
	wait       time.Duration
	noDeadline counter
	reads      counter
}

func (r *slowReports) Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error) {
	r.reads.Add(1)
	defer r.enter()()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > adoptedTimeout {
		r.noDeadline.Add(1)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(r.wait):
	}
	b, err := json.Marshal(contract.DeviceReport{Container: c.ID, Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}}}})
	return []string{string(b)}, err
}

func runAMWith(t *testing.T, cfg Config, rm *fakeRM, nm amnm.NMClient, logs amnm.LogFetcher) (Result, error, *AM) {
	t.Helper()
	a, err := New(cfg, rm, nm, logs)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	return res, err, a
}

// Issue 24 item 5: the NodeManager requests for 200 adopted workers (a
// status each, none saved as started, and a device report each) run at
// most AdoptedConcurrency at a time, each with a deadline; before, one
// goroutine and request per container all went at once. One unknown
// container is given back on the way.
func TestAMRestartBoundsAdoptedRequests(t *testing.T) {
	const n = 200
	reg := gpuLimits
	var cs []yarn.Container
	for i := range n {
		cs = append(cs, ctr(i+2, fmt.Sprintf("nm%d", i%10)))
	}
	reg.PreviousContainers = cs
	logs := &slowReports{wait: 2 * time.Millisecond}
	nm := &statusNM{wait: 2 * time.Millisecond, unknown: map[string]bool{cs[7].ID: true}}
	var a *AM
	learnt := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			st := a.Status()
			have := 0
			for _, c := range st.Containers {
				if c.Devices != nil {
					have++
				}
			}
			if have == n-1 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		return yarn.AllocateResponse{}, nil
	}
	var completions []yarn.Completed
	for i, c := range cs {
		if i != 7 {
			completions = append(completions, done(c, 0))
		}
	}
	extra := ctr(n+2, "nm0")
	rm := &fakeRM{register: reg, steps: []step{learnt, alloc(extra), complete(append(completions, done(extra, 0))...)}}
	var err error
	a, err = New(testConfig(n, 0), rm, nm, logs)
	require.NoError(t, err)
	a.cfg.After = settled(a, ready)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	t.Logf("status calls at once: %d, report reads at once: %d (of %d workers)", nm.max(), logs.max(), n)
	require.Equal(t, n, nm.calls.Load(), "one status call per adopted worker")
	require.LessOrEqual(t, nm.max(), AdoptedConcurrency, "status calls in flight")
	require.LessOrEqual(t, logs.max(), AdoptedConcurrency, "device report reads in flight")
	require.Greater(t, logs.max(), 1, "the reads run concurrently")
	require.Zero(t, logs.noDeadline.Load(), "every read has a deadline of at most adoptedTimeout")
	require.Equal(t, n-1, logs.reads.Load(), "the unknown container's report is not read")
	require.True(t, slices.Contains(rm.requests[0].Release, cs[7].ID) || slices.Contains(rm.requests[1].Release, cs[7].ID),
		"the never-started container is released")
	require.Equal(t, []string{extra.ID}, nm.started)
}
