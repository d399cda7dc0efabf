package am

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/security"
)

// twoGroups is a trainer group (2 × 2 GPUs) and a prep group (3 × 1 FPGA,
// its own command), each with its own failure limit.
func twoGroups() Config {
	cfg := testConfig(0, 0)
	cfg.Groups = []amplan.Group{
		{Name: "trainer", Plan: amplan.Plan{Workers: 2, MaxFailedContainers: 0,
			Profile: yarn.Resource{MemoryMB: 4096, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 2}}},
			Launch: yarn.LaunchContext{Commands: []string{"train"}, Env: map[string]string{conf.EnvWorkerGroup: "trainer"}}},
		{Name: "prep", Plan: amplan.Plan{Workers: 3, MaxFailedContainers: 1,
			Profile: yarn.Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/fpga": 1}}},
			Launch: yarn.LaunchContext{Commands: []string{"prep"}, Env: map[string]string{conf.EnvWorkerGroup: "prep"}}},
	}
	return cfg
}

var groupLimits = yarn.RegisterResponse{
	MaxCapability: yarn.Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 4, "yarn.io/fpga": 2}},
	ResourceTypes: []yarn.ResourceType{{Name: "memory-mb"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}, {Name: "yarn.io/fpga"}},
}

func inGroup(c yarn.Container, id int64) yarn.Container {
	c.AllocationRequestID = id
	return c
}

func TestGroupsAskEachProfileAndStartEachCommand(t *testing.T) {
	t1, t2 := inGroup(ctr(2, "nm1"), 1), inGroup(ctr(3, "nm2"), 1)
	p1, p2, p3 := inGroup(ctr(4, "nm1"), 2), inGroup(ctr(5, "nm2"), 2), inGroup(ctr(6, "nm3"), 2)
	rm := &fakeRM{register: groupLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(t1, p1, p2),
		alloc(t2, p3),
		complete(done(t1, 0), done(t2, 0), done(p1, 0), done(p2, 0), done(p3, 0)),
	}}
	nm := &fakeNM{}
	res, err, a := runAM(t, twoGroups(), rm, nm, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)

	// One ask per group: its own id, priority, profile and tag.
	cfg := twoGroups()
	require.Equal(t, []yarn.Ask{
		{ID: 1, Profile: cfg.Groups[0].Plan.Profile, Count: 2, Tag: "xres-worker-trainer"},
		{ID: 2, Priority: 2, Profile: cfg.Groups[1].Plan.Profile, Count: 3, Tag: "xres-worker-prep"},
	}, rm.requests[0].Asks)
	// The RM lowered each ask's count by what it granted: nothing to resend.
	require.Empty(t, rm.requests[1].Asks)

	// Each container was started with its group's command.
	cmds := map[string]string{}
	for i, id := range nm.started {
		cmds[id] = nm.launches[i].Commands[0]
	}
	require.Equal(t, map[string]string{t1.ID: "train", t2.ID: "train", p1.ID: "prep", p2.ID: "prep", p3.ID: "prep"}, cmds)

	st := a.Status()
	require.Equal(t, 5, st.Workers)
	require.Len(t, st.Groups, 2)
	require.Equal(t, amstatus.GroupStatus{Name: "trainer", Workers: 2, Minimum: 2, Succeeded: 2, Profile: cfg.Groups[0].Plan.Profile}, st.Groups[0])
	require.Equal(t, 3, st.Groups[1].Succeeded)
	require.Equal(t, "prep", st.Containers[1].Group)
}

func TestGroupsCountTheirOwnFailures(t *testing.T) {
	// prep tolerates 1 failure: its first failure is replaced. trainer
	// tolerates none: its first failure fails the application, naming it.
	t1, p1, p2 := inGroup(ctr(2, "nm1"), 1), inGroup(ctr(3, "nm2"), 2), inGroup(ctr(4, "nm2"), 2)
	rm := &fakeRM{register: groupLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(t1, p1, p2),
		complete(done(p1, 1)),
		complete(done(t1, 1)),
	}}
	res, err, a := runAM(t, twoGroups(), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "1 worker containers of group trainer failed, more than yarn.maximum-failed-containers=0")
	require.Contains(t, res.Diagnostics, "container "+t1.ID+" of group trainer")
	st := a.Status()
	require.Equal(t, 1, st.Groups[1].Failed)
	require.Equal(t, 1, st.Groups[1].Restarts, "prep's failure was replaced")
	require.Equal(t, 2, st.Failed)
}

func TestGroupsRefuseAContainerOfAnUnknownAsk(t *testing.T) {
	stranger := inGroup(ctr(9, "nm1"), 3)
	rm := &fakeRM{register: groupLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){alloc(stranger)}}
	a, err := New(twoGroups(), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	a.mu.Lock()
	a.classifiedLocked(stranger, false)
	a.mu.Unlock()
	require.Equal(t, []string{stranger.ID}, a.releases)
}

func TestGroupsProfileCheckNamesTheGroup(t *testing.T) {
	cfg := twoGroups()
	cfg.Groups[0].Plan.Profile.Extra["yarn.io/gpu"] = 8
	res, err, _ := runAM(t, cfg, &fakeRM{register: groupLimits}, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "worker group trainer: ")
	require.NotContains(t, res.Diagnostics, "worker group prep")
}

func reactive(workers, minimum int) Config {
	cfg := testConfig(workers, workers)
	cfg.Plan.Reactive, cfg.Plan.MinWorkers = true, minimum
	return cfg
}

// clock is a settable Now for the request-timeout tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestReactiveRunsWithTheMinimumAndGrows(t *testing.T) {
	c1, c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm3"), ctr(5, "nm4")
	clk := &clock{t: time.Unix(1000, 0)}
	var during amstatus.Status
	var a *AM
	rm := &fakeRM{register: gpuLimits}
	rm.steps = []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		// Long past slot.request.timeout with 2 of 4: the minimum runs, so
		// the application goes on and keeps asking.
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			clk.t = clk.t.Add(time.Hour)
			return yarn.AllocateResponse{}, nil
		},
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			clk.t = clk.t.Add(time.Hour)
			during = a.Status()
			return yarn.AllocateResponse{}, nil
		},
		alloc(c3, c4), // capacity returned
		complete(done(c1, 0), done(c2, 0), done(c3, 0), done(c4, 0)),
	}
	cfg := reactive(4, 2)
	cfg.RequestTimeout = time.Minute
	cfg.Now = clk.now
	a, err := New(cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	res, err := a.Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 2, during.Running)
	require.Equal(t, 4, during.Workers)
	require.Equal(t, 2, during.Minimum)
	require.Equal(t, 2, during.Pending, "the rest is still asked for")
	require.NotNil(t, during.MinRunningTime)
	require.Nil(t, during.AllRunningTime)
	require.Empty(t, rm.requests[1].Asks, "the RM holds the other 2 (it lowered its count by the 2 it granted)")
	st := a.Status()
	require.Equal(t, 4, st.Succeeded)
	require.NotNil(t, st.AllRunningTime)
}

func TestReactiveBelowTheMinimumTimesOut(t *testing.T) {
	c1 := ctr(2, "nm1")
	clk := &clock{t: time.Unix(1000, 0)}
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			clk.t = clk.t.Add(time.Hour)
			return yarn.AllocateResponse{}, nil
		},
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			clk.t = clk.t.Add(time.Hour)
			return yarn.AllocateResponse{}, nil
		},
	}}
	cfg := reactive(4, 2)
	cfg.RequestTimeout = time.Minute
	cfg.Now = clk.now
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "3 worker containers")
	require.Contains(t, res.Diagnostics, "1 running of the 2 needed (xres.reactive.min-workers)")
}

func TestReactiveShrinksOnALostNodeAndEndsWithWhatRan(t *testing.T) {
	c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm3")
	var a *AM
	var shrunk amstatus.Status
	rm := &fakeRM{register: gpuLimits}
	rm.steps = []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2, c3),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{UpdatedNodes: []yarn.NodeUpdate{{NodeID: c3.NodeID, State: "LOST"}}}, nil
		},
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			shrunk = a.Status()
			return yarn.AllocateResponse{}, nil
		},
		// The two left finish: the job is done with what it had.
		complete(done(c1, 0), done(c2, 0)),
	}
	a, err := New(reactive(3, 2), rm, &fakeNM{}, nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	res, err := a.Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, 2, shrunk.Running)
	require.Equal(t, 1, shrunk.Pending, "the lost worker is asked for again")
	require.Equal(t, 0, shrunk.Failed, "a lost node is no failure")
	last := rm.requests[len(rm.requests)-1]
	require.Empty(t, last.Asks, "nothing more is asked once done")
}

func TestPlanGroups(t *testing.T) {
	cfg := conf.New()
	cfg.Set("taskmanager.memory.process.size", "1g")
	cfg.Set(conf.WorkerGroups.Key, "trainer;prep")
	cfg.Set("xres.worker-group.trainer.workers", "2")
	cfg.Set("xres.worker-group.trainer.external-resources", "gpu")
	cfg.Set("xres.worker-group.trainer.external-resource.gpu.amount", "4")
	cfg.Set("xres.worker-group.trainer.external-resource.gpu.yarn.config-key", "yarn.io/gpu")
	cfg.Set("xres.worker-group.prep.workers", "8")
	cfg.Set("xres.worker-group.prep.taskmanager.memory.process.size", "2g")
	cfg.Set("xres.worker-group.prep.command", `python prep.py --tag "a b"`)
	cfg.Set("xres.worker-group.prep.scheduler-mode", "reactive")
	cfg.Set("xres.worker-group.prep.xres.reactive.min-workers", "3")
	parse := func(c *conf.Config) ([]resources.Spec, error) {
		return resources.Parse(c, resources.ParseOptions{Side: resources.SideYarn})
	}
	gs, err := amplan.PlanGroups(cfg, 0, parse)
	require.NoError(t, err)
	require.Len(t, gs, 2)
	require.Equal(t, "trainer", gs[0].Name)
	require.Equal(t, 2, gs[0].Plan.Workers)
	require.Equal(t, yarn.Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 4}}, gs[0].Plan.Profile)
	require.Nil(t, gs[0].Command)
	require.Equal(t, 8, gs[1].Plan.Workers)
	require.Equal(t, yarn.Resource{MemoryMB: 2048, VCores: 1}, gs[1].Plan.Profile)
	require.Equal(t, []string{"python", "prep.py", "--tag", "a b"}, gs[1].Command)
	require.True(t, gs[1].Plan.Reactive)
	require.Equal(t, 3, gs[1].Plan.MinWorkers)
	require.False(t, gs[0].Plan.Reactive)

	_, err = amplan.PlanGroups(cfg, 3, parse)
	require.ErrorContains(t, err, "--workers cannot be used with xres.worker-groups")

	cfg.Set("xres.worker-group.prep.command", `python 'prep.py`)
	cfg.Set("xres.worker-group.trainer.workers", "0")
	_, err = amplan.PlanGroups(cfg, 0, parse)
	require.ErrorContains(t, err, "worker group trainer: invalid configuration: config key xres.worker-group.trainer.workers (set): must be at least 1")
	require.ErrorContains(t, err, "worker group prep: invalid configuration: config key xres.worker-group.prep.command (set)")
}

func TestPlanReactiveKeys(t *testing.T) {
	cfg := conf.New()
	cfg.Set(conf.SchedulerMode.Key, "Reactive")
	cfg.Set(conf.ReactiveMinWorkers.Key, "2")
	p, err := amplan.PlanWorkers(cfg, nil, 4)
	require.NoError(t, err)
	require.True(t, p.Reactive)
	require.Equal(t, 2, p.MinWorkers)

	cfg.Set(conf.ReactiveMinWorkers.Key, "5")
	_, err = amplan.PlanWorkers(cfg, nil, 4)
	require.ErrorContains(t, err, "xres.reactive.min-workers (set): 5 is more than the 4 workers asked")

	cfg.Set(conf.SchedulerMode.Key, "adaptive-batch")
	_, err = amplan.PlanWorkers(cfg, nil, 4)
	require.ErrorContains(t, err, `scheduler-mode (set): "adaptive-batch" is not a scheduler mode`)

	plain := conf.New()
	plain.Set(conf.ReactiveMinWorkers.Key, "2")
	p, err = amplan.PlanWorkers(plain, nil, 4)
	require.NoError(t, err)
	require.False(t, p.Reactive)
	require.Contains(t, p.Warnings, "xres.reactive.min-workers (set) has no effect without scheduler-mode: reactive")
}

func TestTrackerShowsGroupsAndCounts(t *testing.T) {
	t1, p1 := inGroup(ctr(2, "nm1"), 1), inGroup(ctr(3, "nm2"), 2)
	rm := &fakeRM{register: groupLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){alloc(t1, p1)}}
	cfg := twoGroups()
	cfg.Groups[1].Plan.Reactive, cfg.Groups[1].Plan.MinWorkers = true, 1
	a, err := New(cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	a.cfg.After = settled(a, func(d time.Duration) <-chan time.Time {
		if calls++; calls == 2 {
			cancel()
		}
		return ready(d)
	})
	_, err = a.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)

	srv := httptest.NewServer(amweb.NewTracker(a, nil))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + amweb.PathWorkers)
	require.NoError(t, err)
	var wc amstatus.WorkerCount
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&wc))
	resp.Body.Close()
	require.Equal(t, amstatus.WorkerCount{Target: 5, Minimum: 3, Running: 2, Groups: []amstatus.GroupWorkerCount{
		{Name: "trainer", Target: 2, Minimum: 2, Running: 1}, {Name: "prep", Target: 3, Minimum: 1, Running: 1}}}, wc)

	resp, err = srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	html := string(page)
	require.Contains(t, html, "running 2 of target 5 (minimum 3, scheduler-mode: reactive)")
	require.Contains(t, html, "<td>trainer</td><td>1 / 2</td>")
	require.Contains(t, html, "<td>prep</td><td>1 / 3</td><td>1</td>")
	require.Contains(t, html, "<td>"+p1.ID+"</td><td>prep</td>")
}

// batchNM is a fakeNM that starts several containers of a node per call
// and records each call's containers and command.
type batchNM struct {
	fakeNM
	calls [][]string
	cmds  []string
}

func (b *batchNM) StartContainers(ctx context.Context, cs []yarn.Container, tok security.Token, l yarn.LaunchContext) []error {
	var ids []string
	errs := make([]error, len(cs))
	for i, c := range cs {
		ids = append(ids, c.ID)
		errs[i] = b.StartContainer(ctx, c, tok, l)
	}
	b.mu.Lock()
	b.calls, b.cmds = append(b.calls, ids), append(b.cmds, l.Commands[0])
	b.mu.Unlock()
	return errs
}

func TestGroupsOnOneNodeStartInOneCallPerGroup(t *testing.T) {
	// Allocated interleaved on one node: trainer, prep, trainer, prep, prep.
	t1, p1, t2, p2, p3 := inGroup(ctr(2, "nm1"), 1), inGroup(ctr(3, "nm1"), 2), inGroup(ctr(4, "nm1"), 1),
		inGroup(ctr(5, "nm1"), 2), inGroup(ctr(6, "nm1"), 2)
	rm := &fakeRM{register: groupLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(t1, p1, t2, p2, p3),
		complete(done(t1, 0), done(t2, 0), done(p1, 0), done(p2, 0), done(p3, 0)),
	}}
	nm := &batchNM{}
	a, err := New(twoGroups(), rm, nm, nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	res, err := a.Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, [][]string{{t1.ID, t2.ID}, {p1.ID, p2.ID, p3.ID}}, nm.calls)
	require.Equal(t, []string{"train", "prep"}, nm.cmds)
}

func TestGroupsAdoptAnEarlierAttemptsWorkersByTheirAsk(t *testing.T) {
	// An earlier attempt's containers: one answering prep's ask, one with
	// no allocation id but prep's size, one with trainer's id.
	byID := inGroup(ctr(2, "nm1"), 2)
	bySize := inGroup(ctr(3, "nm2"), -1)
	bySize.Resource = yarn.Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/fpga": 1}}
	trainer := inGroup(ctr(4, "nm2"), 1)
	reg := groupLimits
	reg.PreviousContainers = []yarn.Container{byID, bySize, trainer}
	a, err := New(twoGroups(), &fakeRM{register: reg}, &fakeNM{}, nil)
	require.NoError(t, err)
	require.NoError(t, a.register(t.Context()))
	st := a.Status()
	require.Equal(t, 2, st.Groups[1].Running)
	require.Equal(t, 1, st.Groups[1].Pending, "prep wants one more")
	require.Equal(t, 1, st.Groups[0].Running)
	require.Equal(t, 1, st.Groups[0].Pending)
}
