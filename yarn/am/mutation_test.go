package am

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnodes"
	"github.com/xres/xres/yarn/amweb"
)

// Tests that fail when a behaviour the users rely on is broken (issue 41:
// mutations of this code that no test caught).

// proxiedTracker is a tracker behind a web proxy whose only address is
// 127.0.0.1, and a client whose connections come from 127.0.0.9 (a
// direct caller: every 127.x is this host's).
func proxiedTracker(t *testing.T) (*httptest.Server, *http.Client) {
	t.Helper()
	a := trackedAM(t)
	proxy := &amweb.WebProxy{Hosts: []string{"127.0.0.1"}, URL: "http://rm.example:8088", App: "application_1_0001"}
	srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret), amweb.WithWebProxy(proxy)))
	t.Cleanup(srv.Close)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}
	return srv, &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// A launcher asks GET /api/rendezvous directly (it cannot pass the RM's
// web proxy): the AM answers it itself (the signature authenticates it),
// never redirects it to the proxy, where the launcher would never learn its
// rank. Caught: /api/rendezvous dropped from the proxy's exemption.
func TestTrackerServesRendezvousDirectly(t *testing.T) {
	srv, direct := proxiedTracker(t)
	for _, signed := range []bool{false, true} {
		id := "container_1_0001_01_000002"
		req, err := http.NewRequest(http.MethodGet, srv.URL+contract.RendezvousPath+"?container="+id, nil)
		require.NoError(t, err)
		if signed {
			req.Header.Set(contract.HeaderReportSignature, contract.SignReport(testSecret, contract.RendezvousMessage(id)))
		}
		resp, err := direct.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEqual(t, http.StatusFound, resp.StatusCode, "signed %v: a direct rendezvous request is redirected to the proxy (Location %s)", signed, resp.Header.Get("Location"))
		require.Empty(t, resp.Header.Get("Location"))
		if !signed {
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "the AM itself refuses an unsigned rendezvous request")
		}
	}
}

// A direct caller that claims to be the proxy in a forwarding header is
// still redirected: only the TCP peer's address counts (anyone can write
// a header). Caught: the proxy rule believing X-Forwarded-For.
func TestTrackerIgnoresForwardedFor(t *testing.T) {
	srv, direct := proxiedTracker(t)
	for _, h := range []struct{ key, value string }{
		{"X-Forwarded-For", "127.0.0.1"},
		{"X-Forwarded-For", "127.0.0.1, 127.0.0.9"},
		{"X-Forwarded-For", "10.0.0.1, 127.0.0.1"},
		{"X-Real-IP", "127.0.0.1"},
		{"Forwarded", "for=127.0.0.1"},
		{"X-Forwarded-Host", "127.0.0.1"},
	} {
		for _, path := range []string{"/", amweb.PathStatus} {
			req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set(h.key, h.value)
			resp, err := direct.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusFound, resp.StatusCode, "%s: %s: %s lets a direct caller past the proxy", path, h.key, h.value)
		}
	}
}

// After a host is blacklisted, the asks name the other hosts only: naming
// a blacklisted host would let the RM grant there again node-local.
// Caught: locality asks naming blacklisted hosts.
func TestAskOmitsBlacklistedHosts(t *testing.T) {
	nodes := []yarn.NodeReport{{ID: "h1:1", State: "RUNNING"}, {ID: "h2:1", State: "RUNNING"}, {ID: "h3:1", State: "RUNNING"}}
	c1, c2 := onNode(2, "h1:1"), onNode(3, "h2:1")
	c3 := onNode(4, "h3:1")
	rm := &fakeRM{register: gpuLimits, steps: []step{
		alloc(c1, c2),
		complete(done(c1, 3)), // the bad-node exit: h1 is blacklisted
		alloc(c3),
		complete(done(c2, 0), done(c3, 0)),
	}}
	cfg := testConfig(2, 4)
	cfg.Nodes = &fakeNodes{nodes: nodes}
	res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	rm.mu.Lock()
	defer rm.mu.Unlock()
	blacklisted, replaced := false, false
	for i, req := range rm.requests {
		if slices.Contains(req.BlacklistAdd, "h1") {
			blacklisted = true
		}
		for _, ask := range req.Asks {
			if !blacklisted {
				continue
			}
			replaced = true
			require.NotContains(t, ask.Hosts, "h1", "request %d: the ask names the blacklisted host", i)
			require.Equal(t, []string{"h2", "h3"}, ask.Hosts, "request %d", i)
		}
	}
	require.True(t, blacklisted, "h1 was blacklisted")
	require.True(t, replaced, "the failed worker was asked again")
}

// An ask names at most 500 hosts: beyond, it is ANY alone (a request naming
// every host of a 5,000-node cluster costs the RM and the wire for every
// heartbeat). Caught: the cap removed.
func TestAskNamesAtMost500Hosts(t *testing.T) {
	for _, n := range []int{amnodes.MaxLocalityHosts, amnodes.MaxLocalityHosts + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var nodes []yarn.NodeReport
			for i := range n {
				nodes = append(nodes, yarn.NodeReport{ID: fmt.Sprintf("h%04d:1", i), State: "RUNNING"})
			}
			c1 := onNode(2, "h0000:1")
			rm := &fakeRM{register: gpuLimits, steps: []step{alloc(c1), complete(done(c1, 0))}}
			cfg := testConfig(1, 1)
			cfg.Nodes = &fakeNodes{nodes: nodes}
			res, err, _ := runAM(t, cfg, rm, &fakeNM{}, nil)
			require.NoError(t, err)
			require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
			rm.mu.Lock()
			defer rm.mu.Unlock()
			first := rm.requests[0].Asks[0]
			if n > 500 {
				require.Empty(t, first.Hosts, "%d hosts: the ask is ANY alone", n)
				require.Empty(t, first.Racks)
			} else {
				require.Len(t, first.Hosts, n)
			}
		})
	}
}
