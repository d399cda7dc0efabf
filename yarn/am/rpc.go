package am

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// AMRMProtocol is the part of *yarn.AMRMClient the adapter uses.
type AMRMProtocol interface {
	Register(ctx context.Context, req *hadoopyarn.RegisterApplicationMasterRequestProto) (*hadoopyarn.RegisterApplicationMasterResponseProto, error)
	Allocate(ctx context.Context, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error)
	Finish(ctx context.Context, req *hadoopyarn.FinishApplicationMasterRequestProto) error
}

// NMProtocol is the part of *yarn.NMClient the adapter uses.
type NMProtocol interface {
	StartContainer(ctx context.Context, c *hadoopyarn.ContainerProto, nmToken *security.Token, launch *hadoopyarn.ContainerLaunchContextProto) error
	StopContainer(ctx context.Context, c *hadoopyarn.ContainerProto, nmToken *security.Token) error
}

var (
	_ AMRMProtocol = (*yarn.AMRMClient)(nil)
	_ NMProtocol   = (*yarn.NMClient)(nil)
)

// WorkerPriority is the YARN priority of the worker ask.
const WorkerPriority int32 = 1

// NewRPCRMClient adapts the Hadoop RPC ApplicationMasterProtocol client to
// RMClient.
func NewRPCRMClient(c AMRMProtocol) RMClient { return rpcRM{c: c} }

// NewRPCNMClient adapts the Hadoop RPC ContainerManagementProtocol client
// to NMClient.
func NewRPCNMClient(c NMProtocol) NMClient { return rpcNM{c: c} }

type rpcRM struct{ c AMRMProtocol }

func notRegistered(err error) error {
	if errors.Is(err, yarn.ErrApplicationMasterNotRegistered) {
		return fmt.Errorf("%w: %w", ErrNotRegistered, err)
	}
	return err
}

func (r rpcRM) Register(ctx context.Context, req RegisterRequest) (RegisterResponse, error) {
	resp, err := r.c.Register(ctx, &hadoopyarn.RegisterApplicationMasterRequestProto{
		Host: proto.String(req.Host), RpcPort: proto.Int32(req.RPCPort), TrackingUrl: proto.String(req.TrackingURL),
	})
	if err != nil {
		return RegisterResponse{}, err
	}
	out := RegisterResponse{MaxCapability: yarn.ResourceFromProto(resp.GetMaximumCapability()), Queue: resp.GetQueue(),
		ResourceTypes: yarn.ResourceTypesFromProto(resp.GetResourceTypes())}
	if len(out.ResourceTypes) == 0 {
		// Older RMs leave resource_types empty: every configured type
		// appears in the maximum capability.
		out.ResourceTypes = typesOf(resp.GetMaximumCapability())
	}
	for _, c := range resp.GetContainersFromPreviousAttempts() {
		out.PreviousContainers = append(out.PreviousContainers, fromContainer(c))
	}
	for _, t := range resp.GetNmTokensFromPreviousAttempts() {
		out.NMTokens = append(out.NMTokens, NMToken{NodeID: yarn.NodeID(t.GetNodeId()), Token: fromToken(t.GetToken())})
	}
	return out, nil
}

func (r rpcRM) Allocate(ctx context.Context, req AllocateRequest) (AllocateResponse, error) {
	preq, err := allocateProto(req)
	if err != nil {
		return AllocateResponse{}, err
	}
	resp, err := r.c.Allocate(ctx, preq)
	if err != nil {
		return AllocateResponse{}, placementRefused(notRegistered(err))
	}
	out := AllocateResponse{Shutdown: resp.GetAMCommand() == hadoopyarn.AMCommandProto_AM_SHUTDOWN}
	for _, c := range resp.GetAllocatedContainers() {
		out.Allocated = append(out.Allocated, fromContainer(c))
	}
	for _, s := range resp.GetCompletedContainerStatuses() {
		out.Completed = append(out.Completed, Completed{ID: yarn.ContainerID(s.GetContainerId()),
			ExitStatus: int(s.GetExitStatus()), Diagnostics: s.GetDiagnostics()})
	}
	for _, t := range resp.GetNmTokens() {
		out.NMTokens = append(out.NMTokens, NMToken{NodeID: yarn.NodeID(t.GetNodeId()), Token: fromToken(t.GetToken())})
	}
	if t := resp.GetAmRmToken(); t != nil {
		tok := fromToken(t)
		out.AMRMToken = &tok
	}
	out.ClusterNodes = int(resp.GetNumClusterNodes())
	for _, n := range resp.GetUpdatedNodes() {
		out.UpdatedNodes = append(out.UpdatedNodes, NodeUpdate{NodeID: yarn.NodeID(n.GetNodeId()),
			State: strings.TrimPrefix(n.GetNodeState().String(), "NS_")})
	}
	return out, nil
}

func (r rpcRM) Finish(ctx context.Context, req FinishRequest) error {
	status := map[FinalStatus]hadoopyarn.FinalApplicationStatusProto{
		StatusSucceeded: hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED,
		StatusFailed:    hadoopyarn.FinalApplicationStatusProto_APP_FAILED,
		StatusKilled:    hadoopyarn.FinalApplicationStatusProto_APP_KILLED,
	}[req.Status]
	return notRegistered(r.c.Finish(ctx, &hadoopyarn.FinishApplicationMasterRequestProto{
		Diagnostics: proto.String(req.Diagnostics), TrackingUrl: proto.String(req.TrackingURL),
		FinalApplicationStatus: status.Enum(),
	}))
}

// allocateProto builds the heartbeat: each ask as one ANY ("*") request,
// keyed by allocation_request_id.
func allocateProto(req AllocateRequest) (*hadoopyarn.AllocateRequestProto, error) {
	p := &hadoopyarn.AllocateRequestProto{Progress: proto.Float32(req.Progress)}
	for _, a := range req.Asks {
		prio := a.Priority
		if prio == 0 {
			prio = WorkerPriority
		}
		capability := yarn.NewResource(a.Profile.MemoryMB, int32(a.Profile.VCores), a.Profile.Extra)
		if a.MaxPerNode > 0 {
			p.SchedulingRequests = append(p.SchedulingRequests, schedulingRequest(a, prio, capability))
			continue
		}
		rr := &hadoopyarn.ResourceRequestProto{
			Priority:            &hadoopyarn.PriorityProto{Priority: proto.Int32(prio)},
			ResourceName:        proto.String("*"),
			Capability:          capability,
			NumContainers:       proto.Int32(int32(a.Count)),
			RelaxLocality:       proto.Bool(true),
			AllocationRequestId: proto.Int64(a.ID),
		}
		if a.NodeLabel != "" {
			rr.NodeLabelExpression = proto.String(a.NodeLabel)
		}
		p.Ask = append(p.Ask, rr)
	}
	for _, id := range req.Release {
		cid, err := yarn.ParseContainerID(id)
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", id, err)
		}
		p.Release = append(p.Release, cid)
	}
	if len(req.BlacklistAdd)+len(req.BlacklistRemove) > 0 {
		p.BlacklistRequest = &hadoopyarn.ResourceBlacklistRequestProto{
			BlacklistAdditions: req.BlacklistAdd, BlacklistRemovals: req.BlacklistRemove}
	}
	return p, nil
}

// WorkerAllocationTag tags every worker container asked with a placement
// constraint; the constraint counts the containers of this application
// carrying it.
const WorkerAllocationTag = "xres-worker"

// nodePartitionKey is the node-attribute target key that names a node
// label (partition) in a placement constraint.
const nodePartitionKey = "yarn_node_partition/"

// schedulingRequest is a as a SchedulingRequest: a.Count containers tagged
// a.Tag (WorkerAllocationTag; xres-worker-<group> for a named group), none
// placed on a node that already holds
// a.MaxPerNode of them. YARN's maxCardinality bounds the tagged containers
// already on the node, before the one being placed, hence MaxPerNode-1. A
// SchedulingRequest has no label expression: a.NodeLabel goes as a
// node-partition target (without one the scheduler takes the application's
// label, yarn.application.node-label).
//
//	SchedulingRequest{id, priority, GUARANTEED, tags [xres-worker],
//	  sizing{Count × capability},
//	  constraint{scope node, target ALLOCATION_TAG [xres-worker]
//	             (+ NODE_ATTRIBUTE yarn_node_partition/ [label]),
//	             min 0, max MaxPerNode-1}}
func schedulingRequest(a Ask, prio int32, capability *hadoopyarn.ResourceProto) *hadoopyarn.SchedulingRequestProto {
	tag := a.Tag
	if tag == "" {
		tag = WorkerAllocationTag
	}
	targets := []*hadoopyarn.PlacementConstraintTargetProto{{
		TargetType:   hadoopyarn.PlacementConstraintTargetProto_ALLOCATION_TAG.Enum(),
		TargetValues: []string{tag},
	}}
	if a.NodeLabel != "" {
		targets = append(targets, &hadoopyarn.PlacementConstraintTargetProto{
			TargetType: hadoopyarn.PlacementConstraintTargetProto_NODE_ATTRIBUTE.Enum(),
			TargetKey:  proto.String(nodePartitionKey), TargetValues: []string{a.NodeLabel},
		})
	}
	return &hadoopyarn.SchedulingRequestProto{
		AllocationRequestId: proto.Int64(a.ID),
		Priority:            &hadoopyarn.PriorityProto{Priority: proto.Int32(prio)},
		ExecutionType: &hadoopyarn.ExecutionTypeRequestProto{
			ExecutionType: hadoopyarn.ExecutionTypeProto_GUARANTEED.Enum(), EnforceExecutionType: proto.Bool(true)},
		AllocationTags: []string{tag},
		ResourceSizing: &hadoopyarn.ResourceSizingProto{NumAllocations: proto.Int32(int32(a.Count)), Resources: capability},
		PlacementConstraint: &hadoopyarn.PlacementConstraintProto{SimpleConstraint: &hadoopyarn.SimplePlacementConstraintProto{
			Scope:             proto.String("node"),
			TargetExpressions: targets,
			MinCardinality:    proto.Int32(0),
			MaxCardinality:    proto.Int32(int32(a.MaxPerNode - 1)),
		}},
	}
}

// placementHandlerKey is the RM setting a placement-disabled RM names when
// it refuses a SchedulingRequest.
const placementHandlerKey = "yarn.resourcemanager.placement-constraints.handler"

// placementRefused tells an RM that cannot handle placement constraints
// (its handler is disabled) by the YarnException it answers with.
func placementRefused(err error) error {
	var re *yarn.RemoteError
	if errors.As(err, &re) && strings.Contains(re.Message, placementHandlerKey) {
		return fmt.Errorf("%w: %w", ErrPlacementUnsupported, err)
	}
	return err
}

func typesOf(r *hadoopyarn.ResourceProto) []ResourceType {
	types := []ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}}
	for _, ri := range r.GetResourceValueMap() {
		switch ri.GetKey() {
		case "memory-mb", "vcores":
			continue
		}
		types = append(types, ResourceType{Name: ri.GetKey(), Units: ri.GetUnits()})
	}
	return types
}

func fromContainer(c *hadoopyarn.ContainerProto) Container {
	id := int64(-1)
	if c.AllocationRequestId != nil {
		id = c.GetAllocationRequestId()
	}
	return Container{ID: yarn.ContainerID(c.GetId()), NodeID: yarn.NodeID(c.GetNodeId()),
		NodeHTTP: c.GetNodeHttpAddress(), Resource: yarn.ResourceFromProto(c.GetResource()),
		AllocationRequestID: id, Token: fromToken(c.GetContainerToken())}
}

// fromToken converts a wire token; nil gives the zero Token.
func fromToken(t *hadoopcommon.TokenProto) Token {
	if t == nil {
		return Token{}
	}
	return *security.FromProto(t)
}

type rpcNM struct{ c NMProtocol }

func containerProto(c Container) (*hadoopyarn.ContainerProto, error) {
	id, err := yarn.ParseContainerID(c.ID)
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(c.NodeID)
	if err != nil {
		return nil, fmt.Errorf("container %s: node id %q: %w", c.ID, c.NodeID, err)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("container %s: node id %q: bad port", c.ID, c.NodeID)
	}
	return &hadoopyarn.ContainerProto{Id: id,
		NodeId:          &hadoopyarn.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(p))},
		NodeHttpAddress: proto.String(c.NodeHTTP), ContainerToken: c.Token.Proto()}, nil
}

// nmSecurityToken is nil for the zero Token (no NMToken received).
func nmSecurityToken(t Token) *security.Token {
	if t.Kind == "" {
		return nil
	}
	return &t
}

func (n rpcNM) StartContainer(ctx context.Context, c Container, nmToken Token, launch LaunchContext) error {
	cp, err := containerProto(c)
	if err != nil {
		return err
	}
	return n.c.StartContainer(ctx, cp, nmSecurityToken(nmToken), LaunchProto(launch))
}

// nmBatchProtocol is *yarn.NMClient's startContainers with a list.
type nmBatchProtocol interface {
	StartContainers(ctx context.Context, node string, nmToken *security.Token, reqs []*hadoopyarn.StartContainerRequestProto) (*hadoopyarn.StartContainersResponseProto, error)
}

var (
	_ nmBatchProtocol = (*yarn.NMClient)(nil)
	_ BatchStarter    = rpcNM{}
)

// StartContainers starts cs, all on one node, in one startContainers call
// when the client has it (one launch context shared by every request); a
// container the NodeManager refuses gets its *yarn.ContainerError.
func (n rpcNM) StartContainers(ctx context.Context, cs []Container, nmToken Token, launch LaunchContext) []error {
	errs := make([]error, len(cs))
	b, ok := n.c.(nmBatchProtocol)
	if !ok || len(cs) == 1 {
		for i, c := range cs {
			errs[i] = n.StartContainer(ctx, c, nmToken, launch)
		}
		return errs
	}
	lp := LaunchProto(launch)
	reqs := make([]*hadoopyarn.StartContainerRequestProto, len(cs))
	index := make(map[string]int, len(cs))
	for i, c := range cs {
		reqs[i] = &hadoopyarn.StartContainerRequestProto{ContainerLaunchContext: lp, ContainerToken: c.Token.Proto()}
		index[c.ID] = i
	}
	resp, err := b.StartContainers(ctx, cs[0].NodeID, nmSecurityToken(nmToken), reqs)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for _, f := range resp.GetFailedRequests() {
		id := yarn.ContainerID(f.GetContainerId())
		if i, ok := index[id]; ok {
			errs[i] = &yarn.ContainerError{Container: id, Class: f.GetException().GetClassName(), Message: f.GetException().GetMessage()}
		}
	}
	return errs
}

func (n rpcNM) StopContainer(ctx context.Context, c Container, nmToken Token) error {
	cp, err := containerProto(c)
	if err != nil {
		return err
	}
	return n.c.StopContainer(ctx, cp, nmSecurityToken(nmToken))
}

// LaunchProto builds the ContainerLaunchContextProto of a worker or, for
// the submission client, of the AM container; maps in sorted order.
func LaunchProto(l LaunchContext) *hadoopyarn.ContainerLaunchContextProto {
	p := &hadoopyarn.ContainerLaunchContextProto{Command: l.Commands}
	if len(l.Tokens) > 0 {
		p.Tokens = l.Tokens
	}
	for _, name := range sortedKeys(l.LocalResources) {
		r := l.LocalResources[name]
		lr := &hadoopyarn.LocalResourceProto{
			Resource: &hadoopyarn.URLProto{Scheme: proto.String(r.URL.Scheme), File: proto.String(r.URL.File)},
			Size:     proto.Int64(r.Size), Timestamp: proto.Int64(r.Timestamp),
			Type:       hadoopyarn.LocalResourceTypeProto(r.Type).Enum(),
			Visibility: hadoopyarn.LocalResourceVisibilityProto(r.Visibility).Enum(),
		}
		if r.URL.Host != "" {
			lr.Resource.Host = proto.String(r.URL.Host)
		}
		if r.URL.Port > 0 {
			lr.Resource.Port = proto.Int32(r.URL.Port)
		}
		p.LocalResources = append(p.LocalResources, &hadoopyarn.StringLocalResourceMapProto{Key: proto.String(name), Value: lr})
	}
	for _, k := range sortedKeys(l.Env) {
		p.Environment = append(p.Environment, &hadoopyarn.StringStringMapProto{Key: proto.String(k), Value: proto.String(l.Env[k])})
	}
	return p
}
