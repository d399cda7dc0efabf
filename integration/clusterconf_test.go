//go:build integration

package integration

// The AM takes what its cluster says, not the client's guess (issue 40, item 5). Found with
// Hadoop's own clients against xres applications on a minicluster whose RM web UI was on 28088:
// a direct request to the AM was sent to http://localhost:8088/proxy/redirect/<app>/ (Hadoop's
// default port; yarn.resourcemanager.webapp.address, yarn.web-proxy.address and yarn.http.policy
// never reached an AM container without HADOOP_CONF_DIR), and a finished application's link on
// the RM (/proxy/<app>/) was sent on to the AM's dead address. Each test runs its own cluster
// (free ports: the RM's web UI is never on 8088) in one of the modes of
// docker/hadoop-minicluster's ClusterConf: HTTP, HTTPS only, a standalone web proxy, the
// NodeManagers' AMRMProxy (YARN Federation's path).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
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
	"github.com/xres/xres/yarn"
)

// clusterWeb is how a test reaches one cluster's web servers: its proxy's base URL (the RM's
// web UI, or XRES_WEB_PROXY_URL), a client trusting its certificate (XRES_SSL_CERT under
// HTTPS_ONLY), and a client that connects from 127.0.0.9, never the proxy's address, and does
// not follow redirects (a direct visitor of the AM).
type clusterWeb struct {
	proxy  string
	client *http.Client
	direct *http.Client
}

func newClusterWeb(t *testing.T, c *harness.Cluster) clusterWeb {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	if pem := c.Env["XRES_SSL_CERT"]; pem != "" {
		b, err := os.ReadFile(pem)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(b), "certificate %s", pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}, Timeout: 10 * time.Second}
	direct := &http.Transport{Proxy: nil, DialContext: d.DialContext}
	w := clusterWeb{proxy: strings.TrimSuffix(c.RMWebURL, "/"), client: &http.Client{Transport: tr, Timeout: time.Minute},
		direct: &http.Client{Transport: direct, Timeout: time.Minute,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if p := c.Env["XRES_WEB_PROXY_URL"]; p != "" {
		w.proxy = strings.TrimSuffix(p, "/")
	}
	return w
}

// get fetches u with cl, following redirects, and returns the final status and body.
func (w clusterWeb) get(ctx context.Context, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), err
}

// checkAMTakesClusterConf runs one application on c through its whole life and checks what
// the AM took from the cluster:
//   - a direct request to the AM is redirected to this cluster's proxy (scheme, host, port),
//     and through that proxy the AM's page is served, linking the worker's logs on its
//     NodeManager with the cluster's scheme;
//   - the application SUCCEEDS (under the AMRMProxy: only through it, the token the AM holds
//     is the AMRMProxy's);
//   - once it is over, the RM's link of the application (/proxy/<app>/) ends in a page.
func checkAMTakesClusterConf(t *testing.T, c *harness.Cluster, name string) {
	web := newClusterWeb(t, c)
	proxy, err := url.Parse(web.proxy)
	require.NoError(t, err)
	require.NotEqual(t, "8088", proxy.Port(), "the test needs a web port that is not Hadoop's default")

	dir := t.TempDir()
	var extra []string
	if pem := c.Env["XRES_SSL_CERT"]; pem != "" {
		// Under HTTPS_ONLY the launcher asks its NodeManager's REST over TLS; a cluster whose
		// CA is private names it, as its users would.
		extra = append(extra, "external-resource.gpu.param.yarn.nm-ca-file: "+pem)
	}
	cfg := writeAMConf(t, dir, 2, extra...)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	// The worker writes the AM's own address (its report URL) to dir, then waits.
	worker := []string{"sh", "-c", `echo "$XRES_AM_REPORT_URL" > ` + dir + `/url.tmp && mv ` + dir + `/url.tmp ` + dir + `/url; ` +
		`while [ ! -e ` + release + ` ]; do sleep 0.2; done`}
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", "1", "--name", name, "--"}, worker...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })

	var amURL string
	eventually(t, 2*time.Minute, "the worker wrote the AM's address", func() (bool, string) {
		select {
		case <-p.done:
			t.Fatalf("%s ended before its worker ran\n%s", app, p.output())
		default:
		}
		b, err := os.ReadFile(filepath.Join(dir, "url"))
		if err != nil {
			return false, err.Error()
		}
		u, err := url.Parse(strings.TrimSpace(string(b)))
		if err != nil {
			return false, err.Error()
		}
		amURL = u.Scheme + "://" + u.Host
		return true, ""
	})
	t.Logf("AM at %s; the cluster's proxy %s", amURL, web.proxy)

	// A direct request: redirected to this cluster's proxy.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, amURL+"/", nil)
	require.NoError(t, err)
	resp, err := web.direct.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "a direct request to the AM")
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, proxy.Scheme+"://"+proxy.Host, loc.Scheme+"://"+loc.Host,
		"the AM redirects to this cluster's proxy %s, not to %s", web.proxy, loc)
	require.Equal(t, "/proxy/redirect/"+app+"/", loc.Path)
	// Through that proxy the AM's page is served (the AM knows the proxy's address: it serves
	// the proxy and redirects everyone else). The redirect itself is not followed here: the
	// proxy takes a /proxy/redirect/ request from its own host for a loop of its own and
	// answers with its failure page, and on this one-host cluster every client is on its host.
	page := web.proxy + "/proxy/" + app + "/"
	code, body, err := web.get(ctx, page)
	require.NoError(t, err, "GET %s", page)
	require.Equal(t, http.StatusOK, code, "GET %s: %s", page, tailString(body, 20))
	require.Contains(t, body, "xres application "+app, "the AM's page through the proxy")
	// The page links the worker's logs on its NodeManager with the cluster's scheme (https
	// under HTTPS_ONLY, where the NodeManagers serve nothing over http).
	scheme := "http"
	if c.Env["XRES_HTTP_POLICY"] == "HTTPS_ONLY" {
		scheme = "https"
	}
	logs := scheme + "://" + c.Env["XRES_NM0_HTTP"] + "/node/containerlogs/"
	eventually(t, time.Minute, "the AM's page links the worker's logs at "+logs, func() (bool, string) {
		code, body, err := web.get(ctx, page)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && strings.Contains(body, logs), tailString(body, 5)
	})

	// The application succeeds.
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, 0, p.wait(t), "am submit follows %s to SUCCEEDED\n%s", app, p.output())
	rep, err := rpcClient(t, c).GetApplicationReport(ctx, app)
	require.NoError(t, err)
	require.Equal(t, "FINISHED", rep.State)
	require.Equal(t, string(yarn.StatusSucceeded), rep.FinalStatus)

	// The RM's link of the finished application ends in a page (the RM's own page of the
	// application: the AM's is gone with it).
	link := web.proxy + "/proxy/" + app + "/"
	code, body, err = web.get(ctx, link)
	require.NoError(t, err, "the finished application's link %s leads to a dead address", link)
	require.Equal(t, http.StatusOK, code, "GET %s: %s", link, tailString(body, 20))
	require.Contains(t, body, app, "the page of %s", app)
}

// The RM's web UI on a port that is not Hadoop's default (the 28088).
func TestAMRedirectsToTheClustersProxyPort(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "1"})
	checkAMTakesClusterConf(t, c, "xres-it-proxy-port")
}

// yarn.http.policy HTTPS_ONLY: the RM's web UI, and so its proxy, serve HTTPS alone.
func TestAMRedirectsToTheClustersProxyHTTPSOnly(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "1", "XRES_MINICLUSTER_HTTP_POLICY": "HTTPS_ONLY"})
	require.True(t, strings.HasPrefix(c.RMWebURL, "https://"), c.RMWebURL)
	checkAMTakesClusterConf(t, c, "xres-it-proxy-https")
}

// A standalone web proxy (yarn.web-proxy.address): the RM serves none, and the AM must
// redirect to, and serve, that one.
func TestAMRedirectsToTheStandaloneWebProxy(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "1", "XRES_MINICLUSTER_WEB_PROXY": "1"})
	require.NotEmpty(t, c.Env["XRES_WEB_PROXY_URL"])
	checkAMTakesClusterConf(t, c, "xres-it-web-proxy")
}

// The NodeManagers' AMRMProxy (YARN Federation's path): the AM container's scheduler is the
// node's AMRMProxy (its HADOOP_CONF_DIR says so) and its AMRMToken is the AMRMProxy's; an AM
// that dials the RM presents a token the RM never issued.
func TestAMSucceedsThroughTheAMRMProxy(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "1", "XRES_MINICLUSTER_AMRMPROXY": "1"})
	require.NotEmpty(t, c.Env["XRES_AMRM_PROXY_PORT"])
	checkAMTakesClusterConf(t, c, "xres-it-amrmproxy")
}
