package harness

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envMainRole makes the test binary a suite's process (mainChild): it runs runMain
// against a fake run.sh and ends as the role says.
const envMainRole = "XRES_HARNESS_TEST_MAIN_ROLE"

// fakeRunSh stands in for run.sh: it records each verb with the owner pid it was given in
// $XRES_MINICLUSTER_DIR/calls; status says no cluster runs; start writes cluster.env naming
// the conf dir the parent test wrote.
const fakeRunSh = `#!/bin/bash
echo "$1 ${XRES_MINICLUSTER_OWNER_PID:-none}" >> "$XRES_MINICLUSTER_DIR/calls"
case $1 in
status) exit 1 ;;
start) echo "XRES_HADOOP_CONF_DIR=$XRES_MINICLUSTER_DIR/conf" > "$XRES_MINICLUSTER_DIR/cluster.env" ;;
esac
exit 0
`

// TestMain makes the test binary TestMainStopsWhatItStarted's suite process when asked
// (envMainRole); else it runs the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(envMainRole); role != "" {
		os.Exit(mainChild(role))
	}
	os.Exit(m.Run())
}

// mainChild is a suite's process: runMain against the fake run.sh, with tests that fail,
// panic or wait for a signal, as role says.
func mainChild(role string) int {
	dir := os.Getenv(EnvMiniclusterDir)
	miniclusterScript = func(string) string { return filepath.Join(dir, "run.sh") }
	sigs := make(chan os.Signal, 1)
	signalNotify(sigs)
	return runMain(func() int {
		switch role {
		case "fail":
			return 1
		case "panic":
			go panic("a test panicked")
		}
		if err := os.WriteFile(filepath.Join(dir, "running"), nil, 0o644); err != nil {
			return 3
		}
		select {}
	}, sigs, os.Exit)
}

// A suite's process stops the cluster it started on every way out: its tests failing, a
// signal (SIGTERM, as make or CI sends on a timeout, SIGINT from the terminal); and where it
// cannot act (a test's panic, go test's -timeout, SIGKILL) it started the cluster with its own
// pid as the owner, so that the cluster stops by itself (run.sh --owner-pid). A failed make
// test once left its cluster running on the default ports for an hour.
func TestMainStopsWhatItStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"clusterInfo":{"state":"STARTED","haState":"ACTIVE"}}`)
	}))
	defer rm.Close()
	for _, tc := range []struct {
		role     string
		signal   syscall.Signal
		wantStop bool
	}{
		{role: "fail", wantStop: true},
		{role: "signal", signal: syscall.SIGTERM, wantStop: true},
		{role: "signal", signal: syscall.SIGINT, wantStop: true},
		{role: "panic"},
	} {
		t.Run(strings.TrimSuffix(tc.role+" "+map[bool]string{true: tc.signal.String()}[tc.signal != 0], " "), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte(fakeRunSh), 0o755))
			conf := filepath.Join(dir, "conf")
			require.NoError(t, os.Mkdir(conf, 0o755))
			site := func(name, key, value string) {
				require.NoError(t, os.WriteFile(filepath.Join(conf, name), []byte("<configuration><property><name>"+key+
					"</name><value>"+value+"</value></property></configuration>"), 0o644))
			}
			site("yarn-site.xml", "yarn.resourcemanager.webapp.address", strings.TrimPrefix(rm.URL, "http://"))
			site("core-site.xml", "fs.defaultFS", "hdfs://127.0.0.1:1")

			cmd := exec.Command(os.Args[0])
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.Env = append(os.Environ(), envMainRole+"="+tc.role, EnvMiniclusterDir+"="+dir, EnvLogs+"="+filepath.Join(dir, "logs"))
			cmd.Env = withoutEnv(cmd.Env, EnvConfDir, EnvKeep, envOwnerPID)
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if tc.signal != 0 {
				deadline := time.Now().Add(2 * time.Minute)
				for {
					if _, err := os.Stat(filepath.Join(dir, "running")); err == nil {
						break
					}
					require.True(t, time.Now().Before(deadline), "the child's tests never ran: %s", out.String())
					time.Sleep(10 * time.Millisecond)
				}
				require.NoError(t, cmd.Process.Signal(tc.signal))
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("the child did not end: %s", out.String())
			}
			require.Error(t, err, "the child's run failed: %s", out.String())
			calls, rerr := os.ReadFile(filepath.Join(dir, "calls"))
			require.NoError(t, rerr, out.String())
			require.Contains(t, string(calls), fmt.Sprintf("start %d\n", cmd.Process.Pid),
				"the cluster was started with the suite's process as its owner: %s", out.String())
			if tc.wantStop {
				require.Contains(t, string(calls), "\nstop ", "the suite's process stopped the cluster it started: %s", out.String())
			}
		})
	}
}

// withoutEnv is env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && k != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
