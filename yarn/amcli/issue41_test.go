package amcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

// kerberizedHadoopDir is a HADOOP_CONF_DIR of a Kerberized cluster whose
// RM and NameNode are never reached (the login comes first).
func kerberizedHadoopDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	site := func(name string, kv ...string) {
		var b strings.Builder
		b.WriteString("<configuration>\n")
		for i := 0; i < len(kv); i += 2 {
			fmt.Fprintf(&b, "<property><name>%s</name><value>%s</value></property>\n", kv[i], kv[i+1])
		}
		b.WriteString("</configuration>\n")
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644))
	}
	site("core-site.xml", "hadoop.security.authentication", "kerberos", "fs.defaultFS", "hdfs://localhost:1")
	site("yarn-site.xml", "yarn.resourcemanager.address", "localhost:1", "yarn.resourcemanager.principal", "rm/_HOST@EXAMPLE.COM")
	return dir
}

// keytabSecret stands for key material: it must never be printed.
const keytabSecret = "KEYTAB-SECRET-BYTES"

// badKeytabs are keytab files the login must refuse as configuration
// errors, and what the error says.
func badKeytabs(t *testing.T) map[string]struct{ path, want string } {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	// A real keytab, of another principal.
	kt := keytab.New()
	require.NoError(t, kt.AddEntry("bob", "EXAMPLE.COM", keytabSecret, time.Unix(0, 0), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	other, err := kt.Marshal()
	require.NoError(t, err)
	return map[string]struct{ path, want string }{
		"text":                 {write("text.keytab", []byte("password="+keytabSecret+"\n")), "is not a keytab (29 bytes"},
		"truncated":            {write("trunc.keytab", append([]byte{5, 2, 0, 0, 0, 90}, keytabSecret...)), "does not parse as a keytab"},
		"another principal":    {write("bob.keytab", other), "holds no key of security.kerberos.login.principal alice@EXAMPLE.COM"},
		"a folder, not a file": {dir, "not a regular file"},
	}
}

// Issue 41: a malformed keytab made am submit exit 4 (a cluster error) and
// quoted the file's bytes (gokrb5's parser puts them in its message). It
// is a configuration error (exit 3) naming the key and the file, never
// its contents, found before any KDC or RM is asked.
func TestSubmitRefusesABadKeytabWithoutQuotingIt(t *testing.T) {
	hadoopDir := kerberizedHadoopDir(t)
	for name, kt := range badKeytabs(t) {
		t.Run(name, func(t *testing.T) {
			rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
			d := clientDeps(t, rm, &diskFS{root: t.TempDir()})
			d.rm = rpcRM
			code, out, stderr := runAm(t, d, map[string]string{"HADOOP_CONF_DIR": hadoopDir}, "submit", "--conf", "testdata/flink-conf.yaml",
				"-D", "security.kerberos.login.keytab="+kt.path, "-D", "security.kerberos.login.principal=alice@EXAMPLE.COM", "--", "true")
			require.Equal(t, ExitConfig, code, stderr)
			require.Contains(t, stderr, "security.kerberos.login.keytab")
			require.Contains(t, stderr, kt.path)
			require.Contains(t, stderr, kt.want)
			require.NotContains(t, out+stderr, keytabSecret)
			require.NotContains(t, out+stderr, "KEYTAB")
			require.NotContains(t, out, "submitted")
		})
	}
}

// Issue 41: am resources' cluster check logged in from the ticket cache
// whatever security.kerberos.login.keytab and .principal said, so it
// checked another login than am submit's. It logs in as submit does: a bad
// keytab is the error it reports (exit 3), without the keytab's bytes.
func TestResourcesClusterCheckLogsInWithTheKeytab(t *testing.T) {
	hadoopDir := kerberizedHadoopDir(t)
	kt := badKeytabs(t)["truncated"]
	d := deps{rm: rpcRM}
	code, out, stderr := runAm(t, d, map[string]string{"HADOOP_CONF_DIR": hadoopDir, "KRB5CCNAME": filepath.Join(t.TempDir(), "nocache")},
		"resources", "--conf", "testdata/flink-conf.yaml",
		"-D", "security.kerberos.login.keytab="+kt.path, "-D", "security.kerberos.login.principal=alice@EXAMPLE.COM")
	require.Equal(t, ExitConfig, code, out+stderr)
	require.Contains(t, out, "security.kerberos.login.keytab "+kt.path+" does not parse as a keytab")
	require.NotContains(t, out, "ticket cache", "the keytab is used, not the ticket cache")
	require.NotContains(t, out+stderr, keytabSecret)
}

// Issue 41: am resources -D rest.bind-port=70000 exited 0 and am submit
// submitted, while the AM refused it when binding its tracking server. Both
// now refuse what the AM refuses (exit 3, naming the key), with the AM's
// parser, and am resources also runs the AM's settings load (amplan.Load).
func TestResourcesAndSubmitRefuseWhatTheAMRefuses(t *testing.T) {
	for _, tc := range []struct{ d, want string }{
		{"rest.bind-port=70000", `rest.bind-port`},
		{"rest.bind-port=50100-50000", `rest.bind-port`},
		{"rest.bind-port=http", `rest.bind-port`},
		{"yarn.appmaster.vcores=0", "must be positive"},
	} {
		t.Run(tc.d, func(t *testing.T) {
			code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--offline", "-D", tc.d)
			require.Equal(t, ExitConfig, code, out+stderr)
			require.Contains(t, out, tc.want)
			code, _, stderr = runAm(t, deps{}, nil, "submit", "--conf", "testdata/flink-conf.yaml", "-D", tc.d, "--", "true")
			require.Equal(t, ExitConfig, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
	for _, ok := range []string{"rest.bind-port=0", "rest.bind-port=50100-50200", "rest.bind-port=50100,50105-50110"} {
		code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--offline", "-D", ok)
		require.Equal(t, ExitOK, code, out+stderr)
	}
}

// Issue 41: a worker group's command with an unclosed quote was refused
// by am resources and am submit with the whole command in the message,
// the password it carries included. The error says where (key, column)
// and never repeats the value.
func TestUnclosedQuoteInACommandIsNotEchoed(t *testing.T) {
	f := filepath.Join(t.TempDir(), "flink-conf.yaml")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join([]string{
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"xres.worker-groups: a",
		"xres.worker-group.a.external-resources: gpu",
		"xres.worker-group.a.external-resource.gpu.amount: 1",
		"xres.worker-group.a.workers: 1",
		"xres.worker-group.a.command: tool --password hunter2secret 'x",
	}, "\n")+"\n"), 0o644))
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", f, "--offline")
	require.Equal(t, ExitConfig, code, out+stderr)
	require.Contains(t, out, "xres.worker-group.a.command")
	require.Contains(t, out, "unclosed single quote (opened at column 31)")
	require.NotContains(t, out+stderr, "hunter2secret")
	code, out, stderr = runAm(t, deps{}, nil, "resources", "--conf", f, "--offline", "--json")
	require.Equal(t, ExitConfig, code, out+stderr)
	require.NotContains(t, out+stderr, "hunter2secret")
	code, out, stderr = runAm(t, deps{}, nil, "submit", "--conf", f, "--", "true")
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, stderr, "xres.worker-group.a.command")
	require.Contains(t, stderr, "column 31")
	require.NotContains(t, out+stderr, "hunter2secret")
}

// Issue 41: --conf /dev/zero (read until OOM) or a FIFO (blocked for
// ever) is a configuration error at once, naming the file: am resources
// and am submit exit 3, the launcher and its check 211.
func TestNonRegularConfIsRefusedEverywhere(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "flink-conf.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer: a read would wait for ever
	require.NoError(t, err)
	defer w.Close()
	for _, path := range []string{"/dev/zero", fifo} {
		code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", path, "--offline")
		require.Equal(t, ExitConfig, code, out+stderr)
		require.Contains(t, stderr, path)
		require.Contains(t, stderr, "not a regular file")
		code, _, stderr = runAm(t, deps{}, nil, "submit", "--conf", path, "--", "true")
		require.Equal(t, ExitConfig, code, stderr)
		require.Contains(t, stderr, "not a regular file")
		code, _, stderr = launcherRun(t, nil, "--conf", path, "--", "true")
		require.Equal(t, resources.LauncherExitConfig, code, stderr)
		require.Contains(t, stderr, path)
		code, out, _ = launcherRun(t, nil, "check", "--conf", path)
		require.Equal(t, resources.LauncherExitConfig, code, out)
		require.Contains(t, out, "not a regular file")
	}
}
