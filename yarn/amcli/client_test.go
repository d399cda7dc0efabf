package amcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// clientRM is a scripted ResourceManager.
type clientRM struct {
	mu        sync.Mutex
	types     []string
	submitted *yarn.Submission
	states    []string
	final     string
	tracking  string
	reports   int
	killed    []string
	nodes     []yarn.NodeReport
	diag      string // final diagnostics; "": a plain success message
	apps      []yarn.ApplicationReport
	listed    [][]string        // types, then states, of each Applications
	hadoop    map[string]string // the client's Hadoop configuration, beside fs.defaultFS
}

var _ rmAPI = (*clientRM)(nil)

func (r *clientRM) NewApplication(ctx context.Context) (yarn.NewApplication, error) {
	return yarn.NewApplication{ID: "application_1700000000000_0003",
		MaxCapability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}}, nil
}

func (r *clientRM) ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error) {
	var out []yarn.ResourceType
	for _, t := range r.types {
		out = append(out, yarn.ResourceType{Name: t})
	}
	return out, nil
}

func (r *clientRM) Submit(ctx context.Context, sub yarn.Submission) error {
	r.submitted = &sub
	return nil
}

func (r *clientRM) ApplicationReport(ctx context.Context, id string) (yarn.ApplicationReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.states[min(r.reports, len(r.states)-1)]
	r.reports++
	rep := yarn.ApplicationReport{ID: id, Name: "xres", User: "alice", Queue: "default", State: s, FinalStatus: "UNDEFINED",
		TrackingURL: r.tracking, Progress: 0.5}
	if yarn.AppStateEnded(s) {
		rep.FinalStatus = r.final
		rep.Diagnostics = "2 workers succeeded (0 replaced)"
		if r.diag != "" {
			rep.Diagnostics = r.diag
		}
	}
	return rep, nil
}

func (r *clientRM) Kill(ctx context.Context, id, diag string) error {
	r.killed = append(r.killed, id)
	return nil
}

func (r *clientRM) Applications(ctx context.Context, types []string, states []string) ([]yarn.ApplicationReport, error) {
	r.listed = append(r.listed, types, states)
	return r.apps, nil
}

func (r *clientRM) Nodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error) {
	return r.nodes, nil
}

// diskFS stages into a local folder, as HDFS would.
type diskFS struct {
	root    string
	removed []string
}

func (d *diskFS) p(name string) string { return filepath.Join(d.root, filepath.FromSlash(name)) }

func (d *diskFS) MkdirAll(ctx context.Context, dir string, perm os.FileMode) error {
	return os.MkdirAll(d.p(dir), 0o755)
}

func (d *diskFS) CopyToRemote(ctx context.Context, local, remote string) error {
	data, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	return os.WriteFile(d.p(remote), data, 0o644)
}

func (d *diskFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	return os.Stat(d.p(name))
}

func (d *diskFS) RemoveAll(ctx context.Context, name string) error {
	d.removed = append(d.removed, path.Clean(name))
	return os.RemoveAll(d.p(name))
}

func clientDeps(t *testing.T, rm *clientRM, dfs *diskFS) deps {
	bin := t.TempDir()
	for _, name := range []string{"am", "container-launcher"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(name+" binary"), 0o755))
	}
	return deps{
		rm: func(ctx context.Context, getenv func(string) string, log logrus.FieldLogger, l *login) (rmAPI, *conf.HadoopConfig, func(), error) {
			hc := conf.NewHadoopConfig(getenv)
			hc.Set("fs.defaultFS", "hdfs://namenode:8020")
			for k, v := range rm.hadoop {
				hc.Set(k, v)
			}
			return rm, hc, func() {}, nil
		},
		hdfs: func(hc *conf.HadoopConfig, user string, krb *yarn.Kerberos) (submit.FS, func(), error) {
			return dfs, func() {}, nil
		},
		executable: func() (string, error) { return filepath.Join(bin, "am"), nil },
		after: func(time.Duration) <-chan time.Time {
			c := make(chan time.Time, 1)
			c <- time.Time{}
			return c
		},
	}
}

func TestSubmitFollowsToTheEnd(t *testing.T) {
	tests := []struct {
		name   string
		final  string
		state  string
		code   int
		detach bool
	}{
		{name: "succeeded", final: "SUCCEEDED", state: "FINISHED", code: ExitOK},
		{name: "failed", final: "FAILED", state: "FINISHED", code: ExitAppFailed},
		{name: "killed", final: "KILLED", state: "KILLED", code: ExitAppFailed},
		{name: "detached", detach: true, code: ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, final: tt.final, tracking: "http://rm:8088/proxy/application_1700000000000_0003/",
				states: []string{"ACCEPTED", "RUNNING", tt.state}}
			dfs := &diskFS{root: t.TempDir()}
			args := []string{"submit", "--conf", "testdata/flink-conf.yaml", "--name", "demo", "--workers", "2", "--files", "testdata/bad.yaml#input.yaml"}
			if tt.detach {
				args = append(args, "--detach")
			}
			args = append(args, "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
			code, out, stderr := runAm(t, clientDeps(t, rm, dfs), map[string]string{"HADOOP_USER_NAME": "alice"}, args...)
			require.Equal(t, tt.code, code, stderr)
			require.Contains(t, out, "submitted application_1700000000000_0003: 2 workers of <memory:4096, vCores:2, yarn.io/gpu: 1>")

			sub := rm.submitted
			require.Equal(t, "demo", sub.Name)
			require.Equal(t, int32(1), sub.MaxAttempts)
			require.Equal(t, []string{`./am run --conf flink-conf.yaml --workers 2 -- sh -c 'echo \$CUDA_VISIBLE_DEVICES' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr`},
				sub.AM.Commands)
			// The client's Hadoop configuration goes to the AM (and to no worker).
			require.Equal(t, []string{"am", "container-launcher", "flink-conf.yaml", "input.yaml", submit.HadoopConfName}, slices.Sorted(maps.Keys(sub.AM.LocalResources)))
			require.Equal(t, submit.HadoopConfName, sub.AM.Env[submit.EnvHadoopConf])
			// The application's report secret, in the AM's credentials (an
			// insecure cluster: nothing else), never in its environment or
			// command line.
			creds, err := security.ParseCredentials(sub.AM.Tokens)
			require.NoError(t, err)
			secret := creds.Secret(contract.ReportSecretAlias)
			require.Len(t, secret, contract.ReportSecretBytes)
			require.Empty(t, creds.Aliases())
			for k, v := range sub.AM.Env {
				require.NotContains(t, v, string(secret), k)
			}
			require.NotContains(t, strings.Join(sub.AM.Commands, " "), string(secret))
			staging := "/user/alice/.xres/application_1700000000000_0003"
			if tt.detach {
				require.Contains(t, out, "follow it with: am status application_1700000000000_0003")
				require.Empty(t, dfs.removed, "a detached submission leaves staging to the AM")
				require.FileExists(t, dfs.p(staging+"/flink-conf.yaml"))
				require.Equal(t, "/user/alice/.xres-shared", path.Dir(path.Dir(sub.AM.LocalResources["am"].URL.File)),
					"xres's binaries go to the user's shared folder, under their hash")
				require.FileExists(t, dfs.p(sub.AM.LocalResources["am"].URL.File))
				return
			}
			require.Contains(t, out, "application_1700000000000_0003 RUNNING tracking URL http://rm:8088/proxy/")
			require.Contains(t, out, "diagnostics: 2 workers succeeded")
			require.Equal(t, []string{staging}, dfs.removed)
			require.NoDirExists(t, dfs.p(staging))
		})
	}
}

func TestSubmitFailsFastOnUnknownResource(t *testing.T) {
	rm := &clientRM{types: []string{"memory-mb", "vcores"}}
	dfs := &diskFS{root: t.TempDir()}
	code, _, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "submit", "--conf", "testdata/flink-conf.yaml", "--", "true")
	require.Equal(t, ExitConfig, code)
	require.Contains(t, stderr, "resource gpu (external-resource.gpu.yarn.config-key=yarn.io/gpu): yarn.io/gpu is not a resource type of this cluster (it offers: memory-mb, vcores)")
	require.Nil(t, rm.submitted)
}

func TestSubmitNeedsTheLauncher(t *testing.T) {
	d := clientDeps(t, &clientRM{}, &diskFS{root: t.TempDir()})
	d.executable = func() (string, error) { return filepath.Join(t.TempDir(), "am"), nil }
	code, _, stderr := runAm(t, d, nil, "submit", "--conf", "testdata/flink-conf.yaml", "--", "true")
	require.Equal(t, ExitConfig, code)
	require.Contains(t, stderr, "container-launcher binary")
	require.Contains(t, stderr, "--launcher PATH")
}

func TestStatus(t *testing.T) {
	amSrv := httptest.NewServer(amweb.NewTracker(staticStatus{amstatus.Status{App: "application_1700000000000_0003", Workers: 2, Running: 2,
		Containers: []amstatus.WorkerStatus{{Container: "container_1700000000000_0003_01_000002", Host: "nm1", State: amstatus.StateRunning,
			Devices: map[string][]resources.Properties{"gpu": {{"index": "1"}}}}}}}, nil))
	defer amSrv.Close()
	rm := &clientRM{tracking: amSrv.URL + "/", states: []string{"RUNNING"}}
	d := clientDeps(t, rm, &diskFS{})
	code, out, stderr := runAm(t, d, nil, "status", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	for _, want := range []string{"state         RUNNING", "progress      50%", "workers: 2 wanted, 2 running", "WORKER", "NODEMANAGER", "DEVICES"} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `container_1700000000000_0003_01_000002 +nm1 +RUNNING +- +gpu=1`, out)
	code, out, _ = runAm(t, d, nil, "status", "--json", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code)
	var st statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, "RUNNING", st.State)
	require.Equal(t, "", st.Diagnostics)
	require.Equal(t, 2, st.AM.Running)
}

type staticStatus struct{ s amstatus.Status }

func (s staticStatus) Status() amstatus.Status                   { return s.s }
func (s staticStatus) ReportDevices(contract.DeviceReport) error { return errors.New("read only") }

func TestKillAndCluster(t *testing.T) {
	node := func(host string, used, total int64) yarn.NodeReport {
		return yarn.NodeReport{ID: host + ":45454", HTTPAddress: host + ":8042", State: "RUNNING", Containers: int(used),
			Capability: yarn.Resource{MemoryMB: 8192, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": total}},
			Used:       yarn.Resource{MemoryMB: 1024 * used, VCores: used, Extra: map[string]int64{"yarn.io/gpu": used}}}
	}
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, nodes: []yarn.NodeReport{node("nm2", 0, 2), node("nm1", 1, 2)},
		states: []string{"RUNNING", "KILLED"}}
	dfs := &diskFS{root: t.TempDir()}
	d := clientDeps(t, rm, dfs)

	code, out, stderr := runAm(t, d, nil, "kill", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	require.Equal(t, "killed application_1700000000000_0003\n", out)
	require.Equal(t, []string{"application_1700000000000_0003"}, rm.killed)
	require.Equal(t, []string{"/user/alice/.xres/application_1700000000000_0003"}, dfs.removed, "kill removes the staging folder")

	code, out, stderr = runAm(t, d, nil, "cluster")
	require.Equal(t, ExitOK, code, stderr)
	golden(t, "cluster.golden.txt", out)

	code, out, _ = runAm(t, d, nil, "cluster", "--json")
	require.Equal(t, ExitOK, code)
	var cl clusterJSON
	require.NoError(t, json.Unmarshal([]byte(out), &cl))
	require.Equal(t, "nm1:45454", cl.Nodes[0].Node)
	require.Equal(t, int64(1), cl.Nodes[0].Used["yarn.io/gpu"])
	require.Equal(t, int64(2), cl.Nodes[1].Capability["yarn.io/gpu"])
	require.True(t, strings.HasPrefix(cl.Nodes[0].HTTP, "nm1"))
}

func TestResourcesClusterCheck(t *testing.T) {
	node := yarn.NodeReport{ID: "nm1:1", Capability: yarn.Resource{MemoryMB: 4096, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2}}}
	envs := map[string]string{"HADOOP_CONF_DIR": "testdata/hadoop"}
	tests := []struct {
		name  string
		types []string
		args  []string
		code  int
		out   string
	}{
		{name: "fits", types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, code: ExitOK,
			out: "cluster check: ok (resource types memory-mb, vcores, yarn.io/gpu; largest NodeManager <memory:4096, vCores:8, yarn.io/gpu: 2>)"},
		{name: "more gpus than a node has", types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, args: []string{"-D", "external-resource.gpu.amount=3"},
			code: ExitConfig, out: "asked 3 per worker, the largest NodeManager has 2"},
		{name: "unknown resource type", types: []string{"memory-mb", "vcores"}, code: ExitConfig,
			out: "yarn.io/gpu is not a resource type of this cluster (it offers: memory-mb, vcores)"},
		{name: "offline", types: []string{"memory-mb", "vcores"}, args: []string{"--offline"}, code: ExitOK, out: "cluster check: skipped (--offline)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := &clientRM{types: tt.types, nodes: []yarn.NodeReport{node}}
			args := append([]string{"resources", "--conf", "testdata/flink-conf.yaml"}, tt.args...)
			code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), envs, args...)
			require.Equal(t, tt.code, code, stderr)
			require.Contains(t, out, tt.out)
		})
	}
}

func TestRESTFlagPicksTheRESTClient(t *testing.T) {
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, final: "SUCCEEDED",
		states: []string{"FINISHED"}}
	d := clientDeps(t, rm, &diskFS{root: t.TempDir()})
	d.rmREST, d.rm = d.rm, nil
	code, _, stderr := runAm(t, d, nil, "submit", "--conf", "testdata/flink-conf.yaml", "--rest", "--", "true")
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = runAm(t, d, nil, "submit", "--conf", "testdata/flink-conf.yaml", "--", "true")
	require.Equal(t, ExitCluster, code, stderr)
	require.Contains(t, stderr, "not wired")
	for _, args := range [][]string{{"status", "--rest", "application_1700000000000_0003"}, {"cluster", "--rest"}} {
		code, _, stderr = runAm(t, d, nil, args...)
		require.Equal(t, ExitOK, code, stderr)
	}
}

// On a Kerberized cluster (hadoop.security.authentication=kerberos), submit
// logs in before anything else; without credentials it stops with exit 3,
// naming the keys and the ticket cache, and submits nothing.
func TestSubmitKerberosWithoutCredentials(t *testing.T) {
	hadoopDir := t.TempDir()
	site := func(name string, kv ...string) {
		var b strings.Builder
		b.WriteString("<configuration>\n")
		for i := 0; i < len(kv); i += 2 {
			fmt.Fprintf(&b, "<property><name>%s</name><value>%s</value></property>\n", kv[i], kv[i+1])
		}
		b.WriteString("</configuration>\n")
		require.NoError(t, os.WriteFile(filepath.Join(hadoopDir, name), []byte(b.String()), 0o644))
	}
	site("core-site.xml", "hadoop.security.authentication", "kerberos", "fs.defaultFS", "hdfs://localhost:1")
	site("yarn-site.xml", "yarn.resourcemanager.address", "localhost:1", "yarn.resourcemanager.principal", "rm/_HOST@EXAMPLE.COM")
	absent := filepath.Join(t.TempDir(), "krb5cc")
	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"no keys, no ticket cache", nil, []string{"no kerberos credentials", "security.kerberos.login.keytab and security.kerberos.login.principal are not set", "no ticket cache " + absent}},
		{"keytab only", []string{"-D", "security.kerberos.login.keytab=/nowhere.keytab"}, []string{"security.kerberos.login.keytab is set but security.kerberos.login.principal is not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
			d := clientDeps(t, rm, &diskFS{root: t.TempDir()})
			d.rm = rpcRM
			args := append([]string{"submit", "--conf", "testdata/flink-conf.yaml"}, tt.extra...)
			args = append(args, "--", "true")
			code, out, stderr := runAm(t, d, map[string]string{"HADOOP_CONF_DIR": hadoopDir, "KRB5CCNAME": absent}, args...)
			require.Equal(t, ExitConfig, code, stderr)
			for _, w := range tt.want {
				require.Contains(t, stderr, w)
			}
			require.NotContains(t, out, "submitted")
		})
	}
}
