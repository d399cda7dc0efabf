//go:build integration

package integration

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/submit"
)

// TestSecureSubmit runs am submit, the real binary, against the secure
// minicluster (Kerberos everywhere): it logs in with the client keytab named
// by Flink's security.kerberos.login.* keys, stages over Kerberized HDFS,
// hands the AM an HDFS delegation token (the NodeManager localizes the AM's
// files with it, the AM passes it on and the worker's files are localized
// with it too), and removes the staging folder. Without credentials it fails
// at once with exit 3, naming what is missing.
func TestSecureSubmit(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{
		"XRES_SECURE":                   "1",
		"XRES_MINICLUSTER_NODEMANAGERS": "1",
	})
	require.Equal(t, "kerberos", c.Conf("hadoop.security.authentication"))
	krb5Conf, keytab, principal := c.Env["XRES_KRB5_CONF"], c.Env["XRES_CLIENT_KEYTAB"], c.Env["XRES_CLIENT_PRINCIPAL"]
	require.NotEmpty(t, keytab, "cluster.env: XRES_CLIENT_KEYTAB")
	amPath, launcher := amBins(t)

	// runAM runs am submit with HADOOP_CONF_DIR of the secure cluster and env.
	runAM := func(t *testing.T, ctx context.Context, env []string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, amPath, args...)
		cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "KRB5_CONFIG="+krb5Conf,
			"XRES_LAUNCHER="+launcher, "XRES_LOG_LEVEL=info")
		cmd.Env = append(cmd.Env, env...)
		cmd.WaitDelay = 5 * time.Second
		var out, errOut lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code = 0
		if err != nil {
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "am %s\nstderr:\n%s", strings.Join(args, " "), errOut.String())
			code = ee.ExitCode()
		}
		return out.String(), errOut.String(), code
	}

	// secureHDFS is a Kerberized HDFS client logged in from the client keytab.
	secureHDFS := func(t *testing.T) *hdfs.Client {
		t.Helper()
		hc, err := conf.LoadHadoopOptions(conf.HadoopOptions{Getenv: func(k string) string {
			if k == "HADOOP_CONF_DIR" {
				return c.ConfDir
			}
			return ""
		}})
		require.NoError(t, err)
		krb, err := yarn.NewKerberosFromKeytab(krb5Conf, keytab, principal)
		require.NoError(t, err)
		cl, err := submit.DialHDFS(hc, submit.ShortName(principal), krb)
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		return cl
	}

	t.Run("keytab login: FINISHED SUCCEEDED, staging removed", func(t *testing.T) {
		ctx := rpcCtx(t, 4*time.Minute)
		dir := t.TempDir()
		cfg := writeAMConf(t, dir, 1,
			conf.KerberosLoginKeytab.Key+": "+keytab,
			conf.KerberosLoginPrincipal.Key+": "+principal)
		// An empty ticket cache must not matter when the keytab is configured.
		stdout, stderr, code := runAM(t, ctx, []string{"KRB5CCNAME=" + filepath.Join(dir, "no-such-ccache")},
			"submit", "--conf", cfg, "--workers", "1", "--name", "xres-secure-submit", "--", "true")
		m := regexp.MustCompile(`submitted (application_\d+_\d+)`).FindStringSubmatch(stdout)
		require.NotNil(t, m, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		appID := m[1]
		c.KeepAppLogs(t, appID)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stdout, appID+" finished: FINISHED SUCCEEDED")
		// The worker's container, localized from HDFS with the token the AM
		// passed on, ran its command.
		require.Contains(t, stdout, "diagnostics: 1 workers succeeded")
		require.NotContains(t, stderr, "staging folder left behind")

		// The application ran as the principal's short name, and its staging
		// folder is gone (checked over Kerberized HDFS).
		user := submit.ShortName(principal)
		_, err := secureHDFS(t).Stat(submit.StagingDir(user, appID))
		require.True(t, errors.Is(err, fs.ErrNotExist), "staging folder %s: %v", submit.StagingDir(user, appID), err)
	})

	t.Run("ticket cache (kinit): submit --detach, am kill removes staging", func(t *testing.T) {
		kinit, err := exec.LookPath("kinit")
		require.NoError(t, err, "kinit fills the ticket cache here (Debian: apt-get install krb5-user; .ci/run installs it)")
		ctx := rpcCtx(t, 3*time.Minute)
		dir := t.TempDir()
		ccache := "FILE:" + filepath.Join(dir, "krb5cc")
		kc := exec.CommandContext(ctx, kinit, "-kt", keytab, principal)
		kc.Env = append(os.Environ(), "KRB5_CONFIG="+krb5Conf, "KRB5CCNAME="+ccache)
		out, err := kc.CombinedOutput()
		require.NoError(t, err, "kinit: %s", out)
		env := []string{"KRB5CCNAME=" + ccache}
		cfg := writeAMConf(t, dir, 1)
		stdout, stderr, code := runAM(t, ctx, env, "submit", "--conf", cfg, "--workers", "1", "--detach", "--", "sleep", "300")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		m := regexp.MustCompile(`submitted (application_\d+_\d+)`).FindStringSubmatch(stdout)
		require.NotNil(t, m, stdout)
		appID := m[1]
		c.KeepAppLogs(t, appID)
		user := submit.ShortName(principal)
		hdfsClient := secureHDFS(t)
		_, err = hdfsClient.Stat(submit.StagingDir(user, appID))
		require.NoError(t, err, "staging folder while the application runs")

		stdout, stderr, code = runAM(t, ctx, env, "kill", appID)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stdout, "killed "+appID)
		require.NotContains(t, stderr, "staging folder left behind")
		_, err = hdfsClient.Stat(submit.StagingDir(user, appID))
		require.True(t, errors.Is(err, fs.ErrNotExist), "staging folder after am kill: %v", err)
	})

	t.Run("no credentials: exit 3 naming what is missing", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			ccache  func(dir string) string
			wantErr []string
		}{
			{"no ticket cache", func(dir string) string { return filepath.Join(dir, "absent") },
				[]string{"no kerberos credentials", conf.KerberosLoginKeytab.Key, conf.KerberosLoginPrincipal.Key, "no ticket cache"}},
			{"empty ticket cache", func(dir string) string {
				p := filepath.Join(dir, "empty")
				require.NoError(t, os.WriteFile(p, nil, 0o600))
				return p
			}, []string{"no kerberos credentials", conf.KerberosLoginKeytab.Key, "ticket cache is not usable", "is empty or not a ticket cache"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := rpcCtx(t, time.Minute)
				dir := t.TempDir()
				cfg := writeAMConf(t, dir, 1)
				_, stderr, code := runAM(t, ctx, []string{"KRB5CCNAME=" + tc.ccache(dir)},
					"submit", "--conf", cfg, "--workers", "1", "--", "true")
				require.Equal(t, 3, code, "stderr:\n%s", stderr)
				for _, w := range tc.wantErr {
					require.Contains(t, stderr, w)
				}
				require.NotContains(t, stderr, "submitted application_")
			})
		}
	})
}
