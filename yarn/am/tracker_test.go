package am

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// trackedAM returns an AM that has started two workers, one finished.
func trackedAM(t *testing.T) *AM {
	t.Helper()
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1, c2),
		complete(done(c1, 0)),
	}}
	a, err := New(testConfig(2, 2), rm, &fakeNM{}, nil)
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

// testSecret is the application report secret of the tracker tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// keyOf is container id's key under testSecret.
func keyOf(id string) []byte { return contract.ContainerKey(testSecret, id) }

func TestTracker(t *testing.T) {
	a := trackedAM(t)
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret)))
	defer srv.Close()

	err := amweb.PostDeviceReport(context.Background(), srv.Client(), srv.URL+amweb.PathReport, keyOf("container_1_0001_01_000003"), contract.DeviceReport{
		Container: "container_1_0001_01_000003",
		Resources: map[string][]resources.Properties{"gpu": {{"index": "1", "uuid": "GPU-abc"}}},
	})
	require.NoError(t, err)

	resp, err := srv.Client().Get(srv.URL + amweb.PathStatus)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var st amstatus.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Equal(t, "application_1_0001", st.App)
	require.Equal(t, "RUNNING", st.State)
	require.Equal(t, 2, st.Workers)
	require.Equal(t, 1, st.Running)
	require.Equal(t, 1, st.Succeeded)
	require.Equal(t, []string{"nm1", "nm2"}, st.Hosts)
	require.Len(t, st.Containers, 2)
	require.Equal(t, amstatus.StateSucceeded, st.Containers[0].State)
	require.Equal(t, amstatus.StateRunning, st.Containers[1].State)
	require.Equal(t, map[string][]resources.Properties{"gpu": {{"index": "1", "uuid": "GPU-abc"}}}, st.Containers[1].Devices)

	page, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	defer page.Body.Close()
	body, _ := io.ReadAll(page.Body)
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")
	for _, want := range []string{"application_1_0001", "container_1_0001_01_000003", "nm2", "RUNNING", "gpu: 1 (GPU-abc)"} {
		require.Contains(t, string(body), want)
	}
}

func TestTrackerRejects(t *testing.T) {
	a := trackedAM(t)
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret)))
	defer srv.Close()
	tests := []struct {
		name, method, path, body string
		code                     int
	}{
		{name: "bad json", method: "POST", path: amweb.PathReport, body: "{", code: http.StatusBadRequest},
		{name: "not a container id", method: "POST", path: amweb.PathReport, body: `{"container":"x","seq":1}`, code: http.StatusNotFound},
		{name: "no seq", method: "POST", path: amweb.PathReport, body: `{"container":"x"}`, code: http.StatusBadRequest},
		{name: "GET on report", method: "GET", path: amweb.PathReport, code: http.StatusMethodNotAllowed},
		{name: "POST on status", method: "POST", path: amweb.PathStatus, code: http.StatusMethodNotAllowed},
		{name: "unknown path", method: "GET", path: "/nope", code: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			req.Header.Set(contract.HeaderReportSignature, contract.SignReport(keyOf("x"), []byte(tt.body)))
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tt.code, resp.StatusCode)
		})
	}
	err := amweb.PostDeviceReport(context.Background(), srv.Client(), srv.URL+amweb.PathReport, keyOf("bogus"), contract.DeviceReport{Container: "bogus"})
	require.ErrorContains(t, err, "404 Not Found")
}

// A device report must be signed with its container's key: anyone else
// who reaches the AM's port could otherwise set the devices of any
// container (which a later AM attempt trusts). Unsigned: 401; signed with
// another secret, another container's key (a worker forging for its
// neighbour), the application's secret itself, or another report's
// signature: 403; the AM's view of the
// container is left as it was, and neither answer nor log shows a secret.
func TestTrackerRefusesForgedReports(t *testing.T) {
	const victim = "container_1_0001_01_000003"
	forged := []byte(`{"container":"` + victim + `","seq":2,"resources":{"gpu":[{"index":"7","uuid":"GPU-forged"}]}}`)
	honest := []byte(`{"container":"` + victim + `","seq":1,"resources":{"gpu":[{"index":"1","uuid":"GPU-abc"}]}}`)
	other := []byte(`{"container":"container_1_0001_01_000002","seq":3,"resources":{"gpu":[{"index":"7"}]}}`)
	tests := []struct {
		name   string
		opts   []amweb.TrackerOption
		sig    string
		code   int
		header string
	}{
		{name: "unsigned", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, code: http.StatusUnauthorized, header: "WWW-Authenticate"},
		{name: "another secret", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, sig: contract.SignReport([]byte("guess"), forged), code: http.StatusForbidden},
		{name: "another container's signature", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, sig: contract.SignReport(keyOf("container_1_0001_01_000002"), other), code: http.StatusForbidden},
		{name: "another container's key", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, sig: contract.SignReport(keyOf("container_1_0001_01_000002"), forged), code: http.StatusForbidden},
		{name: "the application's secret", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, sig: contract.SignReport(testSecret, forged), code: http.StatusForbidden},
		{name: "garbage", opts: []amweb.TrackerOption{amweb.WithReportSecret(testSecret)}, sig: "hmac-sha256=" + strings.Repeat("0", 64), code: http.StatusForbidden},
		{name: "a tracker without a secret refuses all", sig: contract.SignReport(nil, forged), code: http.StatusForbidden},
		{name: "a tracker without a secret, unsigned", code: http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := trackedAM(t)
			logger, hook := logtest.NewNullLogger()
			srv := httptest.NewServer(amweb.NewTracker(a, logger, tc.opts...))
			defer srv.Close()
			post := func(body []byte, sig string) (*http.Response, string) {
				req, err := http.NewRequest(http.MethodPost, srv.URL+amweb.PathReport, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				if sig != "" {
					req.Header.Set(contract.HeaderReportSignature, sig)
				}
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				msg, _ := io.ReadAll(resp.Body)
				return resp, string(msg)
			}
			if len(tc.opts) > 0 {
				resp, _ := post(honest, contract.SignReport(keyOf(victim), honest))
				require.Equal(t, http.StatusNoContent, resp.StatusCode)
			}
			before := a.Status().Containers[1]
			require.Equal(t, victim, before.Container)

			resp, msg := post(forged, tc.sig)
			require.Equal(t, tc.code, resp.StatusCode, msg)
			if tc.header != "" {
				require.NotEmpty(t, resp.Header.Get(tc.header))
			}
			require.Contains(t, msg, "device report refused")
			require.Equal(t, before, a.Status().Containers[1], "the AM's view of %s is unchanged", victim)
			for _, e := range hook.AllEntries() {
				line, _ := e.String()
				require.NotContains(t, line, string(testSecret))
				require.NotContains(t, line, "GPU-forged")
			}
			require.Contains(t, hook.LastEntry().Message, "device report refused")
			require.NotContains(t, msg, string(testSecret))
		})
	}
}

// The page and the read API are served to the RM's web proxy alone (where
// the RM applies the application's view ACLs); a direct request is sent
// there, as Hadoop's AmIpFilter does. The launchers' report (authenticated
// by its signature) and the workers' count are served to every caller.
func TestTrackerRedirectsDirectRequests(t *testing.T) {
	a := trackedAM(t)
	lookups := 0
	now := time.Unix(1700000000, 0)
	proxy := &amweb.WebProxy{Hosts: []string{"rm.example"}, URL: "http://rm.example:8088", App: "application_1_0001",
		Now: func() time.Time { return now },
		Lookup: func(ctx context.Context, host string) ([]string, error) {
			lookups++
			require.Equal(t, "rm.example", host)
			return []string{"::ffff:127.0.0.1"}, nil // the proxy's address, IPv4-mapped
		}}
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret), amweb.WithWebProxy(proxy)))
	defer srv.Close()
	// from returns a client whose connections come from addr (a
	// loopback address: every 127.x is this host's).
	from := func(addr string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
		return &http.Client{
			Transport:     &http.Transport{DialContext: d.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	direct, viaProxy := from("127.0.0.9"), from("127.0.0.1")

	for _, path := range []string{"/", amweb.PathStatus + "?state=RUNNING&limit=1", "/nope"} {
		resp, err := direct.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode, path)
		require.Equal(t, "http://rm.example:8088/proxy/redirect/application_1_0001"+path, resp.Header.Get("Location"))
	}
	for _, path := range []string{"/", amweb.PathStatus} {
		resp, err := viaProxy.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s from the proxy's address", path)
	}
	resp, err := direct.Get(srv.URL + amweb.PathWorkers)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the workers read their count directly")
	require.NoError(t, amweb.PostDeviceReport(context.Background(), direct, srv.URL+amweb.PathReport, keyOf("container_1_0001_01_000003"), contract.DeviceReport{Container: "container_1_0001_01_000003"}),
		"a launcher reports directly")
	require.Error(t, amweb.PostDeviceReport(context.Background(), direct, srv.URL+amweb.PathReport, nil, contract.DeviceReport{Container: "container_1_0001_01_000003"}))
	require.Equal(t, 1, lookups, "resolved once within 5 minutes")

	// The proxy's addresses are resolved again after 5 minutes; a failed
	// lookup keeps the last answer.
	now = now.Add(6 * time.Minute)
	proxy.Lookup = func(context.Context, string) ([]string, error) { lookups++; return nil, errors.New("no DNS") }
	resp, err = viaProxy.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, lookups)
}

func TestReportBeforeStartIsKept(t *testing.T) {
	a, err := New(testConfig(1, 1), &fakeRM{}, &fakeNM{}, nil)
	require.NoError(t, err)
	c := ctr(9, "nm1")
	require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c.ID, Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}}}}))
	a.mu.Lock()
	a.classifiedLocked(c, false)
	a.mu.Unlock()
	require.Equal(t, "0", a.Status().Containers[0].Devices["gpu"][0]["index"])
}

func TestServeStopsWithContext(t *testing.T) {
	l, err := amweb.Listen(context.Background(), "127.0.0.1", "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- amweb.Serve(ctx, l, amweb.NewTracker(trackedAM(t), nil)) }()
	resp, err := http.Get("http://" + l.Addr().String() + amweb.PathStatus)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-errc)
}

func TestStatusPageLinksRelative(t *testing.T) {
	srv := httptest.NewServer(amweb.NewTracker(trackedAM(t), nil))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// Behind the RM web proxy (/proxy/<app>/) an absolute link would leave the app.
	require.Contains(t, string(body), `href="api/status"`)
	require.NotContains(t, string(body), `href="/`)
}

// staticSource is a StatusSource without StatusPage: the tracker pages its
// whole Status.
type staticSource struct{ st amstatus.Status }

func (s staticSource) Status() amstatus.Status                   { return s.st }
func (s staticSource) ReportDevices(contract.DeviceReport) error { return nil }

func TestTrackerPages(t *testing.T) {
	a, err := New(testConfig(250, 0), &fakeRM{}, &fakeNM{}, nil)
	require.NoError(t, err)
	a.mu.Lock()
	for i := range 250 {
		a.classifiedLocked(ctr(i+2, "nm"+strconv.Itoa(i%3)), false)
	}
	for i, w := range a.workers.order {
		if i%5 == 0 {
			a.workers.set(w, amstatus.StateRunning)
		}
	}
	a.mu.Unlock()
	static := staticSource{a.Status()}
	for name, src := range map[string]amweb.StatusSource{"AM": a, "static": static} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(amweb.NewTracker(src, nil))
			defer srv.Close()
			get := func(path string) (int, string) {
				resp, err := srv.Client().Get(srv.URL + path)
				require.NoError(t, err)
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			status := func(query string) amstatus.Status {
				code, body := get(amweb.PathStatus + query)
				require.Equal(t, http.StatusOK, code, body)
				var st amstatus.Status
				require.NoError(t, json.Unmarshal([]byte(body), &st))
				return st
			}

			all := status("")
			require.Len(t, all.Containers, 250, "api/status lists every container by default")
			require.Equal(t, 250, all.ContainersTotal)
			require.Equal(t, 50, all.Running)
			require.Equal(t, []string{"nm0", "nm1", "nm2"}, all.Hosts)

			running := status("?state=running&offset=45&limit=10")
			require.Equal(t, 50, running.ContainersTotal)
			require.Len(t, running.Containers, 5)
			require.Equal(t, ctr(45*5+2, "").ID, running.Containers[0].Container)
			for _, c := range running.Containers {
				require.Equal(t, amstatus.StateRunning, c.State)
			}
			require.Empty(t, status("?offset=400").Containers)

			code, page := get("/?offset=100")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, page, "101–200 of 250")
			require.Contains(t, page, `href="?offset=0&amp;limit=100">previous</a>`)
			require.Contains(t, page, `href="?offset=200&amp;limit=100">next</a>`)
			require.Equal(t, 100, strings.Count(page, "<tr><td>container_"))
			require.Contains(t, page, ctr(102, "").ID)
			require.NotContains(t, page, ctr(101, "").ID)

			code, page = get("/")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, page, "1–100 of 250")
			require.NotContains(t, page, "previous")

			for _, bad := range []string{"?offset=-1", "?limit=x"} {
				code, body := get(amweb.PathStatus + bad)
				require.Equal(t, http.StatusBadRequest, code, bad)
				require.Contains(t, body, "query parameter")
			}
		})
	}
}

// Device reports arriving while the status page is served: a snapshot must
// not share the map a later report writes (issue 24 item 6: a concurrent
// map read and write crashes the AM; go test -race reports it).
func TestReportsDuringPageViews(t *testing.T) {
	a, err := New(testConfig(1, 1), &fakeRM{}, &fakeNM{}, nil)
	require.NoError(t, err)
	c := ctr(9, "nm1")
	a.mu.Lock()
	a.classifiedLocked(c, false)
	a.mu.Unlock()
	srv := httptest.NewServer(amweb.NewTracker(a, nil))
	defer srv.Close()
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		i := 0
		for ; ; i++ {
			select {
			case <-stop:
				done <- i
				return
			default:
			}
			res := map[string][]resources.Properties{fmt.Sprintf("r%d", i%7): {{"index": strconv.Itoa(i)}}}
			if err := a.ReportDevices(contract.DeviceReport{Container: c.ID, Resources: res}); err != nil {
				t.Error(err)
			}
		}
	}()
	for range 50 {
		for _, path := range []string{"/", amweb.PathStatus} {
			resp, err := srv.Client().Get(srv.URL + path)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
	close(stop)
	last := <-done - 1
	// Every report's resource is kept, the last value of each name wins.
	devs := a.Status().Containers[0].Devices
	require.Len(t, devs, min(last+1, 7))
	require.Equal(t, strconv.Itoa(last), devs[fmt.Sprintf("r%d", last%7)][0]["index"])
}

// The AM is what the tracking server shows and feeds, pages and asks for
// rendezvous.
var (
	_ amweb.StatusSource     = (*AM)(nil)
	_ amweb.Pager            = (*AM)(nil)
	_ amweb.RendezvousSource = (*AM)(nil)
)
