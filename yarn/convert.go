package yarn

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
)

// The conversions between this package's Go types and the generated
// protos, all unexported: the clients' exported API speaks Go types (see
// proto.go for the one escape hatch to raw protos).

// registerResponse converts the register answer. Older RMs leave
// resource_types empty: every configured type then appears in the maximum
// capability.
func registerResponse(resp *hadoopyarn.RegisterApplicationMasterResponseProto) RegisterResponse {
	out := RegisterResponse{MaxCapability: resourceFromProto(resp.GetMaximumCapability()), Queue: resp.GetQueue(),
		ResourceTypes: resourceTypesFromProto(resp.GetResourceTypes())}
	if len(out.ResourceTypes) == 0 {
		out.ResourceTypes = typesOf(resp.GetMaximumCapability())
	}
	for _, c := range resp.GetContainersFromPreviousAttempts() {
		out.PreviousContainers = append(out.PreviousContainers, fromContainer(c))
	}
	for _, t := range resp.GetNmTokensFromPreviousAttempts() {
		out.NMTokens = append(out.NMTokens, NMToken{NodeID: NodeID(t.GetNodeId()), Token: fromToken(t.GetToken())})
	}
	return out
}

// allocateResponse converts a heartbeat answer.
func allocateResponse(resp *hadoopyarn.AllocateResponseProto) AllocateResponse {
	out := AllocateResponse{Shutdown: resp.GetAMCommand() == hadoopyarn.AMCommandProto_AM_SHUTDOWN}
	if n := len(resp.GetAllocatedContainers()); n > 0 {
		out.Allocated = make([]Container, 0, n)
	}
	if n := len(resp.GetCompletedContainerStatuses()); n > 0 {
		out.Completed = make([]Completed, 0, n)
	}
	for _, c := range resp.GetAllocatedContainers() {
		out.Allocated = append(out.Allocated, fromContainer(c))
	}
	for _, s := range resp.GetCompletedContainerStatuses() {
		out.Completed = append(out.Completed, Completed{ID: ContainerID(s.GetContainerId()),
			ExitStatus: int(s.GetExitStatus()), Diagnostics: s.GetDiagnostics()})
	}
	for _, t := range resp.GetNmTokens() {
		out.NMTokens = append(out.NMTokens, NMToken{NodeID: NodeID(t.GetNodeId()), Token: fromToken(t.GetToken())})
	}
	if t := resp.GetAmRmToken(); t != nil {
		tok := fromToken(t)
		out.AMRMToken = &tok
	}
	out.ClusterNodes = int(resp.GetNumClusterNodes())
	for _, n := range resp.GetUpdatedNodes() {
		out.UpdatedNodes = append(out.UpdatedNodes, NodeUpdate{NodeID: NodeID(n.GetNodeId()),
			State: strings.TrimPrefix(n.GetNodeState().String(), "NS_")})
	}
	return out
}

// finishProto is the unregister request.
func finishProto(req FinishRequest) *hadoopyarn.FinishApplicationMasterRequestProto {
	status := map[FinalStatus]hadoopyarn.FinalApplicationStatusProto{
		StatusSucceeded: hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED,
		StatusFailed:    hadoopyarn.FinalApplicationStatusProto_APP_FAILED,
		StatusKilled:    hadoopyarn.FinalApplicationStatusProto_APP_KILLED,
	}[req.Status]
	return &hadoopyarn.FinishApplicationMasterRequestProto{
		Diagnostics: proto.String(req.Diagnostics), TrackingUrl: proto.String(req.TrackingURL),
		FinalApplicationStatus: status.Enum(),
	}
}

// allocateProto builds the heartbeat: each ask as one ANY ("*") request,
// keyed by allocation_request_id.
func allocateProto(req AllocateRequest) (*hadoopyarn.AllocateRequestProto, error) {
	p := &hadoopyarn.AllocateRequestProto{Progress: proto.Float32(req.Progress)}
	for _, a := range req.Asks {
		prio := a.Priority
		if prio == 0 {
			prio = DefaultPriority
		}
		capability := NewResource(a.Profile.MemoryMB, int32(a.Profile.VCores), a.Profile.Extra)
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
		if a.NodeLabel == "" {
			for _, name := range slices.Concat(a.Racks, a.Hosts) {
				p.Ask = append(p.Ask, &hadoopyarn.ResourceRequestProto{
					Priority: rr.Priority, ResourceName: proto.String(name), Capability: capability,
					NumContainers: rr.NumContainers, RelaxLocality: proto.Bool(true), AllocationRequestId: rr.AllocationRequestId,
				})
			}
		}
	}
	for _, id := range req.Release {
		cid, err := ParseContainerID(id)
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

// nodePartitionKey is the node-attribute target key that names a node
// label (partition) in a placement constraint.
const nodePartitionKey = "yarn_node_partition/"

// schedulingRequest is a as a SchedulingRequest: a.Count containers tagged
// a.Tag (DefaultAllocationTag; the AM tags a named group
// xres-worker-<group>), none placed on a node that already holds
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
		tag = DefaultAllocationTag
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

// PlacementConstraintsHandlerKey is the RM setting a placement-disabled RM
// names when it refuses a SchedulingRequest.
const PlacementConstraintsHandlerKey = conf.HadoopRMPlacementConstraintsHandler

// placementRefused tells an RM that cannot handle placement constraints
// (its handler is disabled) by the YarnException it answers with.
func placementRefused(err error) error {
	var re *RemoteError
	if errors.As(err, &re) && strings.Contains(re.Message, PlacementConstraintsHandlerKey) {
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
	return Container{ID: ContainerID(c.GetId()), NodeID: NodeID(c.GetNodeId()),
		NodeHTTP: c.GetNodeHttpAddress(), Resource: resourceFromProto(c.GetResource()),
		AllocationRequestID: id, Token: fromToken(c.GetContainerToken())}
}

// fromToken converts a wire token; nil gives the zero Token.
func fromToken(t *hadoopcommon.TokenProto) security.Token {
	if t == nil {
		return security.Token{}
	}
	// The bytes are the decoded message's own (proto.Unmarshal copies
	// them out of the wire buffer) and the message is dropped after the
	// conversion, so they are taken as they are, not copied again.
	return security.Token{Identifier: t.GetIdentifier(), Password: t.GetPassword(), Kind: t.GetKind(), Service: t.GetService()}
}

// containerProto is the part of c a NodeManager call needs: its id, node
// and container token.
func containerProto(c Container) (*hadoopyarn.ContainerProto, error) {
	id, err := ParseContainerID(c.ID)
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
func nmSecurityToken(t security.Token) *security.Token {
	if t.Kind == "" {
		return nil
	}
	return &t
}

// launchProto builds the ContainerLaunchContextProto of a worker or of the
// AM container; maps in sorted order.
func launchProto(l LaunchContext) *hadoopyarn.ContainerLaunchContextProto {
	p := &hadoopyarn.ContainerLaunchContextProto{Command: l.Commands}
	if len(l.Tokens) > 0 {
		p.Tokens = l.Tokens
	}
	for _, name := range slices.Sorted(maps.Keys(l.LocalResources)) {
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
	for _, k := range slices.Sorted(maps.Keys(l.Env)) {
		p.Environment = append(p.Environment, &hadoopyarn.StringStringMapProto{Key: proto.String(k), Value: proto.String(l.Env[k])})
	}
	return p
}

// submissionProto is the RPC form of sub (exported as SubmissionProto).
func submissionProto(sub Submission) (*hadoopyarn.ApplicationSubmissionContextProto, error) {
	id, err := ParseApplicationID(sub.AppID)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	asc := &hadoopyarn.ApplicationSubmissionContextProto{
		ApplicationId:   id,
		ApplicationName: proto.String(sub.Name),
		Queue:           proto.String(sub.Queue),
		AmContainerSpec: launchProto(sub.AM),
		Resource:        NewResource(sub.AMResource.MemoryMB, int32(sub.AMResource.VCores), sub.AMResource.Extra),
		ApplicationType: proto.String(sub.Type),
		// As Flink does: a new AM attempt adopts the running workers
		// (containers_from_previous_attempts) instead of losing them.
		KeepContainersAcrossApplicationAttempts: proto.Bool(true),
	}
	if sub.MaxAttempts > 0 {
		asc.MaxAppAttempts = proto.Int32(sub.MaxAttempts)
	}
	if sub.NodeLabel != "" {
		asc.NodeLabelExpression = proto.String(sub.NodeLabel)
	}
	asc.ApplicationTags = sub.Tags
	if sub.Priority != nil {
		asc.Priority = &hadoopyarn.PriorityProto{Priority: proto.Int32(*sub.Priority)}
	}
	return asc, nil
}

// nodeStates converts node state names (RUNNING, LOST, …).
func nodeStates(states []string) ([]hadoopyarn.NodeStateProto, error) {
	ps := make([]hadoopyarn.NodeStateProto, 0, len(states))
	for _, s := range states {
		v, ok := hadoopyarn.NodeStateProto_value["NS_"+s]
		if !ok {
			return nil, fmt.Errorf("list nodes: unknown node state %q", s)
		}
		ps = append(ps, hadoopyarn.NodeStateProto(v))
	}
	return ps, nil
}

// applicationStates converts application state names (RUNNING, …).
func applicationStates(states []string) ([]hadoopyarn.YarnApplicationStateProto, error) {
	ps := make([]hadoopyarn.YarnApplicationStateProto, 0, len(states))
	for _, s := range states {
		v, ok := hadoopyarn.YarnApplicationStateProto_value[s]
		if !ok {
			return nil, fmt.Errorf("list applications: unknown application state %q", s)
		}
		ps = append(ps, hadoopyarn.YarnApplicationStateProto(v))
	}
	return ps, nil
}
