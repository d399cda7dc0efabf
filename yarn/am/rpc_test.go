package am

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/yarntest"
)

// TestAMOverHadoopRPC runs the AM core through the adapters and the real
// Hadoop RPC clients against in-process RM and NM fakes (TOKEN auth with
// the AMRMToken and NMToken): two workers are asked with yarn.io/gpu,
// started with their container tokens, complete, and the AM unregisters
// SUCCEEDED. The first heartbeat meets ApplicationMasterNotRegistered, as
// after an RM restart: the AM registers again and re-sends its ask.
func TestAMOverHadoopRPC(t *testing.T) {
	app := &hadoopyarn.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1700000000000)}
	attempt := &hadoopyarn.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(1)}
	amrmID, err := proto.Marshal(&hadoopyarn.AMRMTokenIdentifierProto{AppAttemptId: attempt, KeyId: proto.Int32(1)})
	require.NoError(t, err)
	amrm := &security.Token{Identifier: amrmID, Password: []byte("amrm-secret"), Kind: security.KindAMRMToken}
	nmID, err := proto.Marshal(&hadoopyarn.NMTokenIdentifierProto{AppAttemptId: attempt, KeyId: proto.Int32(1)})
	require.NoError(t, err)
	nmTok := &security.Token{Identifier: nmID, Password: []byte("nm-secret"), Kind: security.KindNMToken}

	nm := yarntest.NewServer(t, yarntest.Options{Token: true})
	nm.AddToken(nmTok.Identifier, nmTok.Password)
	nmHost, nmPort, _ := net.SplitHostPort(nm.Addr)
	port, _ := strconv.Atoi(nmPort)
	var mu sync.Mutex
	var started []*hadoopyarn.StartContainerRequestProto
	nm.Handle("startContainers", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.StartContainersRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		mu.Lock()
		started = append(started, req.GetStartContainerRequest()...)
		mu.Unlock()
		return &hadoopyarn.StartContainersResponseProto{}, nil
	})

	rm := yarntest.NewServer(t, yarntest.Options{Token: true})
	rm.AddToken(amrm.Identifier, amrm.Password)
	amrm.Service = rm.Addr
	var registers int
	rm.Handle("registerApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		registers++
		return &hadoopyarn.RegisterApplicationMasterResponseProto{
			MaximumCapability: yarn.NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2}),
			ResourceTypes: []*hadoopyarn.ResourceTypeInfoProto{{Name: proto.String("memory-mb")}, {Name: proto.String("vcores")},
				{Name: proto.String("yarn.io/gpu")}},
		}, nil
	})
	var asked []*hadoopyarn.ResourceRequestProto
	var calls int
	container := func(n int64) *hadoopyarn.ContainerProto {
		return &hadoopyarn.ContainerProto{
			Id:              &hadoopyarn.ContainerIdProto{AppId: app, AppAttemptId: attempt, Id: proto.Int64(n)},
			NodeId:          &hadoopyarn.NodeIdProto{Host: proto.String(nmHost), Port: proto.Int32(int32(port))},
			NodeHttpAddress: proto.String(nmHost + ":8042"), Resource: yarn.NewResource(2048, 1, map[string]int64{"yarn.io/gpu": 1}),
			ContainerToken:      (&security.Token{Identifier: []byte{byte(n)}, Password: []byte("ct"), Kind: security.KindContainerToken}).Proto(),
			AllocationRequestId: proto.Int64(WorkerAskID),
		}
	}
	rm.Handle("allocate", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.AllocateRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		calls++
		if calls == 1 {
			// As after an RM restart: the AM must register again and
			// re-send its asks.
			return nil, &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException",
				Message: "AM is not registered for known application attempt"}
		}
		asked = append(asked, req.GetAsk()...)
		resp := &hadoopyarn.AllocateResponseProto{ResponseId: proto.Int32(int32(calls))}
		switch calls - 1 {
		case 1:
			resp.AllocatedContainers = []*hadoopyarn.ContainerProto{container(2), container(3)}
			resp.NmTokens = []*hadoopyarn.NMTokenProto{{NodeId: container(2).GetNodeId(), Token: nmTok.Proto()}}
		case 2:
			for _, n := range []int64{2, 3} {
				resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, &hadoopyarn.ContainerStatusProto{
					ContainerId: container(n).GetId(), State: hadoopyarn.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(0)})
			}
		}
		return resp, nil
	})
	var final *hadoopyarn.FinishApplicationMasterRequestProto
	rm.Handle("finishApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		final = &hadoopyarn.FinishApplicationMasterRequestProto{}
		if err := c.Decode(final); err != nil {
			return nil, err
		}
		return &hadoopyarn.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
	})

	amrmClient, err := yarn.NewAMRMClient(yarn.AMConfig{Addrs: []string{rm.Addr}, Token: amrm})
	require.NoError(t, err)
	defer amrmClient.Close()
	nmClient := yarn.NewNMClient(yarn.NMConfig{})
	defer nmClient.Close()

	cfg := testConfig(2, 2)
	a, err := New(cfg, NewRPCRMClient(amrmClient), amnm.NewRPCNMClient(nmClient), nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)

	require.Equal(t, hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED, final.GetFinalApplicationStatus())
	require.Equal(t, 2, registers, "registered again after ApplicationMasterNotRegisteredException")
	require.Equal(t, int32(2), asked[0].GetNumContainers())
	gpu, _ := yarn.ResourceValue(asked[0].GetCapability(), "yarn.io/gpu")
	require.Equal(t, int64(1), gpu)
	require.Len(t, started, 2)
	// Starts run concurrently: either may come first.
	tokens := [][]byte{started[0].GetContainerToken().GetIdentifier(), started[1].GetContainerToken().GetIdentifier()}
	require.ElementsMatch(t, [][]byte{{2}, {3}}, tokens, "the container tokens are passed on verbatim")
	require.Equal(t, cfg.Launch.Commands, started[0].GetContainerLaunchContext().GetCommand())
}
