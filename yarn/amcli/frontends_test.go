package amcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Spark's keys as a second front-end of am: a spark-defaults.conf and --spark k=v map onto
// the same resources, am resources says where each value came from, and -D still wins.
func TestResourcesFromSpark(t *testing.T) {
	dir := t.TempDir()
	defaults := filepath.Join(dir, "spark-defaults.conf")
	require.NoError(t, os.WriteFile(defaults, []byte("spark.executor.resource.gpu.amount 2\nspark.executor.resource.gpu.discoveryScript /opt/spark/getGpus.sh\n"), 0o644))

	code, out, stderr := runAm(t, deps{}, map[string]string{"SPARK_CONF_DIR": dir},
		"resources", "--conf", "testdata/flink-conf.yaml", "--spark", "spark.executor.resource.fpga.amount=1",
		"--spark", "spark.executor.resource.fpga.discoveryScript=/opt/spark/getFpgas.sh", "--json")
	require.Equal(t, ExitOK, code, stderr+out)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}, rep.Plan.Profile.Extra,
		"the Spark amounts ($SPARK_CONF_DIR's file and --spark) replace the Flink file's gpu amount 1")
	origins := map[string]string{}
	for _, r := range rep.Resources {
		for _, o := range r.Origins {
			origins[o.Key] = o.Origin
		}
	}
	require.Equal(t, defaults+":1 (spark.executor.resource.gpu.amount)", origins["external-resource.gpu.amount"])
	require.Contains(t, origins["external-resource.fpga.amount"], "spark.executor.resource.fpga.amount")

	code, out, stderr = runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml",
		"--spark-conf", defaults, "-D", "external-resource.gpu.amount=3", "--json")
	require.Equal(t, ExitOK, code, stderr+out)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, int64(3), rep.Plan.Profile.Extra["yarn.io/gpu"], "-D wins over Spark")
}

func TestResourcesSparkErrorsNameTheKey(t *testing.T) {
	code, _, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml",
		"--spark", "spark.executor.resource.gpu.amount=1.5")
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, stderr, "spark.executor.resource.gpu.amount")
}

func TestRenderKubernetes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Join([]string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 2",
		"external-resource.gpu.kubernetes.config-key: nvidia.com/gpu",
		"taskmanager.memory.process.size: 4g",
		"taskmanager.cpu.cores: 2",
	}, "\n")), 0o644))
	code, out, stderr := runAm(t, deps{}, nil, "render", "kubernetes", "--conf", cfg, "--image", "example.com/worker:1",
		"--launcher-conf", "/opt/flink/conf", "--", "python", "train.py")
	require.Equal(t, ExitOK, code, stderr)
	for _, want := range []string{"kind: Pod", `"nvidia.com/gpu": 2`, `image: "example.com/worker:1"`, `"train.py"`, `"/opt/flink/conf"`} {
		if !strings.Contains(out, want) {
			// The renderer quotes as it sees fit; compare without quotes too.
			require.Contains(t, strings.ReplaceAll(out, `"`, ""), strings.ReplaceAll(want, `"`, ""), out)
		}
	}

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"render"}, "which manager"},
		{[]string{"render", "mesos", "--image", "i", "--", "x"}, "only kubernetes"},
		{[]string{"render", "kubernetes", "--conf", cfg, "--", "x"}, "--image is required"},
		{[]string{"render", "kubernetes", "--conf", cfg, "--image", "i"}, "no worker command"},
	} {
		code, _, stderr := runAm(t, deps{}, nil, tt.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.err)
	}
}
