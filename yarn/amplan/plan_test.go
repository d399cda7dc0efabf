package amplan

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
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
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "parallelism over slots rounds up",
			conf: map[string]string{"parallelism.default": "10", "taskmanager.numberOfTaskSlots": "4"},
			want: Plan{BaseWorkers: 3, Workers: 3, SlotsPerWorker: 4, MaxFailedContainers: 3,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 4}},
		},
		{
			name:    "--workers overrides parallelism",
			conf:    map[string]string{"parallelism.default": "10"},
			workers: 4,
			want: Plan{BaseWorkers: 4, Workers: 4, SlotsPerWorker: 1, MaxFailedContainers: 4,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "spares kept apart from the workers",
			conf: map[string]string{"parallelism.default": "4", "slotmanager.redundant-taskmanager-num": "2"},
			want: Plan{BaseWorkers: 4, Spares: 2, Workers: 4, SlotsPerWorker: 1, MaxFailedContainers: 6,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "slot maximum caps workers and spares",
			conf: map[string]string{"parallelism.default": "8", "taskmanager.numberOfTaskSlots": "2", "slotmanager.number-of-slots.max": "7", "slotmanager.redundant-taskmanager-num": "1"},
			want: Plan{BaseWorkers: 4, Spares: 0, Workers: 3, SlotsPerWorker: 2, MaxFailedContainers: 3,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 2}},
			warn: "slotmanager.number-of-slots.max=7 caps workers and spares at 3 (of 4 workers + 1 spares asked)",
		},
		{
			name: "slot maximum keeps the workers before the spares",
			conf: map[string]string{"parallelism.default": "3", "slotmanager.number-of-slots.max": "4", "slotmanager.redundant-taskmanager-num": "3"},
			want: Plan{BaseWorkers: 3, Spares: 1, Workers: 3, SlotsPerWorker: 1, MaxFailedContainers: 4,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
			warn: "slotmanager.number-of-slots.max=4 caps workers and spares at 4 (of 3 workers + 3 spares asked)",
		},
		{
			name: "max failed containers set",
			conf: map[string]string{"parallelism.default": "2", "yarn.maximum-failed-containers": "0"},
			want: Plan{BaseWorkers: 2, Workers: 2, SlotsPerWorker: 1, MaxFailedContainers: 0,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
		},
		{
			name: "process size truncates to MiB",
			conf: map[string]string{"taskmanager.memory.process.size": "1048577k"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 1024, VCores: 1}},
		},
		{
			name: "cpu cores rounded up win over yarn vcores",
			conf: map[string]string{"taskmanager.cpu.cores": "2.5", "yarn.containers.vcores": "8", "taskmanager.numberOfTaskSlots": "4"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 4, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 3}},
		},
		{
			name: "yarn vcores win over slots",
			conf: map[string]string{"yarn.containers.vcores": "8", "taskmanager.numberOfTaskSlots": "4"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 4, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 8}},
		},
		{
			name: "yarn vcores -1 falls back to slots",
			conf: map[string]string{"yarn.containers.vcores": "-1", "taskmanager.numberOfTaskSlots": "3"},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 3, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 3}},
		},
		{
			name:  "external resources in the profile",
			conf:  map[string]string{"taskmanager.memory.process.size": "2g"},
			specs: []resources.Spec{gpuSpec, {Name: "fpga", Amount: 1, YarnKey: "yarn.io/fpga"}},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 2048, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}}},
		},
		{
			name:  "resource without yarn key is not asked",
			specs: []resources.Spec{{Name: "tpu", Amount: 1}},
			want: Plan{BaseWorkers: 1, Workers: 1, SlotsPerWorker: 1, MaxFailedContainers: 1,
				Profile: yarn.Resource{MemoryMB: 1728, VCores: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanWorkers(confOf(tt.conf), tt.specs, tt.workers)
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
		{name: "parallelism not a number", conf: map[string]string{"parallelism.default": "ten"}, err: `config key parallelism.default (set): "ten" is not a valid`},
		{name: "zero parallelism", conf: map[string]string{"parallelism.default": "0"}, err: "config key parallelism.default (set): must be at least 1, got 0"},
		{name: "zero slots", conf: map[string]string{"taskmanager.numberOfTaskSlots": "0"}, err: "config key taskmanager.numberOfTaskSlots (set): must be at least 1"},
		{name: "slot max below slots", conf: map[string]string{"taskmanager.numberOfTaskSlots": "4", "slotmanager.number-of-slots.max": "3"}, err: "config key slotmanager.number-of-slots.max (set): 3 is below taskmanager.numberOfTaskSlots (4): no worker fits"},
		{name: "negative spares", conf: map[string]string{"slotmanager.redundant-taskmanager-num": "-1"}, err: "config key slotmanager.redundant-taskmanager-num (set): must not be negative"},
		{name: "negative workers flag", workers: -2, err: "--workers must be at least 1"},
		{name: "negative max failed", conf: map[string]string{"yarn.maximum-failed-containers": "-1"}, err: "config key yarn.maximum-failed-containers (set): must not be negative"},
		{name: "bad memory", conf: map[string]string{"taskmanager.memory.process.size": "lots"}, err: `config key taskmanager.memory.process.size (set): "lots" is not a memory size`},
		{name: "memory below a MiB", conf: map[string]string{"taskmanager.memory.process.size": "1000k"}, err: `config key taskmanager.memory.process.size (set): "1000k" is below 1 MiB`},
		{name: "bad cpu cores", conf: map[string]string{"taskmanager.cpu.cores": "x"}, err: `config key taskmanager.cpu.cores (set): "x" is not a valid`},
		{name: "zero cpu cores", conf: map[string]string{"taskmanager.cpu.cores": "0"}, err: "config key taskmanager.cpu.cores (set): must be a positive number of cores"},
		{name: "bad yarn vcores", conf: map[string]string{"yarn.containers.vcores": "1.5"}, err: `config key yarn.containers.vcores (set): "1.5" is not a valid`},
		{name: "yarn key names memory", specs: []resources.Spec{{Name: "m", Amount: 1, YarnKey: "memory-mb"}}, err: "external-resource.m.yarn.config-key=memory-mb names a built-in resource"},
		{name: "zero amount", specs: []resources.Spec{{Name: "gpu", Amount: 0, YarnKey: "yarn.io/gpu"}}, err: "external-resource.gpu.amount must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PlanWorkers(confOf(tt.conf), tt.specs, tt.workers)
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestResourceString(t *testing.T) {
	r := yarn.Resource{MemoryMB: 1728, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}}
	require.Equal(t, "<memory:1728, vCores:2, yarn.io/fpga: 1, yarn.io/gpu: 2>", r.String())
}

func confOf(m map[string]string) *conf.Config {
	c := conf.New()
	for k, v := range m {
		c.Set(k, v)
	}
	return c
}

// TestPlanWorkersFromFile reads a Flink configuration file and checks the
// plan and that an error names the file and line of the bad value.
func TestPlanWorkersFromFile(t *testing.T) {
	cfg, err := conf.Load(filepath.Join("testdata", "flink-conf.yaml"), nil)
	require.NoError(t, err)
	specs, err := resources.Parse(cfg, resources.ParseOptions{Side: resources.SideYarn})
	require.NoError(t, err)
	p, err := PlanWorkers(cfg, specs, 0)
	require.NoError(t, err)
	require.Equal(t, 4, p.Workers)
	require.Equal(t, yarn.Resource{MemoryMB: 4096, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 1}}, p.Profile)

	bad, err := conf.Load(filepath.Join("testdata", "flink-conf.yaml"), []string{"taskmanager.numberOfTaskSlots=zero"})
	require.NoError(t, err)
	_, err = PlanWorkers(bad, specs, 0)
	require.ErrorContains(t, err, "config key taskmanager.numberOfTaskSlots (-D)")

	bad, err = conf.Load(filepath.Join("testdata", "bad-memory.yaml"), nil)
	require.NoError(t, err)
	_, err = PlanWorkers(bad, nil, 0)
	require.ErrorContains(t, err, "config key taskmanager.memory.process.size (testdata/bad-memory.yaml:2)")
}

func TestHeartbeats(t *testing.T) {
	tests := []struct {
		name         string
		conf         map[string]string
		normal, fast time.Duration
		err          string
	}{
		{name: "defaults", normal: 5 * time.Second, fast: 500 * time.Millisecond},
		{name: "set", conf: map[string]string{KeyHeartbeat: "2", KeyRequestHeartbeat: "100"}, normal: 2 * time.Second, fast: 100 * time.Millisecond},
		{name: "duration syntax", conf: map[string]string{KeyRequestHeartbeat: "1 s"}, normal: 5 * time.Second, fast: time.Second},
		{name: "zero heartbeat", conf: map[string]string{KeyHeartbeat: "0"}, err: "config key yarn.heartbeat.interval (set): must be at least 1 second"},
		{name: "bad duration", conf: map[string]string{KeyRequestHeartbeat: "soon"}, err: "config key yarn.heartbeat.container-request-interval (set)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, f, err := heartbeats(confOf(tt.conf))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.normal, n)
			require.Equal(t, tt.fast, f)
		})
	}
}
