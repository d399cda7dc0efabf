package amcli

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/submit"
)

const sentinelSecret = "xres-sentinel-secret"

// argvOf splits a container command built by amplan.Command for a worker
// without quoting (plain words) and drops the log redirections.
func argvOf(t *testing.T, cmd string) []string {
	t.Helper()
	var out []string
	for _, f := range strings.Fields(cmd) {
		if strings.HasPrefix(f, "1>") || strings.HasPrefix(f, "2>") {
			continue
		}
		require.NotContains(t, f, "'", "argvOf takes plain words only")
		out = append(out, f)
	}
	return out
}

// TestDynamicOverridesStayOffCommandLines follows a -D secret from am
// submit through the AM to a worker's launcher: no launch context, command,
// environment or submission context carries it, and the files the worker's
// launcher is told to read give it back (origin -D).
func TestDynamicOverridesStayOffCommandLines(t *testing.T) {
	secret := []byte(sentinelSecret)

	// am submit, against a scripted RM and a local-disk "HDFS".
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}, final: "SUCCEEDED",
		states: []string{"FINISHED"}}
	dfs := &diskFS{root: t.TempDir()}
	code, out, stderr := runAm(t, clientDeps(t, rm, dfs), map[string]string{"HADOOP_USER_NAME": "alice"},
		"submit", "--conf", "testdata/flink-conf.yaml", "-D", "s3.secret-key="+sentinelSecret, "-Drest.bind-address=127.0.0.1", "-D"+amplan.KeyHeartbeat+"=1",
		"--workers", "2", "--detach", "--", "true")
	require.Equal(t, ExitOK, code, stderr)
	require.NotContains(t, out+stderr, sentinelSecret)

	sub := rm.submitted
	wire, err := proto.Marshal(yarn.LaunchProto(sub.AM))
	require.NoError(t, err)
	require.False(t, bytes.Contains(wire, secret), "the AM's launch context carries the secret")
	require.NotContains(t, fmt.Sprintf("%+v", *sub), sentinelSecret, "the submission carries the secret")
	amCmd := sub.AM.Commands
	require.Equal(t, []string{"./am run --conf flink-conf.yaml --dynamic-file xres-dynamic.json --workers 2 -- true 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"}, amCmd)

	// The AM container: its staged files localized in its working folder.
	container := t.TempDir()
	amEnv := map[string]string{"NM_HOST": "127.0.0.1", "CONTAINER_ID": "container_1700000000000_0003_01_000001"}
	maps.Copy(amEnv, sub.AM.Env)
	for name, lr := range sub.AM.LocalResources {
		data, err := os.ReadFile(dfs.p(lr.URL.File))
		require.NoError(t, err)
		require.Equal(t, lr.Size, int64(len(data)))
		require.NoError(t, os.WriteFile(filepath.Join(container, name), data, 0o600))
	}
	require.FileExists(t, filepath.Join(container, submit.DynamicFileName))
	t.Chdir(container)

	srm, nm := &scriptRM{exits: []int{0, 0}}, &reportingNM{}
	code, out, stderr = runAm(t, fakeDeps(srm, nm), amEnv, argvOf(t, amCmd[0])[1:]...)
	require.Equal(t, ExitOK, code, stderr)
	require.NotContains(t, out+stderr, sentinelSecret)
	require.True(t, strings.HasPrefix(srm.reg.TrackingURL, "http://127.0.0.1:"), "the AM read rest.bind-address from the dynamic file: %s", srm.reg.TrackingURL)

	require.Len(t, nm.launches, 2)
	for _, l := range nm.launches {
		require.NotContains(t, l.String(), sentinelSecret)
		require.NotContains(t, strings.Join(l.Commands, " "), sentinelSecret)
		for k, v := range l.Env {
			require.NotContains(t, k+"="+v, sentinelSecret)
		}
		for name, r := range l.LocalResources {
			require.NotContains(t, name+" "+r.URL.String(), sentinelSecret)
		}
		require.False(t, bytes.Contains(l.Tokens, secret))
		wire, err := proto.Marshal(yarn.LaunchProto(l))
		require.NoError(t, err)
		require.False(t, bytes.Contains(wire, secret), "a worker's launch context carries the secret")
		require.Contains(t, l.LocalResources, submit.DynamicFileName, "workers get the dynamic file")
	}
	workerCmd := nm.launches[0].Commands[0]
	require.Equal(t, "./container-launcher --conf flink-conf.yaml --dynamic-file xres-dynamic.json -- true 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr", workerCmd)

	// What the worker's launcher reads from the same files (its own
	// --conf/--dynamic-file handling is tested in driver/launch,
	// TestRunLoadsDynamicFile): the secret, with origin -D.
	argv := argvOf(t, workerCmd)
	require.Equal(t, "--dynamic-file", argv[3])
	dyn, err := conf.WithDynamicFile(argv[4], nil)
	require.NoError(t, err)
	loaded, err := conf.Load(argv[2], dyn)
	require.NoError(t, err)
	v, ok := loaded.Get("s3.secret-key")
	require.True(t, ok)
	require.Equal(t, sentinelSecret, v)
	require.Equal(t, conf.OriginDynamic, loaded.Origin("s3.secret-key"))
}

// TestRunDynamicFileMustBeStaged: am run passes its --dynamic-file on to
// the workers by name, so a file that is not staged is a config error
// before anything is connected.
func TestRunDynamicFileMustBeStaged(t *testing.T) {
	dyn := filepath.Join(t.TempDir(), "mine.json")
	require.NoError(t, conf.WriteDynamicFile(dyn, []string{"s3.secret-key=" + sentinelSecret}))
	called := false
	d := fakeDeps(&scriptRM{}, &reportingNM{})
	inner := d.amClients
	d.amClients = func(ctx context.Context, getenv func(string) string, ae submit.AMEnv, set amplan.Settings, log logrus.FieldLogger) (amClients, error) {
		called = true
		return inner(ctx, getenv, ae, set, log)
	}
	code, _, stderr := runAm(t, d, map[string]string{"NM_HOST": "127.0.0.1"}, "run", "--conf", "testdata/flink-conf.yaml", "--dynamic-file", dyn, "--", "true")
	require.Equal(t, ExitConfig, code, stderr)
	require.Contains(t, stderr, "--dynamic-file "+dyn+": mine.json is not among the staged files")
	require.NotContains(t, stderr, sentinelSecret)
	require.False(t, called)
}

// TestBadDynamicFileIsAConfigError: submit, run and resources name the
// file, never a value.
func TestBadDynamicFileIsAConfigError(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(notJSON, []byte("s3.secret-key: "+sentinelSecret+"\n"), 0o600))
	number := filepath.Join(dir, "number.json")
	require.NoError(t, os.WriteFile(number, []byte("{\"parallelism.default\": 4}\n"), 0o600))
	tests := []struct {
		name string
		file string
		want string
	}{
		{name: "missing", file: filepath.Join(dir, "absent.json"), want: "read dynamic file " + filepath.Join(dir, "absent.json")},
		{name: "not JSON", file: notJSON, want: notJSON + ":1: malformed flink configuration: malformed JSON"},
		{name: "non-string value", file: number, want: number + ":1: malformed flink configuration: key parallelism.default: the value must be a JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range []string{"submit", "run", "resources"} {
				rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
				args := []string{cmd, "--conf", "testdata/flink-conf.yaml", "--dynamic-file", tt.file}
				if cmd != "resources" {
					args = append(args, "--", "true")
				}
				code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{root: t.TempDir()}), nil, args...)
				require.Equal(t, ExitConfig, code, "%s: %s", cmd, stderr)
				require.Contains(t, stderr, tt.want, cmd)
				require.NotContains(t, out+stderr, sentinelSecret)
				require.Nil(t, rm.submitted)
			}
		})
	}
}

// TestSubmitDynamicFileAndDashD: am submit merges its own --dynamic-file
// with -D (which wins) into the one staged file.
func TestSubmitDynamicFileAndDashD(t *testing.T) {
	mine := filepath.Join(t.TempDir(), "mine.json")
	require.NoError(t, conf.WriteDynamicFile(mine, []string{"s3.secret-key=" + sentinelSecret, "parallelism.default=2"}))
	rm := &clientRM{types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
	dfs := &diskFS{root: t.TempDir()}
	code, out, stderr := runAm(t, clientDeps(t, rm, dfs), map[string]string{"HADOOP_USER_NAME": "alice"},
		"submit", "--conf", "testdata/flink-conf.yaml", "--dynamic-file", mine, "-D", "parallelism.default=4", "--detach", "--", "true")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "2 workers of", "the plan used -D's parallelism 4 (2 slots per worker)")
	staged, err := conf.ReadDynamicFile(dfs.p("/user/alice/.xres/application_1700000000000_0003/" + submit.DynamicFileName))
	require.NoError(t, err)
	require.Equal(t, []string{"parallelism.default=4", "s3.secret-key=" + sentinelSecret}, staged)
	wire, err := proto.Marshal(yarn.LaunchProto(rm.submitted.AM))
	require.NoError(t, err)
	require.False(t, bytes.Contains(wire, []byte(sentinelSecret)))
	require.NotContains(t, strings.Join(rm.submitted.AM.Commands, " "), mine, "the client's path is not the container's")
}
