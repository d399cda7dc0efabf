package yarn

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/yarntest"
)

// TestClientSpeaksYarnTypes: the RM client's reports, node and application
// listings and kill take and return this package's Go types (moved here
// from yarn/submit's RPC adapter test with the conversions).
func TestClientSpeaksYarnTypes(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	var mu sync.Mutex
	var nodeStates []hadoopyarn.NodeStateProto
	var appStates []hadoopyarn.YarnApplicationStateProto
	var killed *hadoopyarn.ApplicationIdProto
	srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetApplicationReportRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		return &hadoopyarn.GetApplicationReportResponseProto{ApplicationReport: &hadoopyarn.ApplicationReportProto{
			ApplicationId: req.GetApplicationId(), Name: proto.String("train"), User: proto.String("alice"),
			YarnApplicationState:   hadoopyarn.YarnApplicationStateProto_FINISHED.Enum(),
			FinalApplicationStatus: hadoopyarn.FinalApplicationStatusProto_APP_FAILED.Enum(),
			Diagnostics:            proto.String("N/A"), Host: proto.String("nm2"), Progress: proto.Float32(1),
			StartTime: proto.Int64(1700000000000), FinishTime: proto.Int64(1700000005000)}}, nil
	})
	srv.Handle("getClusterNodes", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetClusterNodesRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		mu.Lock()
		nodeStates = req.GetNodeStates()
		mu.Unlock()
		return &hadoopyarn.GetClusterNodesResponseProto{NodeReports: []*hadoopyarn.NodeReportProto{{
			NodeId:      &hadoopyarn.NodeIdProto{Host: proto.String("127.0.0.2"), Port: proto.Int32(45454)},
			HttpAddress: proto.String("127.0.0.2:8042"), NodeState: hadoopyarn.NodeStateProto_NS_RUNNING.Enum(), NumContainers: proto.Int32(3),
			Capability: NewResource(8192, 8, map[string]int64{"yarn.io/gpu": 2}), Used: NewResource(1024, 1, map[string]int64{"yarn.io/gpu": 1})}}}, nil
	})
	srv.Handle("getApplications", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetApplicationsRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		mu.Lock()
		appStates = req.GetApplicationStates()
		mu.Unlock()
		return &hadoopyarn.GetApplicationsResponseProto{}, nil
	})
	srv.Handle("forceKillApplication", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.KillApplicationRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		mu.Lock()
		killed = req.GetApplicationId()
		mu.Unlock()
		return &hadoopyarn.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
	})
	c, err := NewClient(ClientConfig{Addrs: []string{srv.Addr}, User: "alice"})
	require.NoError(t, err)
	defer c.Close()
	ctx := testCtx(t)

	rep, err := c.GetApplicationReport(ctx, "application_1700000000000_0007")
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", rep.ID)
	require.Equal(t, "FINISHED", rep.State)
	require.Equal(t, "FAILED", rep.FinalStatus)
	require.Empty(t, rep.Diagnostics, `YARN's "N/A" is no diagnostics`)
	require.Equal(t, "nm2", rep.AMHost)
	require.Equal(t, int64(5000), rep.FinishTime.Sub(rep.StartTime).Milliseconds())
	calls := srv.Calls()
	_, err = c.GetApplicationReport(ctx, "application_1_99999999999")
	require.Error(t, err, "an id out of range never reaches the RM")
	require.Equal(t, calls, srv.Calls())

	nodes, err := c.GetClusterNodes(ctx, "RUNNING", "UNHEALTHY")
	require.NoError(t, err)
	require.Equal(t, []hadoopyarn.NodeStateProto{hadoopyarn.NodeStateProto_NS_RUNNING, hadoopyarn.NodeStateProto_NS_UNHEALTHY}, nodeStates)
	require.Equal(t, []NodeReport{{ID: "127.0.0.2:45454", HTTPAddress: "127.0.0.2:8042", State: "RUNNING", Containers: 3,
		Capability: Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}},
		Used:       Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}}}}, nodes)
	_, err = c.GetClusterNodes(ctx, "SLEEPY")
	require.ErrorContains(t, err, `unknown node state "SLEEPY"`)

	_, err = c.GetApplications(ctx, []string{"XRES"}, "RUNNING", "ACCEPTED")
	require.NoError(t, err)
	require.Equal(t, []hadoopyarn.YarnApplicationStateProto{hadoopyarn.YarnApplicationStateProto_RUNNING, hadoopyarn.YarnApplicationStateProto_ACCEPTED}, appStates)
	_, err = c.GetApplications(ctx, nil, "DONE")
	require.ErrorContains(t, err, `unknown application state "DONE"`)

	require.NoError(t, c.KillApplication(ctx, "application_1700000000000_0007", "bye"))
	require.Equal(t, "application_1700000000000_0007", ApplicationID(killed))
}
