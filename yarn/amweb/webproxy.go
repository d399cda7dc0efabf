package amweb

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// proxyRefresh is how long the proxy hosts' resolved addresses are kept
// (Hadoop's AmIpFilter resolves them again about every 5 minutes).
const proxyRefresh = 5 * time.Minute

// WebProxy is the ResourceManager's web proxy as the tracking server sees
// it, after Hadoop's AmIpFilter: a request whose peer address is one of the
// proxy hosts' addresses is served (the RM has applied the application's
// view ACLs on its side); any other is redirected, 302, to
//
//	<URL>/proxy/redirect/<App><path>?<query>
//
// ("/redirect" tells the proxy that the AM sent the browser back, so a
// proxy whose own address the AM did not recognise ends in the RM's error
// page instead of a redirect loop). The peer is the TCP peer: a
// forwarded-for header is never believed.
type WebProxy struct {
	// Hosts are the proxy's host names or addresses: the host of
	// yarn.web-proxy.address where it is set, else of every RM webapp
	// address (one per rm-id under HA).
	Hosts []string
	// URL is where direct requests are sent: the proxy's base URL
	// (http://host:port or https://…), the first one under HA (a standby
	// RM's web UI sends the browser on to the active one).
	URL string
	// App is the application id, the proxy's path component.
	App string
	// Lookup resolves a host name to addresses; nil:
	// net.DefaultResolver.LookupHost. An address is taken as it is.
	Lookup func(ctx context.Context, host string) ([]string, error)
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	addrs    map[string]bool
	resolved time.Time
}

// Redirect is where a direct request for path (with its raw query) is sent.
func (p *WebProxy) Redirect(path, rawQuery string) string {
	u := strings.TrimSuffix(p.URL, "/") + "/proxy/redirect/" + url.PathEscape(p.App) + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// fromProxy reports whether remote (a RemoteAddr, host:port) is one of the
// proxy's addresses.
func (p *WebProxy) fromProxy(ctx context.Context, remote string, log logrus.FieldLogger) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := canonicalIP(host)
	if ip == "" {
		return false
	}
	return p.addresses(ctx, log)[ip]
}

// addresses returns the proxy hosts' addresses, resolved again when older
// than proxyRefresh; a failed refresh keeps the addresses it had.
func (p *WebProxy) addresses(ctx context.Context, log logrus.FieldLogger) map[string]bool {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addrs != nil && now().Sub(p.resolved) < proxyRefresh {
		return p.addrs
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs := map[string]bool{}
	for _, h := range p.Hosts {
		if ip := canonicalIP(h); ip != "" {
			addrs[ip] = true
			continue
		}
		found, err := lookup(ctx, h)
		if err != nil {
			log.WithError(err).WithField("host", h).Warn("web proxy host does not resolve; its requests are redirected like any other")
			continue
		}
		for _, a := range found {
			if ip := canonicalIP(a); ip != "" {
				addrs[ip] = true
			}
		}
	}
	if len(addrs) == 0 && p.addrs != nil {
		return p.addrs // keep the last good answer; try again next time
	}
	p.addrs, p.resolved = addrs, now()
	return addrs
}

// canonicalIP is host as a canonical IP string (an IPv4-mapped IPv6
// address as IPv4, no zone); "" if it is not an address.
func canonicalIP(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return ""
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.String()
}

// filter serves h to the proxy and to requests exempt allows; it
// redirects the others to the proxy.
func (p *WebProxy) filter(h http.Handler, exempt func(*http.Request) bool, log logrus.FieldLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) || p.fromProxy(r.Context(), r.RemoteAddr, log) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, p.Redirect(r.URL.EscapedPath(), r.URL.RawQuery), http.StatusFound)
	})
}
