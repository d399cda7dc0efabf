//go:build integration

package integration

// Who may talk to the AM's tracking server, on the real cluster: a device report must be signed
// with the application's secret (the real launcher's is; a forged one is refused 401/403 and the
// AM's view of the container stays as it was), and the page is served to the RM's web proxy
// alone: a direct request from an address that is not the proxy's is redirected to the proxy.

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/resources/contract"
)

func TestTrackerRefusesForgedReportsAndDirectViews(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	const workers = 2

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	// Each worker writes the report URL it was given (the AM's own address) to dir.
	worker := []string{"sh", "-c", `echo "$XRES_AM_REPORT_URL" > ` + dir + `/url.tmp && mv ` + dir + `/url.tmp ` + dir + `/url.$CONTAINER_ID; ` +
		`while [ ! -e ` + release + ` ]; do sleep 0.2; done`}
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", "2", "--name", "xres-it-report-auth", "--"}, worker...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	// The real launchers' signed reports were accepted: every worker shows its GPU.
	st := waitWorkersWithGPUs(t, ctx, c, app, workers)
	victim := st.Containers[0]
	b, err := os.ReadFile(filepath.Join(dir, "url."+victim.Container))
	require.NoError(t, err)
	reportURL := strings.TrimSpace(string(b))
	require.True(t, strings.HasSuffix(reportURL, contract.ReportPath), reportURL)
	t.Logf("AM report URL %s; %s has %v", reportURL, victim.Container, victim.Devices)

	forged := []byte(`{"container":"` + victim.Container + `","resources":{"gpu":[{"index":"7","uuid":"GPU-forged"}]}}`)
	for _, tc := range []struct {
		name string
		sig  string
		code int
	}{
		{"unsigned", "", http.StatusUnauthorized},
		{"signed with a guessed secret", contract.SignReport([]byte("guessed"), forged), http.StatusForbidden},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, reportURL, bytes.NewReader(forged))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if tc.sig != "" {
			req.Header.Set(contract.HeaderReportSignature, tc.sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.code, resp.StatusCode, "a forged report, %s", tc.name)
	}
	after, err := amStatusOf(ctx, c, app)
	require.NoError(t, err)
	for _, w := range after.Containers {
		if w.Container == victim.Container {
			require.Equal(t, victim.Devices, w.Devices, "the AM's view of %s is unchanged", victim.Container)
		}
	}

	// A direct view from an address that is not the RM's (every 127.x is this host's; the
	// minicluster's RM, and so its proxy, is localhost, 127.0.0.1) is sent to the proxy.
	base := strings.TrimSuffix(reportURL, contract.ReportPath)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}, Timeout: 10 * time.Second}
	direct := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rm, err := url.Parse(c.RMWebURL)
	require.NoError(t, err)
	for _, path := range []string{"/", "/api/status?state=RUNNING"} {
		wantPath, wantQuery, _ := strings.Cut(path, "?")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		require.NoError(t, err)
		resp, err := direct.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode, "direct GET %s from 127.0.0.9", path)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, rm.Port(), loc.Port(), "redirected to the RM's web proxy: %s", loc)
		require.Equal(t, "/proxy/redirect/"+app+wantPath, loc.Path)
		require.Equal(t, wantQuery, loc.RawQuery)
	}
	// Through the proxy the page is served (the status above was read there too).
	pageShows(t, ctx, c, app, "xres application "+app, victim.Container)
}

// Submitted over the RM's REST API, the report secret travels as a secret key of the AM's
// credentials too: the workers' signed reports are accepted.
func TestRESTSubmissionCarriesTheReportSecret(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	p := startAM(t, ctx, append([]string{"submit", "--rest", "--conf", cfg, "--workers", "1", "--name", "xres-it-report-auth-rest", "--"},
		waitWorker(release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)
	waitWorkersWithGPUs(t, ctx, c, app, 1)
}
