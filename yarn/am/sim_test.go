package am

import (
	"context"
	"fmt"
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

// simCluster is a ResourceManager and NodeManagers in-process, speaking
// Hadoop RPC with TOKEN authentication (yarntest), that the AM reaches
// through its real RPC clients. The test scripts allocate; the NodeManagers
// record every startContainers and stopContainers per container id (the
// container token's identifier is the container id) after latency.
type simCluster struct {
	tb      testing.TB
	app     *hadoopyarn.ApplicationIdProto
	attempt *hadoopyarn.ApplicationAttemptIdProto
	amrm    *security.Token
	nmTok   *security.Token
	rm      *yarntest.Server
	nms     []*yarntest.Server
	latency time.Duration // of each NodeManager call

	// allocate answers the n-th allocate call (from 1).
	allocate func(n int, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error)

	mu         sync.Mutex
	calls      int
	registers  int
	starts     map[string]int
	stops      map[string]int
	releases   map[string]int
	finished   *hadoopyarn.FinishApplicationMasterRequestProto
	onStarted  func(id string) // called after each recorded start, outside mu
	startCalls int
	batches    []int           // containers per startContainers call
	refuse     map[string]bool // container ids the NodeManagers refuse
	// previous are the containers of an earlier attempt the RM hands over
	// at registration; live the ones the NodeManagers run besides those
	// started here (getContainerStatuses answers RUNNING for both).
	previous    []*hadoopyarn.ContainerProto
	live        map[string]bool
	statusCalls int
}

func newSimCluster(tb testing.TB, nodes int, latency time.Duration) *simCluster {
	tb.Helper()
	s := &simCluster{tb: tb, latency: latency, starts: map[string]int{}, stops: map[string]int{}, releases: map[string]int{}}
	s.app = &hadoopyarn.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1700000000000)}
	s.attempt = &hadoopyarn.ApplicationAttemptIdProto{ApplicationId: s.app, AttemptId: proto.Int32(1)}
	amrmID, err := proto.Marshal(&hadoopyarn.AMRMTokenIdentifierProto{AppAttemptId: s.attempt, KeyId: proto.Int32(1)})
	require.NoError(tb, err)
	s.amrm = &security.Token{Identifier: amrmID, Password: []byte("amrm-secret"), Kind: security.KindAMRMToken}
	nmID, err := proto.Marshal(&hadoopyarn.NMTokenIdentifierProto{AppAttemptId: s.attempt, KeyId: proto.Int32(1)})
	require.NoError(tb, err)
	s.nmTok = &security.Token{Identifier: nmID, Password: []byte("nm-secret"), Kind: security.KindNMToken}

	for range nodes {
		nm := yarntest.NewServer(tb, yarntest.Options{Token: true})
		nm.AddToken(s.nmTok.Identifier, s.nmTok.Password)
		nm.Handle("startContainers", s.startContainers)
		nm.Handle("stopContainers", s.stopContainers)
		nm.Handle("getContainerStatuses", s.getContainerStatuses)
		s.nms = append(s.nms, nm)
	}
	s.rm = yarntest.NewServer(tb, yarntest.Options{Token: true})
	s.rm.AddToken(s.amrm.Identifier, s.amrm.Password)
	s.amrm.Service = s.rm.Addr
	s.rm.Handle("registerApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		s.mu.Lock()
		s.registers++
		previous := s.previous
		s.mu.Unlock()
		var prevTokens []*hadoopyarn.NMTokenProto
		if len(previous) > 0 {
			prevTokens = s.nmTokens()
		}
		return &hadoopyarn.RegisterApplicationMasterResponseProto{
			ContainersFromPreviousAttempts: previous,
			NmTokensFromPreviousAttempts:   prevTokens,
			MaximumCapability:              yarn.NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2}),
			ResourceTypes: []*hadoopyarn.ResourceTypeInfoProto{{Name: proto.String("memory-mb")}, {Name: proto.String("vcores")},
				{Name: proto.String("yarn.io/gpu")}},
		}, nil
	})
	s.rm.Handle("allocate", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.AllocateRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.calls++
		n := s.calls
		for _, id := range req.GetRelease() {
			s.releases[yarn.ContainerID(id)]++
		}
		s.mu.Unlock()
		resp, err := s.allocate(n, req)
		if resp != nil {
			resp.ResponseId = proto.Int32(int32(n))
		}
		return resp, err
	})
	s.rm.Handle("finishApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		f := &hadoopyarn.FinishApplicationMasterRequestProto{}
		if err := c.Decode(f); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.finished = f
		s.mu.Unlock()
		return &hadoopyarn.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
	})
	return s
}

func (s *simCluster) sleep(ctx context.Context) {
	if s.latency > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(s.latency):
		}
	}
}

func (s *simCluster) startContainers(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
	req := &hadoopyarn.StartContainersRequestProto{}
	if err := c.Decode(req); err != nil {
		return nil, err
	}
	s.sleep(ctx)
	var ids []string
	resp := &hadoopyarn.StartContainersResponseProto{}
	s.mu.Lock()
	s.startCalls++
	s.batches = append(s.batches, len(req.GetStartContainerRequest()))
	for _, r := range req.GetStartContainerRequest() {
		id := string(r.GetContainerToken().GetIdentifier())
		if s.refuse[id] {
			cid, _ := yarn.ParseContainerID(id)
			resp.FailedRequests = append(resp.FailedRequests, &hadoopyarn.ContainerExceptionMapProto{ContainerId: cid,
				Exception: &hadoopyarn.SerializedExceptionProto{ClassName: proto.String("org.apache.hadoop.yarn.exceptions.YarnException"),
					Message: proto.String("Container " + id + " refused")}})
			continue
		}
		s.starts[id]++
		ids = append(ids, id)
	}
	on := s.onStarted
	s.mu.Unlock()
	if on != nil {
		for _, id := range ids {
			on(id)
		}
	}
	return resp, nil
}

func (s *simCluster) stopContainers(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
	req := &hadoopyarn.StopContainersRequestProto{}
	if err := c.Decode(req); err != nil {
		return nil, err
	}
	s.sleep(ctx)
	s.mu.Lock()
	for _, id := range req.GetContainerId() {
		s.stops[yarn.ContainerID(id)]++
	}
	s.mu.Unlock()
	return &hadoopyarn.StopContainersResponseProto{}, nil
}

// getContainerStatuses answers RUNNING for a container the NodeManagers
// run, and for any other what a NodeManager answers for a container it was
// never asked to start.
func (s *simCluster) getContainerStatuses(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
	req := &hadoopyarn.GetContainerStatusesRequestProto{}
	if err := c.Decode(req); err != nil {
		return nil, err
	}
	s.sleep(ctx)
	resp := &hadoopyarn.GetContainerStatusesResponseProto{}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statusCalls++
	for _, id := range req.GetContainerId() {
		cid := yarn.ContainerID(id)
		if s.live[cid] || s.starts[cid] > 0 {
			resp.Status = append(resp.Status, &hadoopyarn.ContainerStatusProto{ContainerId: id, State: hadoopyarn.ContainerStateProto_C_RUNNING.Enum()})
			continue
		}
		resp.FailedRequests = append(resp.FailedRequests, &hadoopyarn.ContainerExceptionMapProto{ContainerId: id,
			Exception: &hadoopyarn.SerializedExceptionProto{ClassName: proto.String("org.apache.hadoop.yarn.exceptions.YarnException"),
				Message: proto.String("Container " + cid + " is not handled by this NodeManager")}})
	}
	return resp, nil
}

// container is container n of the attempt, on NodeManager n % nodes.
func (s *simCluster) container(n int64) *hadoopyarn.ContainerProto {
	nm := s.nms[int(n)%len(s.nms)]
	host, port, _ := net.SplitHostPort(nm.Addr)
	p, _ := strconv.Atoi(port)
	id := &hadoopyarn.ContainerIdProto{AppId: s.app, AppAttemptId: s.attempt, Id: proto.Int64(n)}
	return &hadoopyarn.ContainerProto{
		Id:                  id,
		NodeId:              &hadoopyarn.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(p))},
		NodeHttpAddress:     proto.String(host + ":8042"),
		Resource:            yarn.NewResource(2048, 1, map[string]int64{"yarn.io/gpu": 1}),
		ContainerToken:      (&security.Token{Identifier: []byte(yarn.ContainerID(id)), Password: []byte("ct"), Kind: security.KindContainerToken}).Proto(),
		AllocationRequestId: proto.Int64(WorkerAskID),
	}
}

// cid is the string id of container n.
func (s *simCluster) cid(n int64) string { return yarn.ContainerID(s.container(n).GetId()) }

// nmTokens is one NMToken per NodeManager, as the RM sends with the first
// containers on each.
func (s *simCluster) nmTokens() []*hadoopyarn.NMTokenProto {
	var out []*hadoopyarn.NMTokenProto
	for i := range s.nms {
		out = append(out, &hadoopyarn.NMTokenProto{NodeId: s.container(int64(i)).GetNodeId(), Token: s.nmTok.Proto()})
	}
	return out
}

// completedStatus is the RM's final status of container n.
func (s *simCluster) completedStatus(n int64, exit int32) *hadoopyarn.ContainerStatusProto {
	return &hadoopyarn.ContainerStatusProto{ContainerId: s.container(n).GetId(),
		State: hadoopyarn.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(exit),
		Diagnostics: proto.String(fmt.Sprintf("Exit code: %d", exit))}
}

// newAM builds an AM on the simulated cluster's RPC clients; wrap, if
// given, wraps the RM client.
func (s *simCluster) newAM(cfg Config, wrap ...func(RMClient) RMClient) *AM {
	s.tb.Helper()
	amrmClient, err := yarn.NewAMRMClient(yarn.AMConfig{Addrs: []string{s.rm.Addr}, Token: s.amrm})
	require.NoError(s.tb, err)
	s.tb.Cleanup(func() { _ = amrmClient.Close() })
	nmClient := yarn.NewNMClient(yarn.NMConfig{})
	s.tb.Cleanup(func() { _ = nmClient.Close() })
	rm := NewRPCRMClient(amrmClient)
	for _, w := range wrap {
		rm = w(rm)
	}
	a, err := New(cfg, rm, amnm.NewRPCNMClient(nmClient), nil)
	require.NoError(s.tb, err)
	return a
}

var errNotRegistered = &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException",
	Message: "AM is not registered for known application attempt"}
