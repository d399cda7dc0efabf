package conf

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", []string{}, ""},
		{"gpu", []string{"gpu"}, ""},
		{"gpu;fpga", []string{"gpu", "fpga"}, ""},
		{"gpu ; fpga", []string{"gpu", "fpga"}, ""},
		{"  gpu;fpga  ", []string{"gpu", "fpga"}, ""},
		{"a;;b", []string{"a", "", "b"}, ""},
		{";a", []string{"a"}, ""},
		{"a;", []string{"a"}, ""},
		{";;a", []string{"", "a"}, ""},
		{"'a;b';c", []string{"a;b", "c"}, ""},
		{`"a;b";c`, []string{"a;b", "c"}, ""},
		{"'it''s'", []string{"it's"}, ""},
		{`"say ""hi"""`, []string{`say "hi"`}, ""},
		{"' padded '", []string{" padded "}, ""},
		{"'a'b", []string{"a", "b"}, ""},
		{"a b;c", []string{"a b", "c"}, ""},
		{"fp'ga", nil, "illegal quote at position 2"},
		{"'gpu", nil, "quote at position 0 is not closed"},
		{`gpu;"fpga`, nil, "quote at position 4 is not closed"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := SplitList(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJoinListRoundTrip(t *testing.T) {
	for _, elems := range [][]string{
		{"gpu", "fpga"}, {"a;b", "c"}, {"it's", `"q"`}, {" pad ", "x"}, {"a", "", "b"}, {"k:v,n:'x'"},
	} {
		t.Run(strings.Join(elems, "|"), func(t *testing.T) {
			got, err := SplitList(JoinList(elems))
			require.NoError(t, err)
			require.Equal(t, elems, got)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"10 s", 10 * time.Second, ""},
		{"10s", 10 * time.Second, ""},
		{"500 ms", 500 * time.Millisecond, ""},
		{"1min", time.Minute, ""},
		{"2 m", 2 * time.Minute, ""},
		{"3 hours", 3 * time.Hour, ""},
		{"1d", 24 * time.Hour, ""},
		{"250", 250 * time.Millisecond, ""},
		{"7 SECONDS", 7 * time.Second, ""},
		{"5 µs", 5 * time.Microsecond, ""},
		{"9ns", 9 * time.Nanosecond, ""},
		{"0", 0, ""},
		{"", 0, "does not start with a number"},
		{"s", 0, "does not start with a number"},
		{"-1 s", 0, "does not start with a number"},
		{"1.5 s", 0, `unknown unit ".5 s"`},
		{"10 parsecs", 0, `unknown unit "parsecs"`},
		{"99999999999999999999 ms", 0, "number too large"},
		{"999999999999 d", 0, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseMemorySize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"1728m", 1728 << 20, ""},
		{"1g", 1 << 30, ""},
		{"512 mb", 512 << 20, ""},
		{"4 GB", 4 << 30, ""},
		{"64k", 64 << 10, ""},
		{"1 tebibytes", 1 << 40, ""},
		{"100", 100, ""},
		{"100 bytes", 100, ""},
		{"", 0, "does not start with a number"},
		{"1.5g", 0, "unknown unit"},
		{"1 pb", 0, `unknown unit "pb"`},
		{"9999999999 t", 0, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMemorySize(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestTypedGetters(t *testing.T) {
	p := writeFile(t, t.TempDir(), "flink-conf.yaml", strings.Join([]string{
		"taskmanager.numberOfTaskSlots: 4",
		"taskmanager.memory.process.size: 1728m",
		"xres.discovery.timeout: 30 s",
		"xres.strict: TRUE",
		"taskmanager.cpu.cores: 2.5",
		"parallelism.default: many",
		"yarn.containers.vcores: 99999999999",
		"s3.secret-key.count: hunter2",
		"",
	}, "\n"))
	c, err := Load(p, nil)
	require.NoError(t, err)

	slots, err := c.Int(TaskManagerSlots)
	require.NoError(t, err)
	require.Equal(t, 4, slots)
	mem, err := c.MemorySize(TaskManagerProcessSize)
	require.NoError(t, err)
	require.Equal(t, int64(1728<<20), mem)
	timeout, err := c.Duration(DiscoveryTimeout)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, timeout)
	strict, err := c.Bool(Strict)
	require.NoError(t, err)
	require.True(t, strict)
	cores, err := c.Float(TaskManagerCPUCores)
	require.NoError(t, err)
	require.Equal(t, 2.5, cores)

	// Defaults when unset.
	redundant, err := c.Int(RedundantWorkers)
	require.NoError(t, err)
	require.Zero(t, redundant)
	maxSlots, err := c.Int(SlotsMax)
	require.NoError(t, err)
	require.Equal(t, 2147483647, maxSlots)
	bind, err := c.String(RestBindAddress)
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0", bind)
	name, err := c.String(YarnApplicationName)
	require.NoError(t, err)
	require.Empty(t, name)
	maxFailed, err := c.Int(YarnMaxFailedContainers)
	require.NoError(t, err, "no default and unset: the zero value")
	require.Zero(t, maxFailed)

	// Errors name the key and the file:line.
	_, err = c.Int(ParallelismDefault)
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, `config key parallelism.default (`+p+`:6): "many" is not a valid Integer: not an integer`)
	_, err = c.Int(YarnContainerVcores)
	require.ErrorContains(t, err, "yarn.containers.vcores ("+p+":7)")
	require.ErrorContains(t, err, "out of range")
	var ve *ValueError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, TypeInt, ve.Type)

	// Secrets stay out of errors.
	_, _, err = c.IntKey("s3.secret-key.count")
	require.ErrorContains(t, err, "(hidden)")
	require.NotContains(t, err.Error(), "hunter2")

	// Raw-key getters.
	n, ok, err := c.Int64Key("taskmanager.numberOfTaskSlots")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(4), n)
	_, ok, err = c.Int64Key("external-resource.gpu.amount")
	require.NoError(t, err)
	require.False(t, ok)
	d, ok, err := c.DurationKey("xres.discovery.timeout")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 30*time.Second, d)
	b, ok, err := c.BoolKey("xres.strict")
	require.NoError(t, err)
	require.True(t, ok && b)
	m, ok, err := c.MemorySizeKey("taskmanager.memory.process.size")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1728<<20), m)
	_, _, err = c.MemorySizeKey("parallelism.default")
	require.ErrorContains(t, err, "not a valid MemorySize")
}

func TestDefaultErrorNamesDefault(t *testing.T) {
	o := Option{Key: "x.y", Type: TypeInt, Default: "nope", Description: "d"}
	_, err := New().Int(o)
	require.EqualError(t, err, `config key x.y (default): "nope" is not a valid Integer: not an integer`)
}

func TestOptionsRegistry(t *testing.T) {
	require.NoError(t, CheckOptions())
	opts := Options()
	require.NotEmpty(t, opts)
	for i := 1; i < len(opts); i++ {
		require.Less(t, opts[i-1].Key, opts[i].Key, "sorted, unique")
	}
	for _, key := range []string{
		"external-resources", "external-resource.<name>.amount", "external-resource.<name>.yarn.config-key",
		"external-resource.<name>.kubernetes.config-key", "external-resource.<name>.driver-factory.class",
		"external-resource.<name>.param.<param>",
		"xres.strict", "xres.discovery.timeout", "taskmanager.memory.process.size", "taskmanager.cpu.cores",
		"yarn.containers.vcores", "taskmanager.numberOfTaskSlots", "parallelism.default",
		"slotmanager.number-of-slots.max", "slotmanager.redundant-taskmanager-num", "yarn.maximum-failed-containers",
		"yarn.application.name", "yarn.application.queue", "containerized.taskmanager.env.<VAR>",
		"containerized.master.env.<VAR>",
	} {
		o, ok := LookupOption(key)
		require.True(t, ok, key)
		require.Equal(t, key, o.Key)
	}
}

func TestBareAngle(t *testing.T) {
	require.True(t, bareAngle("variable <VAR> set"))
	require.True(t, bareAngle("a > b"))
	require.False(t, bareAngle("variable `<VAR>` set"))
	require.False(t, bareAngle("plain"))
}

func TestOptionPatterns(t *testing.T) {
	require.Equal(t, "external-resource.gpu.amount", ExternalResourceAmount.For("gpu").Key)
	require.Equal(t, "external-resource.fpga.param.vendor", ExternalResourceParam.For("fpga", "vendor").Key)
	require.Equal(t, "external-resource.gpu.param.<param>", ExternalResourceParam.For("gpu").Key)
	require.True(t, ExternalResourceAmount.IsPattern())
	require.False(t, Strict.IsPattern())
	require.True(t, ExternalResourceAmount.Matches("external-resource.gpu.a100.amount"))
	require.False(t, ExternalResourceAmount.Matches("external-resource..amount"))
	require.False(t, Strict.Matches("xres.strictly"))

	for _, tc := range []struct{ key, want string }{
		{"external-resource.gpu.amount", "external-resource.<name>.amount"},
		{"external-resource.gpu.param.my-plugin-key", "external-resource.<name>.param.<param>"},
		{"containerized.master.env.JAVA_HOME", "containerized.master.env.<VAR>"},
		{"xres.strict", "xres.strict"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			o, ok := LookupOption(tc.key)
			require.True(t, ok)
			require.Equal(t, tc.want, o.Key)
		})
	}
	_, ok := LookupOption("no.such.key")
	require.False(t, ok)
}

func TestReplaceTable(t *testing.T) {
	doc := []byte("intro\n" + TableBegin + "\nstale\n" + TableEnd + "\nafter\n")
	out, err := ReplaceTable(doc)
	require.NoError(t, err)
	s := string(out)
	require.True(t, strings.HasPrefix(s, "intro\n"+TableBegin+"\n| Key | Type | Default | Description |\n"))
	require.True(t, strings.HasSuffix(s, TableEnd+"\nafter\n"))
	require.NotContains(t, s, "stale")
	require.Contains(t, s, "| `xres.discovery.timeout` | Duration | `10 s` | ")
	again, err := ReplaceTable(out)
	require.NoError(t, err)
	require.Equal(t, s, string(again), "idempotent")

	_, err = ReplaceTable([]byte(TableEnd + TableBegin))
	require.Error(t, err)
}

func TestCheckOptionsFindsBadDeclarations(t *testing.T) {
	registryMu.Lock()
	saved := declared
	declared = append([]Option(nil), saved...)
	byKey, indexed = nil, 0
	registryMu.Unlock()
	t.Cleanup(func() {
		registryMu.Lock()
		declared, byKey, indexed = saved, nil, 0
		registryMu.Unlock()
	})

	Register(Option{Key: "xres.strict", Type: TypeBool, Default: "false", Description: "again"})
	Register(Option{Key: "test.bad-default", Type: TypeDuration, Default: "soon", Description: "d"})
	Register(Option{Key: "test.no-description", Type: TypeString})
	Register(Option{Key: "test.bare", Type: TypeString, Description: "set <X>"})
	err := CheckOptions()
	require.Error(t, err)
	for _, want := range []string{"option xres.strict declared twice", `config key test.bad-default (default): "soon"`,
		`option "test.no-description" needs a key and a description`, `option "test.bare": put <placeholders>`} {
		require.ErrorContains(t, err, want)
	}
}
