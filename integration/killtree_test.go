//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// Issue 41: Hadoop's own `yarn application -kill` (ApplicationCLI) on a
// running xres application whose worker forked a helper that ignores
// SIGTERM leaves nothing behind: every process carrying one of the
// application's container ids ends, and the GPU the worker held is free
// (container-launcher probe) then. Before the fix the helper ran on under
// init and its GPU stayed held.
func TestKilledAppLeavesNoHolder(t *testing.T) {
	c := harness.Get(t)
	cli := applicationCLI(t, c)
	_, launcher := amBins(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 1)

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	// The worker forks a helper that ignores SIGTERM, and its own
	// shutdown outlasts YARN's grace (it never ends on SIGTERM), as a JVM
	// whose shutdown hooks take their time: YARN's SIGKILL reaches the
	// container's process group while the worker still runs.
	helper := `(trap '' TERM; exec sleep 3600) & echo "xres-it helper $!"; trap 'while :; do sleep 1; done' TERM; wait`
	p := startAM(t, ctx, "submit", "--conf", cfg, "--workers", "1", "--name", "xres-it-killtree", "--", "sh", "-c", helper)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, "")
	// Whatever the outcome, nothing of this test outlives it.
	marker := regexp.MustCompile(`(^|\x00)CONTAINER_ID=container_(e[0-9]+_)?` + regexp.QuoteMeta(strings.TrimPrefix(app, "application_")) + `_`)
	t.Cleanup(func() {
		for _, pr := range liveAppProcesses(marker) {
			_ = syscallKill(pr.pid)
		}
	})

	waitWorkersWithGPUs(t, ctx, c, app, 1)
	eventually(t, 2*time.Minute, "the worker's TERM-ignoring helper running", func() (bool, string) {
		procs := liveAppProcesses(marker)
		for _, pr := range procs {
			if pr.comm == "sleep" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("processes of %s: %v", app, procs)
	})
	rep := probeGPU(t, launcher, cfg)
	require.Empty(t, rep.Devices, "the worker holds the host's only GPU: %+v", rep)

	out, err := exec.CommandContext(ctx, cli[0], append(cli[1:], "application", "-kill", app)...).CombinedOutput()
	require.NoError(t, err, "ApplicationCLI -kill %s: %s", app, out)

	// Each step waits for its event, bounded by a deadline far beyond
	// YARN's grace (yarn.nodemanager.sleep-delay-before-sigkill.ms).
	eventually(t, 2*time.Minute, "no process of the killed application left", func() (bool, string) {
		procs := liveAppProcesses(marker)
		return len(procs) == 0, fmt.Sprintf("processes of %s: %v", app, procs)
	})
	eventually(t, 2*time.Minute, "the GPU free", func() (bool, string) {
		rep := probeGPU(t, launcher, cfg)
		for _, h := range rep.Coordination.Holders {
			if h.Alive {
				return false, fmt.Sprintf("%+v", rep)
			}
		}
		return len(rep.Devices) == 1, fmt.Sprintf("%+v", rep)
	})
}

// applicationCLI is the java command running Hadoop's
// org.apache.hadoop.yarn.client.cli.ApplicationCLI (what `yarn application`
// runs) against cluster c: the cluster's configuration folder, then the
// minicluster build's class path.
func applicationCLI(t *testing.T, c *harness.Cluster) []string {
	t.Helper()
	build := os.Getenv("XRES_MINICLUSTER_BUILD_DIR")
	if build == "" {
		matches, _ := filepath.Glob(filepath.Join("..", "docker", "hadoop-minicluster", "target", "hadoop-*", "classpath.txt"))
		require.NotEmpty(t, matches, "no minicluster build with a classpath.txt under docker/hadoop-minicluster/target (run.sh deps)")
		build = filepath.Dir(matches[len(matches)-1])
	}
	cp, err := os.ReadFile(filepath.Join(build, "classpath.txt"))
	require.NoError(t, err, "the minicluster build's class path")
	return []string{javaBin(), "-cp", c.ConfDir + ":" + strings.TrimSpace(string(cp)), "org.apache.hadoop.yarn.client.cli.ApplicationCLI"}
}

// appProc is a live process of an application.
type appProc struct {
	pid  int
	comm string
}

func (p appProc) String() string { return fmt.Sprintf("%d(%s)", p.pid, p.comm) }

// liveAppProcesses lists the live processes (not zombies) whose
// environment matches marker (the application's CONTAINER_ID).
func liveAppProcesses(marker *regexp.Regexp) []appProc {
	entries, _ := os.ReadDir("/proc")
	var out []appProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !marker.Match(env) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if i < 0 || j < i || j+2 >= len(stat) || stat[j+2] == 'Z' {
			continue
		}
		out = append(out, appProc{pid: pid, comm: string(stat[i+1 : j])})
	}
	return out
}

// probedGPU is what this test reads of container-launcher probe --json's
// resource.
type probedGPU struct {
	Devices      []json.RawMessage `json:"devices"`
	Coordination struct {
		Holders []struct {
			Device string `json:"device"`
			PID    int    `json:"pid"`
			Alive  bool   `json:"alive"`
		} `json:"holders"`
	} `json:"coordination"`
}

// probeGPU runs container-launcher probe --json with cfg on this host's
// fake GPUs (one) and returns the gpu resource.
func probeGPU(t *testing.T, launcher, cfg string) probedGPU {
	t.Helper()
	cmd := exec.Command(launcher, "probe", "--conf", cfg, "--json")
	cmd.Env = append(os.Environ(), "PATH="+fakeBinDir(t)+":"+os.Getenv("PATH"), "XRES_FAKE_GPUS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // no device left exits non-zero and still reports
	var rep struct {
		Resources []probedGPU `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "probe --json: %s\n%s", stdout.String(), stderr.String())
	require.Len(t, rep.Resources, 1, "probe: %+v", rep)
	return rep.Resources[0]
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
