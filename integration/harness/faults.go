package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// ErrNoFaultVerbs is returned by the fault verbs on a cluster that does not serve them (one
// named by XRES_HADOOP_CONF_DIR, or a minicluster from before the verbs).
var ErrNoFaultVerbs = errors.New("cluster has no fault verbs")

// ErrVerb wraps a verb the cluster refused or could not complete; the message is its reason.
var ErrVerb = errors.New("fault verb failed")

// verbTimeout bounds one verb (the launcher's own bound is 180 s).
const verbTimeout = 200 * time.Second

// The minicluster's fault verbs, as run.sh has them (rm-restart [--down S], rm-stop,
// rm-start, rm-failover, nm-kill N, nm-start N, nm-list). Each returns once the effect shows
// in the RM REST API and answers the launcher's one-line report.

// RMRestart stops the active ResourceManager and starts a fresh one on the same state store
// (work-preserving: containers keep running, NodeManagers re-register).
func (c *Cluster) RMRestart(ctx context.Context) (string, error) {
	return c.verb(ctx, http.MethodPost, "rm-restart", nil, 0)
}

// RMRestartDown is RMRestart with the RM left down for d (whole seconds) before it starts:
// a restart as long as a real one (JVM start, state-store recovery), or an outage.
func (c *Cluster) RMRestartDown(d time.Duration) func(context.Context) (string, error) {
	secs := int(d.Round(time.Second) / time.Second)
	return func(ctx context.Context) (string, error) {
		return c.verb(ctx, http.MethodPost, "rm-restart", url.Values{"down": {fmt.Sprint(secs)}}, time.Duration(secs)*time.Second)
	}
}

// RMStop stops the active ResourceManager and leaves it down until RMStart: no active RM
// (with HA the other stays standby), clients and NodeManagers retry.
func (c *Cluster) RMStop(ctx context.Context) (string, error) {
	return c.verb(ctx, http.MethodPost, "rm-stop", nil, 0)
}

// RMStart starts the ResourceManager RMStop stopped, fresh, on the same state store, and
// returns once it is active with every live NodeManager RUNNING.
func (c *Cluster) RMStart(ctx context.Context) (string, error) {
	return c.verb(ctx, http.MethodPost, "rm-start", nil, 0)
}

// RMFailover (HA profile) makes the standby RM active and the active one standby; RMWebURL
// then names the new active RM.
func (c *Cluster) RMFailover(ctx context.Context) (string, error) {
	out, err := c.verb(ctx, http.MethodPost, "rm-failover", nil, 0)
	if err != nil {
		return out, err
	}
	return out, c.useActiveRM(ctx)
}

// NMKill kills NodeManager n (0-based) with its containers, without telling the RM, and
// returns once the RM reports the node LOST.
func (c *Cluster) NMKill(ctx context.Context, n int) (string, error) {
	return c.verb(ctx, http.MethodPost, "nm-kill", nodeQuery(n), 0)
}

// NMStart starts NodeManager n again (same node id) and returns once it is RUNNING.
func (c *Cluster) NMStart(ctx context.Context, n int) (string, error) {
	return c.verb(ctx, http.MethodPost, "nm-start", nodeQuery(n), 0)
}

// NMList is the launcher's table: one line per NodeManager (index, node id, RM state, web
// address, labels=, process=).
func (c *Cluster) NMList(ctx context.Context) (string, error) {
	return c.verb(ctx, http.MethodGet, "nm-list", nil, 0)
}

// MustVerb runs one of the verbs above for a test, failing it with the reason on error.
func MustVerb(t testing.TB, verb func(context.Context) (string, error)) string {
	t.Helper()
	ctx, cancel := testContext(t, time.Hour) // each verb bounds itself: verbTimeout plus what it sleeps
	defer cancel()
	out, err := verb(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s", strings.TrimSpace(out))
	return out
}

// NodeID is the node id ("127.0.0.N:port") of NodeManager n, from cluster.env.
func (c *Cluster) NodeID(n int) string { return c.Env[fmt.Sprintf("XRES_NM%d_ID", n)] }

func nodeQuery(n int) url.Values { return url.Values{"n": {fmt.Sprint(n)}} }

// verb calls one fault verb with query q, allowing it verbTimeout plus extra (the time the
// verb itself sleeps).
func (c *Cluster) verb(ctx context.Context, method, verb string, q url.Values, extra time.Duration) (string, error) {
	base := c.Env["XRES_MINICLUSTER_ADMIN_URL"]
	if base == "" {
		return "", fmt.Errorf("%s: %w (no XRES_MINICLUSTER_ADMIN_URL in cluster.env)", verb, ErrNoFaultVerbs)
	}
	u := base + "/" + verb
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, verbTimeout+extra)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w", verb, err)
	}
	// The launcher answers only once the effect is visible; httpClient's 30 s is too short.
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("%s: read answer: %w", verb, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s", ErrVerb, strings.TrimSpace(strings.TrimPrefix(string(b), "error: ")))
	}
	return string(b), nil
}

// useActiveRM points RMWebURL at the RM whose /ws/v1/cluster/info says haState ACTIVE (HA
// configurations list one web address per yarn.resourcemanager.ha.rm-ids entry).
func (c *Cluster) useActiveRM(ctx context.Context) error {
	urls, err := rmWebURLs(c.conf)
	if err != nil || len(urls) < 2 {
		return err
	}
	var seen []string
	for _, u := range urls {
		var info struct {
			ClusterInfo struct {
				HAState string `json:"haState"`
			} `json:"clusterInfo"`
		}
		probe := &Cluster{RMWebURL: u, User: c.User}
		if err := probe.getJSON(ctx, "/ws/v1/cluster/info", &info); err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		if info.ClusterInfo.HAState == "ACTIVE" {
			c.RMWebURL = u
			return nil
		}
		seen = append(seen, u+": "+info.ClusterInfo.HAState)
	}
	return fmt.Errorf("no active resourcemanager among %s", strings.Join(seen, "; "))
}

// NMProxy puts a fault proxy in front of NodeManager n's container manager: the minicluster
// started with XRES_MINICLUSTER_PROXIED_NODES naming n binds that NodeManager on another
// loopback address (XRES_NM<n>_BIND) while its node id, where AMs connect, stays
// XRES_NM<n>_ID; the proxy listens there. Until a proxy runs, the node is unreachable for
// AMs (the RM still sees it RUNNING: its heartbeats do not pass the proxy).
func (c *Cluster) NMProxy(t testing.TB, n int) *Proxy {
	t.Helper()
	id, bind := c.NodeID(n), c.Env[fmt.Sprintf("XRES_NM%d_BIND", n)]
	if id == "" || bind == "" || bind == id {
		t.Fatalf("NodeManager %d (%s) is not proxied: start the cluster with XRES_MINICLUSTER_PROXIED_NODES=%d (bind %q)", n, id, n, bind)
	}
	// The NodeManager's web server (bound on the other address too) stays reachable where
	// its containers look for it (NM_HOST:NM_HTTP_PORT: their launchers ask its REST which
	// GPUs YARN assigned), as on a real node; only the container manager goes through the
	// fault proxy.
	if idHost, _, err := net.SplitHostPort(id); err == nil {
		bindHost, _, _ := net.SplitHostPort(bind)
		if _, webPort, err := net.SplitHostPort(c.Env[fmt.Sprintf("XRES_NM%d_HTTP", n)]); err == nil && bindHost != idHost {
			StartProxy(t, net.JoinHostPort(idHost, webPort), net.JoinHostPort(bindHost, webPort))
		}
	}
	return StartProxy(t, id, bind)
}
