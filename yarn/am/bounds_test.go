package am

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
)

// fakeNodes is a NodeLister with a fixed node list.
type fakeNodes struct {
	nodes []yarn.NodeReport
	calls counter
}

func (f *fakeNodes) GetClusterNodes(context.Context, ...string) ([]yarn.NodeReport, error) {
	f.calls.Add(1)
	return f.nodes, nil
}

func onNode(n int, nodeID string) yarn.Container {
	c := ctr(n, "x")
	c.NodeID, c.NodeHTTP = nodeID, "x:8042"
	return c
}

// Issue 24 item 9: three NodeManagers on one host, the host blacklisted
// after the launcher failed there: no node can run a worker, and the
// application fails at once naming the host. Before, the one blacklisted
// host was compared with the three NodeManagers and the application waited
// for ever.
func TestAMHopelessWhenTheOnlyHostIsBlacklisted(t *testing.T) {
	nodes := &fakeNodes{nodes: []yarn.NodeReport{{ID: "h1:1", State: "RUNNING"}, {ID: "h1:2", State: "RUNNING"}, {ID: "h1:3", State: "RUNNING"}}}
	c1, c2 := onNode(2, "h1:1"), onNode(3, "h1:2")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1, c2}, ClusterNodes: 3}, nil
		},
		complete(done(c1, 3)),
	}}
	cfg := testConfig(2, 4)
	cfg.Nodes = nodes
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, fakeLogs{c1.ID: {"gpu: no device"}})
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "no node can run a worker: all 1 hosts of the cluster (h1) are blacklisted")
	require.Contains(t, res.Diagnostics, "gpu: no device")
}

// Issue 24 item 9: a group asking node label gpu, both gpu hosts
// blacklisted: hopeless though two unlabelled hosts remain (they cannot
// run its ask). Before, two blacklisted hosts were compared with four
// NodeManagers and the application waited for ever.
func TestAMHopelessWhenTheLabelledHostsAreBlacklisted(t *testing.T) {
	nodes := &fakeNodes{nodes: []yarn.NodeReport{
		{ID: "g1:45454", State: "RUNNING", Labels: []string{"gpu"}}, {ID: "g2:45454", State: "RUNNING", Labels: []string{"gpu"}},
		{ID: "c1:45454", State: "RUNNING"}, {ID: "c2:45454", State: "RUNNING"}, {ID: "g3:45454", State: "LOST", Labels: []string{"gpu"}},
	}}
	c1, c2 := ctr(2, "g1"), ctr(3, "g2")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1, c2}, ClusterNodes: 5}, nil
		},
		complete(done(c1, 3)),
		complete(done(c2, 3)),
	}}
	cfg := testConfig(2, 4)
	cfg.Plan.NodeLabel = "gpu"
	cfg.Nodes = nodes
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, "all 2 hosts with node label gpu (g1, g2) are blacklisted")
	require.Equal(t, 3, nodes.calls.Load(), "the node list read at the start and once per newly blacklisted host")
	require.Len(t, a.Status().Blacklist, 2)
}

// One host of two blacklisted, with its two NodeManagers: not hopeless;
// the worker is replaced on the other host.
func TestAMNotHopelessWhileAHostRemains(t *testing.T) {
	nodes := &fakeNodes{nodes: []yarn.NodeReport{{ID: "h1:1", State: "RUNNING"}, {ID: "h1:2", State: "RUNNING"}, {ID: "h2:1", State: "RUNNING"}}}
	c1, c2 := onNode(2, "h1:1"), onNode(3, "h2:1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{Allocated: []yarn.Container{c1}, ClusterNodes: 3}, nil
		},
		complete(done(c1, 3)),
		alloc(c2),
		complete(done(c2, 0)),
	}}
	cfg := testConfig(1, 4)
	cfg.Nodes = nodes
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
}

// Issue 24 item 9: 3,000 short workers with FinishedHistory 50, and 500
// containers released and completed: the AM keeps 50 finished workers and
// no released id, while the counts (and the status) cover every worker.
// Before, every finished worker and released id was kept for ever.
func TestRosterBounded(t *testing.T) {
	const n, keep, batch = 3000, 50, 100
	rm := &fakeRM{register: gpuLimits}
	var surplus []yarn.Container
	for i := range n / batch {
		var cs []yarn.Container
		var ds []yarn.Completed
		for j := range batch {
			c := ctr(i*batch+j+2, fmt.Sprintf("nm%d", j%10))
			cs = append(cs, c)
			ds = append(ds, done(c, 0))
		}
		if i < 5 {
			for j := range batch {
				s := ctr(100000+i*batch+j, "nm1")
				s.AllocationRequestID = 99 // matches no ask: released
				surplus = append(surplus, s)
				cs = append(cs, s)
				ds = append(ds, yarn.Completed{ID: s.ID, ExitStatus: yarn.ExitAborted})
			}
		}
		rm.steps = append(rm.steps, alloc(cs...), complete(ds...))
	}
	cfg := testConfig(n, 0)
	cfg.FinishedHistory = keep
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Equal(t, keep, len(a.workers.byID), "workers kept")
	require.LessOrEqual(t, len(a.workers.order), 2*keep+1, "allocation-order list")
	require.LessOrEqual(t, len(a.workers.finished), 2*keep+1, "finished history")
	require.Zero(t, len(a.workers.released), "released ids the RM reported completed")
	require.LessOrEqual(t, len(a.workers.relOrder), len(surplus), "released-id queue")
	st := a.Status()
	require.Equal(t, n, st.Succeeded)
	require.Equal(t, n, a.workers.count[amstatus.StateSucceeded])
	require.Equal(t, keep, st.ContainersTotal)
	require.Equal(t, n-keep, st.ContainersForgotten)
	require.Len(t, st.Containers, keep)
	require.Equal(t, ctr(n+1, "x").ID, st.Containers[keep-1].Container, "the newest finished workers are listed")
	page := a.StatusPage(amstatus.Page{State: amstatus.StateSucceeded, Offset: keep - 1})
	require.Equal(t, keep, page.ContainersTotal)
	require.Len(t, page.Containers, 1)
}

// The worker ask names every usable, not blacklisted host of the node list
// and their racks (read before the first ask), so that the RM can grant it
// node-local, many per node heartbeat; a per-node bound (a
// SchedulingRequest) or a node label keeps it ANY alone, as does an AM
// without a node list.
func TestAskNamesTheHosts(t *testing.T) {
	nodes := []yarn.NodeReport{{ID: "h1:1", State: "RUNNING", Rack: "/r1"}, {ID: "h1:2", State: "RUNNING", Rack: "/r1"},
		{ID: "h2:1", State: "RUNNING"}, {ID: "h3:1", State: "LOST", Rack: "/r3"}}
	for _, tc := range []struct {
		name         string
		nodes        []yarn.NodeReport
		plan         func(*amplan.Plan)
		hosts, racks []string
	}{
		{name: "every usable host", nodes: nodes, hosts: []string{"h1", "h2"}, racks: []string{"/default-rack", "/r1"}},
		{name: "no node list", nodes: nil},
		{name: "per-node bound", nodes: nodes, plan: func(p *amplan.Plan) { p.MaxWorkersPerNode = 1 }},
		{name: "node label", nodes: nodes, plan: func(p *amplan.Plan) { p.NodeLabel = "gpu" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c1, c2 := onNode(2, "h1:1"), onNode(3, "h2:1")
			rm := &fakeRM{register: gpuLimits, steps: []step{alloc(c1, c2), complete(done(c1, 0), done(c2, 0))}}
			cfg := testConfig(2, 2)
			if tc.nodes != nil {
				cfg.Nodes = &fakeNodes{nodes: tc.nodes}
			}
			if tc.plan != nil {
				tc.plan(&cfg.Plan)
			}
			res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
			rm.mu.Lock()
			defer rm.mu.Unlock()
			first := rm.requests[0].Asks[0]
			require.Equal(t, 2, first.Count)
			require.Equal(t, tc.hosts, first.Hosts)
			require.Equal(t, tc.racks, first.Racks)
		})
	}
}
