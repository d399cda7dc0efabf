//go:build integration

package integration

// Where workers go (issue 14): node labels for the AM and the workers, and
// at most K workers per node as a YARN SchedulingRequest with a node-scope
// cardinality constraint, read back from the RM's own REST reports.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// nodeLabel is the label run.sh puts on XRES_MINICLUSTER_LABEL_NODES.
const nodeLabel = "gpu"

// clusterWith is the suite's cluster when want accepts its RUNNING nodes,
// else an extra cluster started with settings.
func clusterWith(t *testing.T, settings map[string]string, want func([]harness.Node) bool) *harness.Cluster {
	t.Helper()
	c := harness.Get(t)
	var running []harness.Node
	for _, n := range c.Nodes(t) {
		if n.State == "RUNNING" {
			running = append(running, n)
		}
	}
	if want(running) {
		return c
	}
	t.Logf("the suite's cluster does not fit (%d running nodes); starting one with %v", len(running), settings)
	return harness.StartExtra(t, settings)
}

func labelled(ns []harness.Node) int {
	k := 0
	for _, n := range ns {
		for _, l := range n.NodeLabels {
			if l == nodeLabel {
				k++
			}
		}
	}
	return k
}

// nodeLabels maps each node id to its labels.
func nodeLabels(t *testing.T, c *harness.Cluster) map[string][]string {
	out := map[string][]string{}
	for _, n := range c.Nodes(t) {
		out[n.ID] = n.NodeLabels
	}
	return out
}

// placed is one application of the placement tests: am submit following
// it, with countingWorker workers that run until release is written.
type placed struct {
	p       *amProc
	app     string
	release string
	ctx     context.Context
}

// submitPlaced submits workers workers named name on c with the extra
// configuration lines, 8 fake GPUs and one per worker.
func submitPlaced(t *testing.T, c *harness.Cluster, name string, workers int, extra ...string) placed {
	t.Helper()
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 8, extra...)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	t.Cleanup(cancel)
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(workers),
		"--name", name, "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)
	return placed{p: p, app: app, release: release, ctx: ctx}
}

// Labels: the AM (yarn.application.node-label) and every worker
// (yarn.taskmanager.node-label) land on nodes labelled gpu, on a cluster
// where half the nodes are; the tags (yarn.tags) reach the RM.

// Labels: the AM (yarn.application.node-label) and every worker
// (yarn.taskmanager.node-label) land on nodes labelled gpu, on a cluster
// where half the nodes are; the tags (yarn.tags) reach the RM.
func TestPlacementNodeLabels(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_LABEL_NODES": "2,3"},
		func(ns []harness.Node) bool { l := labelled(ns); return l >= 2 && len(ns)-l >= 1 })
	const workers = 3
	a := submitPlaced(t, c, "xres-it-labels", workers,
		"yarn.application.node-label: "+nodeLabel, "yarn.taskmanager.node-label: "+nodeLabel, "yarn.tags: xres-it, Placement")

	waitWorkersRunning(t, a.ctx, c, a.app, workers, 3*time.Minute)
	cs, err := rmContainers(a.ctx, c, a.app)
	require.NoError(t, err)
	require.Len(t, cs, workers+1, "the AM and %d workers: %+v", workers, cs)
	labels := nodeLabels(t, c)
	for _, x := range cs {
		require.Contains(t, labels[x.AssignedNodeID], nodeLabel, "container %s on %s (labels %v)", x.ContainerID, x.AssignedNodeID, labels[x.AssignedNodeID])
	}
	var r struct {
		App struct {
			ApplicationTags string `json:"applicationTags"`
		} `json:"app"`
	}
	require.NoError(t, restGet(a.ctx, c, "/ws/v1/cluster/apps/"+a.app, &r))
	// Hadoop releases differ on lower-casing tags.
	require.ElementsMatch(t, []string{"xres-it", "placement"}, strings.Split(strings.ToLower(r.App.ApplicationTags), ","), "the RM's tags")

	releaseAndSucceed(t, a.p, a.app, a.release)
}

// Anti-affinity: xres.placement.max-workers-per-node=1 on 4 nodes. 4
// workers run one per node; a 5th stays pending while the 4 run (each node
// offers YARN 2 GPUs, so without the constraint it would be placed), the
// AM's status says why, and slot.request.timeout ends the application
// naming the constraint. K=2 is accepted too (maxCardinality 1).
func TestPlacementMaxWorkersPerNode(t *testing.T) {
	// LABEL_NODES empty: an extra cluster does not take labels from this
	// process's environment.
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_LABEL_NODES": ""},
		func(ns []harness.Node) bool { return len(ns) == 4 && labelled(ns) == 0 })
	const nodes = 4
	// The loopback "hosts" share one coordination file, so the fake pool of
	// 8 GPUs (submitPlaced) serves all of them.

	t.Run("one per node", func(t *testing.T) {
		a := submitPlaced(t, c, "xres-it-anti-affinity", nodes, "xres.placement.max-workers-per-node: 1")
		perNode := map[string]int{}
		for _, w := range waitWorkersRunning(t, a.ctx, c, a.app, nodes, 3*time.Minute) {
			perNode[w.Node]++
		}
		require.Len(t, perNode, nodes, "one worker per node: %v", perNode)
		st, err := amStatusOf(a.ctx, c, a.app)
		require.NoError(t, err)
		require.Zero(t, st.Failed, "%+v", st.Containers)
		releaseAndSucceed(t, a.p, a.app, a.release)
	})

	t.Run("two per node", func(t *testing.T) {
		a := submitPlaced(t, c, "xres-it-two-per-node", 6, "xres.placement.max-workers-per-node: 2")
		perNode := map[string]int{}
		for _, w := range waitWorkersRunning(t, a.ctx, c, a.app, 6, 3*time.Minute) {
			perNode[w.Node]++
		}
		for n, k := range perNode {
			require.LessOrEqual(t, k, 2, "workers on %s: %v", n, perNode)
		}
		releaseAndSucceed(t, a.p, a.app, a.release)
	})

	t.Run("the fifth waits", func(t *testing.T) {
		a := submitPlaced(t, c, "xres-it-anti-affinity-5", nodes+1,
			"xres.placement.max-workers-per-node: 1", "slot.request.timeout: 40 s")
		waitWorkersRunning(t, a.ctx, c, a.app, nodes, 3*time.Minute)
		// Bounded observation: for 10 s the fifth stays pending, the four run,
		// and the status says why.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
			st, err := amStatusOf(a.ctx, c, a.app)
			require.NoError(t, err)
			require.Len(t, runningWorkers(st), nodes, "%+v", st.Containers)
			require.Equal(t, 1, st.Pending, "%+v", st)
			require.Zero(t, st.Failed, "%+v", st.Containers)
			require.Contains(t, st.Unplaceable, "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 4 nodes")
			cs, err := rmContainers(a.ctx, c, a.app)
			require.NoError(t, err)
			require.Len(t, cs, nodes+1, "the RM's containers: the AM and 4 workers: %+v", cs)
		}
		code := a.p.wait(t)
		require.Equal(t, 1, code, "am submit exit code\n%s", a.p.output())
		r, err := getRMApp(a.ctx, c, a.app)
		require.NoError(t, err)
		require.Equal(t, "FAILED", r.FinalStatus, "%+v", r)
		require.Contains(t, r.Diagnostics, "not granted within slot.request.timeout=40s")
		require.Contains(t, r.Diagnostics, "cannot be placed: xres.placement.max-workers-per-node=1")
	})
}

// Anti-affinity within a label: yarn.taskmanager.node-label with
// max-workers-per-node 1 (the label goes as the constraint's node-partition
// target): of 3 workers, one runs on each of the 2 labelled nodes and the
// third waits.
func TestPlacementLabelledAntiAffinity(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_LABEL_NODES": "2,3"},
		func(ns []harness.Node) bool { return labelled(ns) == 2 && len(ns) >= 3 })
	a := submitPlaced(t, c, "xres-it-labelled-anti-affinity", 3,
		"yarn.taskmanager.node-label: "+nodeLabel, "xres.placement.max-workers-per-node: 1")
	labels := nodeLabels(t, c)
	perNode := map[string]int{}
	for _, w := range waitWorkersRunning(t, a.ctx, c, a.app, 2, 3*time.Minute) {
		perNode[w.Node]++
		require.Contains(t, labels[w.Node], nodeLabel, "worker %s on %s", w.Container, w.Node)
	}
	require.Len(t, perNode, 2, "one worker per labelled node: %v", perNode)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		st, err := amStatusOf(a.ctx, c, a.app)
		require.NoError(t, err)
		require.Len(t, runningWorkers(st), 2, "%+v", st.Containers)
		require.Equal(t, 1, st.Pending, "%+v", st)
	}
	c.KillApp(t, a.app)
	a.p.wait(t)
}
