package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeExtraEnv points run.sh at the fake launcher of testdata/fakejdk-extra and the fake
// Maven, in the test's environment (StartExtra passes its environment on).
func fakeExtraEnv(t *testing.T) {
	jdk, err := filepath.Abs("testdata/fakejdk-extra")
	require.NoError(t, err)
	mvn, err := filepath.Abs("testdata/fakemvn")
	require.NoError(t, err)
	tmp := t.TempDir()
	t.Setenv("JAVA_HOME", jdk)
	t.Setenv("PATH", mvn+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XRES_MINICLUSTER_BUILD_DIR", filepath.Join(tmp, "build"))
	t.Setenv("XRES_MINICLUSTER_JVM_DIRS", filepath.Join(tmp, "no-jvms"))
	t.Setenv("XRES_MINICLUSTER_STOP_GRACE", "2")
	t.Setenv(EnvLogs, filepath.Join(tmp, "logs"))
	for _, k := range portVars {
		t.Setenv(k, "1") // never used: StartExtra picks its own
	}
}

func alive(pid int) bool {
	return exec.Command("kill", "-0", strconv.Itoa(pid)).Run() == nil
}

func TestStartExtra(t *testing.T) {
	fakeExtraEnv(t)
	var pid int
	var work string
	t.Run("started", func(t *testing.T) {
		c := StartExtra(t, map[string]string{"XRES_RPC_PROTECTION": "privacy", "XRES_SECURE": "1"})
		args := c.Env["XRES_FAKE_ARGS"]
		require.Contains(t, args, "--rpc-protection=privacy")
		require.Contains(t, args, "--secure=true")
		require.Contains(t, args, fmt.Sprintf("--owner-pid=%d", os.Getpid()))
		// Every fixed port is a free one of our range, none a default.
		for _, name := range []string{"nn-port", "nn-http-port", "rm-port", "rm-scheduler-port", "rm-tracker-port", "rm-admin-port", "rm-webapp-port"} {
			_, rest, ok := strings.Cut(args, "--"+name+"=")
			require.True(t, ok, "--%s in %s", name, args)
			port, err := strconv.Atoi(strings.Fields(rest)[0])
			require.NoError(t, err)
			require.True(t, port >= portMin && port < portMax, "--%s=%d", name, port)
		}
		require.True(t, strings.HasPrefix(c.RMWebURL, "http://localhost:"), c.RMWebURL)
		require.NotEqual(t, "http://localhost:8088", c.RMWebURL)
		require.NotEqual(t, "localhost:8020", c.NameNode)
		require.Equal(t, filepath.Join(c.workDir, "conf"), c.ConfDir)
		require.False(t, c.Started, "Stop and harness.Main must leave an extra cluster alone")
		var err error
		pid, err = strconv.Atoi(c.Env["XRES_FAKE_PID"])
		require.NoError(t, err)
		require.True(t, alive(pid))
		work = c.workDir
	})
	require.NotZero(t, pid)
	// The test's cleanup stopped it.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, alive(pid), "extra cluster pid %d still running after its test", pid)
	require.NoDirExists(t, work, "the state folder is the test's temporary folder")
}

func TestMergeEnv(t *testing.T) {
	tests := []struct {
		name string
		base []string
		set  map[string]string
		want []string
	}{
		{"adds", []string{"A=1"}, map[string]string{"B": "2"}, []string{"A=1", "B=2"}},
		{"replaces", []string{"A=1", "B=1"}, map[string]string{"B": "2"}, []string{"A=1", "B=2"}},
		{"value with =", []string{"A=x=y"}, map[string]string{"C": "a=b"}, []string{"A=x=y", "C=a=b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ElementsMatch(t, tc.want, mergeEnv(tc.base, tc.set))
		})
	}
}
