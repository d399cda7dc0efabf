//go:build integration

package integration

// The operator's view with a real Prometheus (Debian's prometheus, installed by .ci/run): it
// scrapes a running xres application's AM through the RM's web proxy (docs/metrics.md), promtool
// lints what the AM serves, and Prometheus's query API answers the worker count and each
// worker's GPU utilisation as the launchers sampled it (a fake xres-nvml with scripted values:
// integration/testdata/fakenvml). The AM lists the idle worker's GPU, not the busy one's, in
// api/status, am status and on its page (rendered in headless chromium, which .ci/run installs).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// prometheusBins returns prometheus and promtool; their absence is a failure (CI installs them).
func prometheusBins(t *testing.T) (string, string) {
	t.Helper()
	var out []string
	for _, name := range []string{"prometheus", "promtool"} {
		p, err := exec.LookPath(name)
		require.NoError(t, err, "no %s on PATH: the metrics test needs Prometheus (Debian: apt-get install -y prometheus; .ci/run installs it)", name)
		out = append(out, p)
	}
	return out[0], out[1]
}

// freeLocalPort is a free loopback port, from 22090 on where one is free.
func freeLocalPort(t *testing.T) int {
	t.Helper()
	for p := 22090; p < 22100; p++ {
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs prometheus scraping app's /metrics through the RM's web proxy every
// second, until the test ends; it returns its base URL.
func startPrometheus(t *testing.T, bin string, c *harness.Cluster, app string) string {
	t.Helper()
	rm, err := url.Parse(c.RMWebURL)
	require.NoError(t, err)
	dir := t.TempDir()
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xres
    metrics_path: /proxy/%s/metrics
    static_configs:
      - targets: ['%s']
`, app, rm.Host)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644))
	port := freeLocalPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", tailString(log.String(), 40))
		}
	})
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// promQuery asks Prometheus's query API for q's current value of each series, by the value of
// label key.
func promQuery(ctx context.Context, base, q, key string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, r.Error)
	}
	out := map[string]string{}
	for _, s := range r.Data.Result {
		if len(s.Value) == 2 {
			out[s.Metric[key]], _ = s.Value[1].(string)
		}
	}
	return out, nil
}

func TestPrometheusScrapesTheAM(t *testing.T) {
	c := harness.Get(t)
	prom, promtool := prometheusBins(t)
	dir := t.TempDir()
	nvml, err := filepath.Abs(filepath.Join("testdata", "fakenvml"))
	require.NoError(t, err)
	cfg := writeAMConf(t, dir, 4,
		"containerized.taskmanager.env.PATH: "+nvml+":"+fakeBinDir(t)+":/usr/local/bin:/usr/bin:/bin",
		"xres.metrics.interval: 1 s",
		"xres.metrics.idle-window: 2 s")
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", "2", "--name", "xres-it-metrics", "--"}, waitWorker(release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)
	st := waitWorkersWithGPUs(t, ctx, c, app, 2)

	// The fake helper makes an even-numbered container busy, an odd one idle.
	want := map[string]string{} // container -> utilisation ratio
	var busy, idle string
	for _, w := range st.Containers {
		n, err := strconv.Atoi(w.Container[strings.LastIndex(w.Container, "_")+1:])
		require.NoError(t, err, w.Container)
		if n%2 == 0 {
			busy, want[w.Container] = w.Container, "0.9"
		} else {
			idle, want[w.Container] = w.Container, "0.02"
		}
	}
	require.NotEmpty(t, busy, "a busy worker: %v", want)
	require.NotEmpty(t, idle, "an idle worker: %v", want)

	// The exposition, through the proxy as Prometheus reads it, passes promtool's lint.
	var body []byte
	eventually(t, time.Minute, "both workers' GPU samples on /metrics", func() (bool, string) {
		resp, err := http.Get(c.URL("/proxy/" + url.PathEscape(app) + "/metrics"))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(busy)) && bytes.Contains(body, []byte(idle)), tailString(string(body), 10)
	})
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = bytes.NewReader(body)
	out, err := lint.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s", out)

	base := startPrometheus(t, prom, c, app)
	eventually(t, 2*time.Minute, "Prometheus has the workers running", func() (bool, string) {
		got, err := promQuery(ctx, base, `xres_workers_running{application_id="`+app+`"}`, "application_id")
		if err != nil {
			return false, err.Error()
		}
		return got[app] == "2", fmt.Sprintf("%v", got)
	})
	eventually(t, time.Minute, "Prometheus has each worker's GPU utilisation", func() (bool, string) {
		got, err := promQuery(ctx, base, `xres_worker_gpu_utilization_ratio{application_id="`+app+`"}`, "container_id")
		if err != nil {
			return false, err.Error()
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("%v, want %v", got, want)
	})

	// The idle worker's GPU is listed, the busy one's not: api/status, am status, the page.
	eventually(t, time.Minute, "the idle GPU listed", func() (bool, string) {
		s, err := amStatusOf(ctx, c, app)
		if err != nil {
			return false, err.Error()
		}
		return len(s.IdleGPUs) == 1 && s.IdleGPUs[0].Container == idle, fmt.Sprintf("%+v", s.IdleGPUs)
	})
	code, stdout, stderr := runAM(t, time.Minute, "status", app)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "idle GPUs (granted, unused):")
	section := stdout[strings.Index(stdout, "idle GPUs"):]
	require.Contains(t, section, idle)
	require.NotContains(t, section, busy)
	// The page as a browser renders it (headless chromium, through the proxy).
	page := []byte(headless(t, chromium(t), c.URL("/proxy/"+url.PathEscape(app)+"/"), "--dump-dom"))
	i := bytes.Index(page, []byte(`<div id="idle-gpus">`))
	require.GreaterOrEqual(t, i, 0, "the page lists idle GPUs")
	list := string(page[i:])
	list = list[:strings.Index(list, "</div>")]
	require.Contains(t, list, "<td>"+idle+"</td>")
	require.NotContains(t, list, busy)
	require.Contains(t, string(page), `<svg id="gpu-svg"`)

	require.NoError(t, os.WriteFile(release, nil, 0o644))
}
