package conf

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

func hadoopEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func loadHadoopTestdata(t *testing.T, dir string, env map[string]string) *HadoopConfig {
	t.Helper()
	hc, err := LoadHadoopOptions(HadoopOptions{Dir: filepath.Join("testdata", "hadoop", dir), Getenv: hadoopEnv(env)})
	require.NoError(t, err)
	return hc
}

func TestLoadHadoopBasic(t *testing.T) {
	hc := loadHadoopTestdata(t, "basic", map[string]string{"USER": "alice", "XRES_TEST_HOME": "/opt/xres"})
	tests := []struct {
		key, want string
	}{
		{"fs.defaultFS", "hdfs://nn.example.com:9000"},
		{"dfs.replication", "1"},
		{"yarn.resource-types", "yarn.io/gpu"},
		{"yarn.resourcemanager.hostname", "rm.example.com"},
		// later files win: core < hdfs < yarn
		{"xres.test.overridden", "from-yarn"},
		// defaults derive from a hostname set in a file
		{"yarn.resourcemanager.address", "rm.example.com:8032"},
		{"yarn.resourcemanager.webapp.address", "rm.example.com:8088"},
		{"yarn.resourcemanager.webapp.https.address", "rm.example.com:8090"},
		{"yarn.resourcemanager.scheduler.address", "rm.example.com:18030"},
		{"hadoop.security.authentication", "simple"},
		{"hadoop.rpc.protection", "authentication"},
		{"yarn.http.policy", "HTTP_ONLY"},
		// system-like and environment variables
		{"hadoop.tmp.dir", "/data/tmp/alice"},
		{"xres.test.env", "/opt/xres/bin"},
		{"xres.test.envdefault", "rm.example.com"},
		// a reference defined later in the same file, and two levels deep
		{"xres.test.nested", "hdfs://nn.example.com:9000/level1/nested"},
		// unknown references stay as written, as in Hadoop
		{"xres.test.unknown", "${no.such.key}:1"},
		// values are not trimmed
		{"xres.test.spaces", "  padded  "},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := hc.Get(tt.key)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("property without value is ignored", func(t *testing.T) {
		_, ok := hc.Get("xres.test.novalue")
		require.False(t, ok)
	})
	t.Run("unset key", func(t *testing.T) {
		_, ok := hc.Get("no.such.key")
		require.False(t, ok)
		require.Equal(t, "fallback", hc.GetDefault("no.such.key", "fallback"))
		require.Equal(t, "rm.example.com", hc.GetDefault("yarn.resourcemanager.hostname", "fallback"))
	})
	t.Run("source", func(t *testing.T) {
		src, ok := hc.Source("yarn.resourcemanager.scheduler.address")
		require.True(t, ok)
		require.Equal(t, filepath.Join("testdata", "hadoop", "basic", "yarn-site.xml")+":8", src)
		src, ok = hc.Source("xres.test.overridden")
		require.True(t, ok)
		require.True(t, strings.HasSuffix(src, "yarn-site.xml:12"), src)
		src, ok = hc.Source("yarn.resourcemanager.address")
		require.True(t, ok)
		require.Equal(t, HadoopSourceDefault, src)
		_, ok = hc.Source("no.such.key")
		require.False(t, ok)
		hc.Set("xres.set", "v")
		src, _ = hc.Source("xres.set")
		require.Equal(t, HadoopSourceSet, src)
	})
	t.Run("raw keeps references", func(t *testing.T) {
		raw, ok := hc.Raw("yarn.resourcemanager.scheduler.address")
		require.True(t, ok)
		require.Equal(t, "${yarn.resourcemanager.hostname}:18030", raw)
	})
	t.Run("typed getters", func(t *testing.T) {
		ha, err := hc.GetBool("yarn.resourcemanager.ha.enabled", true)
		require.NoError(t, err)
		require.False(t, ha)
		n, err := hc.GetInt("dfs.replication", 3)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = hc.GetInt("no.such.key", 3)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		_, err = hc.GetInt("fs.defaultFS", 0)
		require.ErrorIs(t, err, ErrHadoopValue)
		require.ErrorContains(t, err, "fs.defaultFS")
		require.ErrorContains(t, err, "core-site.xml:5")
		_, err = hc.GetBool("dfs.replication", false)
		require.ErrorIs(t, err, ErrHadoopValue)
	})
	t.Run("keys sorted and include defaults", func(t *testing.T) {
		keys := hc.Keys()
		require.Contains(t, keys, "yarn.resourcemanager.admin.address")
		require.Contains(t, keys, "dfs.replication")
		require.IsIncreasing(t, keys)
	})
}

func TestLoadHadoopDirectorySelection(t *testing.T) {
	basic := filepath.Join("testdata", "hadoop", "basic")
	ha := filepath.Join("testdata", "hadoop", "ha")
	tests := []struct {
		name    string
		dir     string
		env     map[string]string
		wantDir string
		wantErr error
		wantMsg string
	}{
		{name: "explicit dir wins", dir: basic, env: map[string]string{"HADOOP_CONF_DIR": ha, "YARN_CONF_DIR": ha}, wantDir: basic},
		{name: "HADOOP_CONF_DIR before YARN_CONF_DIR", env: map[string]string{"HADOOP_CONF_DIR": basic, "YARN_CONF_DIR": ha}, wantDir: basic},
		{name: "YARN_CONF_DIR alone", env: map[string]string{"YARN_CONF_DIR": ha}, wantDir: ha},
		{name: "nothing set", env: map[string]string{}, wantErr: ErrNoHadoopConf},
		{name: "no site files", dir: filepath.Join("testdata", "hadoop", "empty"), wantErr: ErrNoHadoopConf},
		{name: "missing dir", dir: filepath.Join("testdata", "hadoop", "nope"), wantErr: os.ErrNotExist},
		{name: "missing dir from env", env: map[string]string{"YARN_CONF_DIR": "/no/such/dir"}, wantErr: os.ErrNotExist,
			wantMsg: "load hadoop configuration /no/such/dir (from YARN_CONF_DIR): stat /no/such/dir: no such file or directory"},
		{name: "file, not dir", dir: filepath.Join("testdata", "hadoop", "empty", "README"),
			wantMsg: "empty/README: not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc, err := LoadHadoopOptions(HadoopOptions{Dir: tt.dir, Getenv: hadoopEnv(tt.env)})
			if tt.wantMsg != "" {
				require.ErrorContains(t, err, tt.wantMsg)
			}
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			if tt.wantErr != nil || tt.wantMsg != "" {
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantDir, hc.Dir())
		})
	}
}

func TestLoadHadoopFinal(t *testing.T) {
	log, hook := test.NewNullLogger()
	hc, err := LoadHadoopOptions(HadoopOptions{Dir: filepath.Join("testdata", "hadoop", "final"), Log: log})
	require.NoError(t, err)
	v, _ := hc.Get("hadoop.security.authentication")
	require.Equal(t, "kerberos", v, "a final key in core-site.xml must survive yarn-site.xml")
	require.True(t, hc.Final("hadoop.security.authentication"))
	entry := hook.LastEntry()
	require.NotNil(t, entry)
	require.Equal(t, logrus.WarnLevel, entry.Level)
	require.Equal(t, "hadoop.security.authentication", entry.Data["key"])
	require.Contains(t, entry.Data["ignored_at"], "yarn-site.xml:3")

	// Set overrides even a final key (it stands for -D on the command line).
	hc.Set("hadoop.security.authentication", "simple")
	v, _ = hc.Get("hadoop.security.authentication")
	require.Equal(t, "simple", v)
}

func TestLoadHadoopAttributesAndLatin1(t *testing.T) {
	hc := loadHadoopTestdata(t, "attrs", nil)
	v, _ := hc.Get("fs.defaultFS")
	require.Equal(t, "hdfs://attr-nn:8020", v, "final given as an attribute")
	v, _ = hc.Get("xres.latin1")
	require.Equal(t, "café", v)
}

func TestLoadHadoopInclude(t *testing.T) {
	hc := loadHadoopTestdata(t, "include", nil)
	v, _ := hc.Get("yarn.resourcemanager.address")
	require.Equal(t, "included.example.com:8032", v)
	v, _ = hc.Get("xres.after")
	require.Equal(t, "main", v, "properties after an include override it")
	src, _ := hc.Source("yarn.resourcemanager.hostname")
	require.True(t, strings.HasSuffix(src, "rm-addresses.xml:3"), src)
}

func TestLoadHadoopIncludeErrors(t *testing.T) {
	tests := []struct {
		name, xml, want string
	}{
		{"missing without fallback", `<configuration xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="gone.xml"/></configuration>`, "include gone.xml"},
		{"no href", `<configuration xmlns:xi="http://www.w3.org/2001/XInclude">` + "\n" + `<xi:include/></configuration>`, "yarn-site.xml:2: malformed hadoop configuration: <include> without href"},
		{"include loop", `<configuration xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="yarn-site.xml"/></configuration>`, "nested deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(tt.xml), 0o600))
			_, err := LoadHadoop(dir)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLoadHadoopMalformed(t *testing.T) {
	_, err := LoadHadoop(filepath.Join("testdata", "hadoop", "bad"))
	require.ErrorIs(t, err, ErrHadoopXML)
	require.ErrorContains(t, err, filepath.Join("testdata", "hadoop", "bad", "core-site.xml")+":10")
}

func TestReadHadoopXMLErrors(t *testing.T) {
	tests := []struct {
		name, xml, want string
	}{
		{"wrong root", "<?xml version=\"1.0\"?>\n<props/>", "x.xml:2: malformed hadoop configuration: root element is <props>"},
		{"empty", "", "x.xml: malformed hadoop configuration: no <configuration> element"},
		{"nameless", "<configuration>\n<property>\n<value>v</value></property></configuration>", "x.xml:2: malformed hadoop configuration: <property> without a <name>"},
		{"unknown charset", `<?xml version="1.0" encoding="EBCDIC"?><configuration/>`, `unsupported encoding "EBCDIC"`},
		{"truncated", "<configuration><property><name>a</name>", "x.xml:1: malformed hadoop configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadHadoopXML(strings.NewReader(tt.xml), "x.xml")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReadHadoopXMLProperties(t *testing.T) {
	in := `<configuration>
  <property><name>a</name><value>1</value><final>true</final><source>programmatically</source></property>
  <unknown><name>ignored</name><value>x</value></unknown>
  <property><name>b</name><value></value></property>
  <property><name>c</name><value>x &amp; <![CDATA[<y>]]></value></property>
</configuration>`
	props, err := ReadHadoopXML(strings.NewReader(in), "p.xml")
	require.NoError(t, err)
	require.Equal(t, []HadoopProperty{
		{Name: "a", Value: "1", Final: true, File: "p.xml", Line: 2},
		{Name: "b", Value: "", File: "p.xml", Line: 4},
		{Name: "c", Value: "x & <y>", File: "p.xml", Line: 5},
	}, props)
}

func TestHadoopExpansionErrors(t *testing.T) {
	hc := loadHadoopTestdata(t, "cycle", nil)
	tests := []struct {
		key  string
		want string
	}{
		{"xres.a", "xres.a -> xres.b -> xres.c -> xres.a"},
		{"xres.b", "xres.b -> xres.c -> xres.a -> xres.b"},
		{"xres.self", "xres.self -> xres.self"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, ok, err := hc.Lookup(tt.key)
			require.True(t, ok)
			require.ErrorIs(t, err, ErrHadoopVar)
			require.ErrorContains(t, err, "hadoop configuration key "+tt.key+" (")
			require.ErrorContains(t, err, tt.want)
			// Get falls back to the raw value rather than looping.
			raw, _ := hc.Raw(tt.key)
			got, ok := hc.Get(tt.key)
			require.True(t, ok)
			require.Equal(t, raw, got)
		})
	}
	v, ok, err := hc.Lookup("xres.ok")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "fine", v)

	t.Run("depth bound", func(t *testing.T) {
		deep := NewHadoopConfig(hadoopEnv(nil))
		for i := 0; i < 30; i++ {
			deep.Set("k"+strconv.Itoa(i), "${k"+strconv.Itoa(i+1)+"}")
		}
		deep.Set("k30", "end")
		_, _, err := deep.Lookup("k0")
		require.ErrorIs(t, err, ErrHadoopVar)
		require.ErrorContains(t, err, "more than 20 nested references")
		v, _, err := deep.Lookup("k15")
		require.NoError(t, err)
		require.Equal(t, "end", v)
	})
}

func TestHadoopExpansionSyntax(t *testing.T) {
	hc := NewHadoopConfig(hadoopEnv(map[string]string{"HOME": "/home/bob", "EMPTY": ""}))
	hc.Set("host", "h")
	tests := []struct {
		raw, want string
	}{
		{"plain", "plain"},
		{"${host}:${host}", "h:h"},
		{"$host {host}", "$host {host}"},
		{"${unclosed", "${unclosed"},
		{"${a${host}}", "${ah}"},
		{"${user.home}/x", "/home/bob/x"},
		{"${env.HOME}", "/home/bob"},
		{"${env.MISSING}", "${env.MISSING}"},
		{"${env.MISSING-dflt}", "dflt"},
		{"${env.EMPTY:-dflt}", "dflt"},
		{"${env.HOME:-dflt}", "/home/bob"},
		{"${}", "${}"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			hc.Set("x", tt.raw)
			got, _, err := hc.Lookup("x")
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNewHadoopConfigDefaults(t *testing.T) {
	hc := NewHadoopConfig(hadoopEnv(map[string]string{"USER": "u"}))
	for key, want := range map[string]string{
		"yarn.resourcemanager.address":              "0.0.0.0:8032",
		"yarn.resourcemanager.scheduler.address":    "0.0.0.0:8030",
		"yarn.resourcemanager.webapp.address":       "0.0.0.0:8088",
		"yarn.resourcemanager.webapp.https.address": "0.0.0.0:8090",
		"fs.defaultFS":   "file:///",
		"hadoop.tmp.dir": "/tmp/hadoop-u",
	} {
		got, ok := hc.Get(key)
		require.True(t, ok, key)
		require.Equal(t, want, got, key)
	}
	require.Empty(t, hc.Dir())
}

func TestHadoopExpansionBlowup(t *testing.T) {
	hc := NewHadoopConfig(hadoopEnv(nil))
	for i := 0; i < 19; i++ {
		hc.Set("k"+strconv.Itoa(i), "${k"+strconv.Itoa(i+1)+"}${k"+strconv.Itoa(i+1)+"}")
	}
	hc.Set("k19", "0123456789")
	_, _, err := hc.Lookup("k0")
	require.ErrorIs(t, err, ErrHadoopVar)
	require.ErrorContains(t, err, "expansion too large")
	v, _, err := hc.Lookup("k17")
	require.NoError(t, err)
	require.Len(t, v, 40)
}

// Flink's flink.hadoop.<key> and flink.yarn.<key> set Hadoop keys over the files (final ones
// too, as Configuration.set does), flink.yarn.* last; the source names the Flink key.
func TestHadoopApplyFlink(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(`<configuration>
<property><name>yarn.resourcemanager.scheduler.address</name><value>rm:8030</value><final>true</final></property>
<property><name>dfs.replication</name><value>3</value></property>
</configuration>`), 0o644))
	hc, err := LoadHadoopOptions(HadoopOptions{Dir: dir, Getenv: hadoopEnv(nil)})
	require.NoError(t, err)
	flink := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(flink, []byte(strings.Join([]string{
		"flink.yarn.resourcemanager.scheduler.address: 127.0.0.1:40000",
		"flink.hadoop.dfs.replication: 1",
		"flink.hadoop.yarn.resourcemanager.connect.max-wait.ms: 1000",
		"flink.yarn.resourcemanager.connect.max-wait.ms: 2000",
		"flink.hadoop.: ignored",
		"taskmanager.numberOfTaskSlots: 2",
	}, "\n")+"\n"), 0o644))
	cfg, err := Load(flink, []string{"flink.yarn.resourcemanager.connect.retry-interval.ms=250"})
	require.NoError(t, err)

	set := hc.ApplyFlink(cfg)
	require.Equal(t, []string{"dfs.replication", "yarn.resourcemanager.connect.max-wait.ms",
		"yarn.resourcemanager.connect.retry-interval.ms", "yarn.resourcemanager.scheduler.address"}, set)
	for k, want := range map[string]string{
		"yarn.resourcemanager.scheduler.address":         "127.0.0.1:40000",
		"dfs.replication":                                "1",
		"yarn.resourcemanager.connect.max-wait.ms":       "2000", // flink.yarn.* wins
		"yarn.resourcemanager.connect.retry-interval.ms": "250",
	} {
		got, _ := hc.Get(k)
		require.Equal(t, want, got, k)
	}
	src, _ := hc.Source("yarn.resourcemanager.scheduler.address")
	require.Equal(t, "flink.yarn.resourcemanager.scheduler.address at "+flink+":1", src)
	src, _ = hc.Source("yarn.resourcemanager.connect.retry-interval.ms")
	require.Equal(t, "flink.yarn.resourcemanager.connect.retry-interval.ms at -D", src)
	require.Empty(t, NewHadoopConfig(nil).ApplyFlink(New()), "nothing to apply")
}
