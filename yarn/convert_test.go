package yarn

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
)

// The conversion tests moved here from yarn/am with the conversions.

func TestAllocateProto(t *testing.T) {
	p, err := allocateProto(AllocateRequest{
		Asks:         []Ask{{ID: 1, Count: 3, Profile: Resource{MemoryMB: 1728, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 1}}}},
		Release:      []string{"container_e17_1700000000000_0001_01_000005"},
		BlacklistAdd: []string{"badhost"},
		Progress:     0.5,
	})
	require.NoError(t, err)
	require.Len(t, p.GetAsk(), 1)
	ask := p.GetAsk()[0]
	require.Equal(t, "*", ask.GetResourceName())
	require.Equal(t, int32(3), ask.GetNumContainers())
	require.Equal(t, int64(1), ask.GetAllocationRequestId())
	require.Equal(t, DefaultPriority, ask.GetPriority().GetPriority())
	require.True(t, ask.GetRelaxLocality())
	gpu, ok := ResourceValue(ask.GetCapability(), "yarn.io/gpu")
	require.True(t, ok)
	require.Equal(t, int64(1), gpu)
	require.Equal(t, int64(1728), ask.GetCapability().GetMemory())
	require.Equal(t, "container_e17_1700000000000_0001_01_000005", ContainerID(p.GetRelease()[0]))
	require.Equal(t, []string{"badhost"}, p.GetBlacklistRequest().GetBlacklistAdditions())
	require.Equal(t, float32(0.5), p.GetProgress())

	_, err = allocateProto(AllocateRequest{Release: []string{"bogus"}})
	require.ErrorContains(t, err, "release bogus")
}

func TestLaunchProto(t *testing.T) {
	p := launchProto(LaunchContext{
		Commands: []string{"./container-launcher -- x 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
		Env:      map[string]string{"B": "2", "A": "1"},
		LocalResources: map[string]LocalResource{
			"container-launcher": {URL: ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/container-launcher"}, Size: 7, Timestamp: 8, Type: File, Visibility: Application},
			"env":                {URL: ResourceURL{Scheme: "hdfs", File: "/s/env.tgz"}, Size: 1, Timestamp: 2, Type: Archive, Visibility: Private},
		},
	})
	require.Equal(t, []string{"./container-launcher -- x 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"}, p.GetCommand())
	require.Equal(t, "A", p.GetEnvironment()[0].GetKey())
	require.Nil(t, p.Tokens, "no tokens field on an insecure cluster")
	lr := p.GetLocalResources()[0]
	require.Equal(t, "container-launcher", lr.GetKey())
	require.Equal(t, "nn", lr.GetValue().GetResource().GetHost())
	require.Equal(t, int32(8020), lr.GetValue().GetResource().GetPort())
	require.Equal(t, int64(7), lr.GetValue().GetSize())
	require.Equal(t, int64(8), lr.GetValue().GetTimestamp())
	require.Equal(t, hadoopyarn.LocalResourceTypeProto_FILE, lr.GetValue().GetType())
	require.Equal(t, hadoopyarn.LocalResourceVisibilityProto_APPLICATION, lr.GetValue().GetVisibility())
	env := p.GetLocalResources()[1].GetValue()
	require.Equal(t, hadoopyarn.LocalResourceTypeProto_ARCHIVE, env.GetType())
	require.Nil(t, env.GetResource().Host)
}

func TestRegisterFallsBackToCapabilityTypes(t *testing.T) {
	resp := registerResponse(&hadoopyarn.RegisterApplicationMasterResponseProto{
		MaximumCapability: NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2}),
	})
	require.Equal(t, []ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}, {Name: "yarn.io/gpu", Units: ""}}, resp.ResourceTypes)
	require.Equal(t, Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 2}}, resp.MaxCapability)
}

func TestAllocateProtoPlacement(t *testing.T) {
	profile := Resource{MemoryMB: 512, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}}
	tests := []struct {
		name       string
		ask        Ask
		label      string // node_label_expression of the ResourceRequest
		maxCard    int32  // maxCardinality of the SchedulingRequest; -1: none sent
		resourceRq bool
	}{
		{name: "no constraint", ask: Ask{ID: 1, Count: 3, Profile: profile}, maxCard: -1, resourceRq: true},
		{name: "node label", ask: Ask{ID: 1, Count: 3, Profile: profile, NodeLabel: "gpu"}, label: "gpu", maxCard: -1, resourceRq: true},
		{name: "one per node", ask: Ask{ID: 1, Count: 3, Profile: profile, MaxPerNode: 1}, maxCard: 0},
		{name: "three per node", ask: Ask{ID: 1, Count: 3, Profile: profile, MaxPerNode: 3}, maxCard: 2},
		{name: "one per labelled node", ask: Ask{ID: 1, Count: 3, Profile: profile, MaxPerNode: 1, NodeLabel: "gpu"}, label: "gpu", maxCard: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := allocateProto(AllocateRequest{Asks: []Ask{tt.ask}})
			require.NoError(t, err)
			_, err = proto.Marshal(p) // every required field of the constraint set
			require.NoError(t, err)
			if tt.resourceRq {
				require.Empty(t, p.GetSchedulingRequests())
				require.Len(t, p.GetAsk(), 1)
				require.Equal(t, tt.label, p.GetAsk()[0].GetNodeLabelExpression())
				require.Equal(t, tt.label != "", p.GetAsk()[0].NodeLabelExpression != nil, "no label expression sent without a label")
				return
			}
			require.Empty(t, p.GetAsk(), "a constrained ask goes as a SchedulingRequest only")
			require.Len(t, p.GetSchedulingRequests(), 1)
			sr := p.GetSchedulingRequests()[0]
			require.Equal(t, int64(1), sr.GetAllocationRequestId())
			require.Equal(t, DefaultPriority, sr.GetPriority().GetPriority())
			require.Equal(t, []string{DefaultAllocationTag}, sr.GetAllocationTags())
			require.Equal(t, int32(3), sr.GetResourceSizing().GetNumAllocations())
			gpu, ok := ResourceValue(sr.GetResourceSizing().GetResources(), "yarn.io/gpu")
			require.True(t, ok)
			require.Equal(t, int64(1), gpu)
			c := sr.GetPlacementConstraint().GetSimpleConstraint()
			require.Equal(t, "node", c.GetScope())
			require.Equal(t, int32(0), c.GetMinCardinality())
			require.Equal(t, tt.maxCard, c.GetMaxCardinality())
			require.Equal(t, hadoopyarn.PlacementConstraintTargetProto_ALLOCATION_TAG, c.GetTargetExpressions()[0].GetTargetType())
			require.Equal(t, []string{DefaultAllocationTag}, c.GetTargetExpressions()[0].GetTargetValues())
			if tt.label == "" {
				require.Len(t, c.GetTargetExpressions(), 1)
				return
			}
			require.Len(t, c.GetTargetExpressions(), 2)
			part := c.GetTargetExpressions()[1]
			require.Equal(t, hadoopyarn.PlacementConstraintTargetProto_NODE_ATTRIBUTE, part.GetTargetType())
			require.Equal(t, "yarn_node_partition/", part.GetTargetKey())
			require.Equal(t, []string{tt.label}, part.GetTargetValues())
		})
	}
}

// The YarnException a placement-disabled RM answers (its
// DisabledPlacementProcessor) maps to ErrPlacementUnsupported; other
// remote errors do not.
func TestPlacementRefusedMapped(t *testing.T) {
	refused := &RemoteError{Method: "allocate", Class: "org.apache.hadoop.yarn.exceptions.YarnException",
		Message: "Found non empty SchedulingRequest in AllocateRequest for application=appattempt_1_0001_000001, but the configured " +
			"yarn.resourcemanager.placement-constraints.handler cannot handle placement constraints. Rejecting this allocate operation"}
	require.ErrorIs(t, placementRefused(refused), ErrPlacementUnsupported)
	require.NotErrorIs(t, placementRefused(&RemoteError{Method: "allocate", Class: "org.apache.hadoop.yarn.exceptions.YarnException", Message: "other"}), ErrPlacementUnsupported)
}

// TestAllocateProtoLocality: an ask naming hosts goes out as the ANY
// request, one per rack and one per host, each of the whole count with
// the same allocation_request_id, priority and capability, locality
// relaxed; with a node label it stays ANY alone (YARN refuses a label on
// a host or rack request).
func TestAllocateProtoLocality(t *testing.T) {
	ask := Ask{ID: 4, Count: 64, Profile: Resource{MemoryMB: 256, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}},
		Hosts: []string{"h1", "h2"}, Racks: []string{DefaultRack}}
	p, err := allocateProto(AllocateRequest{Asks: []Ask{ask}})
	require.NoError(t, err)
	var names []string
	for _, rr := range p.GetAsk() {
		names = append(names, rr.GetResourceName())
		require.Equal(t, int32(64), rr.GetNumContainers(), rr.GetResourceName())
		require.Equal(t, int64(4), rr.GetAllocationRequestId(), rr.GetResourceName())
		require.Equal(t, DefaultPriority, rr.GetPriority().GetPriority())
		require.True(t, rr.GetRelaxLocality())
		require.Equal(t, int64(256), rr.GetCapability().GetMemory())
		require.Empty(t, rr.GetNodeLabelExpression())
	}
	require.Equal(t, []string{"*", DefaultRack, "h1", "h2"}, names)

	ask.NodeLabel = "gpu"
	p, err = allocateProto(AllocateRequest{Asks: []Ask{ask}})
	require.NoError(t, err)
	require.Len(t, p.GetAsk(), 1)
	require.Equal(t, "*", p.GetAsk()[0].GetResourceName())
}
