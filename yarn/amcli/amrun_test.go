package amcli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// scriptRM allocates every asked container on the first heartbeat and
// completes each with the exit code exits[i] in the same answer.
type scriptRM struct {
	mu       sync.Mutex
	exits    []int
	next     int
	reg      yarn.RegisterRequest
	finished []yarn.FinishRequest
	asks     []yarn.Ask
	// nm is the NodeManager the containers run on: a container completes in
	// a heartbeat after it was started there (starts run beside the
	// heartbeat).
	nm      *reportingNM
	running []yarn.Completed
}

func (r *scriptRM) Register(ctx context.Context, req yarn.RegisterRequest) (yarn.RegisterResponse, error) {
	r.reg = req
	return yarn.RegisterResponse{
		MaxCapability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}},
		ResourceTypes: []yarn.ResourceType{{Name: "memory-mb"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}},
	}, nil
}

func (r *scriptRM) Allocate(ctx context.Context, req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var resp yarn.AllocateResponse
	var still []yarn.Completed
	for _, c := range r.running {
		if r.nm.wasStarted(c.ID) {
			resp.Completed = append(resp.Completed, c)
		} else {
			still = append(still, c)
		}
	}
	r.running = still
	for _, ask := range req.Asks {
		r.asks = append(r.asks, ask)
		for i := 0; i < ask.Count && r.next < len(r.exits); i++ {
			r.next++
			c := yarn.Container{ID: fmt.Sprintf("container_1700000000000_0001_01_%06d", r.next+1),
				NodeID: fmt.Sprintf("nm%d:45454", r.next%2), NodeHTTP: "nm:8042", AllocationRequestID: ask.ID}
			resp.Allocated = append(resp.Allocated, c)
			r.running = append(r.running, yarn.Completed{ID: c.ID, ExitStatus: r.exits[r.next-1]})
		}
	}
	return resp, nil
}

func (r *scriptRM) Finish(ctx context.Context, req yarn.FinishRequest) error {
	r.finished = append(r.finished, req)
	return nil
}

// reportingNM plays the launcher: on start it POSTs a device report to the
// URL the worker environment names.
type reportingNM struct {
	mu       sync.Mutex
	launches []yarn.LaunchContext
	reports  []int
	started  map[string]bool
}

func (n *reportingNM) wasStarted(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started[id]
}

func (n *reportingNM) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	n.mu.Lock()
	n.launches = append(n.launches, l)
	n.mu.Unlock()
	// The launcher signs with the key of the credentials the worker got:
	// its own, and never the application's secret.
	var key []byte
	if creds, err := security.ParseCredentials(l.Tokens); err == nil && creds.Secret(contract.ReportSecretAlias) == nil {
		key = creds.Secret(contract.ContainerKeyAlias)
	}
	err := amweb.PostDeviceReport(ctx, nil, l.Env[contract.EnvReportURL], key, contract.DeviceReport{Container: c.ID,
		Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}}}})
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started == nil {
		n.started = map[string]bool{}
	}
	n.started[c.ID] = true
	if err != nil {
		n.reports = append(n.reports, 0)
		return nil
	}
	n.reports = append(n.reports, http.StatusNoContent)
	return nil
}

func (n *reportingNM) StopContainer(ctx context.Context, c yarn.Container, tok security.Token) error {
	return nil
}

func fakeDeps(rm *scriptRM, nm *reportingNM) deps {
	rm.nm = nm
	return deps{amClients: func(ctx context.Context, getenv func(string) string, _ submit.AMEnv, _ amplan.Settings, log logrus.FieldLogger) (amClients, error) {
		var creds security.Credentials
		creds.AddToken("amrm", &security.Token{Kind: security.KindAMRMToken})
		tokens, secret, err := workerCredentials(&creds, log)
		return amClients{RM: rm, NM: nm, WorkerTokens: tokens, ReportSecret: secret}, err
	}}
}

func TestRunWiresTheAM(t *testing.T) {
	staged := map[string]yarn.LocalResource{
		"am":                 {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/am"}, Size: 1, Timestamp: 2, Type: yarn.File, Visibility: yarn.Application},
		"container-launcher": {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/container-launcher"}, Size: 3, Timestamp: 4, Type: yarn.File, Visibility: yarn.Application},
	}
	enc, err := submit.EncodeResources(staged)
	require.NoError(t, err)
	envs := map[string]string{"NM_HOST": "127.0.0.1", "CONTAINER_ID": "container_1700000000000_0001_01_000001", submit.EnvLocalResources: enc}

	tests := []struct {
		name   string
		exits  []int
		code   int
		status yarn.FinalStatus
		diag   string
	}{
		{name: "all workers succeed", exits: []int{0, 0, 0, 0}, code: ExitOK, status: yarn.StatusSucceeded},
		{name: "a config error fails at once", exits: []int{0, resources.LauncherExitConfig, 0, 0}, code: ExitAppFailed, status: yarn.StatusFailed,
			diag: "container-launcher reports an error of the job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, nm := &scriptRM{exits: tt.exits}, &reportingNM{}
			code, out, stderr := runAm(t, fakeDeps(rm, nm), envs, "run", "--conf", "testdata/flink-conf.yaml",
				"-D", "rest.bind-address=127.0.0.1", "-D", amplan.KeyHeartbeat+"=1", "--log-level", "warn", "--", "python", "train.py", "--epochs", "2")
			require.Equal(t, tt.code, code, stderr)
			require.Len(t, rm.finished, 1)
			require.Equal(t, tt.status, rm.finished[0].Status)
			require.Contains(t, rm.finished[0].Diagnostics, tt.diag)
			require.Contains(t, out, "final status: "+string(tt.status))
			// No final tracking URL: the tracking page dies with the AM; the RM's
			// link then ends in its own application page.
			require.Empty(t, rm.finished[0].TrackingURL, "the AM unregisters with no final tracking URL")

			// Registered with the tracking server's URL on the NM host.
			require.True(t, strings.HasPrefix(rm.reg.TrackingURL, "http://127.0.0.1:"), rm.reg.TrackingURL)
			// Four workers of the configured profile were asked.
			require.Equal(t, yarn.Ask{ID: am.WorkerAskID, Count: 4,
				Profile: yarn.Resource{MemoryMB: 4096, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 1}}}, rm.asks[0])

			l := nm.launches[0]
			require.Equal(t, []string{"./container-launcher --conf flink-conf.yaml -D rest.bind-address=127.0.0.1 -D " + amplan.KeyHeartbeat + "=1 -- python train.py --epochs 2 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"}, l.Commands)
			require.Equal(t, "/usr/local/cuda/lib64", l.Env["LD_LIBRARY_PATH"])
			require.Equal(t, strings.TrimSuffix(rm.reg.TrackingURL, "/")+amweb.PathReport, l.Env[contract.EnvReportURL])
			require.Contains(t, l.LocalResources, "container-launcher")
			require.NotContains(t, l.LocalResources, "am")
			require.NotEmpty(t, nm.reports)
			for _, r := range nm.reports {
				require.Equal(t, http.StatusNoContent, r, "the launcher's signed report reached the tracking server")
			}
		})
	}
}

func TestRunRejectsBadConfigBeforeConnecting(t *testing.T) {
	called := false
	d := deps{amClients: func(context.Context, func(string) string, submit.AMEnv, amplan.Settings, logrus.FieldLogger) (amClients, error) {
		called = true
		return amClients{}, errors.New("should not connect")
	}}
	code, _, stderr := runAm(t, d, nil, "run", "--conf", "testdata/bad.yaml", "--", "true")
	require.Equal(t, ExitConfig, code)
	require.Contains(t, stderr, "testdata/bad.yaml:3")
	require.False(t, called)
}

func TestRunClusterError(t *testing.T) {
	d := deps{amClients: func(context.Context, func(string) string, submit.AMEnv, amplan.Settings, logrus.FieldLogger) (amClients, error) {
		return amClients{}, errors.New("no AMRMToken in $HADOOP_TOKEN_FILE_LOCATION")
	}}
	code, _, stderr := runAm(t, d, nil, "run", "--conf", "testdata/flink-conf.yaml", "-D", "rest.bind-address=127.0.0.1", "--", "true")
	require.Equal(t, ExitCluster, code)
	require.Contains(t, stderr, "no AMRMToken")
}

func TestRunOutsideYarn(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		envs map[string]string
		err  string
	}{
		{name: "no hadoop configuration", envs: map[string]string{}, err: "set HADOOP_CONF_DIR or YARN_CONF_DIR"},
		{name: "no token file", envs: map[string]string{"HADOOP_CONF_DIR": "testdata/hadoop"}, err: "HADOOP_TOKEN_FILE_LOCATION is not set"},
		{name: "unreadable token file", envs: map[string]string{"HADOOP_CONF_DIR": "testdata/hadoop", "HADOOP_TOKEN_FILE_LOCATION": dir + "/nope"}, err: "read AMRMToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runAm(t, defaultDeps(), tt.envs, "run", "--conf", "testdata/flink-conf.yaml",
				"-D", "rest.bind-address=127.0.0.1", "--", "true")
			require.Equal(t, ExitCluster, code, stderr)
			require.Contains(t, stderr, tt.err)
		})
	}
}

func TestPublicMain(t *testing.T) {
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"resources", "--conf", "testdata/flink-conf.yaml", "--json"},
		Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	require.Equal(t, ExitOK, code, errb.String())
	require.Contains(t, out.String(), `"yarn.io/gpu": 1`)
}

func TestSubmitTimeAndRSS(t *testing.T) {
	require.Equal(t, time.UnixMilli(1700000000123), submitTime("1700000000123"))
	require.True(t, submitTime("").IsZero())
	require.True(t, submitTime("soon").IsZero())
	if _, err := os.Stat("/proc/self/status"); err == nil {
		require.Greater(t, am.PeakRSSKiB(), int64(0))
	}
}

// What the workers get of the AM's credentials: never the AMRMToken, the
// delegation tokens, and the application's report secret (the submitted
// one, so that a restarted AM and the workers an earlier attempt started
// share it; else one made here).
func TestWorkerCredentials(t *testing.T) {
	submitted := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name   string
		secret []byte
	}{{"submitted secret", submitted}, {"none submitted", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var creds security.Credentials
			creds.AddToken("amrm", &security.Token{Kind: security.KindAMRMToken, Password: []byte("amrm-pw")})
			creds.AddToken("nn:8020", &security.Token{Kind: security.KindHDFSDelegation, Service: "nn:8020"})
			if tc.secret != nil {
				creds.AddSecret(contract.ReportSecretAlias, tc.secret)
			}
			logger, hook := logtest.NewNullLogger()
			b, secret, err := workerCredentials(&creds, logger)
			require.NoError(t, err)
			got, err := security.ParseCredentials(b)
			require.NoError(t, err)
			require.Equal(t, []string{"nn:8020"}, got.Aliases())
			require.Len(t, secret, contract.ReportSecretBytes)
			require.Equal(t, secret, got.Secret(contract.ReportSecretAlias))
			if tc.secret != nil {
				require.Equal(t, tc.secret, secret)
				require.Empty(t, hook.AllEntries())
			} else {
				require.Len(t, hook.AllEntries(), 1)
				line, _ := hook.LastEntry().String()
				require.NotContains(t, line, string(secret))
			}
		})
	}
}

func TestWebProxyOfTheAM(t *testing.T) {
	hc := func(kv ...string) *conf.HadoopConfig {
		c := conf.NewHadoopConfig(func(string) string { return "" })
		for i := 0; i+1 < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	hosts, u, err := webProxy(hc("yarn.resourcemanager.webapp.address", "localhost:18088"), []string{"localhost:18030"})
	require.NoError(t, err)
	require.Equal(t, []string{"localhost"}, hosts)
	require.Equal(t, "http://localhost:18088", u)

	hosts, u, err = webProxy(hc("yarn.resourcemanager.ha.enabled", "true", "yarn.resourcemanager.ha.rm-ids", "a,b",
		"yarn.resourcemanager.hostname.a", "rm1", "yarn.resourcemanager.hostname.b", "rm2"), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"rm1", "rm2"}, hosts)
	require.Equal(t, "http://rm1:8088", u)

	// An AM container without its own HADOOP_CONF_DIR: the built-in
	// 0.0.0.0 is the RM the AM reaches.
	hosts, u, err = webProxy(hc(), []string{"rm.example:8030"})
	require.NoError(t, err)
	require.Equal(t, []string{"rm.example"}, hosts)
	require.Equal(t, "http://rm.example:8088", u)
	_, _, err = webProxy(hc(), nil)
	require.ErrorIs(t, err, yarn.ErrRMConfig)
}
