package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests drive docker/hadoop-minicluster/run.sh with a fake JDK (testdata/fakejdk)
// and a fake Maven (testdata/fakemvn) in temporary folders: every message a user sees
// for bad input, without Hadoop. Ports are free ones, so a real cluster may be running.

// runSh is one isolated run.sh setup.
type runSh struct {
	t      *testing.T
	script string
	work   string
	env    map[string]string
}

// tools run.sh and the fakes need; linked into a private PATH without java and mvn.
var runShTools = []string{"bash", "env", "sed", "head", "cat", "grep", "tr", "sha256sum", "cut",
	"find", "sort", "xargs", "timeout", "sleep", "mkdir", "rm", "mv", "tail", "setsid",
	"dirname", "hostname", "getent", "true"}

func newRunSh(t *testing.T, withMvn bool) *runSh {
	t.Helper()
	root, err := repoRoot()
	require.NoError(t, err)
	tmp := t.TempDir()
	tools := filepath.Join(tmp, "tools")
	require.NoError(t, os.MkdirAll(tools, 0o755))
	for _, name := range runShTools {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("run.sh tests need %s on PATH: %v", name, err)
		}
		require.NoError(t, os.Symlink(p, filepath.Join(tools, name)))
	}
	path := tools
	if withMvn {
		mvn, err := filepath.Abs("testdata/fakemvn")
		require.NoError(t, err)
		path = mvn + ":" + tools
	}
	jdk, err := filepath.Abs("testdata/fakejdk")
	require.NoError(t, err)
	r := &runSh{
		t:      t,
		script: filepath.Join(root, "docker", "hadoop-minicluster", "run.sh"),
		work:   filepath.Join(tmp, "work"),
		env: map[string]string{
			"PATH":                        path,
			"HOME":                        tmp,
			"JAVA_HOME":                   jdk,
			"XRES_MINICLUSTER_DIR":        filepath.Join(tmp, "work"),
			"XRES_MINICLUSTER_BUILD_DIR":  filepath.Join(tmp, "build"),
			"XRES_MINICLUSTER_JVM_DIRS":   filepath.Join(tmp, "no-jvms"),
			"XRES_MINICLUSTER_TIMEOUT":    "15",
			"XRES_MINICLUSTER_STOP_GRACE": "1",
		},
	}
	for _, k := range []string{"XRES_NN_PORT", "XRES_NN_HTTP_PORT", "XRES_RM_PORT", "XRES_RM_SCHEDULER_PORT",
		"XRES_RM_TRACKER_PORT", "XRES_RM_ADMIN_PORT", "XRES_RM_WEBAPP_PORT"} {
		r.env[k] = fmt.Sprint(freePort(t))
	}
	t.Cleanup(func() { r.run("stop") })
	return r
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs run.sh verb and returns its combined output and exit status.
func (r *runSh) run(args ...string) (string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{r.script}, args...)...)
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	default:
		r.t.Fatalf("run.sh %v: %v\n%s", args, err, out)
		return "", -1
	}
}

func TestRunShBadInput(t *testing.T) {
	tests := []struct {
		name    string
		withMvn bool
		env     map[string]string
		setup   func(t *testing.T, r *runSh)
		want    []string
	}{
		{
			name:    "no JDK 17",
			withMvn: true,
			env:     map[string]string{"FAKE_JAVA_VERSION": "25"},
			want:    []string{"error: no JDK 17 found", "(java 25)", "set JAVA_HOME"},
		},
		{
			name: "no Maven",
			want: []string{"error: mvn not found on PATH"},
		},
		{
			name:    "Maven fails",
			withMvn: true,
			env:     map[string]string{"FAKE_MVN_FAIL": "1"},
			want:    []string{"error: Maven build of the launcher failed", "[ERROR] Could not resolve dependencies (fake)"},
		},
		{
			name:    "port in use",
			withMvn: true,
			setup: func(t *testing.T, r *runSh) {
				l, err := net.Listen("tcp", "127.0.0.1:"+r.env["XRES_RM_WEBAPP_PORT"])
				require.NoError(t, err)
				t.Cleanup(func() { l.Close() })
			},
			want: []string{"error: cannot start: in use: port ", "(XRES_RM_WEBAPP_PORT, launcher --rm-webapp-port)"},
		},
		{
			name:    "never ready",
			withMvn: true,
			env:     map[string]string{"FAKE_JAVA_MODE": "hang", "XRES_MINICLUSTER_TIMEOUT": "2"},
			want:    []string{"error: the cluster was not ready within 2s", "fake launcher: hanging"},
		},
		{
			name:    "state folder not ours",
			withMvn: true,
			setup: func(t *testing.T, r *runSh) {
				require.NoError(t, os.MkdirAll(r.work, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(r.work, "precious.txt"), []byte("x"), 0o644))
				t.Cleanup(func() { require.FileExists(t, filepath.Join(r.work, "precious.txt")) })
			},
			want: []string{"is not empty and was not made by run.sh"},
		},
		{
			name: "unknown GPU mode",
			env:  map[string]string{"XRES_MINICLUSTER_GPU_MODE": "magic"},
			want: []string{"error: XRES_MINICLUSTER_GPU_MODE=magic: want counted, plugin, isolated, docker or pluggable"},
		},
		{
			name: "bad GPU minor numbers",
			env:  map[string]string{"XRES_MINICLUSTER_GPU_MODE": "plugin", "XRES_MINICLUSTER_GPU_MINORS": "2;0"},
			want: []string{"error: XRES_MINICLUSTER_GPU_MINORS=2;0: want minor numbers such as 2,0"},
		},
		{
			name:    "launcher fails",
			withMvn: true,
			env:     map[string]string{"FAKE_JAVA_MODE": "fail"},
			want:    []string{"error: the cluster failed to start: port 1 (--nn-port) is in use", "log line before the failure"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunSh(t, tc.withMvn)
			for k, v := range tc.env {
				r.env[k] = v
			}
			if tc.setup != nil {
				tc.setup(t, r)
			}
			out, code := r.run("start")
			require.Equal(t, 1, code, out)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			// Nothing is left behind: no process, no pid file.
			out, code = r.run("status")
			require.Equal(t, 3, code, out)
			require.NoFileExists(t, filepath.Join(r.work, "minicluster.pid"))
		})
	}
}

func TestRunShLifecycle(t *testing.T) {
	r := newRunSh(t, true)
	out, code := r.run("start")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "HADOOP_CONF_DIR="+filepath.Join(r.work, "conf"))
	require.Contains(t, out, "building the launcher")

	out, code = r.run("status")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "minicluster ready")

	out, code = r.run("start")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "already running")
	require.NotContains(t, out, "building the launcher", "the build is cached")

	out, code = r.run("env")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "XRES_HADOOP_CONF_DIR=")

	out, code = r.run("stop")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "stopped")
	out, code = r.run("status")
	require.Equal(t, 3, code, out)

	out, code = r.run("logs", "5")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "fake launcher: stopping", "SIGTERM reached the launcher")
}

func TestRunShStalePidFile(t *testing.T) {
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	tests := []struct {
		name string
		pid  int
		want string
	}{
		{"dead pid", dead.Process.Pid, "is not running"},
		{"live pid of another program", os.Getpid(), "is alive but is not this minicluster"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunSh(t, true)
			require.NoError(t, os.MkdirAll(r.work, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(r.work, ".xres-minicluster"), nil, 0o644))
			pidFile := filepath.Join(r.work, "minicluster.pid")
			require.NoError(t, os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n", tc.pid)), 0o644))
			out, code := r.run("start")
			require.Equal(t, 0, code, out)
			require.Contains(t, out, "notice: removing stale pid file")
			require.Contains(t, out, tc.want)
			b, err := os.ReadFile(pidFile)
			require.NoError(t, err)
			require.NotEqual(t, fmt.Sprint(tc.pid), strings.TrimSpace(string(b)))
		})
	}
}

func TestRunShStopEscalatesToKill(t *testing.T) {
	r := newRunSh(t, true)
	r.env["FAKE_JAVA_MODE"] = "stubborn"
	out, code := r.run("start")
	require.Equal(t, 0, code, out)
	out, code = r.run("stop")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "still running 1s after SIGTERM; sending SIGKILL")
	out, code = r.run("status")
	require.Equal(t, 3, code, out)
}

// A container's processes can outlive the stopped cluster (each runs in its own session):
// stop kills every process with a CONTAINER_ID whose LOG_DIRS lie in the cluster's folder,
// and no other (another cluster's container, a process without CONTAINER_ID).
func TestRunShStopKillsLeftContainers(t *testing.T) {
	r := newRunSh(t, true)
	require.NoError(t, os.MkdirAll(r.work, 0o755))
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = env
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	ours := start("CONTAINER_ID=container_1_0001_01_000002", "LOG_DIRS="+filepath.Join(r.work, "nodemanagers", "nm0", "logs", "application_1_0001", "container_1_0001_01_000002"))
	other := start("CONTAINER_ID=container_2_0001_01_000002", "LOG_DIRS="+filepath.Join(t.TempDir(), "nodemanagers", "nm0", "logs"))
	plain := start("LOG_DIRS=" + filepath.Join(r.work, "nodemanagers"))
	out, code := r.run("stop")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "killed 1 container process(es) the NodeManagers left running")
	done := make(chan error, 1)
	go func() { done <- ours.Wait() }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "killed")
	case <-time.After(10 * time.Second):
		t.Fatal("the cluster's container process still runs after stop")
	}
	for _, c := range []*exec.Cmd{other, plain} {
		require.NoError(t, c.Process.Signal(syscall.Signal(0)), "stop killed a process that is not its container's")
	}
}
