package am

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
)

// Standby spares (slotmanager.redundant-taskmanager-num): 2 workers and 1
// spare are asked (3 containers). The spare reports its devices and is
// answered standby: no rank, no command, not counted in the workers
// (XRES_WORKERS) or the running. Rank 1's worker fails: the spare takes
// rank 1 at once (its next rendezvous ask is ready, XRES_RANK=1), the
// container asked in the lost worker's place becomes the new spare, and
// the application succeeds when the 2 workers exit 0; the spare still
// standing by is stopped then, not waited for.
func TestSparesStandByAndTakeTheLostRank(t *testing.T) {
	c2, c3, c4, c5 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm3"), ctr(5, "nm3")
	var asks []int
	res, a, nm := runRV(t, []amplan.Group{rvGroup("", 2, amplan.Plan{Spares: 1, MaxFailedContainers: 3})}, nil,
		func(a *AM) (yarn.AllocateResponse, error) {
			st := a.Status()
			asks = append(asks, st.Pending)
			return yarn.AllocateResponse{Allocated: []yarn.Container{c2, c3, c4}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			for _, c := range []yarn.Container{c2, c3, c4} {
				report(t, a, c, 0)
			}
			require.Equal(t, 0, rv(t, a, c2).Rank)
			require.True(t, rv(t, a, c2).Ready)
			require.Equal(t, 1, rv(t, a, c3).Rank)
			spare := rv(t, a, c4)
			require.False(t, spare.Ready, "a spare runs no command")
			require.True(t, spare.Standby)
			require.Equal(t, -1, spare.Rank)
			require.Contains(t, spare.Waiting, "standby: a spare (slotmanager.redundant-taskmanager-num)")
			st := a.Status()
			require.Equal(t, 2, st.Workers, "spares are not workers")
			require.Equal(t, 2, st.Running)
			require.Equal(t, 1, st.Standby)
			require.Equal(t, 0, st.Pending)
			require.Equal(t, amstatus.WorkerCount{Target: 2, Minimum: 2, Running: 2, Groups: []amstatus.GroupWorkerCount{{Target: 2, Minimum: 2, Running: 2}}}, st.Count(),
				"what a worker reads at XRES_WORKERS_URL leaves the spare out")
			g := st.Groups[0]
			require.Equal(t, [3]int{1, 1, 0}, [3]int{g.Spares, g.Standby, g.Promotions})
			byID := map[string]amstatus.WorkerStatus{}
			for _, w := range st.Containers {
				byID[w.Container] = w
			}
			require.Equal(t, amstatus.StateStandby, byID[c4.ID].State)
			require.True(t, byID[c4.ID].Spare)
			require.Nil(t, byID[c4.ID].Rank)
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c3, 1)}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			promoted := rv(t, a, c4)
			require.True(t, promoted.Ready, "the spare is promoted as soon as the AM learns of the failure: %+v", promoted)
			require.False(t, promoted.Standby)
			require.Equal(t, 1, promoted.Rank, "it takes the lost worker's rank")
			require.Equal(t, "1", promoted.Env[EnvRank])
			st := a.Status()
			require.Equal(t, 2, st.Running, "the promoted spare counts as a running worker")
			require.Equal(t, 0, st.Standby)
			require.Equal(t, 1, st.Pending, "a new spare is asked")
			require.Equal(t, 1, st.Groups[0].Promotions)
			asks = append(asks, st.Pending)
			return yarn.AllocateResponse{Allocated: []yarn.Container{c5}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c5, 0)
			require.True(t, rv(t, a, c5).Standby, "the container asked for the lost worker is the new spare")
			require.Equal(t, 1, a.Status().Standby)
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c2, 0), done(c4, 0)}}, nil
		},
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, "2 workers succeeded (1 replaced)", res.Diagnostics)
	require.Equal(t, []int{3, 1}, asks, "pending: 2 workers + 1 spare, then the new spare")
	require.Contains(t, nm.stopped, c5.ID, "the spare still standing by is stopped at the end")
	require.NotContains(t, nm.stopped, c2.ID)
	st := a.Status()
	require.Equal(t, 1, st.Failed)
	require.Equal(t, 2, st.Succeeded)
}

// A spare that fails counts against yarn.maximum-failed-containers and is
// replaced by a new spare, but it is no rank of the gang: no worker is
// stopped for a gang restart. A spare that ends with exit 0 (it ran no
// command) counts neither as a failure nor as a success.
func TestSpareLossLeavesTheGangAlone(t *testing.T) {
	c2, c3, c4, c5, c6 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm3"), ctr(5, "nm3"), ctr(6, "nm1")
	res, a, nm := runRV(t, []amplan.Group{rvGroup("ring", 2, amplan.Plan{Gang: true, GangTimeout: time.Hour, Spares: 1, MaxFailedContainers: 3})}, nil,
		allocRV(c2, c3, c4),
		gangFormed(t, c2, c3, c4, done(c4, 1)),
		func(a *AM) (yarn.AllocateResponse, error) {
			st := a.Status()
			require.Equal(t, 1, st.Failed, "a spare's failure counts")
			require.Equal(t, 2, st.Running, "no gang restart")
			require.Equal(t, 1, st.Pending, "a new spare is asked")
			return yarn.AllocateResponse{Allocated: []yarn.Container{c5}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c5, 0)
			require.True(t, rv(t, a, c5).Standby)
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c5, 0)}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			st := a.Status()
			require.Equal(t, 1, st.Failed, "a spare that ended with exit 0 is no failure")
			require.Equal(t, 0, st.Succeeded, "nor a success")
			require.Equal(t, 1, st.Pending)
			return yarn.AllocateResponse{Allocated: []yarn.Container{c6}}, nil
		},
		doneAll(c2, c3),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.False(t, slices.Contains(nm.stopped, c2.ID) || slices.Contains(nm.stopped, c3.ID), "no gang worker was stopped: %v", nm.stopped)
	require.Contains(t, nm.stopped, c6.ID)
	require.Equal(t, 0, a.Status().Groups[0].Promotions)
}

// gangFormed is the step after a gang of 2 (w0, w1) and its spare were
// granted: all three report, both ranks are told to run (the gang is
// complete without its spare), and then ends with the RM reporting end.
func gangFormed(t *testing.T, w0, w1, spare yarn.Container, end yarn.Completed) func(*AM) (yarn.AllocateResponse, error) {
	return func(a *AM) (yarn.AllocateResponse, error) {
		for _, c := range []yarn.Container{w0, w1, spare} {
			report(t, a, c, 0)
		}
		require.True(t, rv(t, a, w0).Ready)
		require.True(t, rv(t, a, w1).Ready, "the gang is complete without its spare")
		return yarn.AllocateResponse{Completed: []yarn.Completed{end}}, nil
	}
}

// A gang worker lost: the spare takes its rank, the other ranks that ran
// are stopped for the gang restart, and the gang forms again with the
// spare (no longer a spare) and new containers for the stopped ranks.
func TestSparePromotedIntoGangRestart(t *testing.T) {
	c2, c3, c4, c5, c6 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm3"), ctr(5, "nm1"), ctr(6, "nm2")
	res, a, nm := runRV(t, []amplan.Group{rvGroup("ring", 2, amplan.Plan{Gang: true, GangTimeout: time.Hour, Spares: 1, MaxFailedContainers: 3})}, nil,
		allocRV(c2, c3, c4),
		gangFormed(t, c2, c3, c4, done(c2, 137)),
		func(a *AM) (yarn.AllocateResponse, error) {
			r := rv(t, a, c4)
			require.Equal(t, 0, r.Rank, "the spare takes the lost rank 0")
			require.False(t, r.Ready, "the gang forms again first: %+v", r)
			require.Contains(t, r.Waiting, "gang start of group ring: 1 of 2")
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c3, yarn.ExitKilledByAM)}}, nil
		},
		allocRV(c5, c6),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c5, 0)
			report(t, a, c6, 0)
			require.True(t, rv(t, a, c4).Ready, "%+v", rv(t, a, c4))
			require.Equal(t, 1, rv(t, a, c5).Rank)
			require.True(t, rv(t, a, c6).Standby, "the second container is the new spare")
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c4, 0), done(c5, 0)}}, nil
		},
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Contains(t, nm.stopped, c3.ID, "rank 1 was stopped for the gang restart")
	require.NotContains(t, nm.stopped, c4.ID, "the promoted spare ran as rank 0 to its end")
	require.Contains(t, nm.stopped, c6.ID, "the new spare is stopped at the end")
	st := a.Status()
	require.Equal(t, 1, st.Failed, "only the lost worker counts")
	require.Equal(t, 1, st.Groups[0].Promotions)
}

// A rank whose worker exited 0 has done its work: the replacement of a
// worker that failed later takes the failed worker's rank, not the done
// one (before, the lowest rank not held was handed out, so rank 0 ran
// twice and rank 2 never finished).
func TestReplacementTakesTheFailedRankNotADoneOne(t *testing.T) {
	c2, c3, c4, c5 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1"), ctr(5, "nm2")
	var rank int
	res, _, _ := runRV(t, []amplan.Group{rvGroup("w", 3, amplan.Plan{Port: amplan.PortAuto, MaxFailedContainers: 3})}, nil,
		allocRV(c2, c3, c4),
		func(a *AM) (yarn.AllocateResponse, error) {
			require.Equal(t, 2, rv(t, a, c4).Rank)
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c2, 0)}}, nil
		},
		complete2(done(c4, 1)),
		allocRV(c5),
		func(a *AM) (yarn.AllocateResponse, error) {
			rank = rv(t, a, c5).Rank
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c3, c5),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 2, rank, "the replacement runs the failed rank 2, not rank 0, which succeeded")
}

// complete2 is complete for runRV's steps.
func complete2(cs ...yarn.Completed) func(*AM) (yarn.AllocateResponse, error) {
	return func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{Completed: cs}, nil }
}

// A spare the cluster cannot grant is not a worker the application waits
// for: the AM keeps its normal heartbeat and slot.request.timeout does not
// fail it.
func TestMissingSpareIsNotWaitedFor(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c2 := ctr(2, "nm1")
	tick := func(d time.Duration, resp yarn.AllocateResponse) step {
		return func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { clock.add(d); return resp, nil }
	}
	rm := &fakeRM{register: gpuLimits, steps: []step{
		tick(0, yarn.AllocateResponse{ClusterNodes: 1, Allocated: []yarn.Container{c2}}),
		tick(100*time.Second, yarn.AllocateResponse{}),
		tick(100*time.Second, yarn.AllocateResponse{}),
		tick(0, yarn.AllocateResponse{Completed: []yarn.Completed{done(c2, 0)}}),
	}}
	cfg := testConfig(1, 1)
	cfg.Plan.Spares = 1
	cfg.Now, cfg.RequestTimeout = clock.Now, 90*time.Second
	var waits []time.Duration
	cfg.After = func(d time.Duration) <-chan time.Time { waits = append(waits, d); return ready(d) }
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	for _, d := range waits {
		require.Equal(t, amplan.DefaultHeartbeat, d, "only a spare is missing: the normal heartbeat (%v)", waits)
	}
}

// An AM restart keeps every adopted container in its place: the workers
// their ranks (they were started with them), the spare its standby, in
// whatever order the RM hands the containers back.
func TestAMRestartKeepsRanksAndSpares(t *testing.T) {
	store := &memStore{}
	c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c2, c3, c4),
		alloc(), // the starts are done by this heartbeat; the state after it has them
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Shutdown: true}, nil
		},
	}}
	cfg := testConfig(2, 3)
	cfg.Plan.Spares = 1
	cfg.State = store
	_, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.ErrorIs(t, err, ErrShutdown)
	saved := map[string]string{}
	for _, l := range store.state(t).Live {
		saved[l.ID] = fmt.Sprintf("rank=%v spare=%v", deref(l.Rank), l.Spare)
	}
	require.Equal(t, map[string]string{c2.ID: "rank=0 spare=false", c3.ID: "rank=1 spare=false", c4.ID: "rank=-1 spare=true"}, saved)

	reg := gpuLimits
	reg.PreviousContainers = []yarn.Container{c4, c3, c2}
	var ranks map[string]int
	var standby bool
	rm = &fakeRM{register: reg, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil },
		complete(done(c2, 0), done(c3, 0)),
	}}
	cfg.Log = nil
	nm := &fakeNM{}
	a, err := New(cfg, rm, nm, nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, func(d time.Duration) <-chan time.Time {
		if ranks == nil {
			ranks = map[string]int{}
			for _, c := range []yarn.Container{c2, c3} {
				r, err := a.Rendezvous(c.ID)
				require.NoError(t, err)
				ranks[c.ID] = r.Rank
			}
			r, err := a.Rendezvous(c4.ID)
			require.NoError(t, err)
			standby = r.Standby
		}
		return ready(d)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, map[string]int{c2.ID: 0, c3.ID: 1}, ranks, "adopted in reverse order, each keeps its rank")
	require.True(t, standby, "the adopted spare stands by again")
	require.Equal(t, []string{c4.ID}, nm.stopped, "the spare is stopped at the end, nothing started")
	require.Empty(t, nm.started)
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
