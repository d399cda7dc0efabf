package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestLoadFlatFixture(t *testing.T) {
	path := filepath.Join("testdata", "flink-conf.yaml")
	c, err := Load(path, nil)
	require.NoError(t, err)

	want := map[string]string{
		"external-resources":                                "gpu",
		"external-resource.gpu.amount":                      "1",
		"external-resource.gpu.yarn.config-key":             "yarn.io/gpu",
		"external-resource.gpu.param.discovery-script.args": "--enable-coordination-mode --coordination-file /var/tmp/flink-gpu-coordination",
		"env.java.opts.taskmanager":                         "-Dlog.level=INFO -Dsome.flag=a:b",
		"containerized.taskmanager.env.NCCL_DEBUG":          "INFO",
	}
	for k, v := range want {
		got, ok := c.Get(k)
		require.True(t, ok, k)
		require.Equal(t, v, got, k)
	}
	require.Equal(t, path+":13", c.Origin("external-resource.gpu.amount"))
	require.Equal(t, path, c.Path())
	_, ok := c.Get("yarn.application.name")
	require.False(t, ok, "a line without ': ' is skipped")

	var lines []int
	for _, w := range c.Warnings() {
		lines = append(lines, w.Line)
		require.Equal(t, path, w.File)
	}
	require.Equal(t, []int{24, 25, 26, 27}, lines)
	require.Contains(t, c.Warnings()[0].String(), path+":24: ")
}

// TestFlatFlinkRules replays the cases of Flink's GlobalConfigurationTest for
// the legacy loader.
func TestFlatFlinkRules(t *testing.T) {
	content := strings.Join([]string{
		"###########################",
		"# Some : comments : to skip",
		"mykey1: myvalue1",
		"mykey2       : myvalue2",
		"mykey3:myvalue3",
		" some nonsense without colon and whitespace separator",
		" :  ",
		"   ",
		"mykey4: myvalue4# some comments",
		"   mykey5    :    myvalue5    ",
		"mykey6: my: value6",
		"mykey7: ",
		": myvalue8",
		"mykey9: myvalue9",
		"mykey9: myvalue10",
		"",
	}, "\n")
	p := writeFile(t, t.TempDir(), "flink-conf.yaml", content)
	c, err := Load(p, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"mykey1", "mykey2", "mykey4", "mykey5", "mykey6", "mykey9"}, c.Keys())
	for _, tc := range []struct{ key, want string }{
		{"mykey1", "myvalue1"}, {"mykey2", "myvalue2"}, {"mykey4", "myvalue4"},
		{"mykey5", "myvalue5"}, {"mykey6", "my: value6"}, {"mykey9", "myvalue10"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			got, _ := c.Get(tc.key)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, p+":15", c.Origin("mykey9"), "the later line wins")
	require.Len(t, c.Warnings(), 6)
	require.Equal(t, p+":15: key mykey9 is set again (first on line 14); Flink keeps the last, line 15", c.Warnings()[5].String())
}

// Issue 12: a duplicate key names both lines, never a value.
func TestFlatDuplicateKey(t *testing.T) {
	p := writeFile(t, t.TempDir(), "flink-conf.yaml", "a.password: hunter1\nb: 1\na.password: hunter2\n")
	c, err := Load(p, nil)
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	w := c.Warnings()[0]
	require.Equal(t, 3, w.Line)
	require.Contains(t, w.Message, "first on line 1")
	require.Equal(t, "remove line 1 or line 3", w.Fix)
	require.NotContains(t, w.String()+w.Fix, "hunter")
	got, _ := c.Get("a.password")
	require.Equal(t, "hunter2", got, "Flink keeps the last")
}

// Issue 12: -D written with a space never shows the value, which comes
// as the next argument; the key alone is named.
func TestParseDynamicSpaceForm(t *testing.T) {
	_, _, err := ParseDynamic("some.password")
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), `"some.password"`)
	require.Contains(t, err.Error(), "no space")
}

func TestRedactArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--enable-coordination-mode --coordination-file /tmp/f", "--enable-coordination-mode --coordination-file /tmp/f"},
		{"--token abc --x 1", "--token (hidden) --x 1"},
		{"--api-key=abc --password", "--api-key=(hidden) --password"},
		// The word after a secret-looking flag is its value, whatever it
		// looks like: a password may start with '-'.
		{"-secret -v", "-secret (hidden)"},
		{"-p hunter2 -v", "-p (hidden) -v"},
		{"-p=hunter2 -phunter3", "-p=(hidden) -p(hidden)"},
		{"--password=hunter2 -Djavax.net.ssl.keyStorePassword=hunter3", "--password=(hidden) -Djavax.net.ssl.keyStorePassword=(hidden)"},
		{"--url https://bob:hunter2@host:8443/x --port 8080", "--url https://bob:(hidden)@host:8443/x --port 8080"},
		{"--coordination-file /tmp/f --print", "--coordination-file /tmp/f --print"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, RedactArgs(strings.Fields(tc.in)))
		})
	}
}

func TestFlatWarningsHideValues(t *testing.T) {
	p := writeFile(t, t.TempDir(), "flink-conf.yaml", "s3.secret-key:hunter2\n")
	c, err := Load(p, nil)
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	require.NotContains(t, c.Warnings()[0].String(), "hunter2")
}

func TestLoadNestedFixture(t *testing.T) {
	path := filepath.Join("testdata", "nested", "config.yaml")
	c, err := Load(path, nil)
	require.NoError(t, err)
	want := map[string]string{
		"jobmanager.rpc.address":                            "localhost",
		"taskmanager.memory.process.size":                   "1728m",
		"taskmanager.numberOfTaskSlots":                     "2",
		"parallelism.default":                               "4",
		"external-resources":                                "gpu;fpga",
		"external-resource.gpu.amount":                      "2",
		"external-resource.gpu.driver-factory.class":        "org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.yarn.config-key":             "yarn.io/gpu",
		"external-resource.gpu.param.discovery-script.path": "plugins/external-resource-gpu/nvidia-gpu-discovery.sh",
		"external-resource.gpu.param.discovery-script.args": "--enable-coordination-mode",
		"external-resource.fpga.amount":                     "1",
		"external-resource.fpga.yarn.config-key":            "yarn.io/fpga",
		"yarn.application.name":                             "xres demo",
		"yarn.application.queue":                            "gpu # not a comment",
		"containerized.taskmanager.env.NCCL_DEBUG":          "INFO",
		"containerized.taskmanager.env.LD_LIBRARY_PATH":     "/usr/local/cuda/lib64:/usr/lib",
		"pipeline.jars":                                     "file:///opt/job/a.jar;'file:///opt/job/b;c.jar'",
		"pipeline.cached-files":                             "'name:model,path:''hdfs:///models/m1'''",
		"env.java.opts.all":                                 "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	}
	require.Len(t, c.Keys(), len(want)+1, "plus jobmanager.memory.process.size")
	for k, v := range want {
		got, ok := c.Get(k)
		require.True(t, ok, k)
		require.Equal(t, v, got, k)
	}
	require.Equal(t, path+":20", c.Origin("external-resource.gpu.amount"))
	jars, err := c.List(Option{Key: "pipeline.jars", Type: TypeList})
	require.NoError(t, err)
	require.Equal(t, []string{"file:///opt/job/a.jar", "file:///opt/job/b;c.jar"}, jars)
	require.Len(t, c.Warnings(), 1)
	require.Equal(t, 49, c.Warnings()[0].Line)
	require.Contains(t, c.Warnings()[0].Message, "high-availability")
}

func TestFormatFollowsFileName(t *testing.T) {
	dir := t.TempDir()
	content := "a: 1\nc: d: e\n"
	flat, err := Load(writeFile(t, dir, "flink-conf.yaml", content), nil)
	require.NoError(t, err)
	v, _ := flat.Get("c")
	require.Equal(t, "d: e", v, "split at the first \": \", as Flink does")

	_, err = Load(writeFile(t, dir, "config.yaml", content), nil)
	require.ErrorIs(t, err, ErrSyntax)

	other, err := Load(writeFile(t, dir, "my.yaml", "a: 1\n"), nil)
	require.NoError(t, err)
	v, _ = other.Get("a")
	require.Equal(t, "1", v)
}

func TestDynamicOverrides(t *testing.T) {
	p := writeFile(t, t.TempDir(), "flink-conf.yaml", "external-resources: gpu\nexternal-resource.gpu.amount: 1\n")
	c, err := Load(p, []string{"external-resource.gpu.amount=4", "-Dexternal-resources=none", " x = y=z ", "empty="})
	require.NoError(t, err)
	for _, tc := range []struct{ key, value, origin string }{
		{"external-resource.gpu.amount", "4", OriginDynamic},
		{"external-resources", "none", OriginDynamic},
		{"x", "y=z", OriginDynamic},
		{"empty", "", OriginDynamic},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, ok := c.Get(tc.key)
			require.True(t, ok)
			require.Equal(t, tc.value, v)
			require.Equal(t, tc.origin, c.Origin(tc.key))
		})
	}
	c.Set("external-resource.gpu.amount", "8")
	v, _ := c.Get("external-resource.gpu.amount")
	require.Equal(t, "8", v)
	require.Equal(t, OriginSet, c.Origin("external-resource.gpu.amount"))

	for _, bad := range []string{"novalue", "=x", "-D", "s3.secret-key:hunter2"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := Load("", []string{bad})
			require.ErrorIs(t, err, ErrSyntax)
			require.Contains(t, err.Error(), "-D override")
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope", "flink-conf.yaml")
	_, err := Load(p, nil)
	require.ErrorIs(t, err, ErrConfNotFound)
	require.Contains(t, err.Error(), p)

	c, err := Load("", nil)
	require.NoError(t, err)
	require.Empty(t, c.Keys())
}

func TestFind(t *testing.T) {
	both := t.TempDir()
	nested := writeFile(t, both, "config.yaml", "a: 1\n")
	writeFile(t, both, "flink-conf.yaml", "a: 2\n")
	flatOnly := t.TempDir()
	flat := writeFile(t, flatOnly, "flink-conf.yaml", "a: 2\n")
	empty := t.TempDir()
	missing := filepath.Join(empty, "missing.yaml")

	env := func(dir string) func(string) string {
		return func(k string) string {
			if k == EnvConfDir {
				return dir
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		flag    string
		env     string
		want    string
		wantErr bool
	}{
		{name: "flag file wins over env", flag: flat, env: both, want: flat},
		{name: "flag directory prefers config.yaml", flag: both, want: nested},
		{name: "flag directory with flink-conf.yaml", flag: flatOnly, want: flat},
		{name: "flag directory without a file", flag: empty, wantErr: true},
		{name: "flag file missing", flag: missing, wantErr: true},
		{name: "env prefers config.yaml", env: both, want: nested},
		{name: "env falls back to flink-conf.yaml", env: flatOnly, want: flat},
		{name: "env directory without a file", env: empty, want: ""},
		{name: "nothing asked", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(tc.flag, env(tc.env))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrConfNotFound)
				require.Contains(t, err.Error(), tc.flag)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestWithPrefix(t *testing.T) {
	c := New()
	c.Set("external-resource.gpu.param.discovery-script.path", "/x.sh")
	c.Set("external-resource.gpu.param.k", "v")
	c.Set("external-resource.gpu.param.", "ignored: empty remainder")
	c.Set("external-resource.gpus.param.k", "other")
	require.Equal(t, map[string]string{"discovery-script.path": "/x.sh", "k": "v"},
		c.WithPrefix("external-resource.gpu.param."))
}

func TestNilConfig(t *testing.T) {
	var c *Config
	_, ok := c.Get("a")
	require.False(t, ok)
	require.Empty(t, c.Keys())
	require.Empty(t, c.Origin("a"))
	require.Empty(t, c.WithPrefix("a"))
	v, err := c.Int(TaskManagerSlots)
	require.NoError(t, err)
	require.Equal(t, 1, v)
}

// Issue 29: nested YAML in the flat flink-conf.yaml (Flink 1.19's format
// in Flink's legacy file) is an error naming the file and the line that
// opens the block: read line by line, as Flink does, its keys would be
// lost with warnings only (a worker without its GPU).
func TestFlatRefusesNestedYAML(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		line          int
		want          string
	}{
		{"external-resource block", "external-resources: gpu\nexternal-resource:\n  gpu:\n    amount: 1\n", 2,
			`nested YAML: "external-resource:" opens a block (line 3, "gpu", is indented below it)`},
		{"block under a comment and blank lines", "# GPUs\ntaskmanager: # the workers\n\n   # slots\n\tnumberOfTaskSlots: 2\n", 2,
			"write each key whole on one line (taskmanager.numberOfTaskSlots: …)"},
		{"list", "pipeline.jars:\n  - file:///a.jar\n", 1, `"pipeline.jars:" opens a block`},
		{"indented block inside a block", "  a:\n    b: 1\n", 1, `"a:" opens a block`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "flink-conf.yaml", tc.content)
			_, err := Load(p, nil)
			require.ErrorIs(t, err, ErrSyntax)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			require.Equal(t, p, se.File)
			require.Equal(t, tc.line, se.Line)
			require.Contains(t, err.Error(), fmt.Sprintf("%s:%d: ", p, tc.line))
			require.Contains(t, err.Error(), tc.want)
		})
	}
	// A "key:" line without a block below it stays a warning, as in Flink,
	// and indented lines without a "key:" above them are Flink's keys.
	c, err := Load(writeFile(t, dir, "flink-conf.yaml", "a:\nb: 1\n  c: 2\n"), nil)
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	v, _ := c.Get("c")
	require.Equal(t, "2", v)
}
