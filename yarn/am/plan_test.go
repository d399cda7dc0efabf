package am

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

var gpuSpec = resources.Spec{Name: "gpu", Amount: 2, YarnKey: "yarn.io/gpu"}

func TestPlanWorkers(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		specs   []resources.Spec
		workers int
		want    Plan
		warn    string
	}{
		{
			name: "flink defaults",
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "parallelism over slots rounds up",
			conf: map[string]string{KeyParallelism: "10", KeySlotsPerWorker: "4"},
			want: Plan{BaseWorkers: 3, Workers: 3, SlotsPerWorker: 4, MaxFailedContainers: 3,
				Profile: Resource{MemoryMB: 1728, VCores: 4}},
		},
		{
			name:    "--workers overrides parallelism",
			conf:    map[string]string{KeyParallelism: "10"},
			workers: 4,
			want: Plan{BaseWorkers: 4, Workers: 4, SlotsPerWorker: 1, MaxFailedContainers: 4,
				Profile: Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "spares added",
			conf: map[string]string{KeyParallelism: "4", KeyRedundantWorkers: "2"},
			want: Plan{BaseWorkers: 4, Spares: 2, Workers: 6, SlotsPerWorker: 1, MaxFailedContainers: 6,
				Profile: Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "slot maximum caps workers and spares",
			conf: map[string]string{KeyParallelism: "8", KeySlotsPerWorker: "2", KeyMaxSlots: "7", KeyRedundantWorkers: "1"},
			want: Plan{BaseWorkers: 4, Spares: 1, Workers: 3, SlotsPerWorker: 2, MaxFailedContainers: 3,
				Profile: Resource{MemoryMB: 1728, VCores: 2}},
			warn: "slotmanager.number-of-slots.max=7 caps the workers at 3 (of 5 asked)",
		},
		{
			name: "max failed containers set",
			conf: map[string]string{KeyParallelism: "2", KeyMaxFailed: "0"},
			want: Plan{BaseWorkers: 2, Workers: 2, SlotsPerWorker: 1, MaxFailedContainers: 0,
				Profile: Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "process size truncates to MiB",
			conf: map[string]string{KeyProcessSize: "1048577k"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1024, VCores: 1}},
		},
		{
			name: "cpu cores rounded up win over yarn vcores",
			conf: map[string]string{KeyCPUCores: "2.5", KeyYarnVcores: "8", KeySlotsPerWorker: "4"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 4, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1728, VCores: 3}},
		},
		{
			name: "yarn vcores win over slots",
			conf: map[string]string{KeyYarnVcores: "8", KeySlotsPerWorker: "4"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 4, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1728, VCores: 8}},
		},
		{
			name: "yarn vcores -1 falls back to slots",
			conf: map[string]string{KeyYarnVcores: "-1", KeySlotsPerWorker: "3"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 3, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1728, VCores: 3}},
		},
		{
			name:  "external resources in the profile",
			conf:  map[string]string{KeyProcessSize: "2g"},
			specs: []resources.Spec{gpuSpec, {Name: "fpga", Amount: 1, YarnKey: "yarn.io/fpga"}},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 2048, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}}},
		},
		{
			name:  "resource without yarn key is a warning",
			specs: []resources.Spec{{Name: "tpu", Amount: 1}},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: Resource{MemoryMB: 1728, VCores: 1}},
			warn: "resource tpu: external-resource.tpu.yarn.config-key is not set; it is not asked from YARN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanWorkers(MapLookup(tt.conf), tt.specs, tt.workers)
			require.NoError(t, err)
			if tt.warn != "" {
				require.Equal(t, []string{tt.warn}, got.Warnings)
			} else {
				require.Empty(t, got.Warnings)
			}
			got.Warnings = nil
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPlanWorkersErrors(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		specs   []resources.Spec
		workers int
		err     string
	}{
		{name: "parallelism not a number", conf: map[string]string{KeyParallelism: "ten"}, err: `parallelism.default="ten" is not a 32-bit integer`},
		{name: "zero parallelism", conf: map[string]string{KeyParallelism: "0"}, err: "parallelism.default must be at least 1, got 0"},
		{name: "zero slots", conf: map[string]string{KeySlotsPerWorker: "0"}, err: "taskmanager.numberOfTaskSlots must be at least 1"},
		{name: "slot max below slots", conf: map[string]string{KeySlotsPerWorker: "4", KeyMaxSlots: "3"}, err: "slotmanager.number-of-slots.max (3) is below taskmanager.numberOfTaskSlots (4): no worker fits"},
		{name: "negative spares", conf: map[string]string{KeyRedundantWorkers: "-1"}, err: "slotmanager.redundant-taskmanager-num must not be negative"},
		{name: "negative workers flag", workers: -2, err: "--workers must be at least 1"},
		{name: "negative max failed", conf: map[string]string{KeyMaxFailed: "-1"}, err: "yarn.maximum-failed-containers must not be negative"},
		{name: "bad memory", conf: map[string]string{KeyProcessSize: "lots"}, err: "taskmanager.memory.process.size: invalid memory size"},
		{name: "memory below a MiB", conf: map[string]string{KeyProcessSize: "1000k"}, err: `taskmanager.memory.process.size="1000k" is below 1 MiB`},
		{name: "bad cpu cores", conf: map[string]string{KeyCPUCores: "x"}, err: `taskmanager.cpu.cores="x" is not a number`},
		{name: "zero cpu cores", conf: map[string]string{KeyCPUCores: "0"}, err: "taskmanager.cpu.cores must be positive"},
		{name: "bad yarn vcores", conf: map[string]string{KeyYarnVcores: "1.5"}, err: `yarn.containers.vcores="1.5" is not a 32-bit integer`},
		{name: "duplicate yarn key", specs: []resources.Spec{gpuSpec, {Name: "gpu2", Amount: 1, YarnKey: "yarn.io/gpu"}}, err: "resources gpu and gpu2 both set yarn.config-key yarn.io/gpu"},
		{name: "yarn key names memory", specs: []resources.Spec{{Name: "m", Amount: 1, YarnKey: "memory-mb"}}, err: "external-resource.m.yarn.config-key=memory-mb names a built-in resource"},
		{name: "zero amount", specs: []resources.Spec{{Name: "gpu", Amount: 0, YarnKey: "yarn.io/gpu"}}, err: "external-resource.gpu.amount must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PlanWorkers(MapLookup(tt.conf), tt.specs, tt.workers)
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestResourceString(t *testing.T) {
	r := Resource{MemoryMB: 1728, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}}
	require.Equal(t, "<memory:1728, vCores:2, yarn.io/fpga: 1, yarn.io/gpu: 2>", r.String())
}
