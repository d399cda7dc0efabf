package resources

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

func TestLintPitfalls(t *testing.T) {
	path := filepath.Join("testdata", "pitfalls.yaml")
	c, err := conf.Load(path, nil)
	require.NoError(t, err)
	got := Lint(c)

	type want struct {
		key, origin string
		sev         Severity
		msg, fix    string
	}
	wants := []want{
		{"", path + ":17", SeverityWarning, `no ": " between key and value`, `write "key: value"`},
		{"external-resource.fpga.yarn.config-key", path + ":10", SeverityWarning,
			"duplicate config key yarn.io/gpu: resources gpu and fpga", "give each resource its own yarn.config-key"},
		{"external-resource.gpu.amount", "", SeverityError, "resource gpu is listed but has no amount", "set external-resource.gpu.amount: 1"},
		{"external-resource.gpu.amout", path + ":5", SeverityWarning, "unknown key for resource gpu", "did you mean external-resource.gpu.amount?"},
		{"external-resource.gpu.driver-factory.class", "", SeverityError, "resource gpu has no driver factory",
			"org.apache.flink.externalresource.gpu.GPUDriverFactory"},
		{"external-resource.gpu.param.discovery-script.args", path + ":7", SeverityWarning,
			"--enable-coordination (from Flink's docs)", "write --enable-coordination-mode"},
		{"external-resource.gpus.amount", path + ":3", SeverityError,
			"keys are set for external-resource.gpus.* but external-resources lists gpu;fpga;nic;tpu",
			"did you mean gpu? rename the keys to external-resource.gpu.*"},
		{"external-resource.nic.amount", path + ":11", SeverityError, `"two" is not a valid Long`, "whole number"},
		{"external-resource.tpu.amount", path + ":14", SeverityError, "must be positive, got 0", "set external-resource.tpu.amount to 1 or more"},
	}
	require.Len(t, got, len(wants), "%v", got)
	for i, w := range wants {
		t.Run(w.key+w.origin, func(t *testing.T) {
			p := got[i]
			require.Equal(t, w.key, p.Key)
			require.Equal(t, w.origin, p.Origin)
			require.Equal(t, w.sev, p.Severity)
			require.Contains(t, p.Message, w.msg)
			require.Contains(t, p.Fix, w.fix)
		})
	}
}

func TestLintCases(t *testing.T) {
	good := []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1", Key("gpu", SuffixYarnKey), "yarn.io/gpu",
		Key("gpu", SuffixFactory), "org.apache.flink.externalresource.gpu.GPUDriverFactory"}
	tests := []struct {
		name    string
		kv      []string
		wantKey string
		sev     Severity
		msg     string
		fix     string
	}{
		{"clean", good, "", "", "", ""},
		{"no yarn key", []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1", Key("gpu", SuffixFactory), "xres.gpu"},
			"external-resource.gpu.yarn.config-key", SeverityWarning, "not requested from YARN", "yarn.io/gpu"},
		{"list unset", []string{Key("gpu", SuffixAmount), "1"},
			"external-resource.gpu.amount", SeverityError, "external-resources is not set", "add external-resources: gpu"},
		{"list none", append([]string{KeyList, "none"}, good[2:]...),
			"external-resource.gpu.amount", SeverityWarning, "external-resources is none", "list gpu"},
		{"unlisted with no near name", append(append([]string{}, good...), Key("fpga", SuffixAmount), "1"),
			"external-resource.fpga.amount", SeverityError, "lists gpu", "add fpga to external-resources: gpu;fpga"},
		{"case differs", append([]string{KeyList, "GPU"}, good[2:]...),
			"external-resource.GPU.amount", SeverityError, "resource GPU is listed but has no amount", ""},
		{"bad list", []string{KeyList, "gp\"u"}, KeyList, SeverityError, "illegal quote", "quote a whole name"},
		{"coordination mode flag is fine", append(append([]string{}, good...), Key("gpu", "param.discovery-script.args"),
			"--enable-coordination-mode --coordination-file /tmp/f"), "", "", "", ""},
		{"implausible amount", []string{KeyList, "gpu", Key("gpu", SuffixAmount), "9200000000000000000", Key("gpu", SuffixYarnKey), "yarn.io/gpu",
			Key("gpu", SuffixFactory), "xres.gpu"}, "external-resource.gpu.amount", SeverityWarning,
			"the amount of resource gpu is 9200000000000000000 devices per worker, more than the 1024", "set external-resource.gpu.amount to the devices one worker uses"},
		{"1024 is plausible", []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1024", Key("gpu", SuffixYarnKey), "yarn.io/gpu",
			Key("gpu", SuffixFactory), "xres.gpu"}, "", "", "", ""},
		{"name with dots", []string{KeyList, "gpu.a100", Key("gpu.a100", SuffixAmount), "1", Key("gpu.a100", SuffixYarnKey), "y",
			Key("gpu.a100", SuffixFactory), "xres.gpu"}, "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Lint(cfgOf(t, tc.kv...))
			if tc.wantKey == "" {
				require.Empty(t, got)
				return
			}
			var found *Problem
			for i := range got {
				if got[i].Key == tc.wantKey && got[i].Severity == tc.sev {
					found = &got[i]
				}
			}
			require.NotNil(t, found, "%v", got)
			require.Contains(t, found.Message, tc.msg)
			require.Contains(t, found.Fix, tc.fix)
		})
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{Key: "k", Origin: "f:1", Severity: SeverityError, Message: "bad", Fix: "do x"}
	require.Equal(t, "k (f:1): bad (fix: do x)", p.String())
	require.Equal(t, "f:1: bad", Problem{Origin: "f:1", Message: "bad"}.String())
}

// Issue 12, finding 5: an unknown driver factory is reported, with a
// did-you-mean among the built-in names and the installed plugins.
func TestLintFactory(t *testing.T) {
	conf := func(factory string) []string {
		return []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1", Key("gpu", SuffixYarnKey), "yarn.io/gpu", Key("gpu", SuffixFactory), factory}
	}
	tests := []struct {
		name    string
		factory string
		opts    LintOptions
		sev     Severity // "" : no problem
		msg     string
		fix     string
	}{
		{name: "Flink class", factory: "org.apache.flink.externalresource.gpu.GPUDriverFactory"},
		{name: "xres name", factory: "xres.amd-gpu"},
		{name: "plugin prefix", factory: "plugin:fpga-x"},
		{name: "installed plugin", factory: "fpga-x", opts: LintOptions{Known: []string{"fpga-x"}}},
		{name: "misspelt Flink class", factory: "org.apache.flink.externalresource.gpu.GpuDriverFactory", sev: SeverityError,
			msg: `"org.apache.flink.externalresource.gpu.GpuDriverFactory" is not known`, fix: "did you mean org.apache.flink.externalresource.gpu.GPUDriverFactory?"},
		{name: "misspelt xres name", factory: "xres.gpus", sev: SeverityError, msg: "exits 211", fix: "did you mean xres.gpu?"},
		{name: "unknown Java class", factory: "com.example.MissingFactory", sev: SeverityError,
			msg: "is not known", fix: "Flink plugin jars are not loaded"},
		{name: "misspelt plugin", factory: "fpga-y", opts: LintOptions{Known: []string{"fpga-x"}, PluginRoot: "/opt/xres/plugins"}, sev: SeverityError,
			msg: "is not known", fix: "did you mean fpga-x?"},
		{name: "bare name, plugins known", factory: "mydevice", opts: LintOptions{Known: []string{}, PluginRoot: "/opt/xres/plugins"}, sev: SeverityError,
			msg: "is not known", fix: "install a device plugin as /opt/xres/plugins/mydevice/mydevice"},
		{name: "bare name, plugins elsewhere", factory: "mydevice", sev: SeverityWarning, msg: "only where a device plugin of that name is installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LintWith(cfgOf(t, conf(tc.factory)...), tc.opts)
			if tc.sev == "" {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%v", got)
			require.Equal(t, Key("gpu", SuffixFactory), got[0].Key)
			require.Equal(t, tc.sev, got[0].Severity)
			require.Contains(t, got[0].Message, tc.msg)
			require.Contains(t, got[0].Fix, tc.fix)
		})
	}
}
