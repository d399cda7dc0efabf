package am

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// An RM that refuses the SchedulingRequest fails the application at once,
// naming both keys, instead of retrying heartbeats.
func TestAMFailsWhenPlacementRefused(t *testing.T) {
	rm := &fakeRM{register: gpuLimits, steps: []step{
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{}, errors.Join(yarn.ErrPlacementUnsupported, errors.New("YarnException: ... Rejecting this allocate operation"))
		},
	}}
	cfg := testConfig(2, 2)
	cfg.Plan.MaxWorkersPerNode = 1
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
	require.Contains(t, res.Diagnostics, conf.PlacementMaxWorkersPerNode.Key+"=1 needs the ResourceManager's yarn.resourcemanager.placement-constraints.handler=scheduler")
	require.Len(t, rm.requests, 1)
	require.Equal(t, 1, rm.requests[0].Asks[0].MaxPerNode)
	require.Len(t, rm.finished, 1)
}

// More workers than nodes × max-workers-per-node: the status says how many
// cannot be placed and why, and slot.request.timeout's diagnostic repeats it.
func TestAMUnplaceableWorkers(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	tick := func(d time.Duration, resp yarn.AllocateResponse) step {
		return func(yarn.AllocateRequest) (yarn.AllocateResponse, error) { clock.add(d); return resp, nil }
	}
	rm := &fakeRM{register: gpuLimits, steps: []step{
		tick(0, yarn.AllocateResponse{ClusterNodes: 2, Allocated: []yarn.Container{ctr(2, "nm1"), ctr(3, "nm2")}}),
		tick(30*time.Second, yarn.AllocateResponse{}),
		tick(30*time.Second, yarn.AllocateResponse{}),
		tick(30*time.Second, yarn.AllocateResponse{}),
	}}
	cfg := testConfig(3, 3)
	cfg.Plan.MaxWorkersPerNode = 1
	cfg.Now, cfg.RequestTimeout = clock.Now, 60*time.Second
	res, err, a := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusFailed, res.Status)
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
			p, err := amplan.PlanWorkers(cfg, nil, 1)
			if len(tt.errParts) > 0 {
				require.ErrorIs(t, err, amplan.ErrBadConfig)
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

type fixedStatus amstatus.Status

func (s fixedStatus) Status() amstatus.Status                   { return amstatus.Status(s) }
func (s fixedStatus) ReportDevices(contract.DeviceReport) error { return nil }

// The tracking page (HTML and JSON) says why workers wait.
func TestTrackerShowsUnplaceable(t *testing.T) {
	why := "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 4 nodes"
	h := amweb.NewTracker(fixedStatus{App: "application_1_0001", Workers: 5, Pending: 1, Unplaceable: why}, nil)
	for _, path := range []string{"/", amweb.PathStatus} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Contains(t, rec.Body.String(), why, path)
	}
}
