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

// Labels: the AM (yarn.application.node-label) and every worker
// (yarn.taskmanager.node-label) land on nodes labelled gpu, on a cluster
// where half the nodes are; the tags (yarn.tags) reach the RM.
func TestPlacementNodeLabels(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_LABEL_NODES": "2,3"},
		func(ns []harness.Node) bool { l := labelled(ns); return l >= 2 && len(ns)-l >= 1 })
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 2,
		"yarn.application.node-label: "+nodeLabel,
		"yarn.taskmanager.node-label: "+nodeLabel,
		"yarn.tags: xres-it, Placement")
	release := filepath.Join(dir, "release")
	const workers = 3

	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(workers),
		"--name", "xres-it-labels", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)

	waitWorkersRunning(t, ctx, c, app, workers, 3*time.Minute)
	cs, err := rmContainers(ctx, c, app)
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
	require.NoError(t, restGet(ctx, c, "/ws/v1/cluster/apps/"+app, &r))
	// Hadoop releases differ on lower-casing tags.
	require.ElementsMatch(t, []string{"xres-it", "placement"}, strings.Split(strings.ToLower(r.App.ApplicationTags), ","), "the RM's tags")

	releaseAndSucceed(t, p, app, release)
}

// Anti-affinity: xres.placement.max-workers-per-node=1 on 4 nodes. 4
// workers run one per node (each node could hold 2 of them without the
// constraint); a 5th stays pending while the 4 run, the AM's status says
// why, and slot.request.timeout ends the application naming the
// constraint.
func TestPlacementMaxWorkersPerNode(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4"},
		func(ns []harness.Node) bool { return len(ns) == 4 && labelled(ns) == 0 })
	const nodes = 4
	// The loopback "hosts" share one coordination file, so the fake pool of 8
	// GPUs serves all of them; each node offers YARN 2.

	t.Run("one per node", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeAMConf(t, dir, 8, "xres.placement.max-workers-per-node: 1")
		release := filepath.Join(dir, "release")
		ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
		defer cancel()
		p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(nodes),
			"--name", "xres-it-anti-affinity", "--"}, countingWorker(dir, release)...)...)
		app := p.appID(t)
		killOnCleanup(t, c, app, release)
		run := waitWorkersRunning(t, ctx, c, app, nodes, 3*time.Minute)
		perNode := map[string]int{}
		for _, w := range run {
			perNode[w.Node]++
		}
		require.Len(t, perNode, nodes, "one worker per node: %v", perNode)
		st, err := amStatusOf(ctx, c, app)
		require.NoError(t, err)
		require.Zero(t, st.Failed, "%+v", st.Containers)
		releaseAndSucceed(t, p, app, release)
	})

	t.Run("two per node", func(t *testing.T) {
		// maxCardinality 1: accepted, 6 workers on 4 nodes, none above 2.
		dir := t.TempDir()
		cfg := writeAMConf(t, dir, 8, "xres.placement.max-workers-per-node: 2")
		release := filepath.Join(dir, "release")
		ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
		defer cancel()
		p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", "6",
			"--name", "xres-it-two-per-node", "--"}, countingWorker(dir, release)...)...)
		app := p.appID(t)
		killOnCleanup(t, c, app, release)
		perNode := map[string]int{}
		for _, w := range waitWorkersRunning(t, ctx, c, app, 6, 3*time.Minute) {
			perNode[w.Node]++
		}
		for n, k := range perNode {
			require.LessOrEqual(t, k, 2, "workers on %s: %v", n, perNode)
		}
		releaseAndSucceed(t, p, app, release)
	})

	t.Run("the fifth waits", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeAMConf(t, dir, 8, "xres.placement.max-workers-per-node: 1", "slot.request.timeout: 40 s")
		release := filepath.Join(dir, "release")
		ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
		defer cancel()
		p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(nodes + 1),
			"--name", "xres-it-anti-affinity-5", "--"}, countingWorker(dir, release)...)...)
		app := p.appID(t)
		killOnCleanup(t, c, app, release)
		waitWorkersRunning(t, ctx, c, app, nodes, 3*time.Minute)
		// Bounded observation: for 10 s the fifth stays pending, the four run,
		// and the status says why.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
			st, err := amStatusOf(ctx, c, app)
			require.NoError(t, err)
			require.Len(t, runningWorkers(st), nodes, "%+v", st.Containers)
			require.Equal(t, 1, st.Pending, "%+v", st)
			require.Zero(t, st.Failed, "%+v", st.Containers)
			require.Contains(t, st.Unplaceable, "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 4 nodes")
			cs, err := rmContainers(ctx, c, app)
			require.NoError(t, err)
			require.Len(t, cs, nodes+1, "the RM's containers: the AM and 4 workers: %+v", cs)
		}
		code := p.wait(t)
		require.Equal(t, 1, code, "am submit exit code\n%s", p.output())
		a, err := getRMApp(ctx, c, app)
		require.NoError(t, err)
		require.Equal(t, "FAILED", a.FinalStatus, "%+v", a)
		require.Contains(t, a.Diagnostics, "not granted within slot.request.timeout=40s")
		require.Contains(t, a.Diagnostics, "cannot be placed: xres.placement.max-workers-per-node=1")
	})
}

// Anti-affinity within a label: yarn.taskmanager.node-label with
// max-workers-per-node 1 (the label goes as the constraint's node-partition
// target): 2 workers, one on each labelled node; a third waits.
func TestPlacementLabelledAntiAffinity(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_LABEL_NODES": "2,3"},
		func(ns []harness.Node) bool { return labelled(ns) == 2 && len(ns) >= 3 })
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 8, "yarn.taskmanager.node-label: "+nodeLabel, "xres.placement.max-workers-per-node: 1")
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", "3",
		"--name", "xres-it-labelled-anti-affinity", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)
	run := waitWorkersRunning(t, ctx, c, app, 2, 3*time.Minute)
	labels := nodeLabels(t, c)
	perNode := map[string]int{}
	for _, w := range run {
		perNode[w.Node]++
		require.Contains(t, labels[w.Node], nodeLabel, "worker %s on %s", w.Container, w.Node)
	}
	require.Len(t, perNode, 2, "one worker per labelled node: %v", perNode)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		st, err := amStatusOf(ctx, c, app)
		require.NoError(t, err)
		require.Len(t, runningWorkers(st), 2, "%+v", st.Containers)
		require.Equal(t, 1, st.Pending, "%+v", st)
	}
	c.KillApp(t, app)
	p.wait(t)
}
