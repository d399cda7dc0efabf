package ammetrics

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/amstatus"
)

// The Grafana dashboard (docs/grafana/xres.json) queries only metrics the
// AM serves: a metric renamed here breaks it.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/xres.json")
	require.NoError(t, err)
	var d map[string]any
	require.NoError(t, json.Unmarshal(b, &d), "docs/grafana/xres.json")

	served := map[string]bool{}
	m := New("app", benchSource{ws: []amstatus.WorkerGPUs{}})
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		m.reg.Describe(ch)
		close(ch)
	}()
	nameRE := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for desc := range ch {
		name := nameRE.FindStringSubmatch(desc.String())[1]
		served[name] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			served[name+suffix] = true
		}
	}
	for _, f := range gpuFamilies { // streamed, not registered (stream.go)
		served[f.name] = true
	}
	used := regexp.MustCompile(`\bxres_[a-z_]+`).FindAllString(string(b), -1)
	require.NotEmpty(t, used)
	for _, name := range used {
		require.True(t, served[name], "the dashboard queries %s, which the AM does not serve", name)
	}
}
