package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

// The fixtures in testdata/ were recorded from the xres minicluster
// (Hadoop 3.4.1, 2 NodeManagers with yarn.io/gpu=2 and yarn.io/fpga=1).

type recorded struct {
	Method, Path, User, Body, Accept, ContentType string
	Query                                         map[string][]string
}

// fakeRM is an httptest RM: routes map "METHOD path" to a handler; every
// request is recorded.
type fakeRM struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	routes map[string]http.HandlerFunc
}

func newFakeRM(t *testing.T, routes map[string]http.HandlerFunc) *fakeRM {
	t.Helper()
	f := &fakeRM{routes: routes}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, User: r.URL.Query().Get("user.name"),
			Body: string(body), Accept: r.Header.Get("Accept"), ContentType: r.Header.Get("Content-Type"), Query: r.URL.Query()})
		f.mu.Unlock()
		h, ok := f.routes[r.Method+" "+r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(fixture(t, "error-not-found.json"))
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRM) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func serve(t *testing.T, status int, name string) http.HandlerFunc {
	body := fixture(t, name)
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.RetryWaitMin == 0 {
		cfg.RetryWaitMin, cfg.RetryWaitMax = time.Millisecond, 5*time.Millisecond
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReadCalls(t *testing.T) {
	rm := newFakeRM(t, map[string]http.HandlerFunc{
		"GET /ws/v1/cluster/info":                                      serve(t, 200, "info.json"),
		"GET /ws/v1/cluster/metrics":                                   serve(t, 200, "metrics.json"),
		"GET /ws/v1/cluster/nodes":                                     serve(t, 200, "nodes.json"),
		"GET /ws/v1/cluster/apps":                                      serve(t, 200, "apps.json"),
		"GET /ws/v1/cluster/apps/application_1795959644570_0002":       serve(t, 200, "app-accepted.json"),
		"GET /ws/v1/cluster/apps/application_1795959644570_0002/state": serve(t, 200, "state-accepted.json"),
	})
	c := newClient(t, Config{Endpoints: []string{rm.URL}, User: "alice"})
	ctx := testCtx(t)

	t.Run("info", func(t *testing.T) {
		info, err := c.ClusterInfo(ctx)
		require.NoError(t, err)
		require.Equal(t, "ACTIVE", info.HAState)
		require.Equal(t, "STARTED", info.State)
		require.Equal(t, "3.4.1", info.HadoopVersion)
		require.Equal(t, Int64(1795959644570), info.ID)
	})
	t.Run("metrics", func(t *testing.T) {
		m, err := c.ClusterMetrics(ctx)
		require.NoError(t, err)
		require.Equal(t, Int64(2), m.ActiveNodes)
		require.Equal(t, Int64(8192), m.TotalMB)
		require.Equal(t, Int64(16), m.TotalVirtualCores)
		gpus, ok := m.TotalClusterResources.Value("yarn.io/gpu")
		require.True(t, ok)
		require.Equal(t, int64(4), gpus)
	})
	t.Run("nodes with gpus", func(t *testing.T) {
		nodes, err := c.Nodes(ctx, "RUNNING")
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		for _, n := range nodes {
			require.Equal(t, "RUNNING", n.State)
			gpus, ok := n.Total("yarn.io/gpu")
			require.True(t, ok)
			require.Equal(t, int64(2), gpus, n.ID)
			fpgas, _ := n.Total("yarn.io/fpga")
			require.Equal(t, int64(1), fpgas)
			mem, _ := n.Total("memory-mb")
			require.Equal(t, int64(4096), mem)
			_, ok = n.Total("example.com/none")
			require.False(t, ok)
		}
		last := rm.requests()[len(rm.requests())-1]
		require.Equal(t, []string{"RUNNING"}, last.Query["states"])
	})
	t.Run("apps", func(t *testing.T) {
		apps, err := c.Apps(ctx, AppsFilter{States: []string{"KILLED", "FAILED"}, Queue: "default", Limit: 5})
		require.NoError(t, err)
		require.Len(t, apps, 1)
		require.Equal(t, "KILLED", apps[0].State)
		last := rm.requests()[len(rm.requests())-1]
		require.Equal(t, []string{"KILLED,FAILED"}, last.Query["states"])
		require.Equal(t, []string{"default"}, last.Query["queue"])
		require.Equal(t, []string{"5"}, last.Query["limit"])
	})
	t.Run("app", func(t *testing.T) {
		app, err := c.App(ctx, "application_1795959644570_0002")
		require.NoError(t, err)
		require.Equal(t, "ACCEPTED", app.State)
		require.Equal(t, "xres-rest-fixture", app.Name)
		require.Equal(t, Int64(1), app.RunningContainers)
		require.False(t, yarn.AppStateEnded(app.State))
	})
	t.Run("state", func(t *testing.T) {
		st, err := c.AppState(ctx, "application_1795959644570_0002")
		require.NoError(t, err)
		require.Equal(t, "ACCEPTED", st)
	})
	t.Run("every request carries user.name and asks for JSON", func(t *testing.T) {
		for _, r := range rm.requests() {
			require.Equal(t, "alice", r.User, r.Path)
			require.Equal(t, "application/json", r.Accept, r.Path)
		}
	})
	require.Equal(t, rm.URL, c.Active())
}

func TestEmptyLists(t *testing.T) {
	tests := []struct{ name, body string }{
		{"empty object", `{"apps":{}}`},
		{"null", `{"apps":null}`},
		{"empty array", `{"apps":{"app":[]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/apps": func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, tt.body)
			}})
			apps, err := newClient(t, Config{Endpoints: []string{rm.URL}}).Apps(testCtx(t), AppsFilter{})
			require.NoError(t, err)
			require.Empty(t, apps)
		})
	}
}

func TestSubmitAndKill(t *testing.T) {
	rm := newFakeRM(t, map[string]http.HandlerFunc{
		"POST /ws/v1/cluster/apps/new-application": serve(t, 200, "new-application.json"),
		"POST /ws/v1/cluster/apps": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "/ws/v1/cluster/apps/application_1795959644570_0002")
			w.WriteHeader(http.StatusAccepted)
		},
		"PUT /ws/v1/cluster/apps/application_1795959644570_0002/state": serve(t, 202, "state-killing.json"),
	})
	c := newClient(t, Config{Endpoints: []string{rm.URL + "/"}, User: "xres"})
	ctx := testCtx(t)

	na, err := c.NewApplication(ctx)
	require.NoError(t, err)
	require.Equal(t, "application_1795959644570_0002", na.ApplicationID)
	gpus, ok := na.MaximumResourceCapability.Value("yarn.io/gpu")
	require.True(t, ok)
	require.Equal(t, int64(2), gpus)

	sub := &ApplicationSubmission{
		ApplicationID:   na.ApplicationID,
		ApplicationName: "xres-rest-fixture",
		AMContainerSpec: ContainerLaunchContext{
			Commands:    Commands{Command: "/bin/sh -c 'sleep 30' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
			Environment: StringEntries(map[string]string{"B": "2", "A": "1"}),
			LocalResources: &Entries[LocalResource]{Entry: []Entry[LocalResource]{{Key: "am", Value: LocalResource{
				Resource: "hdfs://nn:8020/user/xres/am", Type: "FILE", Visibility: "APPLICATION", Size: 42, Timestamp: 1700000000000}}}},
		},
		MaxAppAttempts:  1,
		Resource:        &AMResource{Memory: 256, VCores: 1},
		ApplicationType: "XRES",
		ApplicationTags: &Tags{Tag: []string{"xres"}},
	}
	require.NoError(t, c.Submit(ctx, sub))

	st, err := c.Kill(ctx, na.ApplicationID, "test over")
	require.NoError(t, err)
	require.Equal(t, "KILLING", st)

	reqs := rm.requests()
	require.Len(t, reqs, 3)
	require.Equal(t, "/ws/v1/cluster/apps/new-application", reqs[0].Path)
	require.Empty(t, reqs[0].Body)
	require.Equal(t, "application/json", reqs[1].ContentType)
	require.JSONEq(t, string(fixture(t, "submit-request.json")), reqs[1].Body)
	require.JSONEq(t, `{"state":"KILLED","diagnostics":"test over"}`, reqs[2].Body)
	for _, r := range reqs {
		require.Equal(t, "xres", r.User)
	}

	require.ErrorIs(t, c.Submit(ctx, &ApplicationSubmission{}), ErrBadRequest)
}

func TestRemoteErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		file      string
		body      string
		sentinel  error
		exception string
		class     string
		message   string
	}{
		{name: "not found", status: 404, file: "error-not-found.json", sentinel: ErrNotFound, exception: "NotFoundException",
			class: "org.apache.hadoop.yarn.webapp.NotFoundException", message: "app with id: application_1_0001 not found"},
		{name: "no user", status: 401, file: "error-unauthorized.json", sentinel: ErrUnauthorized, exception: "AuthorizationException",
			class: "org.apache.hadoop.security.authorize.AuthorizationException", message: "Unable to obtain user name, user not authenticated"},
		{name: "bad state", status: 400, file: "error-bad-state.json", sentinel: ErrBadRequest, exception: "BadRequestException",
			class: "org.apache.hadoop.yarn.webapp.BadRequestException", message: "Only 'KILLED' is allowed as a target state."},
		{name: "forbidden html", status: 403, body: "<html><body>\n<h2>HTTP ERROR 403</h2>\n</body></html>", sentinel: ErrUnauthorized,
			message: "<html><body> <h2>HTTP ERROR 403</h2> </body></html>"},
		{name: "server error", status: 500, body: `{"RemoteException":{"exception":"WebApplicationException","message":"boom","javaClassName":"javax.ws.rs.WebApplicationException"}}`,
			exception: "WebApplicationException", class: "javax.ws.rs.WebApplicationException", message: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/apps/application_1_0001": func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				if tt.file != "" {
					_, _ = w.Write(fixture(t, tt.file))
				} else {
					_, _ = io.WriteString(w, tt.body)
				}
			}})
			_, err := newClient(t, Config{Endpoints: []string{rm.URL}, User: "u"}).App(testCtx(t), "application_1_0001")
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tt.status, re.StatusCode)
			require.Equal(t, tt.exception, re.Exception)
			require.Equal(t, tt.class, re.JavaClassName)
			require.Contains(t, re.Message, tt.message)
			require.Equal(t, rm.URL+"/ws/v1/cluster/apps/application_1_0001", re.URL, "no query string in errors")
			if tt.sentinel != nil {
				require.ErrorIs(t, err, tt.sentinel)
			}
			for _, other := range []error{ErrNotFound, ErrBadRequest, ErrUnauthorized} {
				if other != tt.sentinel {
					require.NotErrorIs(t, err, other)
				}
			}
			require.Contains(t, err.Error(), fmt.Sprintf("yarn rest GET %s/ws/v1/cluster/apps/application_1_0001: %d", rm.URL, tt.status))
			require.Len(t, rm.requests(), 1, "an answer is not retried")
		})
	}
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

func TestFailoverOnConnectionError(t *testing.T) {
	active := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/metrics": serve(t, 200, "metrics.json")})
	dead := deadURL(t)
	c := newClient(t, Config{Endpoints: []string{dead, active.URL}, Retries: 1})
	ctx := testCtx(t)
	_, err := c.ClusterMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, active.URL, c.Active())
	// The next call goes straight to the RM that answered.
	_, err = c.ClusterMetrics(ctx)
	require.NoError(t, err)
	require.Len(t, active.requests(), 2)
	require.Equal(t, []string{dead, active.URL}, c.Endpoints())
}

func TestStandbyRedirect(t *testing.T) {
	active := newFakeRM(t, map[string]http.HandlerFunc{
		"PUT /ws/v1/cluster/apps/application_1795959644570_0002/state": serve(t, 200, "state-killed.json"),
	})
	standby := newFakeRM(t, nil)
	standby.routes = map[string]http.HandlerFunc{
		"PUT /ws/v1/cluster/apps/application_1795959644570_0002/state": func(w http.ResponseWriter, r *http.Request) {
			loc := active.URL + r.URL.RequestURI()
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusTemporaryRedirect)
			_, _ = io.WriteString(w, "This is standby RM. The redirect url is: "+loc)
		},
	}
	c := newClient(t, Config{Endpoints: []string{standby.URL}, User: "xres"})
	st, err := c.Kill(testCtx(t), "application_1795959644570_0002", "")
	require.NoError(t, err)
	require.Equal(t, "KILLED", st)
	got := active.requests()
	require.Len(t, got, 1)
	require.Equal(t, http.MethodPut, got[0].Method)
	require.JSONEq(t, `{"state":"KILLED"}`, got[0].Body, "the body survives the redirect")
	require.Equal(t, "xres", got[0].User, "user.name survives the redirect")
	require.Equal(t, active.URL, c.Active())
}

func TestStandbyWithoutActive(t *testing.T) {
	noActive := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Refresh", "3")
		w.WriteHeader(http.StatusTemporaryRedirect)
		_, _ = io.WriteString(w, "This is standby RM. Can not find any active RM. Will retry in next 3 seconds.")
	}
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "This is standby RM. Redirecting to the current active RM")
	}
	rm1 := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/metrics": noActive})
	rm2 := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/metrics": page})
	var loop *fakeRM
	loop = newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/metrics": func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, loop.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}})
	dead := deadURL(t)
	c := newClient(t, Config{Endpoints: []string{rm1.URL, rm2.URL, loop.URL, dead}, Retries: -1})
	_, err := c.ClusterMetrics(testCtx(t))
	require.ErrorIs(t, err, ErrNoActiveRM)
	msg := err.Error()
	for _, want := range []string{
		strings.TrimPrefix(rm1.URL, "http://") + ": standby resourcemanager: 307 Temporary Redirect without Location: This is standby RM. Can not find any active RM",
		strings.TrimPrefix(rm2.URL, "http://") + ": standby resourcemanager: 200 OK: This is standby RM",
		strings.TrimPrefix(loop.URL, "http://") + ": standby resourcemanager: more than 3 redirects",
		strings.TrimPrefix(dead, "http://") + ": ",
	} {
		require.Contains(t, msg, want)
	}
	require.Len(t, loop.requests(), 4, "1 request + 3 redirects")
	require.Empty(t, c.Active())
}

func TestRetries(t *testing.T) {
	var mu sync.Mutex
	n := 0
	rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n <= 2
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		serve(t, 200, "info.json")(w, r)
	}})
	var auths int
	var amu sync.Mutex
	auth := AuthenticatorFunc(func(r *http.Request) error {
		amu.Lock()
		auths++
		amu.Unlock()
		r.Header.Set("Authorization", "Negotiate fake")
		return nil
	})
	t.Run("503 is retried and re-authenticated", func(t *testing.T) {
		c := newClient(t, Config{Endpoints: []string{rm.URL}, Retries: 2, Auth: auth})
		_, err := c.ClusterInfo(testCtx(t))
		require.NoError(t, err)
		require.Len(t, rm.requests(), 3)
		require.Equal(t, 3, auths, "every attempt gets fresh credentials")
	})
	t.Run("retries are bounded", func(t *testing.T) {
		mu.Lock()
		n = -10
		mu.Unlock()
		rm.reqs = nil
		c := newClient(t, Config{Endpoints: []string{rm.URL}, Retries: 1})
		_, err := c.ClusterInfo(testCtx(t))
		require.ErrorIs(t, err, ErrNoActiveRM)
		require.ErrorContains(t, err, "503 Service Unavailable")
		require.Len(t, rm.requests(), 2)
	})
	t.Run("authenticator failure", func(t *testing.T) {
		c := newClient(t, Config{Endpoints: []string{rm.URL}, Auth: AuthenticatorFunc(func(*http.Request) error {
			return errors.New("no ticket")
		})})
		_, err := c.ClusterInfo(testCtx(t))
		require.ErrorContains(t, err, "no ticket")
	})
}

func TestContextBoundsTheCall(t *testing.T) {
	release := make(chan struct{})
	rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	defer close(release)
	other := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": serve(t, 200, "info.json")})
	c := newClient(t, Config{Endpoints: []string{rm.URL, other.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ClusterInfo(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Empty(t, other.requests(), "an expired context does not fail over")

	t.Run("default timeout", func(t *testing.T) {
		c := newClient(t, Config{Endpoints: []string{rm.URL}, Timeout: 100 * time.Millisecond, Retries: -1})
		_, err := c.ClusterInfo(context.Background())
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestActiveRM(t *testing.T) {
	standbyInfo := func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"clusterInfo":{"id":1,"state":"STARTED","haState":"STANDBY"}}`)
	}
	standby := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": standbyInfo})
	active := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": serve(t, 200, "info.json")})
	dead := deadURL(t)
	c := newClient(t, Config{Endpoints: []string{dead, standby.URL, active.URL}, Retries: -1})
	got, err := c.ActiveRM(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, active.URL, got)
	require.Equal(t, active.URL, c.Active())

	c = newClient(t, Config{Endpoints: []string{standby.URL}})
	_, err = c.ActiveRM(testCtx(t))
	require.ErrorIs(t, err, ErrNoActiveRM)
	require.ErrorContains(t, err, "haState STANDBY")
}

func TestWaitForState(t *testing.T) {
	var mu sync.Mutex
	states := []string{"NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED"}
	i := 0
	rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/apps/app_1": func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		st := states[min(i, len(states)-1)]
		i++
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]App{"app": {ID: "app_1", State: st, FinalStatus: "SUCCEEDED", Diagnostics: "done"}})
	}})
	c := newClient(t, Config{Endpoints: []string{rm.URL}})
	app, err := c.WaitForState(testCtx(t), "app_1", time.Millisecond, "RUNNING")
	require.NoError(t, err)
	require.Equal(t, "RUNNING", app.State)

	_, err = c.WaitForState(testCtx(t), "app_1", time.Millisecond, "KILLED")
	require.ErrorIs(t, err, ErrAppState)
	require.ErrorContains(t, err, "FINISHED (final status SUCCEEDED): done")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	states = []string{"ACCEPTED"}
	_, err = c.WaitForState(ctx, "app_1", 5*time.Millisecond, "RUNNING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "last ACCEPTED")

	_, err = c.WaitForState(testCtx(t), "app_unknown", time.Millisecond, "RUNNING")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestNewConfigErrors(t *testing.T) {
	for _, eps := range [][]string{nil, {"rm:8088"}, {"ftp://rm:8088"}, {"http://"}} {
		_, err := New(Config{Endpoints: eps})
		require.Error(t, err, "%v", eps)
	}
}

func TestCredentialsRedacted(t *testing.T) {
	cr := Credentials{Tokens: StringEntries(map[string]string{"rm": "SECRET-TOKEN"}), Secrets: StringEntries(map[string]string{"k": "SECRET-KEY"})}
	for _, s := range []string{fmt.Sprint(cr), fmt.Sprintf("%v %+v %#v %s", cr, cr, cr, cr), fmt.Sprint(&ContainerLaunchContext{Credentials: &cr})} {
		require.NotContains(t, s, "SECRET")
	}
	require.Contains(t, cr.String(), "1 tokens, 1 secrets")
}
