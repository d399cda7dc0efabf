package am

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// rvGroup is a group of n workers of one GPU each with plan p's
// rendezvous fields.
func rvGroup(name string, n int, p amplan.Plan) amplan.Group {
	base := testConfig(n, n)
	p.Workers, p.BaseWorkers, p.SlotsPerWorker = n, n, 1
	if p.MaxFailedContainers == 0 {
		p.MaxFailedContainers = n
	}
	p.Profile = base.Plan.Profile
	return amplan.Group{Name: name, Plan: p, Launch: base.Launch, Owners: base.Owners}
}

// runRV runs an AM of groups whose scripted heartbeats see the AM (to
// report and ask the rendezvous as launchers do).
func runRV(t *testing.T, groups []amplan.Group, now func() time.Time, steps ...func(a *AM) (yarn.AllocateResponse, error)) (Result, *AM, *fakeNM) {
	t.Helper()
	cfg := testConfig(0, 0)
	cfg.Groups = groups
	if now != nil {
		cfg.Now = now
	}
	var a *AM
	rm := &fakeRM{register: gpuLimits}
	for _, s := range steps {
		rm.steps = append(rm.steps, func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { return s(a) })
	}
	nm := &fakeNM{}
	a, err := New(cfg, rm, nm, nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	return res, a, nm
}

func report(t *testing.T, a *AM, c yarn.Container, port int) {
	t.Helper()
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c.ID, Resources: map[string][]resources.Properties{}, Port: port}))
}

func rv(t *testing.T, a *AM, c yarn.Container) contract.Rendezvous {
	t.Helper()
	r, err := a.Rendezvous(c.ID)
	require.NoError(t, err)
	return r
}

func doneAll(cs ...yarn.Container) func(*AM) (yarn.AllocateResponse, error) {
	return func(*AM) (yarn.AllocateResponse, error) {
		var out []yarn.Completed
		for _, c := range cs {
			out = append(out, done(c, 0))
		}
		return yarn.AllocateResponse{Completed: out}, nil
	}
}

func allocRV(cs ...yarn.Container) func(*AM) (yarn.AllocateResponse, error) {
	return func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{Allocated: cs}, nil }
}

// A replacement takes the rank of the worker it replaces; the others keep
// theirs.
func TestRendezvousRanksStableAcrossReplacement(t *testing.T) {
	c2, c3, c4, c5 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1"), ctr(5, "nm2")
	ranks := map[string]int{}
	res, a, _ := runRV(t, []amplan.Group{rvGroup("w", 3, amplan.Plan{Port: amplan.PortAuto})}, nil,
		allocRV(c2, c3, c4),
		func(a *AM) (yarn.AllocateResponse, error) {
			for _, c := range []yarn.Container{c2, c3, c4} {
				ranks[c.ID] = rv(t, a, c).Rank
			}
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c3, 1)}}, nil
		},
		allocRV(c5),
		func(a *AM) (yarn.AllocateResponse, error) {
			ranks[c5.ID] = rv(t, a, c5).Rank
			for _, c := range []yarn.Container{c2, c4} {
				require.Equal(t, ranks[c.ID], rv(t, a, c).Rank, "a worker keeps its rank")
			}
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c2, c4, c5),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, map[string]int{c2.ID: 0, c3.ID: 1, c4.ID: 2, c5.ID: 1}, ranks)
	require.Equal(t, 1, a.Status().Failed)
}

// A dependent waits until every worker of its dependency reported; it then
// gets the dependency's addresses in rank order (not report order), to
// probe and as XRES_PS_ADDRESSES.
func TestRendezvousDependsOnGivesAddressesInRankOrder(t *testing.T) {
	p2, p3 := inGroup(ctr(2, "nm1"), 1), inGroup(ctr(3, "nm2"), 1)
	w4, w5 := inGroup(ctr(4, "nm1"), 2), inGroup(ctr(5, "nm2"), 2)
	var before, half, after contract.Rendezvous
	res, _, _ := runRV(t, []amplan.Group{rvGroup("ps", 2, amplan.Plan{Port: amplan.PortAuto}), rvGroup("worker", 2, amplan.Plan{DependsOn: []string{"ps"}})}, nil,
		allocRV(p2, p3, w4, w5),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, w4, 0)
			before = rv(t, a, w4)
			report(t, a, p3, 6001)
			half = rv(t, a, w4)
			report(t, a, p2, 6000)
			after = rv(t, a, w4)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(p2, p3, w4, w5),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.False(t, before.Ready)
	require.Equal(t, "group ps (depends-on): 0 of 2 workers running; they wait for its own device report", before.Waiting)
	require.False(t, half.Ready)
	require.Contains(t, half.Waiting, "1 of 2 workers running")
	require.True(t, after.Ready, after.Waiting)
	require.Equal(t, []string{"nm1:6000", "nm2:6001"}, after.Probe)
	require.Equal(t, map[string]string{EnvGroup: "worker", EnvRank: "0", EnvWorldSize: "2", "XRES_PS_ADDRESSES": "nm1:6000,nm2:6001"}, after.Env)
	passesLauncher(t, after)
}

// Gang start with xres.rendezvous: torch: no rank is ready until all 3
// reported; then each gets RANK, WORLD_SIZE, LOCAL_RANK among its host's
// ranks, and rank 0's host and port as MASTER_ADDR and MASTER_PORT.
func TestRendezvousGangBarrierAndTorchEnv(t *testing.T) {
	c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm1"), ctr(4, "nm2")
	var waiting, r1, r2 contract.Rendezvous
	res, _, _ := runRV(t, []amplan.Group{rvGroup("ring", 3, amplan.Plan{Port: amplan.PortAuto, Gang: true, GangTimeout: time.Minute, Rendezvous: amplan.RendezvousTorch})}, nil,
		allocRV(c2, c3, c4),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c2, 7000)
			report(t, a, c3, 7001)
			waiting = rv(t, a, c3)
			report(t, a, c4, 7002)
			r1, r2 = rv(t, a, c3), rv(t, a, c4)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c2, c3, c4),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.False(t, waiting.Ready)
	require.Equal(t, "gang start of group ring: 2 of 3 workers have reserved their devices", waiting.Waiting)
	require.True(t, r1.Ready, r1.Waiting)
	require.Equal(t, map[string]string{EnvGroup: "ring", EnvRank: "1", EnvWorldSize: "3", "XRES_RING_ADDRESSES": "nm1:7000,nm1:7001,nm2:7002",
		"RANK": "1", "WORLD_SIZE": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "nm1", "MASTER_PORT": "7000"}, r1.Env)
	require.Equal(t, "0", r2.Env["LOCAL_RANK"])
	require.Equal(t, "1", r2.Env["LOCAL_WORLD_SIZE"])
	require.Equal(t, "2", r2.Env["RANK"])
	passesLauncher(t, r1)
	passesLauncher(t, r2)
}

// A group whose worker picks its own port (port: worker) runs for its
// dependents only once the worker has told its port: the dependent waits,
// saying for what, then gets the address to probe and as XRES_JM_ADDRESSES.
// The worker itself starts after its device report, without a port.
func TestRendezvousWorkerReportedPort(t *testing.T) {
	jm := inGroup(ctr(2, "nm1"), 1)
	t3, t4 := inGroup(ctr(3, "nm1"), 2), inGroup(ctr(4, "nm2"), 2)
	var jmAns, waiting, after contract.Rendezvous
	var countBefore, countAfter amstatus.WorkerCount
	res, a, _ := runRV(t, []amplan.Group{rvGroup("jm", 1, amplan.Plan{Port: amplan.PortWorker}), rvGroup("tm", 2, amplan.Plan{DependsOn: []string{"jm"}})}, nil,
		allocRV(jm, t3, t4),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, jm, 0)
			report(t, a, t3, 0)
			jmAns = rv(t, a, jm)
			waiting = rv(t, a, t3)
			countBefore = a.Status().Count()
			// The launcher's second report, once the worker wrote its port.
			report(t, a, jm, 6123)
			after = rv(t, a, t3)
			countAfter = a.Status().Count()
			return yarn.AllocateResponse{}, nil
		},
		doneAll(jm, t3, t4),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.True(t, jmAns.Ready, "the worker that picks its port starts without one: %s", jmAns.Waiting)
	require.NotContains(t, jmAns.Env, "XRES_JM_ADDRESSES", "its own address is not known before it runs")
	require.False(t, waiting.Ready)
	require.Equal(t, "group jm (depends-on): 0 of 1 workers running; they wait for rank 0 of group jm to report the port it serves on (XRES_PORT_FILE)", waiting.Waiting)
	require.True(t, after.Ready, after.Waiting)
	require.Equal(t, []string{"nm1:6123"}, after.Probe)
	require.Equal(t, "nm1:6123", after.Env["XRES_JM_ADDRESSES"])
	passesLauncher(t, after)
	require.Equal(t, contract.PortWantedWorker, amplan.RendezvousLaunch(a.cfg.Groups[0], "http://am/").Env[contract.EnvPortWanted])
	// api/workers (and so XRES_WORKERS_FILE) carries a port group's addresses.
	require.Equal(t, []string{""}, countBefore.Groups[0].Addresses)
	require.Equal(t, []string{"nm1:6123"}, countAfter.Groups[0].Addresses)
	require.Nil(t, countAfter.Groups[1].Addresses, "a group without a port has none")
}

// xres.rendezvous: tensorflow: TF_CONFIG names every group with a port as
// a job, with its addresses in rank order, and the worker as its task;
// no worker is ready before every address is known.
func TestRendezvousTensorflowConfig(t *testing.T) {
	ch := inGroup(ctr(2, "nm1"), 1)
	w3, w4 := inGroup(ctr(3, "nm1"), 2), inGroup(ctr(4, "nm2"), 2)
	tf := amplan.Plan{Port: amplan.PortAuto, Rendezvous: amplan.RendezvousTensorflow}
	var early, got contract.Rendezvous
	res, _, _ := runRV(t, []amplan.Group{rvGroup("chief", 1, tf), rvGroup("worker", 2, tf)}, nil,
		allocRV(ch, w3, w4),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, w4, 8002)
			report(t, a, ch, 8000)
			early = rv(t, a, w4)
			report(t, a, w3, 8001)
			got = rv(t, a, w4)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(ch, w3, w4),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.False(t, early.Ready)
	require.Contains(t, early.Waiting, "TF_CONFIG")
	require.True(t, got.Ready, got.Waiting)
	require.JSONEq(t, `{"cluster":{"chief":["nm1:8000"],"worker":["nm1:8001","nm2:8002"]},"task":{"type":"worker","index":1}}`, got.Env["TF_CONFIG"])
	passesLauncher(t, got)
}

// passesLauncher checks that the launcher passes on every variable of the
// answer (contract.CheckRendezvousVar: the AM sets only what the
// launcher's allow-list holds).
func passesLauncher(t *testing.T, r contract.Rendezvous) {
	t.Helper()
	for k, v := range r.Env {
		require.NoError(t, contract.CheckRendezvousVar(k, v))
	}
	for _, a := range r.Probe {
		require.NoError(t, contract.CheckAddress(a))
	}
}

// A gang that stays incomplete fails the application after its timeout,
// naming the group, how many were allocated and reserved, and the missing
// ranks; no rank was told to run, and its containers are stopped.
func TestRendezvousGangTimeoutFailsWithReason(t *testing.T) {
	c2, c3 := ctr(2, "nm1"), ctr(3, "nm2")
	var mu sync.Mutex
	clock := time.Unix(1700000000, 0)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(5 * time.Second) // every look at the clock is 5 s later
		return clock
	}
	var ans contract.Rendezvous
	res, a, nm := runRV(t, []amplan.Group{rvGroup("ring", 3, amplan.Plan{Port: amplan.PortAuto, Gang: true, GangTimeout: 2 * time.Minute})}, now,
		allocRV(c2, c3),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c2, 7000)
			report(t, a, c3, 7001)
			ans = rv(t, a, c2)
			return yarn.AllocateResponse{}, nil
		},
	)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Equal(t, "gang start of worker group ring timed out after 2m0s (xres.gang.timeout): 2 of 3 workers allocated, 2 of them with devices reserved; ranks without a ready worker: 2. The application's containers are released, so it holds nothing another application waits for", res.Diagnostics)
	require.False(t, ans.Ready)
	require.ElementsMatch(t, []string{c2.ID, c3.ID}, nm.stopped)
	require.Zero(t, a.Status().Failed)
}

// A gang member lost after the gang ran: the AM stops the other members
// (not counted), and the 3 replacements form the gang again, taking ranks
// 0-2; only the lost one counts against the failure limit.
func TestRendezvousGangRestartsOnLoss(t *testing.T) {
	c2, c3, c4 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1")
	c5, c6, c7 := ctr(5, "nm2"), ctr(6, "nm1"), ctr(7, "nm2")
	var stopped []string
	var again contract.Rendezvous
	ranks := map[string]int{}
	res, a, nm := runRV(t, []amplan.Group{rvGroup("ring", 3, amplan.Plan{Port: amplan.PortAuto, Gang: true, GangTimeout: time.Minute, MaxFailedContainers: 1})}, nil,
		allocRV(c2, c3, c4),
		func(a *AM) (yarn.AllocateResponse, error) {
			for i, c := range []yarn.Container{c2, c3, c4} {
				report(t, a, c, 7000+i)
			}
			for _, c := range []yarn.Container{c2, c3, c4} {
				require.True(t, rv(t, a, c).Ready)
			}
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c3, 137)}}, nil
		},
		func(a *AM) (yarn.AllocateResponse, error) {
			// The stops go out beside the heartbeat.
			fnm := a.nm.(*fakeNM)
			require.Eventually(t, func() bool {
				fnm.mu.Lock()
				defer fnm.mu.Unlock()
				return len(fnm.stopped) == 2
			}, 5*time.Second, 5*time.Millisecond)
			fnm.mu.Lock()
			stopped = slices.Clone(fnm.stopped)
			fnm.mu.Unlock()
			require.False(t, rv(t, a, c2).Ready, "a stopped member is not told to run again")
			return yarn.AllocateResponse{Completed: []yarn.Completed{done(c2, yarn.ExitKilledByAM), done(c4, yarn.ExitKilledByAM)}}, nil
		},
		allocRV(c5, c6, c7),
		func(a *AM) (yarn.AllocateResponse, error) {
			for i, c := range []yarn.Container{c5, c6, c7} {
				report(t, a, c, 7100+i)
				ranks[c.ID] = rv(t, a, c).Rank
			}
			again = rv(t, a, c6)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c5, c6, c7),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.ElementsMatch(t, []string{c2.ID, c4.ID}, stopped)
	require.Len(t, nm.stopped, 2)
	require.Equal(t, map[string]int{c5.ID: 0, c6.ID: 1, c7.ID: 2}, ranks)
	require.True(t, again.Ready, again.Waiting)
	require.Equal(t, "nm2:7100,nm1:7101,nm2:7102", again.Env["XRES_RING_ADDRESSES"])
	st := a.Status()
	require.Equal(t, 1, st.Failed, "only the lost member counts")
	require.Equal(t, 3, st.Restarts)
}

// Every worker's launch context carries the rendezvous endpoint and its
// group's world size; a waiting group says so and names its port.
func TestRendezvousLaunchEnv(t *testing.T) {
	cfg := testConfig(0, 0)
	cfg.Groups = []amplan.Group{rvGroup("ps", 2, amplan.Plan{Port: 5000}), rvGroup("worker", 3, amplan.Plan{})}
	a, err := New(cfg, &fakeRM{}, &fakeNM{}, nil)
	require.NoError(t, err)
	ps, w := a.groups[0].Launch.Env, a.groups[1].Launch.Env
	require.Equal(t, "http://am-host:1234/api/rendezvous", ps[contract.EnvRendezvousURL])
	require.Equal(t, "true", ps[contract.EnvRendezvousWait])
	require.Equal(t, "5000", ps[contract.EnvPortWanted])
	require.Equal(t, "2", ps[EnvWorldSize])
	require.Equal(t, "ps", ps[EnvGroup])
	require.Empty(t, w[contract.EnvRendezvousWait], "a group without gang, port or dependencies does not wait")
	require.Equal(t, "3", w[EnvWorldSize])
	require.Nil(t, cfg.Groups[0].Launch.Env, "the caller's launch context is not written")
}

// The tracking server answers GET /api/rendezvous?container=ID to the
// container's launcher alone: signed with the container's key over
// contract.RendezvousMessage(ID), with a nonce; unsigned 401, another
// signature (another container's key, the application's secret) 403, no
// nonce 400. The answer is signed with the container's key over the nonce
// and the body.
func TestRendezvousEndpoint(t *testing.T) {
	c2 := ctr(2, "nm1")
	secret := []byte("application secret")
	key := func(id string) []byte { return contract.ContainerKey(secret, id) }
	nonce := strings.Repeat("ab", contract.NonceBytes)
	var body map[string]any
	var codes []int
	res, _, _ := runRV(t, []amplan.Group{rvGroup("w", 1, amplan.Plan{})}, nil,
		allocRV(c2),
		func(a *AM) (yarn.AllocateResponse, error) {
			srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(secret)))
			defer srv.Close()
			unknown := "container_1_0001_01_000099"
			for _, q := range []struct{ container, sig, nonce string }{
				{c2.ID, contract.SignReport(key(c2.ID), contract.RendezvousMessage(c2.ID)), nonce},
				{unknown, contract.SignReport(key(unknown), contract.RendezvousMessage(unknown)), nonce},
				{"", "", nonce},
				{c2.ID, "", nonce},
				{c2.ID, contract.SignReport(key(c2.ID), contract.RendezvousMessage(unknown)), nonce},
				{c2.ID, contract.SignReport([]byte("guessed"), contract.RendezvousMessage(c2.ID)), nonce},
				{c2.ID, contract.SignReport(key(unknown), contract.RendezvousMessage(c2.ID)), nonce},
				{c2.ID, contract.SignReport(secret, contract.RendezvousMessage(c2.ID)), nonce},
				{c2.ID, contract.SignReport(key(c2.ID), contract.RendezvousMessage(c2.ID)), ""},
			} {
				url := srv.URL + contract.RendezvousPath
				if q.container != "" {
					url += "?container=" + q.container
				}
				req, err := http.NewRequest(http.MethodGet, url, nil)
				require.NoError(t, err)
				if q.sig != "" {
					req.Header.Set(contract.HeaderReportSignature, q.sig)
				}
				if q.nonce != "" {
					req.Header.Set(contract.HeaderNonce, q.nonce)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				codes = append(codes, resp.StatusCode)
				if resp.StatusCode == http.StatusOK {
					raw, err := io.ReadAll(resp.Body)
					require.NoError(t, err)
					require.True(t, contract.VerifyReport(key(c2.ID), contract.AnswerMessage(contract.AnswerRendezvous, c2.ID, nonce, raw), resp.Header.Get(contract.HeaderAnswerSignature)),
						"the answer is signed with the container's key over the nonce and the body")
					require.NoError(t, json.Unmarshal(raw, &body))
				}
				resp.Body.Close()
			}
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c2),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, []int{http.StatusOK, http.StatusNotFound, http.StatusBadRequest,
		http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden, http.StatusForbidden, http.StatusForbidden, http.StatusBadRequest}, codes)
	require.Equal(t, true, body["ready"])
	require.Equal(t, map[string]any{EnvGroup: "w", EnvRank: "0", EnvWorldSize: "1"}, body["env"])
}

func TestPlanRendezvousKeys(t *testing.T) {
	parse := func(*conf.Config) ([]resources.Spec, error) { return nil, nil }
	base := func() *conf.Config {
		cfg := conf.New()
		cfg.Set(conf.WorkerGroups.Key, "ps;worker")
		cfg.Set("xres.worker-group.ps.workers", "2")
		cfg.Set("xres.worker-group.worker.workers", "4")
		return cfg
	}
	cfg := base()
	cfg.Set("xres.worker-group.ps.port", "auto")
	cfg.Set("xres.worker-group.worker.port", "2222")
	cfg.Set("xres.worker-group.chief.port", "worker") // not a group of the application: not read
	cfg.Set("xres.worker-group.worker.depends-on", "ps")
	cfg.Set("xres.worker-group.worker.gang", "true")
	cfg.Set(conf.Rendezvous.Key, "TensorFlow")
	gs, err := amplan.PlanGroups(cfg, 0, parse)
	require.NoError(t, err)
	require.Equal(t, amplan.PortAuto, gs[0].Plan.Port)
	require.False(t, gs[0].Plan.Gang)
	require.Equal(t, 2222, gs[1].Plan.Port)
	require.Equal(t, []string{"ps"}, gs[1].Plan.DependsOn)
	require.True(t, gs[1].Plan.Gang)
	require.Equal(t, 5*time.Minute, gs[1].Plan.GangTimeout, "the declared default")
	require.Equal(t, amplan.RendezvousTensorflow, gs[1].Plan.Rendezvous)

	bad := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"unknown group", map[string]string{"xres.worker-group.worker.depends-on": "ps,chief"},
			`config key xres.worker-group.worker.depends-on (set): "chief" is not a group of xres.worker-groups`},
		{"itself", map[string]string{"xres.worker-group.worker.depends-on": "worker"},
			"config key xres.worker-group.worker.depends-on (set): a group cannot depend on itself"},
		{"cycle", map[string]string{"xres.worker-group.worker.depends-on": "ps", "xres.worker-group.ps.depends-on": "worker"},
			"config key xres.worker-group.ps.depends-on (set): the groups depend on each other in a cycle (ps → worker → ps)"},
		{"port", map[string]string{"xres.worker-group.ps.port": "70000"},
			`config key xres.worker-group.ps.port (set): "70000" is not a port (auto, worker, or 1-65535)`},
		{"worker port under a rendezvous", map[string]string{"xres.worker-group.ps.port": "Worker", "xres.rendezvous": "torch"},
			"config key xres.worker-group.ps.port (set): a worker tells its own port only once it runs, but xres.rendezvous: torch needs the ports before the workers start"},
		{"gang not a bool", map[string]string{"xres.worker-group.ps.gang": "sometimes"}, "xres.worker-group.ps.gang"},
		{"gang and reactive", map[string]string{"xres.worker-group.ps.gang": "true", "scheduler-mode": "reactive"},
			"config key xres.worker-group.ps.gang (set): a gang needs all its workers, scheduler-mode: reactive runs with fewer"},
		{"gang timeout", map[string]string{"xres.worker-group.ps.gang": "true", "xres.gang.timeout": "0 s"},
			"config key xres.gang.timeout (set): must be positive"},
		{"rendezvous", map[string]string{"xres.rendezvous": "mpi"},
			`config key xres.rendezvous (set): "mpi" is not a rendezvous (torch, tensorflow, or leave it unset)`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			for k, v := range tc.set {
				cfg.Set(k, v)
			}
			_, err := amplan.PlanGroups(cfg, 0, parse)
			require.ErrorIs(t, err, amplan.ErrBadConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// cluster.evenly-spread-out-slots has no meaning on YARN: setting it warns
// and points to the key that spreads workers over nodes.
func TestPlanWarnsEvenlySpreadOutSlots(t *testing.T) {
	cfg := conf.New()
	p, err := amplan.PlanWorkers(cfg, nil, 2)
	require.NoError(t, err)
	require.Empty(t, p.Warnings)
	cfg.Set(conf.EvenlySpreadOutSlots.Key, "true")
	p, err = amplan.PlanWorkers(cfg, nil, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"cluster.evenly-spread-out-slots (set) has no effect on YARN (it spreads slots over a standalone cluster's TaskManagers); to spread the workers over nodes set xres.placement.max-workers-per-node (1: at most one worker per node)"}, p.Warnings)
}
