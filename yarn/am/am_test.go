package am

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/security"
)

var gpuLimits = yarn.RegisterResponse{
	MaxCapability: yarn.Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 2}},
	ResourceTypes: []yarn.ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}},
	Queue:         "default",
}

func testConfig(workers, maxFailed int) Config {
	return Config{
		AppID: "application_1_0001",
		Plan: amplan.Plan{BaseWorkers: workers, Workers: workers, SlotsPerWorker: 1, MaxFailedContainers: maxFailed,
			Profile: yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}}},
		Owners:       map[string]string{"yarn.io/gpu": "gpu"},
		Launch:       yarn.LaunchContext{Commands: []string{amplan.Command([]string{"./container-launcher", "--", "python", "train.py"})}},
		Register:     yarn.RegisterRequest{Host: "am-host", RPCPort: -1, TrackingURL: "http://am-host:1234/"},
		BadNodeExits: []int{3},
		BadJobExits:  []int{2},
		After:        ready,
	}
}

func runAM(t *testing.T, cfg Config, rm *fakeRM, nm *fakeNM, logs amnm.LogFetcher) (Result, error, *AM) {
	t.Helper()
	a, err := New(cfg, rm, nm, logs)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	return res, err, a
}

func TestAMSucceeds(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	nmTok := security.Token{Kind: "NMToken", Identifier: []byte("id"), Password: []byte("pw")}
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1}, NMTokens: []yarn.NMToken{{NodeID: c1.NodeID, Token: nmTok}}}, nil
		},
		alloc(c2),
		complete(done(c1, 0)),
		complete(done(c2, 0)),
	}}
	nm := &fakeNM{}
	res, err, a := runAM(t, testConfig(2, 2), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)

	// The first heartbeat asks for both workers with the profile and id.
	require.Equal(t, []yarn.Ask{{ID: WorkerAskID, Profile: testConfig(2, 2).Plan.Profile, Count: 2}}, rm.requests[0].Asks)
	// The RM lowers its outstanding count with each grant (as Hadoop's AMRMClient expects):
	// a total that only followed the grants is not resent.
	for i := 1; i < 4; i++ {
		require.Empty(t, rm.requests[i].Asks, "request %d", i)
	}

	require.Equal(t, []string{c1.ID, c2.ID}, nm.started)
	require.Equal(t, nmTok, nm.tokens[c1.ID])
	require.Equal(t, `./container-launcher -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr`, nm.launches[0].Commands[0])
	require.Equal(t, []yarn.FinishRequest{{Status: yarn.StatusSucceeded, Diagnostics: "2 workers succeeded (0 replaced)", TrackingURL: "http://am-host:1234/"}}, rm.finished)

	st := a.Status()
	require.Equal(t, "SUCCEEDED", st.State)
	require.Equal(t, 2, st.Succeeded)
	require.Equal(t, []string{"nm1", "nm2"}, st.Hosts)
	require.Equal(t, 0, *st.Containers[0].ExitStatus)
}

func TestAMReleasesSurplusAndUnmatched(t *testing.T) {
	c1, extra, stranger := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm2")
	stranger.AllocationRequestID = 7
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, extra, stranger),
		complete(done(c1, 0)),
	}}
	nm := &fakeNM{}
	res, err, _ := runAM(t, testConfig(1, 1), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)
	require.Equal(t, []string{c1.ID}, nm.started)
	require.Equal(t, []string{extra.ID, stranger.ID}, rm.requests[1].Release)
}

func TestAMReplacesFailedWorker(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		complete(done(c1, 1)),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if len(req.Asks) != 1 || req.Asks[0].Count != 1 {
				return yarn.AllocateResponse{}, errors.New("replacement not asked")
			}
			return yarn.AllocateResponse{Allocated: []yarn.Container{c2}}, nil
		},
		complete(done(c2, 0)),
	}}
	nm := &fakeNM{}
	res, err, a := runAM(t, testConfig(1, 1), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)
	require.Equal(t, "1 workers succeeded (1 replaced)", res.Diagnostics)
	require.Equal(t, 1, a.Status().Restarts)
	require.Equal(t, 1, a.Status().Failed)
}

func TestAMFailsPastFailureLimit(t *testing.T) {
	c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		complete(done(c1, 1)),
		alloc(c3),
		complete(done(c3, 137), done(c2, 0)),
	}}
	nm := &fakeNM{}
	logs := fakeLogs{c1.ID: {"line 1", "Traceback (most recent call last):", "RuntimeError: CUDA out of memory"}}
	cfg := testConfig(2, 1)
	cfg.StderrLines = 2
	res, err, _ := runAM(t, cfg, rm, nm, logs)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	want := "2 worker containers failed, more than yarn.maximum-failed-containers=1; " +
		"first failure: container container_1_0001_01_000002 on nm1 exited with exit code 1; " +
		"last 2 stderr lines:\nTraceback (most recent call last):\nRuntimeError: CUDA out of memory"
	require.Equal(t, want, res.Diagnostics)
	require.Equal(t, yarn.StatusFailed, rm.finished[0].Status)
	require.Equal(t, want, rm.finished[0].Diagnostics)
}

func TestAMStopsRunningWorkersOnFailure(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		complete(done(c1, 1)),
	}}
	nm := &fakeNM{}
	res, err, _ := runAM(t, testConfig(2, 0), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Equal(t, []string{c2.ID}, nm.stopped)
}

func TestAMBlacklistsNodeOnDiscoveryFailure(t *testing.T) {
	c1, onBad, c2 := ctr(2, "bad"), ctr(3, "bad"), ctr(4, "good")
	rm := &fakeRM{register: gpuLimits}
	rm.steps = []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		complete(done(c1, 3)),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if len(req.BlacklistAdd) != 1 || req.BlacklistAdd[0] != "bad" {
				return yarn.AllocateResponse{}, errors.New("node not blacklisted")
			}
			// The RM allocated on the bad node before it saw the blacklist.
			return yarn.AllocateResponse{Allocated: []yarn.Container{onBad}}, nil
		},
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if len(req.BlacklistAdd) != 0 {
				return yarn.AllocateResponse{}, errors.New("blacklist sent twice")
			}
			return yarn.AllocateResponse{}, yarn.ErrApplicationMasterNotRegistered
		},
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			// After re-registering the whole state goes again.
			if len(req.BlacklistAdd) != 1 || len(req.Asks) != 1 || req.Asks[0].Count != 1 {
				return yarn.AllocateResponse{}, errors.New("state not re-sent after re-register")
			}
			return yarn.AllocateResponse{Allocated: []yarn.Container{c2}}, nil
		},
		complete(done(c2, 0)),
	}
	nm := &fakeNM{}
	res, err, a := runAM(t, testConfig(1, 1), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []string{c1.ID, c2.ID}, nm.started)
	require.Contains(t, rm.requests[3].Release, onBad.ID)
	require.Equal(t, 2, rm.registers)
	require.Equal(t, []string{"bad"}, a.Status().Blacklist)
}

func TestAMConfigErrorFailsAtOnce(t *testing.T) {
	c1 := ctr(2, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		complete(done(c1, 2)),
	}}
	res, err, _ := runAM(t, testConfig(1, 5), rm, &fakeNM{}, fakeLogs{c1.ID: {"unknown key external-resource.gpu.amount: abc"}})
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "container-launcher reports an error of the job")
	require.Contains(t, res.Diagnostics, "unknown key external-resource.gpu.amount: abc")
	require.Len(t, rm.requests, 2, "no replacement asked")
}

func TestAMStartFailureIsReplaced(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			if len(req.Release) != 1 || req.Release[0] != c1.ID {
				return yarn.AllocateResponse{}, errors.New("unstarted container not released")
			}
			return yarn.AllocateResponse{Allocated: []yarn.Container{c2}}, nil
		},
		complete(done(c2, 0)),
	}}
	nm := &fakeNM{startErr: map[string]error{c1.ID: errors.New("NMToken expired")}}
	res, err, _ := runAM(t, testConfig(1, 1), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)
}

// A container the cluster took (yarn.ExitCauseOf: preemption, a kill by the
// RM, the AM or the container scheduler, ABORTED for a lost node or an
// expired allocation, the application's end) is replaced without counting
// toward yarn.maximum-failed-containers (0 here); a node whose disks failed
// is also blacklisted. Before, only PREEMPTED was exempt: any other status
// failed this application at its first worker.
func TestAMClusterExitsAreNotCounted(t *testing.T) {
	for _, status := range []int{yarn.ExitPreempted, yarn.ExitAborted, yarn.ExitDisksFailed, yarn.ExitKilledByRM,
		yarn.ExitKilledByAM, yarn.ExitKilledAfterFinish, yarn.ExitKilledByScheduler} {
		t.Run(exitText(status), func(t *testing.T) {
			c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
			rm := &fakeRM{register: gpuLimits, steps: []step{
				alloc(c1),
				complete(done(c1, status)),
				alloc(c2),
				complete(done(c2, 0)),
			}}
			res, err, a := runAM(t, testConfig(1, 0), rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
			require.Equal(t, 0, a.Status().Failed)
			require.Equal(t, 1, a.Status().Restarts)
			var blacklisted []string
			for _, r := range rm.requests {
				blacklisted = append(blacklisted, r.BlacklistAdd...)
			}
			if status == yarn.ExitDisksFailed {
				require.Equal(t, []string{"nm1"}, blacklisted, "the node whose disks failed gets no more workers")
			} else {
				require.Empty(t, blacklisted)
			}
		})
	}
}

// The worker's own failures count: its exit code, its memory beyond the
// container's, its logs beyond the NodeManager's limit, no exit status.
func TestAMAppExitsAreCounted(t *testing.T) {
	for _, status := range []int{1, 137, yarn.ExitKilledExceedPMem, yarn.ExitKilledExceedVMem, yarn.ExitKilledExcessLogs, yarn.ExitInvalid} {
		t.Run(exitText(status), func(t *testing.T) {
			c1 := ctr(2, "nm1")
			rm := &fakeRM{register: gpuLimits, steps: []step{alloc(c1), complete(done(c1, status))}}
			res, err, a := runAM(t, testConfig(1, 0), rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusFailed, res.Status)
			require.Contains(t, res.Diagnostics, "more than yarn.maximum-failed-containers=0")
			require.Equal(t, 1, a.Status().Failed)
		})
	}
}

func TestAMRejectsProfileBeforeAsking(t *testing.T) {
	small := gpuLimits
	small.MaxCapability = yarn.Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 0}}
	rm := &fakeRM{register: small}
	res, err, _ := runAM(t, testConfig(2, 2), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "resource gpu (external-resource.gpu.yarn.config-key=yarn.io/gpu): asked 1 per worker, the largest container the cluster allows has 0")
	require.Empty(t, rm.requests)
	require.Len(t, rm.finished, 1)
}

func TestAMShutdownAndErrors(t *testing.T) {
	t.Run("AM_SHUTDOWN ends without unregistering", func(t *testing.T) {
		rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
			func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
				return yarn.AllocateResponse{Shutdown: true}, nil
			},
		}}
		_, err, _ := runAM(t, testConfig(1, 1), rm, &fakeNM{}, nil)
		require.ErrorIs(t, err, ErrShutdown)
		require.Empty(t, rm.finished)
	})
	t.Run("register failure", func(t *testing.T) {
		rm := &fakeRM{regErr: errors.New("connection refused")}
		_, err, _ := runAM(t, testConfig(1, 1), rm, &fakeNM{}, nil)
		require.EqualError(t, err, "register application master: connection refused")
	})
	t.Run("heartbeats keep failing past the max wait", func(t *testing.T) {
		fail := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{}, errors.New("EOF")
		}
		steps := make([]func(yarn.AllocateRequest) (yarn.AllocateResponse, error), 100)
		for i := range steps {
			steps[i] = fail
		}
		rm := &fakeRM{register: gpuLimits, steps: steps}
		cfg := testConfig(1, 1)
		clk := newClock()
		cfg.Now, cfg.After = clk.Now, clk.After
		cfg.RMMaxWait, cfg.RMRetryInterval = time.Minute, 10*time.Second
		_, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
		// Failures at 0, 10, ..., 60 s: the seventh is a minute after the first.
		require.EqualError(t, err, "run application master: the resource manager has not answered for 1m0s "+
			"(7 heartbeats failed; yarn.resourcemanager.connect.max-wait.ms is 1m0s): EOF")
		require.Equal(t, []time.Duration{10 * time.Second, 10 * time.Second}, clk.waits[:2], "retried every retry interval")
	})
	t.Run("failed heartbeat keeps releases for the next", func(t *testing.T) {
		c1, extra := ctr(2, "nm1"), ctr(3, "nm1")
		rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
			alloc(c1, extra),
			func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
				return yarn.AllocateResponse{}, errors.New("EOF")
			},
			complete(done(c1, 0)),
		}}
		_, err, _ := runAM(t, testConfig(1, 1), rm, &fakeNM{}, nil)
		require.NoError(t, err)
		require.Equal(t, []string{extra.ID}, rm.requests[2].Release)
	})
	t.Run("context cancelled", func(t *testing.T) {
		a, err := New(testConfig(1, 1), &fakeRM{register: gpuLimits}, &fakeNM{}, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		a.cfg.After = func(time.Duration) <-chan time.Time { cancel(); return make(chan time.Time) }
		_, err = a.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestAMHeartbeatInterval(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		alloc(c2),
		complete(done(c1, 0), done(c2, 0)),
	}}
	cfg := testConfig(2, 1)
	cfg.Heartbeat, cfg.RequestHeartbeat = 7*time.Second, 100*time.Millisecond
	var waits []time.Duration
	cfg.After = func(d time.Duration) <-chan time.Time { waits = append(waits, d); return ready(d) }
	_, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{100 * time.Millisecond, 7 * time.Second}, waits, "fast interval only while containers are awaited")
}

func TestTokenRedacted(t *testing.T) {
	tok := security.Token{Kind: "NMToken", Service: "nm1:45454", Identifier: []byte("ident"), Password: []byte("hunter2")}
	for _, s := range []string{tok.String(), tok.GoString()} {
		require.NotContains(t, s, "hunter2")
		require.Contains(t, s, "NMToken")
	}
}

func TestAMDiagnosticQuotesYarnReasons(t *testing.T) {
	c1 := ctr(2, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		complete(yarn.Completed{ID: c1.ID, ExitStatus: yarn.ExitKilledExceedPMem, Diagnostics: "Container is running beyond physical memory limits."}),
	}}
	res, err, _ := runAM(t, testConfig(1, 0), rm, &fakeNM{}, fakeLogs{c1.ID: {"allocating"}})
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "exited with exit status -104 (KILLED_EXCEEDED_PMEM) (Container is running beyond physical memory limits.); last 1 stderr lines:\nallocating")
}

func TestAMReportsWhenAllWorkersRan(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1), alloc(c2), complete(done(c1, 0), done(c2, 0)),
	}}
	submit := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := submit
	cfg := testConfig(2, 2)
	cfg.SubmitTime = submit
	cfg.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	cfg.PeakRSS = func() int64 { return 12345 }
	_, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	st := a.Status()
	// Every read of Now advances it 1 s: both workers were allocated
	// (+1 s, +2 s) before all ran; other reads (blacklist expiry, request
	// timeout) may come between.
	require.NotNil(t, st.AllRunningTime)
	require.Equal(t, st.AllRunningTime.Sub(submit).Milliseconds(), st.AllRunningAfterMS)
	require.GreaterOrEqual(t, st.AllRunningAfterMS, int64(3000))
	require.Equal(t, submit, *st.SubmitTime)
	require.Equal(t, int64(12345), st.AMPeakRSSKiB)
}

func TestAMStopsWhenTheRMKeepsForgetting(t *testing.T) {
	forget := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{}, yarn.ErrApplicationMasterNotRegistered
	}
	steps := make([]func(yarn.AllocateRequest) (yarn.AllocateResponse, error), 100)
	for i := range steps {
		steps[i] = forget
	}
	rm := &fakeRM{register: gpuLimits, steps: steps}
	cfg := testConfig(1, 1)
	clk := newClock()
	cfg.Now, cfg.After = clk.Now, clk.After
	// Registering again succeeds, so the next heartbeat comes at the heartbeat interval, not
	// after the retry interval (that waits only while the RM does not answer).
	cfg.RMMaxWait, cfg.RMRetryInterval = 30*time.Second, time.Hour
	cfg.Heartbeat, cfg.RequestHeartbeat = 10*time.Second, 10*time.Second
	_, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.ErrorIs(t, err, yarn.ErrApplicationMasterNotRegistered)
	require.ErrorContains(t, err, "the resource manager has not answered for 30s (4 heartbeats failed")
	require.Equal(t, 1+3, rm.registers, "registered at start, then again after each of the first 3 forgettings")
}

// The RM away for 90 s (a real restart: JVM start, state-store recovery) while a worker runs:
// heartbeats fail every retry interval, re-registration fails while it is down, and once it
// answers the AM registers again and the worker, never replaced, ends the application. The AM
// gave up after 10 failed heartbeats (about 11 s against the real client) before it followed
// yarn.resourcemanager.connect.max-wait.ms.
func TestAMOutlivesALongRMOutage(t *testing.T) {
	c1 := ctr(2, "nm1")
	down := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{}, errors.New("connection refused")
	}
	steps := []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){alloc(c1), func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{}, nil
	}}
	for range 90 / 5 { // down for 90 s, retried every 5 s
		steps = append(steps, down)
	}
	forgot := func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{}, yarn.ErrApplicationMasterNotRegistered
	}
	steps = append(steps, forgot, forgot, complete(done(c1, 0)))
	rm := &fakeRM{register: gpuLimits, steps: steps,
		regErrAt: func(n int) error {
			if n == 2 {
				return errors.New("connection refused") // the first try to register again
			}
			return nil
		}}
	cfg := testConfig(1, 1)
	clk := newClock()
	cfg.Now, cfg.After = clk.Now, clk.After
	cfg.RMRetryInterval = 5 * time.Second // RMMaxWait: Hadoop's 15 min
	nm := &fakeNM{}
	res, err, _ := runAM(t, cfg, rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []string{c1.ID}, nm.started, "the worker ran on, never replaced")
	require.Equal(t, 3, rm.registers, "at start, a failed try while the RM was away, and once it answered")
}

// A replacement asked for in the same heartbeat that grants the previous one is sent: the RM
// lowered its count for the ask with the grant, so the AM's "last asked" goes down with it.
// Before, pending (1) equalled the last count sent (1), nothing was sent, and the RM held an
// ask of 0 while a worker was missing (found by make soak: a worker killed -9 never replaced).
func TestAMAskAfterGrantIsNotLost(t *testing.T) {
	c1, c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1"), ctr(5, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		complete(done(c1, 1)), // ask 1 replacement
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { // grant it; another worker fails
			return yarn.AllocateResponse{Allocated: []yarn.Container{c3}, Completed: []yarn.Completed{done(c2, 1)}}, nil
		},
		alloc(c4),
		complete(done(c3, 0), done(c4, 0)),
	}}
	res, err, _ := runAM(t, testConfig(2, 5), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	counts := func(i int) []int {
		var out []int
		for _, a := range rm.requests[i].Asks {
			out = append(out, a.Count)
		}
		return out
	}
	require.Equal(t, []int{2}, counts(0))
	require.Equal(t, []int{1}, counts(2), "the first replacement")
	require.Equal(t, []int{1}, counts(3), "the second replacement, asked right after the first was granted")
}

// blockingLogs serves stderr only once release is closed (a NodeManager
// that does not answer); fetching is set while a fetch waits.
type blockingLogs struct {
	release  chan struct{}
	fetching atomic.Bool
	lines    []string
}

func (b *blockingLogs) Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error) {
	b.fetching.Store(true)
	defer b.fetching.Store(false)
	select {
	case <-b.release:
		return b.lines, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A failed worker's stderr is fetched off the heartbeat (issue 24 item 8:
// the heartbeat waited up to 5 s on each fetch from a slow NodeManager):
// the next heartbeat comes while the fetch still waits, and the failure
// that ends the application later still quotes that stderr.
func TestAMFetchesStderrOffTheHeartbeat(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	logs := &blockingLogs{release: make(chan struct{}), lines: []string{"RuntimeError: CUDA out of memory"}}
	var whileFetching bool
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1),
		complete(done(c1, 1)),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			deadline := time.Now().Add(2 * time.Second)
			for !logs.fetching.Load() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			whileFetching = logs.fetching.Load()
			close(logs.release)
			return yarn.AllocateResponse{Allocated: []yarn.Container{c2}}, nil
		},
		complete(done(c2, 1)),
	}}
	cfg := testConfig(1, 1)
	cfg.CallTimeout = 30 * time.Second
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, logs)
	require.NoError(t, err)
	require.True(t, whileFetching, "the heartbeat after the failure waited for its stderr")
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "first failure: container "+c1.ID)
	require.Contains(t, res.Diagnostics, "last 1 stderr lines:\nRuntimeError: CUDA out of memory")
}

// A NodeManager that does not answer (an RPC failure, not a refusal of one
// container) fails none of the workers it could not start (issue 24 item
// 3: each counted, so one unreachable node spent yarn.maximum-failed-
// containers): they are replaced elsewhere and the node is blacklisted. A
// NodeManager that refuses a container still counts it.
func TestAMUnreachableNodeManagerIsBlacklisted(t *testing.T) {
	c1, c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm1"), ctr(4, "nm2"), ctr(5, "nm2")
	down := fmt.Errorf("call startContainers on nm1:8041: %w", syscall.ECONNREFUSED)
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1, c2),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c3, c4}}, nil
		},
		complete(done(c3, 0), done(c4, 0)),
	}}
	nm := &fakeNM{startErr: map[string]error{c1.ID: down, c2.ID: down}}
	res, err, a := runAM(t, testConfig(2, 0), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Zero(t, a.Status().Failed)
	require.Equal(t, []string{"nm1"}, a.Status().Blacklist)
	require.ElementsMatch(t, []string{c1.ID, c2.ID}, rm.requests[1].Release)
	require.Equal(t, []string{"nm1"}, rm.requests[1].BlacklistAdd)

	refused := &yarn.ContainerError{Container: c1.ID, Class: "org.apache.hadoop.yarn.exceptions.InvalidToken", Message: "NMToken expired"}
	rm = &fakeRM{register: gpuLimits, steps: []step{alloc(c1)}}
	res, err, _ = runAM(t, testConfig(1, 0), rm, &fakeNM{startErr: map[string]error{c1.ID: refused}}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "NMToken expired")
}
