//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/submit"
)

// tokenMaxLifetime is the secure cluster's HDFS delegation token max
// lifetime in TestSecureTokensOutliveMaxLifetime (its renew interval is a
// third of it).
const tokenMaxLifetime = 60 * time.Second

// TestSecureTokensOutliveMaxLifetime: on a Kerberized cluster whose HDFS
// delegation tokens live 60 s at most (20 s unrenewed), an application
// whose worker starts after that, on a node where nothing of the
// application was localized yet, reads its staged files there:
//
//   - with the keytab shipped (security.kerberos.login.keytab/.principal),
//     the AM logs in from it, obtains new tokens and starts the worker with
//     the newest one: FINISHED SUCCEEDED, and the AM removes the staging
//     folder (the client, --detach, does not);
//   - without it (yarn.security.kerberos.ship-local-keytab: false) the
//     worker's localization fails on the expired token and the application
//     fails; its AM warned of the max lifetime beforehand.
//
// Node 1 alone carries the label gpu; a first application holds its two
// GPUs until the tokens' max lifetime is over, so both applications'
// workers (label gpu) start only then, while their AMs run on node 0.
func TestSecureTokensOutliveMaxLifetime(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{
		"XRES_SECURE":                           "1",
		"XRES_MINICLUSTER_NODEMANAGERS":         "2",
		"XRES_MINICLUSTER_LABEL_NODES":          "1",
		"XRES_MINICLUSTER_DT_MAX_LIFETIME_MS":   "60000",
		"XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS": "20000",
	})
	krb5Conf, keytab, principal := c.Env["XRES_KRB5_CONF"], c.Env["XRES_CLIENT_KEYTAB"], c.Env["XRES_CLIENT_PRINCIPAL"]
	require.NotEmpty(t, keytab, "cluster.env: XRES_CLIENT_KEYTAB")
	amPath, launcher := amBins(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })

	// conf writes a configuration: workers on the gpu label with gpus GPUs
	// each (asked of YARN, no discovery), the keytab login, and the cluster's
	// Kerberos settings for the AM (its container has no HADOOP_CONF_DIR).
	writeConf := func(name string, gpus int, extra ...string) string {
		lines := append([]string{
			"external-resources: gpu",
			"external-resource.gpu.amount: " + strconv.Itoa(gpus),
			"external-resource.gpu.yarn.config-key: yarn.io/gpu",
			"taskmanager.memory.process.size: 256m",
			"yarn.heartbeat.interval: 1",
			"yarn.taskmanager.node-label: " + nodeLabel,
			conf.KerberosLoginKeytab.Key + ": " + keytab,
			conf.KerberosLoginPrincipal.Key + ": " + principal,
			conf.KerberosKrb5Conf.Key + ": " + krb5Conf,
		}, extra...)
		for _, k := range []string{"fs.defaultFS", "hadoop.security.authentication", "dfs.namenode.kerberos.principal", "yarn.resourcemanager.principal"} {
			lines = append(lines, "flink.hadoop."+k+": "+c.Conf(k))
		}
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		return p
	}
	submitApp := func(ctx context.Context, name, cfg string, worker ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, amPath, append([]string{"submit", "--conf", cfg, "--workers", "1", "--name", name, "--detach", "--"}, worker...)...)
		cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "KRB5_CONFIG="+krb5Conf, "XRES_LAUNCHER="+launcher, "XRES_LOG_LEVEL=info")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "am submit %s:\n%s", name, out)
		m := regexp.MustCompile(`submitted (application_\d+_\d+)`).FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		app := string(m[1])
		c.KeepAppLogs(t, app)
		return app
	}
	krb, err := yarn.NewKerberosFromKeytab(krb5Conf, keytab, principal)
	require.NoError(t, err)
	krb.ServicePrincipal = c.Conf("yarn.resourcemanager.principal")
	cl, err := yarn.NewClient(yarn.ClientConfig{Addrs: rmAddrs(t, c, yarn.RMClient), Kerberos: krb})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	rm := submit.NewRPCRM(cl)
	waitEnded := func(ctx context.Context, app string) yarn.ApplicationReport {
		t.Helper()
		for {
			r, err := rm.ApplicationReport(ctx, app)
			require.NoError(t, err)
			if r.Ended() {
				return r
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s did not end: %+v", app, r)
			case <-time.After(time.Second):
			}
		}
	}
	ctx := rpcCtx(t, 6*time.Minute)

	// The blocker takes node 1's two GPUs until released.
	blockerStarted := filepath.Join(dir, "blocker.started")
	blocker := submitApp(ctx, "xres-it-token-blocker", writeConf("blocker", 2),
		"sh", "-c", `touch `+blockerStarted+`; while [ ! -e `+release+` ]; do sleep 0.2; done`)
	for {
		if _, err := os.Stat(blockerStarted); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the blocker's worker did not start")
		case <-time.After(time.Second):
		}
	}

	submitted := time.Now()
	withKeytab := submitApp(ctx, "xres-it-token-keytab", writeConf("keytab", 1), "true")
	withoutKeytab := submitApp(ctx, "xres-it-token-nokeytab", writeConf("nokeytab", 1,
		conf.YarnShipLocalKeytab.Key+": false", conf.YarnMaxFailedContainers.Key+": 0", conf.SlotRequestTimeout.Key+": 150 s"), "true")
	user := submit.ShortName(principal)
	hdfsClient := secureHDFSClient(t, c, krb)

	// Past the submissions' tokens' max lifetime (with a margin for the
	// RM's and NameNode's clocks), node 1 frees up.
	time.Sleep(time.Until(submitted.Add(tokenMaxLifetime + 15*time.Second)))
	for _, app := range []string{withKeytab, withoutKeytab} {
		r, err := rm.ApplicationReport(ctx, app)
		require.NoError(t, err)
		require.Equal(t, "RUNNING", r.State, "%s before its worker could start: %+v", app, r)
	}
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, "SUCCEEDED", waitEnded(ctx, blocker).FinalStatus)

	t.Run("with the keytab: new tokens, SUCCEEDED, staging removed by the AM", func(t *testing.T) {
		r := waitEnded(ctx, withKeytab)
		require.Equal(t, "SUCCEEDED", r.FinalStatus, "%+v\nAM stderr:\n%s", r, amStderr(t, c, withKeytab))
		_, err := hdfsClient.Stat(ctx, submit.StagingDir(user, withKeytab))
		require.True(t, errors.Is(err, fs.ErrNotExist), "staging folder after the application: %v", err)
		log := amStderr(t, c, withKeytab)
		require.Contains(t, log, "logged in from the shipped keytab")
		require.Contains(t, log, "obtained a new HDFS delegation token for the workers")
		require.NotContains(t, log, "could not")
	})
	t.Run("without the keytab: the worker cannot localize, FAILED, warned before", func(t *testing.T) {
		r := waitEnded(ctx, withoutKeytab)
		log := amStderr(t, c, withoutKeytab)
		require.Equal(t, "FAILED", r.FinalStatus, "%+v\nAM stderr:\n%s", r, log)
		t.Logf("diagnostics of %s: %s", withoutKeytab, r.Diagnostics)
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "max lifetime") || strings.Contains(strings.ToLower(l), "token") {
				t.Logf("AM: %s", l)
			}
		}
		// The NodeManager's localizer: "Token  has expired, current time: … expected renewal time: …".
		require.Contains(t, r.Diagnostics, "exit status -1000")
		require.Regexp(t, `Token .*has expired`, r.Diagnostics)
		require.Contains(t, log, "reaches its max lifetime")
		require.Contains(t, log, conf.KerberosLoginKeytab.Key)
		require.NotContains(t, log, "obtained a new HDFS delegation token")
		_ = hdfsClient.RemoveAll(ctx, submit.StagingDir(user, withoutKeytab))
	})

	// The keytab's bytes are in no container log.
	kt, err := os.ReadFile(keytab)
	require.NoError(t, err)
	for _, d := range c.NodeManagerLogDirs() {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			b, rerr := os.ReadFile(p)
			if rerr == nil && len(kt) > 16 && bytes.Contains(b, kt[len(kt)-16:]) {
				t.Errorf("%s holds keytab bytes", p)
			}
			return nil
		})
	}
}

// secureHDFSClient is a Kerberized HDFS client of c logged in as krb.
func secureHDFSClient(t *testing.T, c *harness.Cluster, krb *yarn.Kerberos) submit.FS {
	t.Helper()
	hc, err := conf.LoadHadoopOptions(conf.HadoopOptions{Getenv: func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	}})
	require.NoError(t, err)
	cl, err := submit.DialHDFS(hc, "", krb)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return submit.NewHDFS(cl)
}
