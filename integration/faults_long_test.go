//go:build integration

package integration

// Faults as long as production's (issue 23): the RM down for 90 s, as a real restart
// takes (JVM start, state-store recovery, NodeManagers re-registering), and the AM and
// the RM losing each other for longer than the AM's 30 s call deadline while both live (a partition, through the harness's
// fault proxy on the scheduler port). A one-second in-JVM restart proves only that the AM
// survives one second.

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/am"
)

// The RM is down for 90 s while 2 workers run: the AM retries its heartbeat (Hadoop's
// yarn.resourcemanager.connect.* policy, 15 min), the workers run on, and once the RM is
// back the AM registers again, the same workers are listed, none started twice, and the
// application SUCCEEDS. Before the AM followed that policy it gave up after ~11 s.
func TestFaultRMDown90s(t *testing.T) { rmDown(t, 90*time.Second) }

// The same for 5 minutes, an RM host rebooted or a slow failover by hand: still inside
// Hadoop's 15 min connect.max-wait.ms, so the AM waits and the same workers run on.
func TestFaultRMDown5m(t *testing.T) { rmDown(t, 5*time.Minute) }

func rmDown(t *testing.T, d time.Duration) {
	c := harness.Get(t)
	app := rmFaultWhileRunning(t, c, fmt.Sprintf("rm-down-%s", d), c.RMRestartDown(d), d, true)
	require.Positive(t, amLogCount(c, app, "heartbeat failed; workers keep running"), "the AM saw the RM go")
}

// The AM reaches the RM's scheduler port only through a fault proxy (flink.yarn.* in the job's
// configuration moves the AM's yarn.resourcemanager.scheduler.address, as in Flink). Once 2
// workers run, the proxy blackholes both ways: nothing of the AM's reaches the RM (its allocate
// call hangs until its 30 s deadline, am.DefaultCallTimeout), the workers keep running. The
// partition lasts until the AM has logged a failed heartbeat (at least the call deadline: a
// partition of exactly 30 s rarely outlasted it, and the test then proved nothing of the AM's
// handling of a failed call). When it heals the AM heartbeats again (the late bytes delivered,
// as TCP would) and the application SUCCEEDS with the same workers, each started once.
func TestFaultAMRMPartition30s(t *testing.T) {
	c := harness.Get(t)
	sched := c.Env["XRES_RM_SCHEDULER_ADDRESS"]
	require.NotEmpty(t, sched, "XRES_RM_SCHEDULER_ADDRESS in cluster.env")
	proxy := harness.StartProxy(t, "127.0.0.1:0", sched)

	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4, "flink.yarn.resourcemanager.scheduler.address: "+proxy.Addr())
	release := filepath.Join(dir, "release")
	const workers = 2
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(workers), "--name", "xres-it-fault-partition", "--"},
		countingWorker(dir, release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	before := waitWorkersRunning(t, ctx, c, app, workers, 2*time.Minute)
	require.Positive(t, proxy.Stats().ToTarget, "the AM's heartbeats go through the proxy: %s", proxy.Stats())

	const failedLine = "heartbeat failed; workers keep running"
	failedBefore := amLogCount(c, app, failedLine)
	proxy.Blackhole()
	cut := proxy.Stats()
	t.Logf("partition: %s", proxy)
	began := time.Now()
	// Until the AM's call past its deadline failed (30 s, then the log line): the budget is
	// the deadline, a heartbeat interval and room for a loaded host.
	eventually(t, am.DefaultCallTimeout+2*time.Minute, "the AM logging a failed heartbeat during the partition", func() (bool, string) {
		n := amLogCount(c, app, failedLine)
		return n > failedBefore, fmt.Sprintf("%d failed heartbeats logged", n-failedBefore)
	})
	require.GreaterOrEqual(t, time.Since(began), am.DefaultCallTimeout, "a heartbeat failed before its call deadline")
	// The workers ran on through the partition (the RM and the tracking page see them), and
	// nothing of the AM's reached the RM meanwhile.
	run := waitWorkersRunning(t, ctx, c, app, workers, 10*time.Second)
	require.True(t, sameKeys(run, before), "workers during the partition %v, before %v", keys(run), keys(before))
	require.Equal(t, cut.ToTarget, proxy.Stats().ToTarget, "bytes reached the RM through the partition")
	proxy.Pass()
	t.Logf("partition healed after %s: %s", time.Since(began).Round(time.Millisecond), proxy.Stats())
	// The AM heartbeats again: its calls reach the RM through the healed proxy, and whatever
	// failed during the partition (a call past its 30 s deadline) it logged and got over.
	eventually(t, 2*time.Minute, "the AM heartbeating again", func() (bool, string) {
		st := proxy.Stats()
		return st.ToTarget > cut.ToTarget+200, st.String()
	})
	failed := amLogCount(c, app, failedLine) - failedBefore
	require.Positive(t, failed, "the AM saw its heartbeat fail")
	t.Logf("recovery: the AM heartbeats again %s after the partition began (%d failed heartbeats logged)",
		time.Since(began).Round(time.Millisecond), failed)

	releaseAndSucceed(t, p, app, release)
	for id := range requireStartedOnce(t, dir, workers) {
		require.Contains(t, before, id, "a worker ran in a container other than the first ones")
	}
}

// A slow NodeManager: NodeManager 1 is reached only through the fault proxy
// (XRES_MINICLUSTER_PROXIED_NODES=1), which holds every chunk to and from its container
// manager for 1 s. Two workers of 2 GPUs each (one per node, 2 GPUs each) start, the one on the
// slow node through the proxy (the RM's start of an AM there too), and the application SUCCEEDS.
func TestFaultSlowNodeManager(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_PROXIED_NODES": "1"})
	proxy := c.NMProxy(t, 1)
	proxy.Delay(time.Second)

	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "-D", "external-resource.gpu.amount=2", "--workers", "2",
		"--name", "xres-it-fault-slow-nm", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	t0 := time.Now()
	run := waitWorkersRunning(t, ctx, c, app, 2, 3*time.Minute)
	nodes := map[string]bool{}
	for _, w := range run {
		nodes[w.Node] = true
	}
	require.True(t, nodes[c.NodeID(1)], "a worker runs on the slow node %s: %v", c.NodeID(1), keys(nodes))
	st := proxy.Stats()
	t.Logf("recovery: both workers running %s after submission seen; slow node's proxy: %s", time.Since(t0).Round(time.Millisecond), st)
	require.Positive(t, st.Accepted, "the AM reached the slow node through the proxy")
	require.Positive(t, st.ToTarget)

	releaseAndSucceed(t, p, app, release)
	requireStartedOnce(t, dir, 2)
}

// A NodeManager the AM cannot reach while the RM still reports it RUNNING
// (its container-management port resets every new connection; its heartbeats
// to the RM go on): the worker the RM places there does not count as
// failed (yarn.maximum-failed-containers=0: before, that first failed
// start ended the application), the node is blacklisted for
// xres.yarn.blacklist.timeout, and once it answers again and the
// blacklisting has expired the replacement runs there.
//
// The RM's AM launcher reaches the node through the same proxy, so the proxy
// refuses only once the AM's own container is started: at once if the RM put
// the AM on the other node, after the launcher's connection if on this one
// (the AM cannot connect before its container runs).
func TestFaultUnreachableNodeManager(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_PROXIED_NODES": "1"})
	proxy := c.NMProxy(t, 1)
	host1, _, _ := strings.Cut(c.NodeID(1), ":")

	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	// Each worker takes a NodeManager's 2 GPUs: the RM must place one on
	// the unreachable node.
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "-D", "external-resource.gpu.amount=2", "--workers", "2",
		"-D", "yarn.maximum-failed-containers=0", "-D", "xres.yarn.blacklist.timeout=20s",
		"--name", "xres-it-fault-unreachable-nm", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	amNode := ""
	eventually(t, 2*time.Minute, "the AM's container allocated", func() (bool, string) {
		amNode = amContainerNode(ctx, c, app)
		return amNode != "", "no AM container yet"
	})
	if amNode == c.NodeID(1) {
		eventually(t, 2*time.Minute, "the RM's AM launcher through the proxy", func() (bool, string) {
			st := proxy.Stats()
			return st.Accepted > 0, st.String()
		})
	}
	proxy.Refuse()
	t.Logf("AM on %s; the proxy refuses new connections from now: %s", amNode, proxy.Stats())

	eventually(t, 3*time.Minute, "the unreachable node blacklisted", func() (bool, string) {
		st, err := amStatusOf(ctx, c, app)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(st.Blacklist, host1), fmt.Sprintf("state %s, blacklist %v, failed %d", st.State, st.Blacklist, st.Failed)
	})
	require.Positive(t, proxy.Stats().Refused, "the AM tried the node: %s", proxy.Stats())
	proxy.Pass()
	waitWorkersRunning(t, ctx, c, app, 2, 3*time.Minute)
	st, err := amStatusOf(ctx, c, app)
	require.NoError(t, err)
	require.Zero(t, st.Failed, "a node that did not answer is no failure of the worker")
	releaseAndSucceed(t, p, app, release)
}

// amContainerNode is the node id of the application's current AM container, or "" while
// the RM has not allocated one (or its REST API did not answer).
func amContainerNode(ctx context.Context, c *harness.Cluster, app string) string {
	var r struct {
		AppAttempts struct {
			AppAttempt harness.List[attempt] `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	if err := restGet(ctx, c, "/ws/v1/cluster/apps/"+url.PathEscape(app)+"/appattempts", &r); err != nil {
		return ""
	}
	as := r.AppAttempts.AppAttempt
	if len(as) == 0 {
		return ""
	}
	return as[len(as)-1].NodeID
}
