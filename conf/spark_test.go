package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sparkDefaults = "testdata/spark/spark-defaults.conf"

func TestLoadSpark(t *testing.T) {
	c, err := LoadSpark(sparkDefaults, []string{"spark.executor.resource.gpu.amount=4", "spark.app.name = my app ", "other=1"})
	require.NoError(t, err)
	for _, tc := range []struct{ key, value, origin string }{
		{"spark.master", "yarn", sparkDefaults + ":3"},
		{"spark.executor.memory", "4g", sparkDefaults + ":4"},
		{"spark.executor.resource.gpu.amount", "4", OriginSparkConf},
		{"spark.executor.resource.gpu.discoveryScript", "/opt/sparkRapidsPlugin/getGpusResources.sh", sparkDefaults + ":7"},
		{"spark.yarn.executor.resource.acme.com/tpu.amount", "4", sparkDefaults + ":10"},
		{"spark.driver.extraJavaOptions", "-Dkey=ab", sparkDefaults + ":12"},
		{"spark.app.name", "my app", OriginSparkConf},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, ok := c.Get(tc.key)
			require.True(t, ok)
			require.Equal(t, tc.value, v)
			require.Equal(t, tc.origin, c.Origin(tc.key))
		})
	}
	_, ok := c.Get("flink.not.spark")
	require.False(t, ok, "spark-submit ignores non-spark keys")
	var warns []string
	for _, w := range c.Warnings() {
		warns = append(warns, w.String())
	}
	require.Contains(t, warns, sparkDefaults+":14: not a spark.* key; spark-submit ignores it")

	_, err = LoadSpark("", []string{"spark.executor.resource.gpu.amount"})
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, "Spark config without '='")
	_, err = LoadSpark(filepath.Join(t.TempDir(), "none.conf"), nil)
	require.ErrorIs(t, err, ErrConfNotFound)
}

func TestParseProperties(t *testing.T) {
	kvs := parseProperties([]byte("a=1\n  b : 2\nc\t3\nd\ne\\ f=x\\ty\\u0041\ng=one\\\n  two\\\n three\r\n# c\nh=\\\\\n"))
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.key] = kv.value
	}
	require.Equal(t, map[string]string{"a": "1", "b": "2", "c": "3", "d": "", "e f": "x\tyA", "g": "onetwothree", "h": `\`}, got)
}

func FuzzParseProperties(f *testing.F) {
	data, _ := os.ReadFile(sparkDefaults)
	f.Add(data)
	f.Add([]byte("a\\\n\\u12"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kv := range parseProperties(b) {
			require.Positive(t, kv.line)
		}
	})
}

func TestFromSpark(t *testing.T) {
	spark, err := LoadSpark(sparkDefaults, []string{"spark.executor.resource.gpu.vendor=nvidia.com"})
	require.NoError(t, err)
	c, err := FromSpark(spark)
	require.NoError(t, err)
	for _, tc := range []struct{ key, value, origin string }{
		{"external-resources", "fpga;gpu;acme-com-tpu", ""},
		{"external-resource.gpu.amount", "2", sparkDefaults + ":6 (spark.executor.resource.gpu.amount)"},
		{"external-resource.gpu.yarn.config-key", "yarn.io/gpu", "Spark's default for gpu (spark.yarn.resourceGpuDeviceName)"},
		{"external-resource.gpu.kubernetes.config-key", "nvidia.com/gpu", "--conf (spark.executor.resource.gpu.vendor)"},
		{"external-resource.gpu.driver-factory.class", "org.apache.flink.externalresource.gpu.GPUDriverFactory", ""},
		{"external-resource.gpu.param.discovery-script.path", "/opt/sparkRapidsPlugin/getGpusResources.sh", sparkDefaults + ":7 (spark.executor.resource.gpu.discoveryScript)"},
		{"external-resource.gpu.param.discovery-script.protocol", "spark", ""},
		{"external-resource.fpga.amount", "1", ""},
		{"external-resource.fpga.yarn.config-key", "yarn.io/fpga", ""},
		{"external-resource.fpga.kubernetes.config-key", "xilinx.com/fpga", ""},
		{"external-resource.acme-com-tpu.amount", "4", sparkDefaults + ":10 (spark.yarn.executor.resource.acme.com/tpu.amount)"},
		{"external-resource.acme-com-tpu.yarn.config-key", "acme.com/tpu", ""},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, ok := c.Get(tc.key)
			require.True(t, ok)
			require.Equal(t, tc.value, v)
			if tc.origin != "" {
				require.Equal(t, tc.origin, c.Origin(tc.key))
			}
		})
	}
	_, ok := c.Get("external-resource.fpga.driver-factory.class")
	require.False(t, ok, "an fpga without a discovery script has no driver")
	_, ok = c.Get("spark.master")
	require.False(t, ok, "only the resource keys are mapped")
}

func TestFromSparkRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		conf   []string
		want   map[string]string // key -> value; "" means unset
		errHas []string
	}{
		{name: "gpu without script: built-in discovery", conf: []string{"spark.executor.resource.gpu.amount=1"},
			want: map[string]string{"external-resource.gpu.driver-factory.class": sparkFactoryGPU, "external-resource.gpu.param.discovery-script.path": ""}},
		{name: "remapped gpu type", conf: []string{"spark.executor.resource.gpu.amount=1", "spark.yarn.resourceGpuDeviceName=nvidia/miggpu"},
			want: map[string]string{"external-resource.gpu.yarn.config-key": "nvidia/miggpu"}},
		{name: "amd gpu", conf: []string{"spark.executor.resource.gpu.amount=1", "spark.executor.resource.gpu.vendor=amd.com"},
			want: map[string]string{"external-resource.gpu.driver-factory.class": sparkFactoryAMD, "external-resource.gpu.kubernetes.config-key": "amd.com/gpu"}},
		{name: "generic resource with a script", conf: []string{"spark.executor.resource.ssd.amount=1", "spark.executor.resource.ssd.discoveryScript=/d.sh"},
			want: map[string]string{"external-resource.ssd.param.visible-devices.vendor": "none", "external-resource.ssd.yarn.config-key": "", "external-resources": "ssd"}},
		{name: "zero amount: not requested", conf: []string{"spark.executor.resource.gpu.amount=0"},
			want: map[string]string{"external-resources": "", "external-resource.gpu.amount": ""}},
		{name: "no amount", conf: []string{"spark.executor.resource.gpu.discoveryScript=/d.sh"},
			errHas: []string{"spark.executor.resource.gpu.amount: missing; Spark needs an amount for resource gpu (set by spark.executor.resource.gpu.discoveryScript at --conf)"}},
		{name: "fractional amount", conf: []string{"spark.executor.resource.gpu.amount=0.5"},
			errHas: []string{"spark.executor.resource.gpu.amount (--conf): \"0.5\": only tasks take fractional resources"}},
		{name: "not a number", conf: []string{"spark.executor.resource.gpu.amount=two"}, errHas: []string{`"two" is not a whole number`}},
		{name: "no setting", conf: []string{"spark.executor.resource.gpu=1"}, errHas: []string{"spark.executor.resource.gpu (--conf): name the resource and the setting"}},
		{name: "same YARN type twice", conf: []string{"spark.executor.resource.gpu.amount=1", "spark.yarn.executor.resource.yarn.io/gpu.amount=2"},
			errHas: []string{"asks YARN for yarn.io/gpu, which spark.executor.resource.gpu.amount already asks for"}},
		{name: "all problems at once", conf: []string{"spark.executor.resource.a.amount=x", "spark.executor.resource.b.amount=1.5"},
			errHas: []string{`"x" is not a whole number`, "only tasks take fractional"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spark, err := LoadSpark("", tc.conf)
			require.NoError(t, err)
			c, err := FromSpark(spark)
			if tc.errHas != nil {
				require.ErrorIs(t, err, ErrSpark)
				for _, s := range tc.errHas {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			for k, want := range tc.want {
				got, _ := c.Get(k)
				require.Equal(t, want, got, k)
			}
		})
	}
}

func TestFindSpark(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) string { return dir }
	require.Empty(t, FindSpark(getenv))
	require.NoError(t, os.WriteFile(filepath.Join(dir, SparkDefaultsFile), nil, 0o644))
	require.Equal(t, filepath.Join(dir, SparkDefaultsFile), FindSpark(getenv))
	require.True(t, strings.HasSuffix(FindSpark(getenv), "spark-defaults.conf"))
}

func TestWithSparkOrder(t *testing.T) {
	dir := t.TempDir()
	flink := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(flink, []byte("external-resource.gpu.amount: 4\nexternal-resources: gpu\ntaskmanager.numberOfTaskSlots: 2\n"), 0o644))
	cfg, err := Load(flink, []string{"external-resource.gpu.param.discovery-script.protocol=flink"})
	require.NoError(t, err)
	spark, err := LoadSpark("", []string{"spark.executor.resource.gpu.amount=2", "spark.executor.resource.gpu.discoveryScript=/opt/gpus.sh"})
	require.NoError(t, err)
	mapped, err := FromSpark(spark)
	require.NoError(t, err)

	taken := cfg.WithSpark(mapped)
	v, _ := cfg.Get("external-resource.gpu.amount")
	require.Equal(t, "2", v, "Spark's amount wins over the Flink file")
	require.Contains(t, cfg.Origin("external-resource.gpu.amount"), "spark.executor.resource.gpu.amount")
	v, _ = cfg.Get("external-resource.gpu.param.discovery-script.protocol")
	require.Equal(t, "flink", v, "-D wins over Spark")
	v, _ = cfg.Get("taskmanager.numberOfTaskSlots")
	require.Equal(t, "2", v, "keys Spark does not map stay")
	require.Contains(t, taken, "external-resource.gpu.amount=2")
	require.NotContains(t, taken, "external-resource.gpu.param.discovery-script.protocol=spark")
}
