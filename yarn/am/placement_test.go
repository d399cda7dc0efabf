package am

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
)

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
			require.Equal(t, WorkerPriority, sr.GetPriority().GetPriority())
			require.Equal(t, []string{WorkerAllocationTag}, sr.GetAllocationTags())
			require.Equal(t, int32(3), sr.GetResourceSizing().GetNumAllocations())
			gpu, ok := yarn.ResourceValue(sr.GetResourceSizing().GetResources(), "yarn.io/gpu")
			require.True(t, ok)
			require.Equal(t, int64(1), gpu)
			c := sr.GetPlacementConstraint().GetSimpleConstraint()
			require.Equal(t, "node", c.GetScope())
			require.Equal(t, int32(0), c.GetMinCardinality())
			require.Equal(t, tt.maxCard, c.GetMaxCardinality())
			require.Equal(t, hadoopyarn.PlacementConstraintTargetProto_ALLOCATION_TAG, c.GetTargetExpressions()[0].GetTargetType())
			require.Equal(t, []string{WorkerAllocationTag}, c.GetTargetExpressions()[0].GetTargetValues())
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
	refused := &yarn.RemoteError{Method: "allocate", Class: "org.apache.hadoop.yarn.exceptions.YarnException",
		Message: "Found non empty SchedulingRequest in AllocateRequest for application=appattempt_1_0001_000001, but the configured " +
			"yarn.resourcemanager.placement-constraints.handler cannot handle placement constraints. Rejecting this allocate operation"}
	fake := &protoRM{allocErr: refused}
	_, err := NewRPCRMClient(fake).Allocate(context.Background(), AllocateRequest{})
	require.ErrorIs(t, err, ErrPlacementUnsupported)
	fake.allocErr = &yarn.RemoteError{Method: "allocate", Class: "org.apache.hadoop.yarn.exceptions.YarnException", Message: "other"}
	_, err = NewRPCRMClient(fake).Allocate(context.Background(), AllocateRequest{})
	require.NotErrorIs(t, err, ErrPlacementUnsupported)
}

// An RM that refuses the SchedulingRequest fails the application at once,
// naming both keys, instead of retrying heartbeats.
func TestAMFailsWhenPlacementRefused(t *testing.T) {
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(AllocateRequest) (AllocateResponse, error) {
			return AllocateResponse{}, errors.Join(ErrPlacementUnsupported, errors.New("YarnException: ... Rejecting this allocate operation"))
		},
	}}
	cfg := testConfig(2, 2)
	cfg.Plan.MaxWorkersPerNode = 1
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, conf.PlacementMaxWorkersPerNode.Key+"=1 needs the ResourceManager's yarn.resourcemanager.placement-constraints.handler=scheduler")
	require.Len(t, rm.requests, 1)
	require.Equal(t, 1, rm.requests[0].Asks[0].MaxPerNode)
	require.Len(t, rm.finished, 1)
}

// More workers than nodes × max-workers-per-node: the status says how many
// cannot be placed and why, and slot.request.timeout's diagnostic repeats it.
func TestAMUnplaceableWorkers(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	tick := func(d time.Duration, resp AllocateResponse) step {
		return func(AllocateRequest) (AllocateResponse, error) { clock.add(d); return resp, nil }
	}
	rm := &fakeRM{register: gpuLimits, steps: []step{
		tick(0, AllocateResponse{ClusterNodes: 2, Allocated: []Container{ctr(2, "nm1"), ctr(3, "nm2")}}),
		tick(30*time.Second, AllocateResponse{}),
		tick(30*time.Second, AllocateResponse{}),
		tick(30*time.Second, AllocateResponse{}),
	}}
	cfg := testConfig(3, 3)
	cfg.Plan.MaxWorkersPerNode = 1
	cfg.Now, cfg.RequestTimeout = clock.Now, 60*time.Second
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, StatusFailed, res.Status)
	const why = "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 2 nodes (room for 2 of the 3 workers)"
	require.Contains(t, res.Diagnostics, "not granted within "+conf.SlotRequestTimeout.Key)
	require.Contains(t, res.Diagnostics, why)
	require.Equal(t, 1, rm.requests[0].Asks[0].MaxPerNode)

	a.mu.Lock()
	a.groups[0].pending = 1 // as while it waited
	a.mu.Unlock()
	require.Contains(t, a.Status().Unplaceable, why)
}

func TestPlanPlacementKeys(t *testing.T) {
	tests := []struct {
		name     string
		kv       map[string]string
		label    string
		max      int
		errParts []string
	}{
		{name: "unset", kv: nil},
		{name: "label", kv: map[string]string{"yarn.taskmanager.node-label": " gpu "}, label: "gpu"},
		{name: "max", kv: map[string]string{"xres.placement.max-workers-per-node": "2"}, max: 2},
		{name: "negative", kv: map[string]string{"xres.placement.max-workers-per-node": "-1"},
			errParts: []string{"xres.placement.max-workers-per-node", "must not be negative"}},
		{name: "not a number", kv: map[string]string{"xres.placement.max-workers-per-node": "two"},
			errParts: []string{"xres.placement.max-workers-per-node", "two"}},
		{name: "with a label", kv: map[string]string{"xres.placement.max-workers-per-node": "1", "yarn.taskmanager.node-label": "gpu"},
			label: "gpu", max: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := conf.New()
			for k, v := range tt.kv {
				cfg.Set(k, v)
			}
			p, err := PlanWorkers(cfg, nil, 1)
			if len(tt.errParts) > 0 {
				require.ErrorIs(t, err, ErrBadConfig)
				for _, s := range tt.errParts {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.label, p.NodeLabel)
			require.Equal(t, tt.max, p.MaxWorkersPerNode)
		})
	}
}

type fixedStatus Status

func (s fixedStatus) Status() Status                             { return Status(s) }
func (s fixedStatus) ReportDevices(resources.DeviceReport) error { return nil }

// The tracking page (HTML and JSON) says why workers wait.
func TestTrackerShowsUnplaceable(t *testing.T) {
	why := "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 4 nodes"
	h := NewTracker(fixedStatus{App: "application_1_0001", Workers: 5, Pending: 1, Unplaceable: why}, nil)
	for _, path := range []string{"/", PathStatus} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Contains(t, rec.Body.String(), why, path)
	}
}
