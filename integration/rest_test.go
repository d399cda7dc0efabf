//go:build integration

package integration

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

// restClient builds the REST client the way xres does: HADOOP_CONF_DIR →
// conf.LoadHadoop → yarn.RMWebappURLs → rest.New.
func restClient(t *testing.T, c *harness.Cluster, mutate func(*conf.HadoopConfig)) (*rest.Client, *conf.HadoopConfig) {
	t.Helper()
	hc, err := conf.LoadHadoop(c.ConfDir)
	require.NoError(t, err)
	if mutate != nil {
		mutate(hc)
	}
	urls, err := yarn.RMWebappURLs(hc)
	require.NoError(t, err)
	cl, err := rest.New(rest.Config{Endpoints: urls, User: c.User, RetryWaitMin: 50 * time.Millisecond, RetryWaitMax: 200 * time.Millisecond})
	require.NoError(t, err)
	return cl, hc
}

func restCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestRESTConfigMatchesCluster(t *testing.T) {
	c := harness.Get(t)
	_, hc := restClient(t, c, nil)
	urls, err := yarn.RMWebappURLs(hc)
	require.NoError(t, err)
	require.Equal(t, []string{strings.TrimRight(c.RMWebURL, "/")}, urls)
	addrs, err := yarn.RMAddresses(hc, yarn.RMClient)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, c.Conf("yarn.resourcemanager.address"), addrs[0])
	fs, ok := hc.Get("fs.defaultFS")
	require.True(t, ok)
	require.Equal(t, "hdfs://"+c.NameNode, fs)
	types, _ := hc.Get("yarn.resource-types")
	require.Contains(t, types, "yarn.io/gpu")
}

func TestRESTClusterInfoAndMetrics(t *testing.T) {
	c := harness.Get(t)
	cl, _ := restClient(t, c, nil)
	ctx := restCtx(t, time.Minute)

	info, err := cl.ClusterInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, "STARTED", info.State)
	require.Equal(t, "ACTIVE", info.HAState)
	require.NotEmpty(t, info.HadoopVersion)

	active, err := cl.ActiveRM(ctx)
	require.NoError(t, err)
	require.Equal(t, strings.TrimRight(c.RMWebURL, "/"), active)

	wantNodes := envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)
	wantGPUs := envInt(t, "XRES_MINICLUSTER_GPUS", 2)
	m, err := cl.ClusterMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, wantNodes, int64(m.ActiveNodes))
	require.Positive(t, int64(m.TotalMB))
	gpus, ok := m.TotalClusterResources.Value("yarn.io/gpu")
	require.True(t, ok, "metrics list no yarn.io/gpu: %+v", m.TotalClusterResources)
	require.Equal(t, wantNodes*wantGPUs, gpus)
}

func TestRESTNodesOfferGPUs(t *testing.T) {
	c := harness.Get(t)
	cl, _ := restClient(t, c, nil)
	nodes, err := cl.Nodes(restCtx(t, time.Minute), "RUNNING")
	require.NoError(t, err)
	require.Len(t, nodes, int(envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)))
	wantGPUs := envInt(t, "XRES_MINICLUSTER_GPUS", 2)
	for _, n := range nodes {
		gpus, ok := n.Total("yarn.io/gpu")
		require.True(t, ok, "node %s lists no yarn.io/gpu", n.ID)
		require.Equal(t, wantGPUs, gpus, "node %s", n.ID)
		one, err := cl.Node(restCtx(t, time.Minute), n.ID)
		require.NoError(t, err)
		require.Equal(t, n.NodeHTTPAddress, one.NodeHTTPAddress)
	}
	_, err = cl.Node(restCtx(t, time.Minute), "no-such-host:1")
	require.ErrorIs(t, err, rest.ErrNotFound)
}

// TestRESTSubmitAndKill submits an application whose AM is `sleep`, sees
// the RM launch its container, kills it and sees it KILLED.
func TestRESTSubmitAndKill(t *testing.T) {
	c := harness.Get(t)
	cl, _ := restClient(t, c, nil)
	ctx := restCtx(t, 3*time.Minute)

	// For its first seconds (yarn.resourcemanager.work-preserving-recovery.
	// scheduling-wait-ms, 10 s by default) the RM reports the configured
	// maximum allocation, unbounded here (Java's Long.MAX_VALUE); after that,
	// the largest NodeManager's. The AM's fail-fast check relies on the nodes
	// for that reason; here we wait for the RM to settle.
	var na *rest.NewApplication
	var maxGPU int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		na, err = cl.NewApplication(ctx)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(na.ApplicationID, "application_"), na.ApplicationID)
		var ok bool
		maxGPU, ok = na.MaximumResourceCapability.Value("yarn.io/gpu")
		require.True(t, ok)
		if maxGPU != math.MaxInt64 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	require.Equal(t, envInt(t, "XRES_MINICLUSTER_GPUS", 2), maxGPU)
	c.KeepAppLogs(t, na.ApplicationID)

	err := cl.Submit(ctx, &rest.ApplicationSubmission{
		ApplicationID:   na.ApplicationID,
		ApplicationName: "xres-rest-sleep",
		ApplicationType: "XRES-TEST",
		MaxAppAttempts:  1,
		Resource:        &rest.AMResource{Memory: 128, VCores: 1},
		ApplicationTags: &rest.Tags{Tag: []string{"xres-rest-test"}},
		AMContainerSpec: rest.ContainerLaunchContext{
			Commands:    rest.Commands{Command: "/bin/sh -c 'echo started; sleep 60' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
			Environment: rest.StringEntries(map[string]string{"XRES_TEST": "rest"}),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = cl.Kill(ctx, na.ApplicationID, "test cleanup")
	})

	// An AM that never registers stays ACCEPTED; its container runs.
	app, err := cl.WaitForState(ctx, na.ApplicationID, 200*time.Millisecond, "ACCEPTED", "RUNNING")
	require.NoError(t, err)
	require.Equal(t, "xres-rest-sleep", app.Name)
	require.Equal(t, c.User, app.User)
	deadline = time.Now().Add(time.Minute)
	for app.RunningContainers < 1 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		app, err = cl.App(ctx, na.ApplicationID)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, app.RunningContainers, "the RM never launched the AM container: %+v", app)
	require.NotEmpty(t, app.AMHostHTTPAddress)

	st, err := cl.AppState(ctx, na.ApplicationID)
	require.NoError(t, err)
	require.Contains(t, []string{"ACCEPTED", "RUNNING"}, st)

	apps, err := cl.Apps(ctx, rest.AppsFilter{States: []string{"ACCEPTED", "RUNNING"}, ApplicationTags: []string{"xres-rest-test"}})
	require.NoError(t, err)
	var ids []string
	for _, a := range apps {
		ids = append(ids, a.ID)
	}
	require.Contains(t, ids, na.ApplicationID)

	st, err = cl.Kill(ctx, na.ApplicationID, "killed by xres rest test")
	require.NoError(t, err)
	require.Contains(t, []string{"KILLING", "KILLED", "ACCEPTED", "RUNNING"}, st)
	app, err = cl.WaitForState(ctx, na.ApplicationID, 200*time.Millisecond, "KILLED")
	require.NoError(t, err)
	require.Equal(t, "KILLED", app.FinalStatus)

	// Killing an ended application answers KILLED again; anything but
	// KILLED as a target is the RM's BadRequestException.
	st, err = cl.Kill(ctx, na.ApplicationID, "")
	require.NoError(t, err)
	require.Equal(t, "KILLED", st)

	_, err = cl.App(ctx, "application_1_0001")
	var re *rest.RemoteError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, rest.ErrNotFound)
	require.Equal(t, "org.apache.hadoop.yarn.webapp.NotFoundException", re.JavaClassName)
}

func TestRESTWritesNeedAUser(t *testing.T) {
	c := harness.Get(t)
	hc, err := conf.LoadHadoop(c.ConfDir)
	require.NoError(t, err)
	urls, err := yarn.RMWebappURLs(hc)
	require.NoError(t, err)
	cl, err := rest.New(rest.Config{Endpoints: urls}) // no user.name
	require.NoError(t, err)
	_, err = cl.NewApplication(restCtx(t, time.Minute))
	require.ErrorIs(t, err, rest.ErrUnauthorized)
	require.ErrorContains(t, err, "AuthorizationException")
}

// TestRESTHAFailover configures an HA pair whose first RM is down and checks
// that every call reaches the live one, and that a standby RM's redirect is
// followed to it.
func TestRESTHAFailover(t *testing.T) {
	c := harness.Get(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	live := strings.TrimPrefix(strings.TrimRight(c.RMWebURL, "/"), "http://")

	cl, hc := restClient(t, c, func(hc *conf.HadoopConfig) {
		hc.Set("yarn.resourcemanager.ha.enabled", "true")
		hc.Set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2")
		hc.Set("yarn.resourcemanager.webapp.address.rm1", deadAddr)
		hc.Set("yarn.resourcemanager.webapp.address.rm2", live)
	})
	urls, err := yarn.RMWebappURLs(hc)
	require.NoError(t, err)
	require.Equal(t, []string{"http://" + deadAddr, "http://" + live}, urls)

	ctx := restCtx(t, time.Minute)
	m, err := cl.ClusterMetrics(ctx)
	require.NoError(t, err)
	require.Positive(t, int64(m.ActiveNodes))
	require.Equal(t, "http://"+live, cl.Active())

	t.Run("standby redirect", func(t *testing.T) {
		standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			loc := "http://" + live + r.URL.RequestURI()
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusTemporaryRedirect)
			_, _ = io.WriteString(w, "This is standby RM. The redirect url is: "+loc)
		}))
		defer standby.Close()
		cl, err := rest.New(rest.Config{Endpoints: []string{standby.URL}, User: c.User})
		require.NoError(t, err)
		na, err := cl.NewApplication(ctx) // a POST, redirected
		require.NoError(t, err)
		require.NotEmpty(t, na.ApplicationID)
		require.Equal(t, "http://"+live, cl.Active())
	})

	t.Run("standby only", func(t *testing.T) {
		standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTemporaryRedirect)
			_, _ = io.WriteString(w, "This is standby RM. Can not find any active RM.")
		}))
		defer standby.Close()
		cl, err := rest.New(rest.Config{Endpoints: []string{standby.URL, "http://" + deadAddr}, Retries: 1,
			RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond})
		require.NoError(t, err)
		start := time.Now()
		_, err = cl.ClusterMetrics(ctx)
		require.ErrorIs(t, err, rest.ErrNoActiveRM)
		require.ErrorContains(t, err, "Can not find any active RM")
		require.Less(t, time.Since(start), 10*time.Second)
	})
}
