package amcli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

// am resources reports, per running NodeManager, what its REST says of the
// GPU resource the configuration requests (plugin, counted, unknown) and
// what a launcher does there.
func TestResourcesReportsNodeModes(t *testing.T) {
	serve := func(body string, status int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.EscapedPath() != "/ws/v1/node/resources/yarn.io%2Fgpu" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s
	}
	plugin := serve(`{"nmGpuResourceInfo":{"totalGpuDevices":[{"index":0,"minorNumber":4},{"index":1,"minorNumber":0}],`+
		`"assignedGpuDevices":{"index":"1","minorNumber":"0","containerId":"container_1_0001_01_000002"}}}`, 200)
	counted := serve(`{}`, 200)
	down := serve(`boom`, 500)
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, nodes: []yarn.NodeReport{
		{ID: "nm1:45454", HTTPAddress: addr(plugin), State: "RUNNING", Capability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}},
		{ID: "nm2:45454", HTTPAddress: addr(counted), State: "RUNNING", Capability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}},
		{ID: "nm3:45454", HTTPAddress: addr(down), State: "RUNNING", Capability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}},
	}}
	d := clientDeps(t, rm, &diskFS{root: t.TempDir()})
	code, out, stderr := runAm(t, d, map[string]string{"HADOOP_CONF_DIR": t.TempDir()}, "resources", "--conf", "testdata/flink-conf.yaml")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "GPU assignment per NodeManager")
	require.Regexp(t, `nm1:45454\s+yarn.io/gpu\s+plugin\s+1 of 2\s+takes the GPUs the NodeManager assigned`, out)
	require.Regexp(t, `nm2:45454\s+yarn.io/gpu\s+counted\s+-\s+host coordination`, out)
	require.Regexp(t, `nm3:45454\s+yarn.io/gpu\s+unknown\s+-\s+exits 215`, out)
	require.Contains(t, out, "nm3:45454: GET http://"+addr(down)+"/ws/v1/node/resources/yarn.io%2Fgpu: HTTP 500")
}

func TestParseNodeResource(t *testing.T) {
	for _, tc := range []struct {
		body            string
		plugin          bool
		assigned, total int
	}{
		{`{}`, false, 0, 0},
		{`{"nmResourceInfo":""}`, false, 0, 0},
		{`{"nmGpuResourceInfo":{"totalGpuDevices":{"index":"0","minorNumber":"0"}}}`, true, 0, 1},
		{`{"totalDevices":[{"id":0,"minorNumber":2},{"id":1,"minorNumber":5}],"assignedDevices":[{"containerId":"c","device":{"id":1}}]}`, true, 1, 2},
	} {
		plugin, assigned, total, err := parseNodeResource([]byte(tc.body))
		require.NoError(t, err, tc.body)
		require.Equal(t, []any{tc.plugin, tc.assigned, tc.total}, []any{plugin, assigned, total}, tc.body)
	}
	_, _, _, err := parseNodeResource([]byte(`[`))
	require.Error(t, err)
}

func FuzzParseNodeResource(f *testing.F) {
	f.Add([]byte(`{"nmGpuResourceInfo":{"totalGpuDevices":{"index":"0","minorNumber":"0"}}}`))
	f.Add([]byte(`{"totalDevices":[],"assignedDevices":[{"containerId":"c"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		plugin, assigned, total, err := parseNodeResource(b)
		if err == nil && !plugin && (assigned != 0 || total != 0) {
			t.Fatalf("counts without a plugin: %d %d", assigned, total)
		}
	})
}
