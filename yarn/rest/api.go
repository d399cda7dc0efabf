package rest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/yarn"
)

const clusterPath = "/ws/v1/cluster"

// ClusterInfo returns GET /ws/v1/cluster/info from the first RM that
// answers. A standby RM answers this itself (HAState "STANDBY"); use
// ActiveRM to find the active one.
func (c *Client) ClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	var out struct {
		ClusterInfo ClusterInfo `json:"clusterInfo"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/info", out: &out}); err != nil {
		return nil, err
	}
	return &out.ClusterInfo, nil
}

// ActiveRM asks every endpoint for its cluster info and returns the base
// URL of the first whose haState is ACTIVE (a non-HA RM reports ACTIVE
// too). Later calls go to it first.
func (c *Client) ActiveRM(ctx context.Context) (string, error) {
	var failures []string
	for _, base := range c.endpoints {
		var out struct {
			ClusterInfo ClusterInfo `json:"clusterInfo"`
		}
		err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/info", out: &out, base: base})
		switch {
		case err != nil:
			failures = append(failures, err.Error())
		case out.ClusterInfo.HAState == "ACTIVE":
			c.active.Store(base)
			return base.String(), nil
		default:
			failures = append(failures, fmt.Sprintf("%s: haState %s", base.Host, out.ClusterInfo.HAState))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("find active rm: %w: %s", ErrNoActiveRM, strings.Join(failures, "; "))
}

// ClusterMetrics returns GET /ws/v1/cluster/metrics.
func (c *Client) ClusterMetrics(ctx context.Context) (*ClusterMetrics, error) {
	var out struct {
		ClusterMetrics ClusterMetrics `json:"clusterMetrics"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/metrics", out: &out}); err != nil {
		return nil, err
	}
	return &out.ClusterMetrics, nil
}

// Nodes returns GET /ws/v1/cluster/nodes, optionally only nodes in the
// given states (RUNNING, UNHEALTHY, …; the RM's default is all but
// decommissioned ones).
func (c *Client) Nodes(ctx context.Context, states ...string) ([]Node, error) {
	q := url.Values{}
	if len(states) > 0 {
		q.Set("states", strings.Join(states, ","))
	}
	var out struct {
		Nodes *struct {
			Node List[Node] `json:"node"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/nodes", query: q, out: &out}); err != nil {
		return nil, err
	}
	if out.Nodes == nil {
		return nil, nil
	}
	return out.Nodes.Node, nil
}

// Node returns GET /ws/v1/cluster/nodes/{id}; ErrNotFound for an unknown id.
func (c *Client) Node(ctx context.Context, id string) (*Node, error) {
	var out struct {
		Node Node `json:"node"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/nodes/" + url.PathEscape(id), out: &out}); err != nil {
		return nil, err
	}
	return &out.Node, nil
}

// Apps returns GET /ws/v1/cluster/apps narrowed by f.
func (c *Client) Apps(ctx context.Context, f AppsFilter) ([]App, error) {
	q := url.Values{}
	if len(f.States) > 0 {
		q.Set("states", strings.Join(f.States, ","))
	}
	if f.Queue != "" {
		q.Set("queue", f.Queue)
	}
	if f.User != "" {
		q.Set("user", f.User)
	}
	if len(f.ApplicationTypes) > 0 {
		q.Set("applicationTypes", strings.Join(f.ApplicationTypes, ","))
	}
	if len(f.ApplicationTags) > 0 {
		q.Set("applicationTags", strings.Join(f.ApplicationTags, ","))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Apps *struct {
			App List[App] `json:"app"`
		} `json:"apps"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: clusterPath + "/apps", query: q, out: &out}); err != nil {
		return nil, err
	}
	if out.Apps == nil {
		return nil, nil
	}
	return out.Apps.App, nil
}

// App returns GET /ws/v1/cluster/apps/{id}; ErrNotFound for an unknown id.
func (c *Client) App(ctx context.Context, id string) (*App, error) {
	var out struct {
		App App `json:"app"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: appPath(id), out: &out}); err != nil {
		return nil, err
	}
	return &out.App, nil
}

// AppState returns GET /ws/v1/cluster/apps/{id}/state.
func (c *Client) AppState(ctx context.Context, id string) (string, error) {
	var out appState
	if err := c.do(ctx, call{method: http.MethodGet, path: appPath(id) + "/state", out: &out}); err != nil {
		return "", err
	}
	return out.State, nil
}

// NewApplication asks the RM for an application id
// (POST /ws/v1/cluster/apps/new-application); needs a user (Config.User or
// SPNEGO).
func (c *Client) NewApplication(ctx context.Context) (*NewApplication, error) {
	var out NewApplication
	if err := c.do(ctx, call{method: http.MethodPost, path: clusterPath + "/apps/new-application", out: &out}); err != nil {
		return nil, err
	}
	if out.ApplicationID == "" {
		return nil, fmt.Errorf("yarn rest new-application: answer without application-id")
	}
	return &out, nil
}

// Submit submits an application (POST /ws/v1/cluster/apps, 202 Accepted).
// sub.ApplicationID comes from NewApplication.
func (c *Client) Submit(ctx context.Context, sub *ApplicationSubmission) error {
	if sub == nil || sub.ApplicationID == "" {
		return fmt.Errorf("yarn rest submit: %w: application-id is required", ErrBadRequest)
	}
	return c.do(ctx, call{method: http.MethodPost, path: clusterPath + "/apps", body: sub,
		ok: []int{http.StatusAccepted, http.StatusOK}})
}

type appState struct {
	State       string `json:"state"`
	Diagnostics string `json:"diagnostics,omitempty"`
}

// Kill asks the RM to kill an application (PUT …/apps/{id}/state with
// KILLED). It returns the state the RM reports: KILLED once done, or the
// current state while the kill is in progress (202).
func (c *Client) Kill(ctx context.Context, id, diagnostics string) (string, error) {
	var out appState
	err := c.do(ctx, call{method: http.MethodPut, path: appPath(id) + "/state",
		body: appState{State: "KILLED", Diagnostics: diagnostics}, ok: []int{http.StatusOK, http.StatusAccepted}, out: &out})
	if err != nil {
		return "", err
	}
	return out.State, nil
}

// WaitForState polls the application every poll interval until its state
// is one of want, and returns it. Reaching a terminal state (FINISHED,
// FAILED, KILLED) not in want is an ErrAppState error carrying the
// diagnostics; the context bounds the wait.
func (c *Client) WaitForState(ctx context.Context, id string, poll time.Duration, want ...string) (*App, error) {
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	last := ""
	for {
		app, err := c.App(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("wait for %s to reach %s (last %s): %w", id, strings.Join(want, "|"), orNone(last), err)
		}
		if app.State != last {
			c.log.WithFields(logrus.Fields{"app": id, "state": app.State}).Debug("rm rest: application state")
			last = app.State
		}
		for _, w := range want {
			if app.State == w {
				return app, nil
			}
		}
		if yarn.AppStateEnded(app.State) {
			return app, fmt.Errorf("wait for %s to reach %s: %w: %s (final status %s): %s",
				id, strings.Join(want, "|"), ErrAppState, app.State, app.FinalStatus, app.Diagnostics)
		}
		select {
		case <-ctx.Done():
			return app, fmt.Errorf("wait for %s to reach %s (last %s): %w", id, strings.Join(want, "|"), app.State, ctx.Err())
		case <-t.C:
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func appPath(id string) string { return clusterPath + "/apps/" + url.PathEscape(id) }
