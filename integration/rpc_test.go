//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/yarntest"
)

// rmAddrs reads the RM addresses of one service from the cluster's HADOOP_CONF_DIR.
func rmAddrs(t *testing.T, c *harness.Cluster, which yarn.RMService) []string {
	t.Helper()
	hc, err := conf.LoadHadoop(c.ConfDir)
	require.NoError(t, err)
	addrs, err := yarn.RMAddresses(hc, which)
	require.NoError(t, err)
	require.NotEmpty(t, addrs)
	return addrs
}

func rpcClient(t *testing.T, c *harness.Cluster, addrs ...string) *yarn.Client {
	t.Helper()
	if len(addrs) == 0 {
		addrs = rmAddrs(t, c, yarn.RMClient)
	}
	cl, err := yarn.NewClient(yarn.ClientConfig{Addrs: addrs, User: c.User,
		Backoff: yarn.Backoff{Base: 50 * time.Millisecond, Max: 500 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

func rpcCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Every ApplicationClientProtocol call xres makes, against the real RM.
func TestRPCApplicationClientProtocol(t *testing.T) {
	c := harness.Get(t)
	cl := rpcClient(t, c)
	ctx := rpcCtx(t, 2*time.Minute)
	wantNodes := envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)
	wantGPUs := envInt(t, "XRES_MINICLUSTER_GPUS", 2)

	t.Run("getClusterMetrics", func(t *testing.T) {
		m, err := raw(cl).GetClusterMetrics(ctx)
		require.NoError(t, err)
		require.Equal(t, int32(wantNodes), m.GetNumNodeManagers())
		require.Equal(t, int32(wantNodes), m.GetNumActiveNms())
	})
	t.Run("getResourceTypeInfo", func(t *testing.T) {
		types, err := cl.GetResourceTypeInfo(ctx)
		require.NoError(t, err)
		for _, name := range []string{"memory-mb", "vcores", "yarn.io/gpu"} {
			require.True(t, yarn.HasResourceType(types, name), "%s missing from %v", name, types)
		}
		for _, ty := range types {
			if ty.Name == "memory-mb" {
				require.Equal(t, "Mi", ty.Units)
			}
		}
		err = yarn.CheckResource(types, yarn.Resource{MemoryMB: 256, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1, "example.com/unknown": 1}})
		require.ErrorIs(t, err, yarn.ErrResourceNotFound)
		require.ErrorContains(t, err, "example.com/unknown")
	})
	t.Run("getClusterNodes", func(t *testing.T) {
		nodes, err := raw(cl).GetClusterNodes(ctx, hadoopyarn.NodeStateProto_NS_RUNNING)
		require.NoError(t, err)
		require.Len(t, nodes, int(wantNodes))
		for _, n := range nodes {
			gpus, ok := yarn.ResourceValue(n.GetCapability(), "yarn.io/gpu")
			require.True(t, ok, "node %s: no yarn.io/gpu in %v", yarn.NodeID(n.GetNodeId()), n.GetCapability())
			require.Equal(t, wantGPUs, gpus, "node %s", yarn.NodeID(n.GetNodeId()))
			require.Contains(t, n.GetHttpAddress(), ":")
			require.True(t, strings.HasPrefix(n.GetRackName(), "/"), "rack %q", n.GetRackName())
			require.NotNil(t, n.GetUsed())
			require.Positive(t, n.GetLastHealthReportTime())
		}
		lost, err := raw(cl).GetClusterNodes(ctx, hadoopyarn.NodeStateProto_NS_LOST)
		require.NoError(t, err)
		require.Empty(t, lost)
	})
	t.Run("getNewApplication", func(t *testing.T) {
		app, err := raw(cl).GetNewApplication(ctx)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(yarn.ApplicationID(app.GetApplicationId()), "application_"))
		gpus, ok := yarn.ResourceValue(app.GetMaximumCapability(), "yarn.io/gpu")
		require.True(t, ok)
		require.Positive(t, gpus)
	})
	t.Run("getApplicationReport unknown", func(t *testing.T) {
		_, err := raw(cl).GetApplicationReport(ctx, &hadoopyarn.ApplicationIdProto{Id: proto.Int32(9999), ClusterTimestamp: proto.Int64(1)})
		require.ErrorIs(t, err, yarn.ErrApplicationNotFound)
		var re *yarn.RemoteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException", re.Class)
	})
	t.Run("submit, report, forceKill", func(t *testing.T) {
		id := submitSleep(t, ctx, c, cl, "xres-rpc-kill", nil)
		r := waitReport(t, cl, id, hadoopyarn.YarnApplicationStateProto_ACCEPTED, hadoopyarn.YarnApplicationStateProto_RUNNING)
		require.Equal(t, "xres-rpc-kill", r.GetName())
		require.Equal(t, c.User, r.GetUser())
		require.NoError(t, raw(cl).KillApplication(ctx, id, "killed by xres rpc test"))
		r = waitReport(t, cl, id, hadoopyarn.YarnApplicationStateProto_KILLED)
		require.Equal(t, hadoopyarn.FinalApplicationStatusProto_APP_KILLED, r.GetFinalApplicationStatus())
	})
}

// submitSleep submits an application named name whose AM runs `sleep 300`
// (with env in its environment) over ApplicationClientProtocol, keeps its
// logs on failure, and returns its id.
func submitSleep(t *testing.T, ctx context.Context, c *harness.Cluster, cl *yarn.Client, name string, env []*hadoopyarn.StringStringMapProto) *hadoopyarn.ApplicationIdProto {
	t.Helper()
	app, err := raw(cl).GetNewApplication(ctx)
	require.NoError(t, err)
	id := app.GetApplicationId()
	c.KeepAppLogs(t, yarn.ApplicationID(id))
	require.NoError(t, raw(cl).SubmitApplication(ctx, &hadoopyarn.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String(name), ApplicationType: proto.String("XRES-TEST"),
		MaxAppAttempts: proto.Int32(1), Resource: yarn.NewResource(128, 1, nil),
		AmContainerSpec: &hadoopyarn.ContainerLaunchContextProto{Command: []string{"sleep 300"}, Environment: env},
	}))
	return id
}

func waitReport(t *testing.T, cl *yarn.Client, id *hadoopyarn.ApplicationIdProto, states ...hadoopyarn.YarnApplicationStateProto) *hadoopyarn.ApplicationReportProto {
	t.Helper()
	ctx := rpcCtx(t, 4*time.Minute)
	var last *hadoopyarn.ApplicationReportProto
	for {
		r, err := raw(cl).GetApplicationReport(ctx, id)
		if err == nil {
			last = r
			for _, s := range states {
				if r.GetYarnApplicationState() == s {
					return r
				}
			}
			switch r.GetYarnApplicationState() {
			case hadoopyarn.YarnApplicationStateProto_FINISHED, hadoopyarn.YarnApplicationStateProto_FAILED, hadoopyarn.YarnApplicationStateProto_KILLED:
				t.Fatalf("%s ended %s/%s, want %v: %s", yarn.ApplicationID(id), r.GetYarnApplicationState(), r.GetFinalApplicationStatus(), states, r.GetDiagnostics())
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: want state %v, last report %v (err %v)", yarn.ApplicationID(id), states, last, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// A Go AM end to end: token file, AMRMToken over DIGEST-MD5, two
// yarn.io/gpu containers started with their NMTokens (one exits 0, one is
// stopped through stopContainers after getContainerStatuses saw it run),
// FINISHED/SUCCEEDED.
func TestRPCTinyAMEndToEnd(t *testing.T) {
	c := harness.Get(t)
	runTinyAM(t, rpcCtx(t, 6*time.Minute), c, rpcClient(t, c))
}

// Failures against the real servers end quickly with a clear error.
func TestRPCErrors(t *testing.T) {
	c := harness.Get(t)
	sched := rmAddrs(t, c, yarn.RMScheduler)

	t.Run("wrong AMRMToken", func(t *testing.T) {
		ident, err := proto.Marshal(&hadoopyarn.AMRMTokenIdentifierProto{
			AppAttemptId: &hadoopyarn.ApplicationAttemptIdProto{
				ApplicationId: &hadoopyarn.ApplicationIdProto{Id: proto.Int32(4242), ClusterTimestamp: proto.Int64(1)}, AttemptId: proto.Int32(1)},
			KeyId: proto.Int32(1)})
		require.NoError(t, err)
		tok := &security.Token{Identifier: ident, Password: []byte("not-the-password"), Kind: security.KindAMRMToken, Service: sched[0]}
		am, err := yarn.NewAMRMClient(yarn.AMConfig{Addrs: sched, Token: tok})
		require.NoError(t, err)
		defer am.Close()
		start := time.Now()
		_, err = am.Register(rpcCtx(t, time.Minute), yarn.RegisterRequest{})
		require.ErrorIs(t, err, yarn.ErrUnauthorized)
		require.Less(t, time.Since(start), 30*time.Second)
		require.NotContains(t, err.Error(), "not-the-password")
		t.Logf("wrong token: %v", err)
	})
	t.Run("SIMPLE on the scheduler port", func(t *testing.T) {
		cl := rpcClient(t, c, sched...)
		_, err := raw(cl).GetClusterMetrics(rpcCtx(t, time.Minute))
		require.ErrorIs(t, err, yarn.ErrAccessControl)
		require.ErrorContains(t, err, "SIMPLE authentication is not enabled")
	})
	t.Run("standby RM first, then the real one", func(t *testing.T) {
		standby := yarntest.NewServer(t, yarntest.Options{})
		standby.SetStandby(true)
		cl := rpcClient(t, c, append([]string{standby.Addr}, rmAddrs(t, c, yarn.RMClient)...)...)
		m, err := raw(cl).GetClusterMetrics(rpcCtx(t, time.Minute))
		require.NoError(t, err)
		require.Positive(t, m.GetNumNodeManagers())
		require.Equal(t, int64(1), standby.Calls())
	})
	t.Run("standby only", func(t *testing.T) {
		standby := yarntest.NewServer(t, yarntest.Options{})
		standby.SetStandby(true)
		cl := rpcClient(t, c, standby.Addr)
		_, err := raw(cl).GetClusterMetrics(rpcCtx(t, time.Minute))
		require.ErrorIs(t, err, yarn.ErrNoActiveRM)
		require.ErrorIs(t, err, yarn.ErrStandby)
	})
	t.Run("server closes mid-call", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { // read the preamble, context and call header, then drop
					buf := make([]byte, 64)
					_, _ = io.ReadAtLeast(conn, buf, 20)
					conn.Close()
				}()
			}
		}()
		cl := rpcClient(t, c, ln.Addr().String())
		start := time.Now()
		_, err = raw(cl).GetClusterMetrics(rpcCtx(t, time.Minute))
		require.ErrorIs(t, err, yarn.ErrConnection)
		require.ErrorIs(t, err, yarn.ErrNoActiveRM)
		require.Less(t, time.Since(start), 30*time.Second)
		fmt.Fprintln(os.Stderr, "server closing mid-call:", err)
	})
}
