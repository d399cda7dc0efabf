package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// ErrHTTPStatus is wrapped by REST errors for a non-2xx answer.
var ErrHTTPStatus = errors.New("unexpected http status")

// AppWaitTimeout bounds WaitForAppState (and the test's own deadline bounds it too).
var AppWaitTimeout = 3 * time.Minute

// httpClient is used for every REST call; each call also carries a context deadline.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// terminal application states: reaching one not asked for ends a wait at once.
var terminalStates = []string{"FINISHED", "FAILED", "KILLED"}

// AppInfo is the part of the RM's application report (/ws/v1/cluster/apps/{id}) tests use.
type AppInfo struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	User              string `json:"user"`
	Queue             string `json:"queue"`
	State             string `json:"state"`
	FinalStatus       string `json:"finalStatus"`
	Diagnostics       string `json:"diagnostics"`
	ApplicationType   string `json:"applicationType"`
	AMContainerLogs   string `json:"amContainerLogs"`
	AMHostHTTPAddress string `json:"amHostHttpAddress"`
}

// URL returns the RM REST URL for path (e.g. "/ws/v1/cluster/nodes") with user.name set,
// which the RM needs for writes under simple authentication.
func (c *Cluster) URL(path string) string {
	u := strings.TrimRight(c.RMWebURL, "/") + path
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return u + sep + "user.name=" + url.QueryEscape(c.User)
}

// do sends one JSON request to the RM and decodes a JSON answer into out (if non-nil).
func (c *Cluster) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path), body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.RMWebURL+path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %w %d: %s", method, c.RMWebURL+path, ErrHTTPStatus, resp.StatusCode, snippet(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w: %s", method, path, err, snippet(b))
		}
	}
	return nil
}

func (c *Cluster) getJSON(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, out)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// testContext is a context bounded by d and by the test's deadline (less a margin for cleanup).
func testContext(t testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := tt.Deadline(); ok && td.Add(-10*time.Second).Before(deadline) {
			deadline = td.Add(-10 * time.Second)
		}
	}
	return context.WithDeadline(context.Background(), deadline)
}

// GetJSON GETs an RM REST path and decodes the answer, failing the test on any error.
func (c *Cluster) GetJSON(t testing.TB, path string, out any) {
	t.Helper()
	ctx, cancel := testContext(t, 30*time.Second)
	defer cancel()
	if err := c.getJSON(ctx, path, out); err != nil {
		t.Fatalf("rm rest: %v", err)
	}
}

// DoJSON sends method to an RM REST path with in as a JSON body (nil for none) and
// decodes the answer into out (nil to ignore), failing the test on any error.
func (c *Cluster) DoJSON(t testing.TB, method, path string, in, out any) {
	t.Helper()
	ctx, cancel := testContext(t, 30*time.Second)
	defer cancel()
	if err := c.do(ctx, method, path, in, out); err != nil {
		t.Fatalf("rm rest: %v", err)
	}
}

// App returns the RM's report for one application.
func (c *Cluster) App(ctx context.Context, appID string) (AppInfo, error) {
	var r struct {
		App AppInfo `json:"app"`
	}
	if err := c.getJSON(ctx, "/ws/v1/cluster/apps/"+url.PathEscape(appID), &r); err != nil {
		return AppInfo{}, err
	}
	return r.App, nil
}

// WaitForAppState polls the RM until appID is in one of states (e.g. "RUNNING",
// "FINISHED") and returns its report. It fails the test when the application ends in a
// state not asked for, or after AppWaitTimeout, printing the diagnostics and the tails
// of the application's container logs.
func (c *Cluster) WaitForAppState(t testing.TB, appID string, states ...string) AppInfo {
	t.Helper()
	if len(states) == 0 {
		t.Fatal("WaitForAppState: no state to wait for")
	}
	ctx, cancel := testContext(t, AppWaitTimeout)
	defer cancel()
	var last AppInfo
	var lastErr error
	for {
		app, err := c.App(ctx, appID)
		if err == nil {
			last, lastErr = app, nil
			if slices.Contains(states, app.State) {
				return app
			}
			if slices.Contains(terminalStates, app.State) {
				c.printAppLogs(t, appID)
				t.Fatalf("application %s ended %s (final status %s), want %s; diagnostics: %s",
					appID, app.State, app.FinalStatus, strings.Join(states, "|"), app.Diagnostics)
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			c.printAppLogs(t, appID)
			if lastErr != nil {
				t.Fatalf("application %s: not %s in time; last error: %v", appID, strings.Join(states, "|"), lastErr)
			}
			t.Fatalf("application %s: still %s, want %s; diagnostics: %s",
				appID, last.State, strings.Join(states, "|"), last.Diagnostics)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitForAppState waits on the cluster TestMain set up; see Cluster.WaitForAppState.
func WaitForAppState(t testing.TB, appID string, states ...string) AppInfo {
	t.Helper()
	return Get(t).WaitForAppState(t, appID, states...)
}

// CommandApp describes an application whose ApplicationMaster is a shell command.
type CommandApp struct {
	Name string
	// Command runs under bash in the AM container; <LOG_DIR> is the container log folder.
	// The NodeManager writes it inside double quotes (exec /bin/bash -c "..."), so it must
	// not contain a double quote; $VARS expand in the container's environment.
	Command  string
	Env      map[string]string
	MemoryMB int64 // default 128
	VCores   int64 // default 1
	Type     string
}

// SubmitCommandApp submits app through the RM REST API (new-application, then submit)
// and returns the application ID. KeepAppLogs is registered for it.
func (c *Cluster) SubmitCommandApp(t testing.TB, app CommandApp) string {
	t.Helper()
	var newApp struct {
		ID string `json:"application-id"`
	}
	c.DoJSON(t, http.MethodPost, "/ws/v1/cluster/apps/new-application", nil, &newApp)
	if newApp.ID == "" {
		t.Fatal("rm rest: new-application answered no application-id")
	}
	type entry struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	env := []entry{}
	for k, v := range app.Env {
		env = append(env, entry{k, v})
	}
	slices.SortFunc(env, func(a, b entry) int { return strings.Compare(a.Key, b.Key) })
	mem, vc, typ := app.MemoryMB, app.VCores, app.Type
	if mem == 0 {
		mem = 128
	}
	if vc == 0 {
		vc = 1
	}
	if typ == "" {
		typ = "XRES-TEST"
	}
	body := map[string]any{
		"application-id":   newApp.ID,
		"application-name": app.Name,
		"application-type": typ,
		"max-app-attempts": 1,
		"unmanaged-AM":     false,
		"resource":         map[string]any{"memory": mem, "vCores": vc},
		"am-container-spec": map[string]any{
			"commands":    map[string]any{"command": app.Command},
			"environment": map[string]any{"entry": env},
		},
	}
	c.DoJSON(t, http.MethodPost, "/ws/v1/cluster/apps", body, nil)
	c.KeepAppLogs(t, newApp.ID)
	return newApp.ID
}

// KillApp asks the RM to kill appID (ignored if it has already ended).
func (c *Cluster) KillApp(t testing.TB, appID string) {
	t.Helper()
	ctx, cancel := testContext(t, 30*time.Second)
	defer cancel()
	err := c.do(ctx, http.MethodPut, "/ws/v1/cluster/apps/"+url.PathEscape(appID)+"/state", map[string]string{"state": "KILLED"}, nil)
	if err != nil {
		t.Logf("kill %s: %v", appID, err)
	}
}
