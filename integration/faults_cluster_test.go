//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
)

// The minicluster's topology and fault verbs, each against a cluster of its own (the
// verbs change the cluster; the suite's stays as it was).

// sleeper is an application whose AM container records its start (one line per launch)
// and its pid, then sleeps: it never registers, so only the container's fate shows.
type sleeper struct {
	id      string
	marker  string
	pidFile string
}

func submitSleeper(t *testing.T, c *harness.Cluster) sleeper {
	t.Helper()
	dir := t.TempDir()
	s := sleeper{marker: filepath.Join(dir, "launches"), pidFile: filepath.Join(dir, "pid")}
	s.id = c.SubmitCommandApp(t, harness.CommandApp{
		Name:    t.Name(),
		Command: fmt.Sprintf(`echo $CONTAINER_ID >> %s; echo $$ > %s; exec sleep 900`, s.marker, s.pidFile),
	})
	t.Cleanup(func() { c.KillApp(t, s.id) })
	require.Eventually(t, func() bool {
		_, err := os.Stat(s.pidFile)
		return err == nil
	}, 2*time.Minute, 200*time.Millisecond, "the AM container of %s never started", s.id)
	return s
}

// launches is how often the container started (its marker's lines).
func (s sleeper) launches(t *testing.T) int {
	b, err := os.ReadFile(s.marker)
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func (s sleeper) pid(t *testing.T) int {
	b, err := os.ReadFile(s.pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// attempt is the RM's view of an application's current attempt: its AM container and node.
type attempt struct {
	ContainerID     string `json:"containerId"`
	NodeID          string `json:"nodeId"`
	NodeHTTPAddress string `json:"nodeHttpAddress"`
}

func currentAttempt(t *testing.T, c *harness.Cluster, appID string) attempt {
	t.Helper()
	var r struct {
		AppAttempts struct {
			AppAttempt harness.List[attempt] `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	c.GetJSON(t, "/ws/v1/cluster/apps/"+url.PathEscape(appID)+"/appattempts", &r)
	as := r.AppAttempts.AppAttempt
	require.NotEmpty(t, as, "%s has no attempt", appID)
	return as[len(as)-1]
}

// nmContainerState asks the NodeManager's own REST API for a container's state.
func nmContainerState(t *testing.T, c *harness.Cluster, nodeHTTP, containerID string) string {
	t.Helper()
	var r struct {
		Container struct {
			State string `json:"state"`
		} `json:"container"`
	}
	nm := &harness.Cluster{RMWebURL: "http://" + nodeHTTP, User: c.User}
	nm.GetJSON(t, "/ws/v1/node/containers/"+url.PathEscape(containerID), &r)
	return r.Container.State
}

func nodesByID(t *testing.T, c *harness.Cluster) map[string]harness.Node {
	t.Helper()
	var r struct {
		Nodes struct {
			Node harness.List[harness.Node] `json:"node"`
		} `json:"nodes"`
	}
	c.GetJSON(t, "/ws/v1/cluster/nodes?states=NEW,RUNNING,UNHEALTHY,LOST,SHUTDOWN,REBOOTED,DECOMMISSIONED", &r)
	out := map[string]harness.Node{}
	for _, n := range r.Nodes.Node {
		out[n.ID] = n
	}
	return out
}

func haState(t *testing.T, c *harness.Cluster, webURL string) string {
	t.Helper()
	var info struct {
		ClusterInfo struct {
			HAState string `json:"haState"`
		} `json:"clusterInfo"`
	}
	probe := &harness.Cluster{RMWebURL: webURL, User: c.User}
	probe.GetJSON(t, "/ws/v1/cluster/info", &info)
	return info.ClusterInfo.HAState
}

// TestClusterDistinctHosts: the suite's NodeManagers are distinct hosts 127.0.0.2, .3, ...
// to YARN, with the node ids cluster.env names.
func TestClusterDistinctHosts(t *testing.T) {
	c := harness.Get(t)
	if c.Env == nil {
		t.Fatalf("the cluster of %s has no cluster.env to compare with", harness.EnvConfDir)
	}
	byID := nodesByID(t, c)
	want := int(envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2))
	require.Len(t, byID, want)
	hosts := map[string]bool{}
	for i := 0; i < want; i++ {
		id := c.NodeID(i)
		n, ok := byID[id]
		require.True(t, ok, "NodeManager %d (%s) not at the RM: %v", i, id, byID)
		require.Equal(t, fmt.Sprintf("127.0.0.%d", i+2), n.NodeHostName)
		require.True(t, strings.HasPrefix(n.NodeHTTPAddress, n.NodeHostName+":"), "web address %s", n.NodeHTTPAddress)
		hosts[n.NodeHostName] = true
	}
	require.Len(t, hosts, want, "distinct hosts")
}

// TestHarnessRMRestartAndNMKill: four NodeManagers, the label gpu on two; an RM restart keeps
// a running container (work-preserving) and every node re-registers; nm-kill makes its node
// LOST at the RM and ends its containers; nm-start brings the same node id back.
func TestHarnessRMRestartAndNMKill(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{
		"XRES_MINICLUSTER_NODEMANAGERS": "4",
		"XRES_MINICLUSTER_LABEL_NODES":  "1,3",
		"XRES_MINICLUSTER_NM_EXPIRY_MS": "4000",
	})

	t.Run("labels and hosts", func(t *testing.T) {
		byID := nodesByID(t, c)
		require.Len(t, byID, 4)
		for i := 0; i < 4; i++ {
			n := byID[c.NodeID(i)]
			require.Equal(t, fmt.Sprintf("127.0.0.%d", i+2), n.NodeHostName, "node %d", i)
			require.Equal(t, "RUNNING", n.State)
			if i == 1 || i == 3 {
				require.Equal(t, []string{"gpu"}, []string(n.NodeLabels), "node %d", i)
			} else {
				require.Empty(t, n.NodeLabels, "node %d", i)
			}
		}
		list := harness.MustVerb(t, c.NMList)
		require.Contains(t, list, "1 "+c.NodeID(1)+" RUNNING ")
		require.Contains(t, list, "labels=gpu process=running")
	})

	app := submitSleeper(t, c)
	before := currentAttempt(t, c, app.id)
	require.NotEmpty(t, before.ContainerID)

	t.Run("rm-restart keeps the running container", func(t *testing.T) {
		out := harness.MustVerb(t, c.RMRestart)
		require.Contains(t, out, "restarted ResourceManager")
		byID := nodesByID(t, c)
		for i := 0; i < 4; i++ {
			require.Equal(t, "RUNNING", byID[c.NodeID(i)].State, "node %d after the restart", i)
		}
		// The new RM knows the application from its state store, and the same container
		// still runs: never relaunched, the same process alive.
		info, err := c.App(rpcCtx(t, 30*time.Second), app.id)
		require.NoError(t, err)
		require.Contains(t, []string{"ACCEPTED", "RUNNING"}, info.State, "%s after the restart: %s", app.id, info.Diagnostics)
		after := currentAttempt(t, c, app.id)
		require.Equal(t, before.ContainerID, after.ContainerID)
		require.Equal(t, "RUNNING", nmContainerState(t, c, before.NodeHTTPAddress, before.ContainerID))
		require.Equal(t, 1, app.launches(t))
		require.True(t, alive(app.pid(t)), "the container's process died over the RM restart")
	})

	t.Run("nm-kill makes the node LOST and ends its containers", func(t *testing.T) {
		victim := -1
		for i := 0; i < 4; i++ {
			if c.NodeID(i) == before.NodeID {
				victim = i
			}
		}
		require.NotEqual(t, -1, victim, "the AM's node %s is none of cluster.env's", before.NodeID)
		pid := app.pid(t)
		out := harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMKill(ctx, victim) })
		require.Contains(t, out, "RM: LOST")
		require.Equal(t, "LOST", nodesByID(t, c)[before.NodeID].State)
		require.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, 100*time.Millisecond,
			"the container process %d outlived its NodeManager", pid)
		// The RM ends the attempt whose AM container was on the lost node.
		got := c.WaitForAppState(t, app.id, "FAILED", "FINISHED", "KILLED")
		require.Equal(t, "FAILED", got.State, "diagnostics: %s", got.Diagnostics)

		out = harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMStart(ctx, victim) })
		require.Contains(t, out, "RM: RUNNING")
		n := nodesByID(t, c)[before.NodeID]
		require.Equal(t, "RUNNING", n.State, "the same node id is back")
	})

	t.Run("verbs refuse bad requests", func(t *testing.T) {
		ctx := rpcCtx(t, time.Minute)
		_, err := c.NMKill(ctx, 9)
		require.ErrorIs(t, err, harness.ErrVerb)
		require.ErrorContains(t, err, "no NodeManager 9: the cluster has 0..3")
		_, err = c.NMStart(ctx, 0)
		require.ErrorContains(t, err, "is already running")
		_, err = c.RMFailover(ctx)
		require.ErrorContains(t, err, "rm-failover needs the HA profile")
	})
}

// TestHarnessRMFailover: the HA profile; after rm-failover the other RM is active, the old
// one standby, the NodeManagers follow, and an RPC client given the written yarn-site.xml
// (both RMs listed) reaches the new active RM and finds the application submitted before.
func TestHarnessRMFailover(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_HA": "1"})
	rm1, rm2 := c.Env["XRES_RM1_WEBAPP_URL"], c.Env["XRES_RM2_WEBAPP_URL"]
	require.NotEmpty(t, rm1)
	require.NotEmpty(t, rm2)
	require.Equal(t, "ACTIVE", haState(t, c, rm1))
	require.Equal(t, "STANDBY", haState(t, c, rm2))
	require.Equal(t, rm1, c.RMWebURL)
	require.Equal(t, "true", c.Conf("yarn.resourcemanager.ha.enabled"))
	require.Equal(t, "rm1,rm2", c.Conf("yarn.resourcemanager.ha.rm-ids"))

	app := submitSleeper(t, c)
	out := harness.MustVerb(t, c.RMFailover)
	require.Contains(t, out, "failed over from rm1 to rm2")
	require.Equal(t, "STANDBY", haState(t, c, rm1))
	require.Equal(t, "ACTIVE", haState(t, c, rm2))
	require.Equal(t, rm2, c.RMWebURL, "the harness follows the active RM")

	cl := rpcClient(t, c) // rm1 first in the list: the client must fail over by itself
	ctx := rpcCtx(t, 2*time.Minute)
	nodes, err := raw(cl).GetClusterNodes(ctx, hadoopyarn.NodeStateProto_NS_RUNNING)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	id, err := yarn.ParseApplicationID(app.id)
	require.NoError(t, err)
	rep, err := raw(cl).GetApplicationReport(ctx, id)
	require.NoError(t, err, "the new active RM recovered %s", app.id)
	require.Equal(t, app.id, yarn.ApplicationID(rep.GetApplicationId()))
	// So does the REST client (rm1's 307 leads it to rm2).
	rc, _ := restClient(t, c, nil)
	m, err := rc.ClusterMetrics(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, m.ActiveNodes)
	require.Equal(t, rm2, rc.Active())
	require.Equal(t, 1, app.launches(t), "failover relaunched the container")
	require.True(t, alive(app.pid(t)))

	// And back: rm-restart in HA restarts the active RM (rm2) and makes it active again.
	out = harness.MustVerb(t, c.RMRestart)
	require.Contains(t, out, "restarted ResourceManager rm2")
	require.Equal(t, "ACTIVE", haState(t, c, rm2))
}

// rmConf reads one key of the RM's effective configuration (its /conf page).
func rmConf(t *testing.T, c *harness.Cluster, key string) string {
	t.Helper()
	ctx := rpcCtx(t, 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.RMWebURL+"/conf", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	m := regexp.MustCompile(`<name>` + regexp.QuoteMeta(key) + `</name><value>([^<]*)</value>`).FindSubmatch(b)
	require.NotNil(t, m, "%s not in the RM's /conf", key)
	return string(m[1])
}
