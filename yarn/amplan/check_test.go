package amplan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

func TestCheckProfile(t *testing.T) {
	gpuCluster := ClusterLimits{
		Types: []yarn.ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}},
		Max:   yarn.Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 2}},
	}
	plain := ClusterLimits{
		Types: []yarn.ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}},
		Max:   yarn.Resource{MemoryMB: 8192, VCores: 4},
	}
	owners := map[string]string{"yarn.io/gpu": "gpu", "yarn.io/fpga": "fpga"}
	tests := []struct {
		name    string
		profile yarn.Resource
		limits  ClusterLimits
		errs    []string
	}{
		{name: "fits", profile: yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 2}}, limits: gpuCluster},
		{name: "fits exactly at max", profile: yarn.Resource{MemoryMB: 8192, VCores: 4}, limits: plain},
		{
			name:    "too many gpus",
			profile: yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 3}},
			limits:  gpuCluster,
			errs:    []string{"resource gpu (external-resource.gpu.yarn.config-key=yarn.io/gpu): asked 3 per worker, the largest container the cluster allows has 2"},
		},
		{
			name:    "unknown resource type",
			profile: yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}},
			limits:  plain,
			errs:    []string{"resource gpu (external-resource.gpu.yarn.config-key=yarn.io/gpu): yarn.io/gpu is not a resource type of this cluster (it offers: memory-mb, vcores)"},
		},
		{
			name:    "every problem listed",
			profile: yarn.Resource{MemoryMB: 10000, VCores: 8, Extra: map[string]int64{"yarn.io/fpga": 1, "yarn.io/gpu": 4}},
			limits:  gpuCluster,
			errs: []string{
				"memory-mb: asked 10000 MiB per worker, the cluster's maximum allocation is 8192 MiB",
				"vcores: asked 8 per worker, the cluster's maximum allocation is 4",
				"yarn.io/fpga is not a resource type of this cluster",
				"asked 4 per worker, the largest container the cluster allows has 2",
			},
		},
		{
			name:    "limits named by the caller",
			profile: yarn.Resource{MemoryMB: 10000, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 4}},
			limits:  ClusterLimits{Types: gpuCluster.Types, Max: gpuCluster.Max, MaxName: "the largest NodeManager"},
			errs: []string{
				"memory-mb: asked 10000 MiB per worker, the largest NodeManager is 8192 MiB",
				"vcores: asked 8 per worker, the largest NodeManager is 4",
				"asked 4 per worker, the largest NodeManager has 2",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckProfile(tt.profile, tt.limits, owners)
			if len(tt.errs) == 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrProfileUnsatisfiable)
			for _, e := range tt.errs {
				require.ErrorContains(t, err, e)
			}
		})
	}
}
