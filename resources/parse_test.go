package resources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

// cfgOf builds a configuration from key/value pairs, as -D overrides.
func cfgOf(t *testing.T, kv ...string) *conf.Config {
	t.Helper()
	require.Zero(t, len(kv)%2)
	var dyn []string
	for i := 0; i < len(kv); i += 2 {
		dyn = append(dyn, kv[i]+"="+kv[i+1])
	}
	c, err := conf.Load("", dyn)
	require.NoError(t, err)
	return c
}

func newLog() (*logrus.Logger, *test.Hook) {
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	return l, hook
}

func warnings(hook *test.Hook) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			out = append(out, e)
		}
	}
	return out
}

func TestParseFixtures(t *testing.T) {
	want := []Spec{
		{Name: "fpga", Amount: 1, YarnKey: "yarn.io/fpga", Factory: "xres.pci",
			Params: map[string]string{"vendor": "0x10ee"}},
		{Name: "gpu", Amount: 2, YarnKey: "yarn.io/gpu", K8sKey: "nvidia.com/gpu",
			Factory: "org.apache.flink.externalresource.gpu.GPUDriverFactory",
			Params: map[string]string{
				"discovery-script.path": "plugins/external-resource-gpu/nvidia-gpu-discovery.sh",
				"discovery-script.args": "--enable-coordination-mode",
			}},
	}
	for _, file := range []string{"flink-conf.yaml", "config.yaml"} {
		t.Run(file, func(t *testing.T) {
			c, err := conf.Load(filepath.Join("testdata", file), nil)
			require.NoError(t, err)
			log, hook := newLog()
			specs, err := Parse(c, ParseOptions{Log: log, Side: SideWorker})
			require.NoError(t, err)
			require.Equal(t, want, specs)
			require.Empty(t, warnings(hook))
			require.Empty(t, Lint(c), "a clean configuration has no pitfalls")
			require.Equal(t, map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}, YarnResources(specs))
		})
	}
}

// The cases of Flink's ExternalResourceUtilsTest (research §5.1), with
// Flink's constants: names foo and bar, amounts 2 and 1, keys flink1 and
// flink2.
func TestFlinkExternalResourceUtilsCases(t *testing.T) {
	suffix := SuffixYarnKey
	tests := []struct {
		name     string
		kv       []string
		wantYarn map[string]int64
		wantAmts map[string]int64 // name → amount of the parsed specs
		warns    int
		// refused: Flink warns and skips the resource; xres refuses the
		// configuration (ErrInvalid) with this in the message (issue 41).
		refused string
	}{
		{
			name:     "config key not specified or empty",
			kv:       []string{KeyList, "foo;bar", Key("foo", suffix), "", Key("foo", SuffixAmount), "2", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"foo": 2, "bar": 1},
		},
		{
			name:     "whitespace-only config key is unset",
			kv:       []string{KeyList, "foo", Key("foo", suffix), "   ", Key("foo", SuffixAmount), "2"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"foo": 2},
		},
		{
			name:    "illegal amount",
			kv:      []string{KeyList, "foo", Key("foo", suffix), "flink1", Key("foo", SuffixAmount), "0"},
			refused: "external-resource.foo.amount (-D): the amount of resource foo must be positive, got 0",
		},
		{
			name:    "without config amount",
			kv:      []string{KeyList, "foo", Key("foo", suffix), "flink1"},
			refused: "external-resource.foo.amount: resource foo is listed but has no amount",
		},
		{
			name: "conflict config key",
			kv: []string{KeyList, "foo;bar", Key("foo", suffix), "flink1", Key("foo", SuffixAmount), "2",
				Key("bar", suffix), "flink1", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{"flink1": 2},
			wantAmts: map[string]int64{"foo": 2, "bar": 1},
			warns:    1,
		},
		{
			name: "multiple external resources",
			kv: []string{KeyList, "foo;bar", Key("foo", suffix), "flink1", Key("foo", SuffixAmount), "2",
				Key("bar", suffix), "flink2", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{"flink1": 2, "flink2": 1},
			wantAmts: map[string]int64{"foo": 2, "bar": 1},
		},
		{
			name:     "amount map",
			kv:       []string{KeyList, "foo", Key("foo", SuffixAmount), "2"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"foo": 2},
		},
		{
			name:     "recognize empty resource list (none)",
			kv:       []string{KeyList, "none", Key("foo", SuffixAmount), "2"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{},
		},
		{
			name:     "unset list",
			kv:       []string{Key("foo", SuffixAmount), "2"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{},
		},
		{
			name:     "empty list",
			kv:       []string{KeyList, "", Key("foo", SuffixAmount), "2"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{},
		},
		{
			name:     "not listed",
			kv:       []string{KeyList, "bar", Key("foo", SuffixAmount), "2", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"bar": 1},
		},
		{
			name:     "list is trimmed, quoted and deduplicated",
			kv:       []string{KeyList, " foo ; 'bar' ;foo;", Key("foo", SuffixAmount), "2", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"foo": 2, "bar": 1},
		},
		{
			name:     "none is case-sensitive and whole-value (1.13+)",
			kv:       []string{KeyList, "None", Key("None", SuffixAmount), "1"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"None": 1},
		},
		{
			name:    "negative amount",
			kv:      []string{KeyList, "foo", Key("foo", SuffixAmount), "-1"},
			refused: "external-resource.foo.amount (-D): the amount of resource foo must be positive, got -1",
		},
		{
			name:     "empty name between two delimiters",
			kv:       []string{KeyList, "foo;;bar", Key("foo", SuffixAmount), "2", Key("bar", SuffixAmount), "1"},
			wantYarn: map[string]int64{},
			wantAmts: map[string]int64{"foo": 2, "bar": 1},
			warns:    1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, hook := newLog()
			specs, err := Parse(cfgOf(t, tc.kv...), ParseOptions{Log: log})
			if tc.refused != "" {
				require.ErrorIs(t, err, conf.ErrInvalid)
				require.Contains(t, err.Error(), tc.refused)
				require.Empty(t, specs)
				return
			}
			require.NoError(t, err)
			amts := map[string]int64{}
			for _, s := range specs {
				amts[s.Name] = s.Amount
			}
			require.Equal(t, tc.wantAmts, amts)
			require.Equal(t, tc.wantYarn, YarnResources(specs))
			require.Len(t, warnings(hook), tc.warns)

			if tc.warns > 0 {
				_, err := Parse(cfgOf(t, tc.kv...), ParseOptions{Strict: true})
				require.ErrorIs(t, err, ErrStrict, "strict mode refuses what Flink warns about")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want []string
	}{
		{
			name: "non-integer amount",
			kv:   []string{KeyList, "gpu", Key("gpu", SuffixAmount), "two"},
			want: []string{"external-resource.gpu.amount (-D): ", `"two" is not a valid Long`},
		},
		{
			name: "fractional amount",
			kv:   []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1.5"},
			want: []string{"external-resource.gpu.amount", `"1.5"`},
		},
		{
			name: "quote inside an element",
			kv:   []string{KeyList, "gpu;fp'ga"},
			want: []string{"external-resources (-D): ", "illegal quote at position 6"},
		},
		{
			name: "unclosed quote",
			kv:   []string{KeyList, "gpu;'fpga"},
			want: []string{"external-resources", "not closed"},
		},
		{
			name: "bad strict flag",
			kv:   []string{conf.Strict.Key, "yes"},
			want: []string{"xres.strict (-D): ", `"yes" is not a valid Boolean`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(cfgOf(t, tc.kv...), ParseOptions{})
			require.ErrorIs(t, err, conf.ErrInvalid)
			require.NotErrorIs(t, err, ErrStrict)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseReportsAmountOriginFromFile(t *testing.T) {
	c, err := conf.Load(filepath.Join("testdata", "pitfalls.yaml"), nil)
	require.NoError(t, err)
	_, err = Parse(c, ParseOptions{})
	require.ErrorIs(t, err, conf.ErrInvalid)
	require.Contains(t, err.Error(), "external-resource.nic.amount (testdata/pitfalls.yaml:11)")
	// The one configuration-error type names the key, file and line.
	var ce *conf.Error
	require.True(t, errors.As(err, &ce))
	var nic *conf.Error
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &ce) && ce.Key == "external-resource.nic.amount" {
			nic = ce
		}
	}
	require.NotNil(t, nic)
	require.Equal(t, filepath.Join("testdata", "pitfalls.yaml"), nic.File)
	require.Equal(t, 11, nic.Line)
}

func TestStrictListsEveryProblemAtOnce(t *testing.T) {
	kv := []string{
		KeyList, "a;b;c;d;;e",
		Key("a", SuffixAmount), "1", Key("a", SuffixYarnKey), "yarn.io/fpga",
		Key("b", SuffixAmount), "1", Key("b", SuffixYarnKey), "yarn.io/fpga",
		Key("e", SuffixAmount), "1",
		Key("c", SuffixAmount), "1", Key("c", SuffixYarnKey), "yarn.io/gpu",
		Key("d", SuffixAmount), "1", Key("d", SuffixYarnKey), "yarn.io/gpu",
	}
	for _, tc := range []struct {
		name string
		opts ParseOptions
		kv   []string
	}{
		{"option", ParseOptions{Strict: true}, kv},
		{"config key", ParseOptions{}, append([]string{conf.Strict.Key, "true"}, kv...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(cfgOf(t, tc.kv...), tc.opts)
			require.ErrorIs(t, err, ErrStrict)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce))
			require.Len(t, ce.Problems, 3, err.Error())
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "external resource configuration: 3 problems: "), msg)
			for _, want := range []string{"yarn.io/fpga: resources a and b both use it", "holds an empty name",
				"duplicate config key yarn.io/gpu: resources c and d"} {
				require.Contains(t, msg, want)
			}
		})
	}
}

func TestWarningsAreLoggedWithFields(t *testing.T) {
	log, hook := newLog()
	specs, err := Parse(cfgOf(t, KeyList, "gpu;fpga", Key("gpu", SuffixAmount), "1", Key("fpga", SuffixAmount), "1",
		Key("gpu", SuffixYarnKey), "yarn.io/gpu", Key("fpga", SuffixYarnKey), "yarn.io/gpu"), ParseOptions{Log: log})
	require.NoError(t, err)
	require.Len(t, specs, 2)
	w := warnings(hook)
	require.Len(t, w, 1)
	require.Equal(t, "external-resource.fpga.yarn.config-key", w[0].Data["key"])
	require.Equal(t, "-D", w[0].Data["origin"])
	require.Contains(t, w[0].Data["fix"], "give each resource its own yarn.config-key")
	require.Contains(t, w[0].Message, "duplicate config key yarn.io/gpu")
}

func TestDuplicateKeyFirstListedWins(t *testing.T) {
	// Order in external-resources decides, not the names' sort order.
	for _, list := range []string{"zeta;alpha", "alpha;zeta"} {
		t.Run(list, func(t *testing.T) {
			first := strings.Split(list, ";")[0]
			log, hook := newLog()
			specs, err := Parse(cfgOf(t, KeyList, list,
				Key("zeta", SuffixAmount), "1", Key("zeta", SuffixYarnKey), "yarn.io/gpu", Key("zeta", SuffixK8sKey), "nvidia.com/gpu",
				Key("alpha", SuffixAmount), "2", Key("alpha", SuffixYarnKey), "yarn.io/gpu", Key("alpha", SuffixK8sKey), "nvidia.com/gpu",
			), ParseOptions{Log: log})
			require.NoError(t, err)
			require.Equal(t, "alpha", specs[0].Name, "specs sorted by name")
			amount := map[string]int64{"zeta": 1, "alpha": 2}[first]
			require.Equal(t, map[string]int64{"yarn.io/gpu": amount}, YarnResources(specs))
			req, lim := KubernetesResources(specs)
			q := map[string]string{"nvidia.com/gpu": map[string]string{"zeta": "1", "alpha": "2"}[first]}
			require.Equal(t, q, req)
			require.Equal(t, q, lim)
			for _, s := range specs {
				if s.Name != first {
					require.Empty(t, s.YarnKey)
					require.Empty(t, s.K8sKey)
				}
			}
			require.Len(t, warnings(hook), 2, "one per key kind")
		})
	}
}

func TestSideChecks(t *testing.T) {
	kv := []string{KeyList, "gpu", Key("gpu", SuffixAmount), "1"}
	for _, tc := range []struct {
		side Side
		want string
	}{
		{SideAny, ""},
		{SideYarn, "not requested from YARN"},
		{SideKubernetes, "not requested from Kubernetes"},
		{SideWorker, "workers get no device infos"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			log, hook := newLog()
			specs, err := Parse(cfgOf(t, kv...), ParseOptions{Log: log, Side: tc.side})
			require.NoError(t, err)
			require.Len(t, specs, 1, "a missing key only warns: the resource stays")
			w := warnings(hook)
			if tc.want == "" {
				require.Empty(t, w)
				return
			}
			require.Len(t, w, 1)
			require.Contains(t, w[0].Message, tc.want)
		})
	}
}

func TestParamsAndVerbatimValues(t *testing.T) {
	specs, err := Parse(cfgOf(t, KeyList, "gpu", Key("gpu", SuffixAmount), "1",
		Key("gpu", SuffixFactory), "org.example.Factory",
		Key("gpu", "param.a.b"), "1", Key("gpu", "param.c"), "x y",
		Key("gpus", "param.c"), "not mine"), ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a.b": "1", "c": "x y"}, specs[0].Params)
	require.Equal(t, "org.example.Factory", specs[0].Factory)
}

func TestKubernetesResourcesEmpty(t *testing.T) {
	req, lim := KubernetesResources([]Spec{{Name: "gpu", Amount: 1, YarnKey: "yarn.io/gpu"}})
	require.Empty(t, req)
	require.Empty(t, lim)
	require.NotNil(t, req)
}

func TestSkippedFileLinesAreWarningsOrStrictErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(path, []byte("external-resources: gpu\nexternal-resource.gpu.amount: 1\nexternal-resource.gpu.yarn.config-key:yarn.io/gpu\n"), 0o644))
	c, err := conf.Load(path, nil)
	require.NoError(t, err)

	log, hook := newLog()
	specs, err := Parse(c, ParseOptions{Log: log})
	require.NoError(t, err)
	require.Len(t, specs, 1)
	require.Empty(t, specs[0].YarnKey)
	w := warnings(hook)
	require.Len(t, w, 1, "the skipped line")
	require.Equal(t, path+":3", w[0].Data["origin"])

	_, err = Parse(c, ParseOptions{Strict: true})
	require.ErrorIs(t, err, ErrStrict)
	require.Contains(t, err.Error(), "1 problem: "+path+`:3: no ": " between key and value`)
}

// Issue 41: names that collide once mangled into XRES_RESOURCE_<NAME>_*
// (one would overwrite the other's variables), and names outside letters,
// digits, '-', '_' and '.', are refused by Parse and Lint alike, naming
// both names (quoted: a control character is escaped, never echoed raw).
func TestUnsafeOrCollidingNamesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		list string
		want string
	}{
		{"GPU;gpu", `resource names "GPU" and "gpu" collide: both give the worker XRES_RESOURCE_GPU_* variables`},
		{"gpu-a;gpu.a", `resource names "gpu-a" and "gpu.a" collide: both give the worker XRES_RESOURCE_GPU_A_* variables`},
		{"gpu_a;fpga;gpu.a", `resource names "gpu_a" and "gpu.a" collide`},
		{"g pu", `resource name "g pu" has characters outside`},
		{"a=b", `resource name "a=b" has characters outside`},
		{"a,b", `resource name "a,b" has characters outside`},
		{"gpu\x1b[31m", `resource name "gpu\x1b[31m" has characters outside`},
		{"gp\u00fc", "resource name \"gp\u00fc\" has characters outside"},
	} {
		t.Run(tc.list, func(t *testing.T) {
			kv := []string{KeyList, tc.list}
			for _, n := range strings.Split(tc.list, ";") {
				kv = append(kv, Key(n, SuffixAmount), "1")
			}
			c := cfgOf(t, kv...)
			_, err := Parse(c, ParseOptions{})
			require.ErrorIs(t, err, conf.ErrInvalid)
			require.Contains(t, err.Error(), "external-resources (-D): "+tc.want)
			require.NotContains(t, err.Error(), "\x1b", "control characters are never echoed raw")
			var found bool
			for _, p := range Lint(c) {
				if p.Severity == SeverityError && strings.Contains(p.Message, tc.want) {
					found = true
				}
			}
			require.True(t, found, "Lint reports it as an error: %v", Lint(c))
		})
	}
	// The safe set itself passes.
	specs, err := Parse(cfgOf(t, KeyList, "gpu;GPU-2;fpga_x.1", Key("gpu", SuffixAmount), "1",
		Key("GPU-2", SuffixAmount), "1", Key("fpga_x.1", SuffixAmount), "1"), ParseOptions{})
	require.NoError(t, err)
	require.Len(t, specs, 3)
}

// EnvToken is the launcher's mangling (driver.EnvToken, which resources
// cannot import): the collision check is only right while they agree.
func TestEnvTokenMatchesTheLaunchersVariables(t *testing.T) {
	for in, want := range map[string]string{"gpu": "GPU", "gpu-a": "GPU_A", "a.b_c": "A_B_C", "Gp1": "GP1"} {
		require.Equal(t, want, EnvToken(in))
	}
}

// Issue 41: a key naming an unlisted resource with a control character
// (a -D or file line) is reported quoted, never echoed raw.
func TestLintQuotesUnsafeUnlistedNames(t *testing.T) {
	c := cfgOf(t, KeyList, "gpu", Key("gpu", SuffixAmount), "1", Key("g\x1b[2Jpu", SuffixAmount), "1")
	var found bool
	for _, p := range Lint(c) {
		require.NotContains(t, p.String(), "\x1b", "raw control character in %q", p.String())
		if strings.Contains(p.String(), `"g\x1b[2Jpu"`) {
			found = true
		}
	}
	require.True(t, found, "the name is reported, quoted: %v", Lint(c))
}
