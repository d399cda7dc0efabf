package submit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
)

// protoRM answers at the RPC client's level, as *yarn.Client does.
type protoRM struct {
	rpcClient  // methods not scripted here panic
	nodeStates []hadoopyarn.NodeStateProto
	appStates  []hadoopyarn.YarnApplicationStateProto
	killed     *hadoopyarn.ApplicationIdProto
}

func (p *protoRM) GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error) {
	return &hadoopyarn.ApplicationReportProto{ApplicationId: id, Name: proto.String("train"), User: proto.String("alice"),
		YarnApplicationState:   hadoopyarn.YarnApplicationStateProto_FINISHED.Enum(),
		FinalApplicationStatus: hadoopyarn.FinalApplicationStatusProto_APP_FAILED.Enum(),
		Diagnostics:            proto.String("N/A"), Host: proto.String("nm2"), Progress: proto.Float32(1),
		StartTime: proto.Int64(1700000000000), FinishTime: proto.Int64(1700000005000)}, nil
}

func (p *protoRM) GetClusterNodes(ctx context.Context, states ...hadoopyarn.NodeStateProto) ([]*hadoopyarn.NodeReportProto, error) {
	p.nodeStates = states
	return []*hadoopyarn.NodeReportProto{{NodeId: &hadoopyarn.NodeIdProto{Host: proto.String("127.0.0.2"), Port: proto.Int32(45454)},
		HttpAddress: proto.String("127.0.0.2:8042"), NodeState: hadoopyarn.NodeStateProto_NS_RUNNING.Enum(), NumContainers: proto.Int32(3),
		Capability: yarn.NewResource(8192, 8, map[string]int64{"yarn.io/gpu": 2}), Used: yarn.NewResource(1024, 1, map[string]int64{"yarn.io/gpu": 1})}}, nil
}

func (p *protoRM) GetApplications(ctx context.Context, types []string, states ...hadoopyarn.YarnApplicationStateProto) ([]*hadoopyarn.ApplicationReportProto, error) {
	p.appStates = states
	return nil, nil
}

func (p *protoRM) KillApplication(ctx context.Context, id *hadoopyarn.ApplicationIdProto, diagnostics string) error {
	p.killed = id
	return nil
}

func TestRPCAdapterSpeaksYarnTypes(t *testing.T) {
	p := &protoRM{}
	rm := rpcRM{c: p}
	ctx := context.Background()

	rep, err := rm.ApplicationReport(ctx, "application_1700000000000_0007")
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", rep.ID)
	require.Equal(t, "FINISHED", rep.State)
	require.Equal(t, "FAILED", rep.FinalStatus)
	require.Empty(t, rep.Diagnostics, `YARN's "N/A" is no diagnostics`)
	require.Equal(t, "nm2", rep.AMHost)
	require.Equal(t, int64(5000), rep.FinishTime.Sub(rep.StartTime).Milliseconds())
	_, err = rm.ApplicationReport(ctx, "application_1_99999999999")
	require.Error(t, err, "an id out of range never reaches the RM")

	nodes, err := rm.Nodes(ctx, "RUNNING", "UNHEALTHY")
	require.NoError(t, err)
	require.Equal(t, []hadoopyarn.NodeStateProto{hadoopyarn.NodeStateProto_NS_RUNNING, hadoopyarn.NodeStateProto_NS_UNHEALTHY}, p.nodeStates)
	require.Equal(t, []yarn.NodeReport{{ID: "127.0.0.2:45454", HTTPAddress: "127.0.0.2:8042", State: "RUNNING", Containers: 3,
		Capability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}},
		Used:       yarn.Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}}}}, nodes)
	_, err = rm.Nodes(ctx, "SLEEPY")
	require.ErrorContains(t, err, `unknown node state "SLEEPY"`)

	_, err = rm.Applications(ctx, []string{ApplicationType}, []string{"RUNNING", "ACCEPTED"})
	require.NoError(t, err)
	require.Equal(t, []hadoopyarn.YarnApplicationStateProto{hadoopyarn.YarnApplicationStateProto_RUNNING, hadoopyarn.YarnApplicationStateProto_ACCEPTED}, p.appStates)
	_, err = rm.Applications(ctx, nil, []string{"DONE"})
	require.ErrorContains(t, err, `unknown application state "DONE"`)

	require.NoError(t, rm.Kill(ctx, "application_1700000000000_0007", "bye"))
	require.Equal(t, "application_1700000000000_0007", yarn.ApplicationID(p.killed))
}
