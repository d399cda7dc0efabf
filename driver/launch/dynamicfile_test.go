package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

const sentinelSecret = "xres-sentinel-secret"

// writeDynamic writes a dynamic file (what am submit stages) into a temp dir.
func writeDynamic(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "xres-dynamic.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// TestRunLoadsDynamicFile: --dynamic-file's keys reach the configuration
// with origin -D, a -D on the command line wins over them, and the worker
// gets what they configure.
func TestRunLoadsDynamicFile(t *testing.T) {
	dyn := writeDynamic(t, `{"external-resource.gpu.amount": "2", "s3.secret-key": "`+sentinelSecret+`"}`)
	tests := []struct {
		name   string
		args   []string
		amount string
	}{
		{name: "file", args: []string{"--dynamic-file", dyn}, amount: "2"},
		{name: "-D wins over the file, whatever the order", args: []string{"-Dexternal-resource.gpu.amount=3", "--dynamic-file", dyn}, amount: "3"},
		{name: "-D after the file", args: []string{"--dynamic-file=" + dyn, "-D", "external-resource.gpu.amount=3"}, amount: "3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.devices["gpu"] = 4
			var loaded *conf.Config
			load := func(c Config) (Loaded, error) {
				cfg, err := loadConf(c)
				require.NoError(t, err)
				loaded = cfg
				return LoadConfig(c)
			}
			out := filepath.Join(t.TempDir(), "amount")
			args := append([]string{"--conf", "testdata/conf/ok"}, tc.args...)
			args = append(args, "--", "sh", "-c", `printf %s "$XRES_RESOURCE_GPU_AMOUNT" > "$1"`, "worker", out)
			r := runMain(t, h, load, nil, args...)
			require.Equal(t, 0, r.code, r.stderr)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, tc.amount, string(got))
			v, ok := loaded.Get("s3.secret-key")
			require.True(t, ok)
			require.Equal(t, sentinelSecret, v)
			require.Equal(t, conf.OriginDynamic, loaded.Origin("s3.secret-key"))
			require.NotContains(t, r.stderr, sentinelSecret)
		})
	}
}

// TestBadDynamicFile: a missing, malformed or non-string file is a
// configuration error (211) naming the file, for the launcher, probe and
// check alike, and never shows a value.
func TestBadDynamicFile(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		want    string
		wantPos string // file:line expected in the message, when known
	}{
		{name: "missing", path: filepath.Join(t.TempDir(), "absent.json"), want: "flink configuration not found"},
		{name: "not JSON", path: writeDynamic(t, "s3.secret-key: "+sentinelSecret+"\n"), want: "malformed JSON", wantPos: ":1:"},
		{name: "not an object", path: writeDynamic(t, `["s3.secret-key=`+sentinelSecret+`"]`), want: "want a JSON object"},
		{name: "non-string value", path: writeDynamic(t, "{\n  \"s3.secret-key\": \""+sentinelSecret+"\",\n  \"external-resource.gpu.amount\": 2\n}\n"),
			want: "key external-resource.gpu.amount: the value must be a JSON string", wantPos: ":3:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, sub := range [][]string{nil, {"probe"}, {"check"}} {
				h := newFakeHost()
				h.devices["gpu"] = 1
				args := append(append([]string{}, sub...), "--conf", "testdata/conf/ok", "--dynamic-file", tc.path)
				if sub == nil {
					args = append(args, "--", "true")
				}
				r := runMain(t, h, nil, nil, args...)
				require.Equal(t, ExitConfig, r.code, "%v\nstdout:\n%s\nstderr:\n%s", sub, r.stdout, r.stderr)
				all := r.stdout + r.stderr
				require.Contains(t, all, tc.path+tc.wantPos, "%v names the file", sub)
				require.Contains(t, all, tc.want)
				require.NotContains(t, all, sentinelSecret)
				require.Empty(t, h.Held("gpu"))
			}
		})
	}
}

func TestUsageNamesDynamicFile(t *testing.T) {
	r := runMain(t, newFakeHost(), nil, nil, "--help")
	require.Equal(t, ExitOK, r.code)
	require.True(t, strings.Contains(r.stdout, "--dynamic-file FILE"), r.stdout)
}

// xres.discovery.timeout reaches every driver as its default step timeout
// (driver.Options.Timeout); a bad value is a configuration error naming it.
func TestDiscoveryTimeoutReachesDrivers(t *testing.T) {
	base := []string{"-D", "external-resources=gpu", "-D", "external-resource.gpu.amount=1",
		"-D", "external-resource.gpu.driver-factory.class=fake"}

	h := newFakeHost()
	h.devices["gpu"] = 1
	args := append(append([]string{}, base...), "-D", "xres.discovery.timeout=3 s", "--", "true")
	r := runMain(t, h, LoadConfig, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 3*time.Second, h.timeouts["gpu"])

	h = newFakeHost()
	h.devices["gpu"] = 1
	r = runMain(t, h, LoadConfig, nil, append(append([]string{}, base...), "--", "true")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 10*time.Second, h.timeouts["gpu"], "the declared default")

	r = runMain(t, newFakeHost(), LoadConfig, nil, append(append([]string{}, base...), "-D", "xres.discovery.timeout=soon", "--", "true")...)
	require.Equal(t, ExitConfig, r.code)
	require.Contains(t, r.stderr, "xres.discovery.timeout")
}
