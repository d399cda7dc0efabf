package am

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/ammetrics"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// metricsAM is trackedAM with metrics: containers 2 (on nm1) and 3 (on
// nm2) run; one failed heartbeat was retried.
func metricsAM(t *testing.T) *AM {
	t.Helper()
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{}, &net.OpError{Op: "dial", Err: io.ErrUnexpectedEOF}
		},
	}}
	cfg := testConfig(2, 2)
	cfg.Metrics = ammetrics.New(cfg.AppID, nil)
	cfg.Idle = amstatus.IdleRule{Threshold: 5, Window: 10 * time.Minute}
	a, err := New(cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	a.cfg.After = settled(a, func(d time.Duration) <-chan time.Time {
		calls++
		if calls == 2 {
			cancel()
		}
		return ready(d)
	})
	_, err = a.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	return a
}

// postSamples posts a samples report of container 3's GPU 1.
func postSamples(t *testing.T, srv *httptest.Server, at int64, util float64) {
	t.Helper()
	postSamplesOf(t, srv, "container_1_0001_01_000003", at, util)
}

// postSamplesOf posts a samples report of container id's GPU 1.
func postSamplesOf(t *testing.T, srv *httptest.Server, id string, at int64, util float64) {
	t.Helper()
	require.NoError(t, amweb.PostDeviceReport(context.Background(), srv.Client(), srv.URL+amweb.PathReport, keyOf(id), contract.DeviceReport{
		Container: id,
		GPU:       []contract.GPUSample{{Index: "1", UUID: "GPU-abc", At: at, Util: util, MemMiB: 2048, PowerW: 75.5, TempC: 41, XIDs: 2}},
	}))
}

func getBody(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// The AM serves /metrics: the worker counts, its events, and each running
// worker's GPU samples labelled so a dashboard can join them; a GPU under
// the idle threshold for the window is listed in api/status, and no
// longer once it is busy.
func TestMetricsAndIdleGPUs(t *testing.T) {
	a := metricsAM(t)
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret), amweb.WithMetrics(a.Metrics().Handler())))
	defer srv.Close()
	require.NoError(t, amweb.PostDeviceReport(context.Background(), srv.Client(), srv.URL+amweb.PathReport, keyOf("container_1_0001_01_000003"), contract.DeviceReport{
		Container: "container_1_0001_01_000003",
		Resources: map[string][]resources.Properties{"gpu": {{"index": "1", "uuid": "GPU-abc"}}},
	}))

	t0 := int64(1765000000)
	busy := "container_1_0001_01_000002"
	postSamples(t, srv, t0, 2)
	postSamplesOf(t, srv, busy, t0, 90)
	postSamples(t, srv, t0+300, 3)
	postSamplesOf(t, srv, busy, t0+300, 1) // a dip, not a window
	postSamplesOf(t, srv, busy, t0+400, 70)
	var st amstatus.Status
	require.NoError(t, json.Unmarshal([]byte(getBody(t, srv, amweb.PathStatus)), &st))
	require.Empty(t, st.IdleGPUs, "under the threshold for 5 min of a 10 min window")

	postSamples(t, srv, t0+601, 4)
	st = amstatus.Status{}
	require.NoError(t, json.Unmarshal([]byte(getBody(t, srv, amweb.PathStatus)), &st))
	require.Equal(t, []amstatus.IdleGPU{{Container: "container_1_0001_01_000003", Host: "nm2", GPU: "1", UUID: "GPU-abc", Util: 4, IdleForS: 601}}, st.IdleGPUs)

	// The page lists the idle GPU (not the busy one) and draws both
	// workers' GPUs over time.
	page := getBody(t, srv, "/")
	idle := page[strings.Index(page, `<div id="idle-gpus">`):]
	idle = idle[:strings.Index(idle, "</div>")]
	require.Contains(t, idle, "<td>container_1_0001_01_000003</td><td>nm2</td><td>1</td><td>GPU-abc</td><td>4 %</td><td>10m1s</td>")
	require.NotContains(t, idle, busy)
	require.Contains(t, page, `<svg id="gpu-svg"`)
	for _, id := range []string{busy, "container_1_0001_01_000003"} {
		require.Regexp(t, `<g class="gpu" data-container="`+id+`" data-gpu="1">.*<polyline class="util" points="[0-9., ]+"/><polyline class="mem"`, page)
	}

	m := getBody(t, srv, "/metrics")
	gpu := `{UUID="GPU-abc",application_id="application_1_0001",container_id="container_1_0001_01_000003",gpu="1",group="",host="nm2",rank="1"}`
	for _, want := range []string{
		`xres_workers_running{application_id="application_1_0001",group=""} 2`,
		`xres_workers_wanted{application_id="application_1_0001",group=""} 2`,
		`xres_allocate_failures_total{application_id="application_1_0001"} 1`,
		`xres_workers_failed_total{application_id="application_1_0001",class="app"} 0`,
		`xres_launcher_reports_total{application_id="application_1_0001",kind="samples"} 6`,
		`xres_gpus_idle{application_id="application_1_0001"} 1`,
		"xres_worker_gpu_utilization_ratio" + gpu + " 0.04",
		"xres_worker_gpu_memory_used_bytes" + gpu + " 2.147483648e+09",
		"xres_worker_gpu_power_watts" + gpu + " 75.5",
		"xres_worker_gpu_temperature_celsius" + gpu + " 41",
		"xres_worker_gpu_xid_errors_total" + gpu + " 2",
		"xres_worker_gpu_idle_seconds" + gpu + " 601",
	} {
		require.Contains(t, m, want+"\n")
	}
	// Every heartbeat is a round trip, the failed one too (how many the
	// loop made before the test stopped it varies).
	rt := regexp.MustCompile(`xres_allocate_duration_seconds_count\{application_id="application_1_0001"\} (\d+)\n`).FindStringSubmatch(m)
	require.NotNil(t, rt, "round trips")
	n, err := strconv.Atoi(rt[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 2)
	problems, err := testutil.GatherAndLint(a.Metrics().Registry())
	require.NoError(t, err)
	require.Empty(t, problems, "promlint")

	postSamples(t, srv, t0+610, 80)
	st = amstatus.Status{}
	require.NoError(t, json.Unmarshal([]byte(getBody(t, srv, amweb.PathStatus)), &st))
	require.Empty(t, st.IdleGPUs, "busy again")
	require.Contains(t, getBody(t, srv, "/metrics"), "xres_worker_gpu_idle_seconds"+gpu+" 0\n")
}

// /metrics is served under the page's rule: to the RM's web proxy only.
func TestMetricsBehindWebProxy(t *testing.T) {
	a := metricsAM(t)
	proxy := &amweb.WebProxy{Hosts: []string{"127.0.0.1"}, URL: "http://rm.example:8088", App: "application_1_0001"}
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret), amweb.WithWebProxy(proxy), amweb.WithMetrics(a.Metrics().Handler())))
	defer srv.Close()
	from := func(addr string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := from("127.0.0.9").Get(srv.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "http://rm.example:8088/proxy/redirect/application_1_0001/metrics", resp.Header.Get("Location"))
	resp, err = from("127.0.0.1").Get(srv.URL + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.Contains(string(b), "xres_workers_running"))
}

// The AM's events are counted as they happen: a worker that failed on its
// own (class app) and one the cluster took (class cluster), both replaced;
// the RM losing the attempt (registered again); a worker's start phases,
// observed when its command started.
func TestMetricsCountEvents(t *testing.T) {
	c1, c2, c3 := ctr(2, "nm1"), ctr(3, "nm2"), ctr(4, "nm1")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2, c3),
		complete(done(c1, 1)),
		func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			return yarn.AllocateResponse{}, yarn.ErrApplicationMasterNotRegistered
		},
		complete(done(c2, yarn.ExitPreempted)),
	}}
	cfg := testConfig(3, 3)
	cfg.Metrics = ammetrics.New(cfg.AppID, nil)
	a, err := New(cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	a.cfg.After = settled(a, func(d time.Duration) <-chan time.Time {
		calls++
		if calls == 4 {
			cancel()
		}
		return ready(d)
	})
	_, err = a.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)

	now := time.Now()
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c3.ID, Seq: 1, LauncherStarted: now, Reserved: now.Add(time.Second),
		Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}}}}))
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c3.ID, Seq: 2, CommandStarted: now.Add(3 * time.Second)}))

	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithMetrics(a.Metrics().Handler())))
	defer srv.Close()
	m := getBody(t, srv, "/metrics")
	app := `application_id="application_1_0001"`
	for _, want := range []string{
		`xres_workers_failed_total{` + app + `,class="app"} 1`,
		`xres_workers_failed_total{` + app + `,class="cluster"} 1`,
		`xres_workers_replaced_total{` + app + `} 2`,
		`xres_rm_reregistrations_total{` + app + `} 1`,
		`xres_start_phase_seconds_count{` + app + `,phase="all"} 1`,
		`xres_start_phase_seconds_sum{` + app + `,phase="reservation"} 1`,
		`xres_rendezvous_wait_seconds_sum{` + app + `} 2`,
		`xres_rendezvous_wait_seconds_count{` + app + `} 1`,
	} {
		require.Contains(t, m, want+"\n")
	}
}
