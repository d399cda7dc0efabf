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

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

type step = func(yarn.AllocateRequest) (yarn.AllocateResponse, error)

// Every node of the cluster blacklisted after discovery failed on it: the
// application FAILS at once (it hung for ever before), naming each host
// and its launcher's last stderr lines, though failures stay within
// yarn.maximum-failed-containers.
func TestAMFailsWhenEveryNodeIsBlacklisted(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1, c2}, ClusterNodes: 2}, nil
		},
		complete(done(c1, 3), done(c2, 3)),
	}}
	logs := fakeLogs{c1.ID: {"a", "b", "discovery: nvidia-smi: No devices were found"}, c2.ID: {"gpu: no device"}}
	res, err, _ := runAM(t, testConfig(4, 4), rm, &fakeNM{}, logs)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	for _, want := range []string{
		"no node can run a worker: all 2 nodes of the cluster are blacklisted",
		"nm1 (container " + c1.ID + " exited with exit code 3: a | b | discovery: nvidia-smi: No devices were found)",
		"nm2 (container " + c2.ID + " exited with exit code 3: gpu: no device)",
	} {
		require.Contains(t, res.Diagnostics, want)
	}
	require.Len(t, rm.requests, 2, "failed on the heartbeat that blacklisted the last node")
}

// fakeClock is a Now the test moves; as Config.After, After(d) moves it on by d and fires
// at once, and waits records every d asked for.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Asks never granted for slot.request.timeout fail the application with
// the bound's key; a grant in between starts the wait anew.
func TestAMFailsWhenAsksAreNotGranted(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c1 := ctr(2, "nm1")
	tick := func(d time.Duration, resp yarn.AllocateResponse) step {
		return func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { clock.add(d); return resp, nil }
	}
	rm := &fakeRM{register: gpuLimits, steps: []step{
		tick(0, yarn.AllocateResponse{ClusterNodes: 3}),
		tick(50*time.Second, yarn.AllocateResponse{Allocated: []yarn.Container{c1}}), // a grant: the wait starts again
		tick(50*time.Second, yarn.AllocateResponse{}),
		tick(50*time.Second, yarn.AllocateResponse{}), // 100 s without a grant since c1
	}}
	cfg := testConfig(2, 2)
	cfg.Now, cfg.RequestTimeout = clock.Now, 90*time.Second
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "1 worker containers (<memory:1728, vCores:1, yarn.io/gpu: 1> each) not granted within "+conf.SlotRequestTimeout.Key+"=1m30s (3 nodes in the cluster)")
	require.Len(t, rm.requests, 4)
}

// A blacklisted host comes off the blacklist after BlacklistExpiry: the RM
// is told (blacklist removal) once, and the host may get a worker again.
func TestAMBlacklistExpires(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm1"), ctr(4, "nm2")
	var removals [][]string
	rec := func(s step) step {
		return func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			removals = append(removals, req.BlacklistRemove)
			return s(req)
		}
	}
	rm := &fakeRM{register: gpuLimits, steps: []step{
		rec(func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1}, ClusterNodes: 2}, nil
		}),
		rec(complete(done(c1, 3))), // nm1 blacklisted
		rec(func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			clock.add(time.Minute)
			return yarn.AllocateResponse{}, nil
		}),
		rec(alloc(c2)), // nm1 again, after the expiry
		rec(alloc(c3)),
		rec(complete(done(c2, 0), done(c3, 0))),
	}}
	cfg := testConfig(2, 2)
	cfg.Now, cfg.BlacklistExpiry = clock.Now, 30*time.Second
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []string{"nm1"}, rm.requests[2].BlacklistAdd)
	require.Equal(t, []string{"nm1"}, removals[3], "removal sent with the heartbeat after the expiry")
	for i, r := range removals {
		if i != 3 {
			require.Empty(t, r, "heartbeat %d", i)
		}
	}
	require.Empty(t, a.Status().Blacklist)
}

// A worker on a node the RM reports LOST (or DECOMMISSIONED, SHUTDOWN)
// is replaced at once, without counting as a failure; on a node still
// reachable its container is also given back. The RM's later completion of
// the container changes nothing.
func TestAMReplacesWorkersOfGoneNodes(t *testing.T) {
	for _, state := range []string{"LOST", "DECOMMISSIONED", "SHUTDOWN"} {
		t.Run(state, func(t *testing.T) {
			c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm2")
			rm := &fakeRM{register: gpuLimits, steps: []step{
				alloc(c1, c2),
				func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
					return yarn.AllocateResponse{UpdatedNodes: []yarn.NodeUpdate{{NodeID: c1.NodeID, State: state}, {NodeID: c2.NodeID, State: "RUNNING"}}}, nil
				},
				func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
					if len(req.Asks) != 1 || req.Asks[0].Count != 1 {
						return yarn.AllocateResponse{}, fmt.Errorf("replacement not asked: %+v", req.Asks)
					}
					return yarn.AllocateResponse{Allocated: []yarn.Container{c3}, Completed: []yarn.Completed{{ID: c1.ID, ExitStatus: yarn.ExitAborted}}}, nil
				},
				complete(done(c2, 0), done(c3, 0)),
			}}
			res, err, a := runAM(t, testConfig(2, 0), rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
			st := a.Status()
			require.Zero(t, st.Failed, "a gone node is no failure of its worker")
			require.Equal(t, 1, st.Restarts)
			if state == "LOST" {
				require.Empty(t, rm.requests[2].Release, "a lost node's container is gone already")
			} else {
				require.Equal(t, []string{c1.ID}, rm.requests[2].Release)
			}
		})
	}
}

// A worker on a DECOMMISSIONING node (graceful decommission) or an
// UNHEALTHY one runs on: it is neither given back nor replaced (issue 24
// item 9: both were killed at once, and a flapping health check killed
// healthy workers). It finishes there, or the RM ends it as ABORTED and it
// is replaced without counting.
func TestAMLetsWorkersOfDrainingNodesRun(t *testing.T) {
	for _, state := range []string{"DECOMMISSIONING", "UNHEALTHY"} {
		for _, end := range []int{0, yarn.ExitAborted} {
			t.Run(fmt.Sprintf("%s/%s", state, exitText(end)), func(t *testing.T) {
				c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
				steps := []step{
					alloc(c1),
					func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
						return yarn.AllocateResponse{UpdatedNodes: []yarn.NodeUpdate{{NodeID: c1.NodeID, State: state}}}, nil
					},
					func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
						if len(req.Release) != 0 || len(req.Asks) != 0 {
							return yarn.AllocateResponse{}, fmt.Errorf("worker of a %s node given back or replaced: %+v", state, req)
						}
						return yarn.AllocateResponse{Completed: []yarn.Completed{{ID: c1.ID, ExitStatus: end}}}, nil
					},
				}
				if end != 0 {
					steps = append(steps, alloc(c2), complete(done(c2, 0)))
				}
				rm := &fakeRM{register: gpuLimits, steps: steps}
				res, err, a := runAM(t, testConfig(1, 0), rm, &fakeNM{}, nil)
				require.NoError(t, err)
				require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
				require.Zero(t, a.Status().Failed)
			})
		}
	}
}

// reportLogs serves each container's kept device report (ReportFile).
type reportLogs map[string]contract.DeviceReport

func (r reportLogs) Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error) {
	rep, ok := r[c.ID]
	if !ok || file != contract.ReportFile {
		return nil, fmt.Errorf("no %s for %s", file, c.ID)
	}
	b, err := json.Marshal(rep)
	return []string{string(b)}, err
}

// A new attempt adopts the previous attempt's workers without starting
// them and learns their devices from the reports their launchers kept.
func TestAMLearnsAdoptedWorkersDevices(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	gpu := func(i string) map[string][]resources.Properties {
		return map[string][]resources.Properties{"gpu": {{"index": i}}}
	}
	logs := reportLogs{c1.ID: {Container: c1.ID, Resources: gpu("0")}, c2.ID: {Container: c2.ID, Resources: gpu("1")}}
	reg := gpuLimits
	reg.PreviousContainers = []yarn.Container{c1, c2}
	var a *AM
	learnt := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		// the reads run beside the heartbeat; wait for them here
		require.Eventually(t, func() bool {
			st := a.Status()
			return len(st.Containers) == 2 && st.Containers[0].Devices != nil && st.Containers[1].Devices != nil
		}, 5*time.Second, time.Millisecond)
		return yarn.AllocateResponse{}, nil
	}
	rm := &fakeRM{register: reg, steps: []step{learnt, complete(done(c1, 0), done(c2, 0))}}
	nm := &fakeNM{}
	var err error
	a, err = New(testConfig(2, 2), rm, nm, logs)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)
	require.Empty(t, nm.started, "adopted workers are not started again")
	st := a.Status()
	require.Equal(t, gpu("0"), st.Containers[0].Devices)
	require.Equal(t, gpu("1"), st.Containers[1].Devices)
	require.Equal(t, 0, rm.requests[0].Asks[0].Count, "nothing asked: both workers adopted")
}

// A container the AM gave back before an RM restart, which the restarted
// RM recovered from its NodeManager (it lists it among the previous
// attempt's containers at registration), is given back again (issue 24
// item 9: it was left running for the rest of the application).
func TestAMResendsReleasesAfterRMRestart(t *testing.T) {
	c1, surplus := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits}
	rm.steps = []step{
		alloc(c1, surplus),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if !slices.Contains(req.Release, surplus.ID) {
				return yarn.AllocateResponse{}, fmt.Errorf("surplus not released: %+v", req.Release)
			}
			return yarn.AllocateResponse{}, nil
		},
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			// The RM restarted before it acted on the release it got, and
			// recovered both containers from the NodeManagers.
			rm.mu.Lock()
			rm.register.PreviousContainers = []yarn.Container{c1, surplus}
			rm.mu.Unlock()
			return yarn.AllocateResponse{}, yarn.ErrApplicationMasterNotRegistered
		},
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Completed: []yarn.Completed{{ID: surplus.ID, ExitStatus: yarn.ExitKilledByAM}}}, nil
		},
		complete(done(c1, 0)),
	}
	res, err, a := runAM(t, testConfig(1, 0), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 2, rm.registers)
	require.Contains(t, rm.requests[3].Release, surplus.ID, "the release lost in the RM restart is sent again")
	require.Equal(t, 1, a.Status().ContainersTotal, "the recovered surplus container is no worker")
}
