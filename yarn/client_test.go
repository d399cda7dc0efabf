package yarn

import (
	"context"
	"os/user"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/yarntest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var testApp = &hadoopyarn.ApplicationIdProto{Id: proto.Int32(3), ClusterTimestamp: proto.Int64(1700000000000)}

// fakeRM answers every ApplicationClientProtocol call xres makes.
func fakeRM(t *testing.T) *yarntest.Server {
	srv := yarntest.NewServer(t, yarntest.Options{})
	srv.Handle("getNewApplication", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.GetNewApplicationResponseProto{ApplicationId: testApp, MaximumCapability: NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2})}, nil
	})
	srv.Handle("submitApplication", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.SubmitApplicationRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		if req.GetApplicationSubmissionContext().GetApplicationName() != "tiny" {
			return nil, &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.YarnException", Message: "bad name"}
		}
		return &hadoopyarn.SubmitApplicationResponseProto{}, nil
	})
	srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetApplicationReportRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		if req.GetApplicationId().GetId() != 3 {
			return nil, &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException",
				Message: "Application with id '" + ApplicationID(req.GetApplicationId()) + "' doesn't exist in RM."}
		}
		return &hadoopyarn.GetApplicationReportResponseProto{ApplicationReport: &hadoopyarn.ApplicationReportProto{
			ApplicationId: testApp, User: proto.String(c.Conn.User),
			YarnApplicationState:   hadoopyarn.YarnApplicationStateProto_FINISHED.Enum(),
			FinalApplicationStatus: hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}}, nil
	})
	var kills atomic.Int32
	srv.Handle("forceKillApplication", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.KillApplicationResponseProto{IsKillCompleted: proto.Bool(kills.Add(1) >= 2)}, nil
	})
	srv.Handle("getClusterNodes", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetClusterNodesRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		n := &hadoopyarn.NodeReportProto{NodeId: &hadoopyarn.NodeIdProto{Host: proto.String("nm1"), Port: proto.Int32(45454)},
			NodeState: hadoopyarn.NodeStateProto_NS_RUNNING.Enum(), Capability: NewResource(8192, 8, map[string]int64{"yarn.io/gpu": 2})}
		if len(req.GetNodeStates()) == 1 && req.GetNodeStates()[0] == hadoopyarn.NodeStateProto_NS_LOST {
			return &hadoopyarn.GetClusterNodesResponseProto{}, nil
		}
		return &hadoopyarn.GetClusterNodesResponseProto{NodeReports: []*hadoopyarn.NodeReportProto{n}}, nil
	})
	srv.Handle("getClusterMetrics", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.GetClusterMetricsResponseProto{ClusterMetrics: &hadoopyarn.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(2), NumActiveNms: proto.Int32(2)}}, nil
	})
	srv.Handle("getResourceTypeInfo", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.GetAllResourceTypeInfoResponseProto{ResourceTypeInfo: []*hadoopyarn.ResourceTypeInfoProto{
			{Name: proto.String("memory-mb"), Units: proto.String("Mi")}, {Name: proto.String("vcores")}, {Name: proto.String("yarn.io/gpu")}}}, nil
	})
	return srv
}

func TestClientCalls(t *testing.T) {
	srv := fakeRM(t)
	c, err := NewClient(ClientConfig{Addrs: []string{srv.Addr}, User: "alice"})
	require.NoError(t, err)
	defer c.Close()
	ctx := testCtx(t)

	t.Run("getNewApplication", func(t *testing.T) {
		r, err := c.GetNewApplication(ctx)
		require.NoError(t, err)
		require.Equal(t, "application_1700000000000_0003", r.ID)
		require.Equal(t, int64(2), r.MaxCapability.Extra["yarn.io/gpu"])
	})
	t.Run("submitApplication", func(t *testing.T) {
		require.NoError(t, c.SubmitApplication(ctx, Submission{AppID: ApplicationID(testApp), Name: "tiny"}))
		err := c.SubmitApplication(ctx, Submission{AppID: ApplicationID(testApp)})
		var re *RemoteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "submitApplication", re.Method)
		require.Equal(t, "bad name", re.Message)
	})
	t.Run("getApplicationReport", func(t *testing.T) {
		r, err := c.GetApplicationReport(ctx, ApplicationID(testApp))
		require.NoError(t, err)
		require.Equal(t, "alice", r.User)
		require.Equal(t, "SUCCEEDED", r.FinalStatus)
		_, err = c.GetApplicationReport(ctx, "application_1_0009")
		require.ErrorIs(t, err, ErrApplicationNotFound)
		require.ErrorContains(t, err, "application_1_0009")
	})
	t.Run("killApplication polls until completed", func(t *testing.T) {
		require.NoError(t, c.KillApplication(ctx, ApplicationID(testApp), "test"))
	})
	t.Run("getClusterNodes", func(t *testing.T) {
		nodes, err := c.GetClusterNodes(ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		require.Equal(t, "nm1:45454", nodes[0].ID)
		lost, err := c.GetClusterNodes(ctx, "LOST")
		require.NoError(t, err)
		require.Empty(t, lost, "the state filter reaches the server")
	})
	t.Run("getClusterMetrics", func(t *testing.T) {
		m, err := c.GetClusterMetrics(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, m.NodeManagers)
	})
	t.Run("getResourceTypeInfo", func(t *testing.T) {
		types, err := c.GetResourceTypeInfo(ctx)
		require.NoError(t, err)
		require.True(t, HasResourceType(types, "yarn.io/gpu"))
		require.False(t, HasResourceType(types, "yarn.io/fpga"))
	})
	require.Equal(t, int64(1), srv.Connects(), "one connection serves every call")
}

func TestClientFailover(t *testing.T) {
	fast := Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	t.Run("standby then active", func(t *testing.T) {
		standby, active := fakeRM(t), fakeRM(t)
		standby.SetStandby(true)
		c, err := NewClient(ClientConfig{Addrs: []string{standby.Addr, active.Addr}, User: "u", Backoff: fast})
		require.NoError(t, err)
		defer c.Close()
		m, err := c.GetClusterMetrics(testCtx(t))
		require.NoError(t, err)
		require.Equal(t, 2, m.NodeManagers)
		require.Equal(t, int64(1), standby.Calls())
		// The client stays on the active RM.
		_, err = c.GetClusterMetrics(testCtx(t))
		require.NoError(t, err)
		require.Equal(t, int64(1), standby.Calls())
		require.Equal(t, int64(2), active.Calls())
	})
	t.Run("unreachable then active", func(t *testing.T) {
		gone, active := fakeRM(t), fakeRM(t)
		gone.Close()
		c, err := NewClient(ClientConfig{Addrs: []string{gone.Addr, active.Addr}, User: "u", Backoff: fast})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.GetClusterMetrics(testCtx(t))
		require.NoError(t, err)
	})
	t.Run("standby only gives up with a clear error", func(t *testing.T) {
		s1, s2 := fakeRM(t), fakeRM(t)
		s1.SetStandby(true)
		s2.SetStandby(true)
		c, err := NewClient(ClientConfig{Addrs: []string{s1.Addr, s2.Addr}, User: "u", Backoff: fast})
		require.NoError(t, err)
		defer c.Close()
		start := time.Now()
		_, err = c.GetClusterMetrics(testCtx(t))
		require.ErrorIs(t, err, ErrNoActiveRM)
		require.ErrorIs(t, err, ErrStandby)
		require.ErrorContains(t, err, s1.Addr)
		require.ErrorContains(t, err, s2.Addr)
		require.Less(t, time.Since(start), 10*time.Second)
		require.Equal(t, int64(6), s1.Calls()+s2.Calls(), "3 attempts per address by default")
	})
	t.Run("context deadline ends the retries", func(t *testing.T) {
		s := fakeRM(t)
		s.SetStandby(true)
		c, err := NewClient(ClientConfig{Addrs: []string{s.Addr}, User: "u", Backoff: Backoff{Attempts: 1000, Base: 20 * time.Millisecond}})
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err = c.GetClusterMetrics(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("application errors do not fail over", func(t *testing.T) {
		a, b := fakeRM(t), fakeRM(t)
		c, err := NewClient(ClientConfig{Addrs: []string{a.Addr, b.Addr}, User: "u", Backoff: fast})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.GetApplicationReport(testCtx(t), "application_0_0099")
		require.ErrorIs(t, err, ErrApplicationNotFound)
		require.Equal(t, int64(0), b.Calls())
	})
	t.Run("bad address", func(t *testing.T) {
		_, err := NewClient(ClientConfig{Addrs: []string{"no-port"}})
		require.ErrorContains(t, err, `"no-port"`)
		_, err = NewClient(ClientConfig{})
		require.ErrorContains(t, err, "no server address")
	})
}

func TestCheckResource(t *testing.T) {
	types := []ResourceType{{Name: "memory-mb"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}}
	require.NoError(t, CheckResource(types, Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}}))
	err := CheckResource(types, Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1, "yarn.io/fpga": 1}})
	require.ErrorIs(t, err, ErrResourceNotFound)
	require.ErrorContains(t, err, "yarn.io/fpga")
	require.NotContains(t, err.Error(), "type yarn.io/gpu")
}

func TestCurrentUser(t *testing.T) {
	osUser := ""
	if u, err := user.Current(); err == nil {
		osUser = u.Username
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "HADOOP_USER_NAME wins", env: map[string]string{"HADOOP_USER_NAME": "alice", "USER": "bob"}, want: "alice"},
		{name: "else the OS user", env: map[string]string{"USER": "bob"}, want: osUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				t.Skip("no OS user on this machine")
			}
			require.Equal(t, tc.want, CurrentUser(func(k string) string { return tc.env[k] }))
		})
	}
}
