package harness

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadConfDir(t *testing.T) {
	tests := []struct {
		dir    string
		wantRM string
		wantNN string
	}{
		{"testdata/conf/minicluster", "http://localhost:8088", "localhost:8020"},
		{"testdata/conf/vars", "http://rm.example:8088", "namenode.example:8020"},
		{"testdata/conf/https", "https://localhost:8090", "nn.example:9000"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			kv, err := readConfDir(tc.dir)
			require.NoError(t, err)
			rm, err := rmWebURL(kv)
			require.NoError(t, err)
			require.Equal(t, tc.wantRM, rm)
			nn, err := nameNodeAddr(kv)
			require.NoError(t, err)
			require.Equal(t, tc.wantNN, nn)
		})
	}
}

func TestReadConfDirErrors(t *testing.T) {
	empty := t.TempDir()
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "yarn-site.xml"), []byte("<configuration><property>"), 0o644))
	noFS := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(noFS, "core-site.xml"), []byte("<configuration/>"), 0o644))
	s3 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(s3, "core-site.xml"),
		[]byte("<configuration><property><name>fs.defaultFS</name><value>s3a://bucket</value></property></configuration>"), 0o644))

	t.Run("no files", func(t *testing.T) {
		_, err := readConfDir(empty)
		require.True(t, errors.Is(err, ErrNoConf), "%v", err)
		require.Contains(t, err.Error(), empty)
	})
	t.Run("broken xml names the file", func(t *testing.T) {
		_, err := readConfDir(bad)
		require.ErrorContains(t, err, filepath.Join(bad, "yarn-site.xml"))
	})
	tests := []struct {
		name, dir, want string
	}{
		{"no defaultFS", noFS, "fs.defaultFS: not set"},
		{"not hdfs", s3, `fs.defaultFS="s3a://bucket": want hdfs://host[:port]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kv, err := readConfDir(tc.dir)
			require.NoError(t, err)
			_, err = nameNodeAddr(kv)
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("unresolvable webapp address", func(t *testing.T) {
		_, err := rmWebURL(map[string]string{})
		require.ErrorContains(t, err, "set yarn.resourcemanager.hostname")
	})
	t.Run("HA without rm-ids", func(t *testing.T) {
		_, err := rmWebURL(map[string]string{"yarn.resourcemanager.ha.enabled": "true"})
		require.ErrorContains(t, err, "yarn.resourcemanager.ha.rm-ids is empty")
	})
	t.Run("HA id without an address", func(t *testing.T) {
		_, err := rmWebURLs(map[string]string{"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1"})
		require.ErrorContains(t, err, "set yarn.resourcemanager.hostname.rm1")
	})
}

func TestRMWebURLsHA(t *testing.T) {
	kv, err := readConfDir("testdata/conf/ha")
	require.NoError(t, err)
	urls, err := rmWebURLs(kv)
	require.NoError(t, err)
	require.Equal(t, []string{"http://localhost:8088", "http://rm2.example:8088"}, urls)
	first, err := rmWebURL(kv)
	require.NoError(t, err)
	require.Equal(t, urls[0], first)
}

func TestExpand(t *testing.T) {
	kv := map[string]string{"a": "x${b}", "b": "${c}y", "c": "z", "loop": "${loop}"}
	tests := []struct{ in, want string }{
		{"${a}", "xzy"},
		{"plain", "plain"},
		{"${missing}:1", "${missing}:1"},
		{"${loop}", "${loop}"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, expand(kv, tc.in))
		})
	}
}

func TestReadEnvFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.env")
	require.NoError(t, os.WriteFile(good, []byte("# comment\n\nA=1\nB=x=y\nC=\n"), 0o644))
	env, err := readEnvFile(good)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "1", "B": "x=y", "C": ""}, env)

	bad := filepath.Join(dir, "bad.env")
	require.NoError(t, os.WriteFile(bad, []byte("A=1\nnot a pair\n"), 0o644))
	_, err = readEnvFile(bad)
	require.ErrorContains(t, err, bad+":2")

	_, err = readEnvFile(filepath.Join(dir, "missing.env"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

// FuzzParseSiteXML: any input gives a map or an error naming the file, never a panic, and
// every property parsed has a name.
func FuzzParseSiteXML(f *testing.F) {
	for _, p := range []string{"testdata/conf/minicluster/yarn-site.xml", "testdata/conf/vars/core-site.xml",
		"testdata/conf/https/yarn-site.xml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("<configuration><property><name></name></property></configuration>"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		kv := map[string]string{}
		err := parseSiteXML(bytes.NewReader(b), "fuzz.xml", kv)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "parse fuzz.xml: "), err.Error())
			return
		}
		for k := range kv {
			require.NotEmpty(t, k)
		}
		_, _ = rmWebURL(kv)
		_, _ = nameNodeAddr(kv)
	})
}
