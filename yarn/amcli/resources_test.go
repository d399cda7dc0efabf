package amcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

// am resources with xres.worker-groups plans and shows each group: its
// count, command, reactive minimum, external resources (the keys as
// written, xres.worker-group.<group>.…) and profile. A shared key of a
// resource only another group lists is no problem of this group.
func TestResourcesGroups(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml")
	require.Equal(t, ExitOK, code, stderr)
	golden(t, "resources-groups.golden.txt", out)
	for _, want := range []string{
		"worker groups (xres.worker-groups): trainer, prep\n",
		"worker group trainer:\n  command: python train.py --epochs 3 (xres.worker-group.trainer.command)\n",
		"  workers: 2 (2 from xres.worker-group.trainer.workers)\n" +
			"  scheduler-mode: reactive: runs once 1 of the 2 workers run (xres.reactive.min-workers), takes the others as YARN grants them\n",
		"  YARN container profile per worker: <memory:8192, vCores:1, yarn.io/gpu: 4>\n",
		"worker group prep:\n  external resources:\n",
		"  workers: 3 (3 from xres.worker-group.prep.workers)\n" +
			"  scheduler-mode: reactive: runs once 2 of the 3 workers run (xres.reactive.min-workers), takes the others as YARN grants them\n",
		"    testdata/groups.yaml:10  xres.worker-group.trainer.external-resource.gpu.amount = 4\n",
		"    testdata/groups.yaml:7   external-resource.gpu.yarn.config-key = yarn.io/gpu\n",
		"  YARN container profile per worker: <memory:2048, vCores:1, yarn.io/fpga: 1>\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "warnings:")
	require.NotContains(t, out, "errors:")

	code, out, stderr = runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml", "--json")
	require.Equal(t, ExitOK, code, stderr)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Nil(t, rep.Plan, "no plan of the whole with groups")
	require.Empty(t, rep.Resources)
	require.Len(t, rep.Groups, 2)
	tr, prep := rep.Groups[0], rep.Groups[1]
	require.Equal(t, "trainer", tr.Name)
	require.Equal(t, []string{"python", "train.py", "--epochs", "3"}, tr.Command)
	require.Equal(t, 2, tr.Plan.Workers)
	require.True(t, tr.Plan.Reactive)
	require.Equal(t, 1, tr.Plan.MinWorkers)
	require.Equal(t, map[string]int64{"yarn.io/gpu": 4}, tr.Plan.Profile.Extra)
	require.Equal(t, int64(8192), tr.Plan.Profile.MemoryMB)
	require.Len(t, tr.Resources, 1)
	require.Equal(t, "gpu", tr.Resources[0].Name)
	require.Equal(t, int64(4), tr.Resources[0].Amount)
	require.Equal(t, "xres.worker-group.trainer.external-resource.gpu.amount", tr.Resources[0].Origins[1].Key)
	require.Equal(t, "testdata/groups.yaml:10", tr.Resources[0].Origins[1].Origin)
	require.Equal(t, "prep", prep.Name)
	require.Nil(t, prep.Command)
	require.Equal(t, 3, prep.Plan.Workers)
	require.Equal(t, 2, prep.Plan.MinWorkers)
	require.Equal(t, map[string]int64{"yarn.io/fpga": 1}, prep.Plan.Profile.Extra)
	require.Equal(t, "fpga", prep.Resources[0].Name)
	require.Empty(t, rep.Warnings)
	require.Empty(t, rep.Errors)
	require.NotContains(t, out, `"plan": null`)
}

// Without groups the JSON keeps its plan and has no groups.
func TestResourcesWithoutGroupsHasNoGroups(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--json")
	require.Equal(t, ExitOK, code, stderr)
	require.NotContains(t, out, `"groups"`)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.Plan)
	require.Nil(t, rep.Groups)
}

// An error in one group names that group; the other groups are still
// planned. An error of a key every group shares is listed once, without a
// group.
func TestResourcesGroupErrorNamesTheGroup(t *testing.T) {
	args := []string{"resources", "--conf", "testdata/groups.yaml", "-D", "xres.worker-group.prep.taskmanager.memory.process.size=lots"}
	code, out, stderr := runAm(t, deps{}, nil, args...)
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, out, "\nerrors:\n"+
		"  - worker group prep: config key taskmanager.memory.process.size (-D): \"lots\" is not a memory size: does not start with a number\n"+
		"cluster check: skipped (no cluster: HADOOP_CONF_DIR is not set)\n")
	require.Contains(t, out, "worker group prep:\n")
	require.Contains(t, out, "  workers: not planned (see errors)\n")
	require.Contains(t, out, "  workers: 2 (2 from xres.worker-group.trainer.workers)\n", "trainer is still planned")
	require.Contains(t, stderr, "1 configuration error(s)")

	code, out, _ = runAm(t, deps{}, nil, append(args, "--json")...)
	require.Equal(t, ExitConfig, code)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Errors, 1)
	require.Equal(t, problemJSON{Severity: "error", Groups: []string{"prep"},
		Message: `config key taskmanager.memory.process.size (-D): "lots" is not a memory size: does not start with a number`}, rep.Errors[0])
	require.NotNil(t, rep.Groups[0].Plan)
	require.Nil(t, rep.Groups[1].Plan)
	require.Equal(t, "fpga", rep.Groups[1].Resources[0].Name, "a group without a plan still lists its resources")

	// A shared key: the same error in every group, listed once.
	code, out, _ = runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml", "-D", "taskmanager.numberOfTaskSlots=0")
	require.Equal(t, ExitConfig, code)
	require.Contains(t, out, "\nerrors:\n  - config key taskmanager.numberOfTaskSlots (-D): must be at least 1, got 0\ncluster check:")
	require.Equal(t, 1, strings.Count(out, "numberOfTaskSlots (-D)"))
}

// Lint problems of a group's view are labelled with the group and name the
// key as written; a key for a group that is not listed is a warning; a
// plan warning of one group is labelled too.
func TestResourcesGroupWarnings(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml",
		"-D", "xres.worker-group.trainer.external-resource.gpu.amout=2", "-D", "xres.worker-group.prp.workers=1",
		"-D", "xres.worker-group.prep.slotmanager.number-of-slots.max=2")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "\nwarnings:\n"+
		"  - xres.worker-group.prp.workers (-D): xres.worker-groups lists no group prp (it lists trainer, prep); the key is ignored\n"+
		"  - worker group trainer: xres.worker-group.trainer.external-resource.gpu.amout (-D): unknown key for resource gpu; it is ignored (fix: did you mean external-resource.gpu.amount?)\n"+
		"  - worker group prep: slotmanager.number-of-slots.max=2 caps the workers at 2 (of 3 asked)\n"+
		"cluster check:")

	code, out, _ = runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "-D", "xres.worker-group.trainer.workers=2")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "  - xres.worker-group.trainer.workers (-D): xres.worker-groups is not set, so there is no worker group trainer; the key is ignored (fix: set xres.worker-groups: trainer, or remove the key)\n")
}

// Errors of the groups as a whole name no group: --workers does not go
// with groups; a bad xres.worker-groups leaves no group to plan.
func TestResourcesGroupsWholeErrors(t *testing.T) {
	code, out, _ := runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml", "--workers", "3")
	require.Equal(t, ExitConfig, code)
	require.Contains(t, out, "\nerrors:\n  - --workers cannot be used with xres.worker-groups (testdata/groups.yaml:6); set xres.worker-group.<group>.workers for each group\ncluster check:")

	code, out, _ = runAm(t, deps{}, nil, "resources", "--conf", "testdata/groups.yaml", "-D", "xres.worker-groups=a;a")
	require.Equal(t, ExitConfig, code)
	require.Equal(t, "configuration: testdata/groups.yaml\n"+
		"worker groups (xres.worker-groups): not read (see errors)\n"+
		"errors:\n"+
		"  - config key xres.worker-groups (-D): group a is listed twice\n"+
		"cluster check: skipped (no valid profile)\n", out)
}

// The cluster check checks each group's profile and names the group.
func TestResourcesGroupsClusterCheck(t *testing.T) {
	node := yarn.NodeReport{ID: "nm1:1", Capability: yarn.Resource{MemoryMB: 16384, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}}
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, nodes: []yarn.NodeReport{node}}
	code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), map[string]string{"HADOOP_CONF_DIR": "testdata/hadoop"},
		"resources", "--conf", "testdata/groups.yaml", "--json")
	require.Equal(t, ExitConfig, code, stderr)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.True(t, rep.Cluster.Checked)
	parts := strings.Split(rep.Cluster.Error, "; worker group prep: ")
	require.Len(t, parts, 2, rep.Cluster.Error)
	require.True(t, strings.HasPrefix(parts[0], "worker group trainer: "), parts[0])
	require.Contains(t, parts[0], "asked 4 per worker, the largest NodeManager has 2")
	require.Contains(t, parts[1], "yarn.io/fpga is not a resource type of this cluster")
}

// Without groups, scheduler-mode: reactive shows its minimum.
func TestResourcesReactive(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml",
		"-D", "scheduler-mode=reactive", "-D", "xres.reactive.min-workers=2")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "workers: 4 (4 from ceil(parallelism.default / taskmanager.numberOfTaskSlots))\n"+
		"scheduler-mode: reactive: runs once 2 of the 4 workers run (xres.reactive.min-workers), takes the others as YARN grants them\n"+
		"slots per worker: 2\n")

	code, out, _ = runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--workers", "3")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "workers: 3 (3 from --workers)\n")
}

// Issue 29: --strict turns each warning into one error, not two (Lint's
// warning and Parse's strict error are one problem), and two skipped lines
// with the same fault are two problems.
func TestResourcesStrictReportsEachProblemOnce(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join([]string{
		"external-resources: gpu;gpu2",
		"bogus line",
		"another bogus line",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: xres.gpu",
		"external-resource.gpu2.amount: 1",
		"external-resource.gpu2.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu2.driver-factory.class: xres.gpu",
	}, "\n")+"\n"), 0o644))
	for _, strict := range []bool{false, true} {
		args := []string{"resources", "--conf", f, "--offline", "--json"}
		if strict {
			args = append(args, "--strict")
		}
		code, out, stderr := runAm(t, deps{}, nil, args...)
		var rep resourcesReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out+stderr)
		listed := rep.Warnings
		if strict {
			require.Equal(t, ExitConfig, code, stderr)
			require.Empty(t, rep.Warnings)
			listed = rep.Errors
		} else {
			require.Equal(t, ExitOK, code, stderr)
			require.Empty(t, rep.Errors)
		}
		var dup, lines []string
		for _, p := range listed {
			switch {
			case strings.Contains(p.Message, "duplicate config key yarn.io/gpu"):
				dup = append(dup, p.Key)
			case strings.Contains(p.Message, "Flink skips this line"):
				lines = append(lines, p.Origin)
			}
		}
		require.Equal(t, []string{"external-resource.gpu2.yarn.config-key"}, dup, "the duplicate key once: %+v", listed)
		require.Equal(t, []string{f + ":2", f + ":3"}, lines, "each skipped line: %+v", listed)
	}
}

// Issue 29: an implausible amount (9.2e18 GPUs per worker) is not taken
// without a word: a warning naming the key (an error with --strict).
func TestResourcesWarnsOfImplausibleAmount(t *testing.T) {
	args := []string{"resources", "--conf", "testdata/flink-conf.yaml", "--offline", "-D", "external-resource.gpu.amount=9200000000000000000"}
	code, out, stderr := runAm(t, deps{}, nil, args...)
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "warnings:\n  - external-resource.gpu.amount (-D): the amount of resource gpu is 9200000000000000000 devices per worker, more than the 1024 any host has")
	code, out, stderr = runAm(t, deps{}, nil, append(args, "--strict")...)
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, out, "errors:\n  - external-resource.gpu.amount (-D): the amount of resource gpu is 9200000000000000000")
}
