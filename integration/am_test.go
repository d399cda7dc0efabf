//go:build integration

package integration

// End-to-end tests of the am command on the real cluster: the real bin/am and
// container-launcher (built here) submit to the minicluster's RM, stage to its
// HDFS, and the NodeManagers run the AM and the workers as local processes.
// The workers find a fake nvidia-smi (driver/gpu/testdata/fakebin) reporting 4
// GPUs on the host, as docker/hadoop-minicluster/demo.sh does; host coordination (state file in the
// test's temp dir) hands the 4 workers of the 2 NodeManagers 4 distinct GPUs.
//
// Workers that must be seen running wait for a release file the test creates,
// so no test depends on a sleep being long enough.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/submit"
)

// amWaitTimeout bounds one application's run in these tests.
const amWaitTimeout = 3 * time.Minute

// amBins builds am and container-launcher once per test process.
func amBins(t testing.TB) (amPath, launcherPath string) {
	t.Helper()
	return harness.BuildBinary(t, "github.com/xres/xres/cmd/am"),
		harness.BuildBinary(t, "github.com/xres/xres/cmd/container-launcher")
}

// fakeBinDir is the folder holding the fake nvidia-smi, absolute (the workers
// run on this host with it first on their PATH).
func fakeBinDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "driver", "gpu", "testdata", "fakebin"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(d, "nvidia-smi"))
	require.NoError(t, err, "fake nvidia-smi")
	return d
}

// writeAMConf writes a Flink configuration for one GPU per worker, host
// coordination in dir, the fake nvidia-smi with fakeGPUs GPUs on the workers'
// PATH, and a short AM heartbeat. extra lines are appended.
func writeAMConf(t testing.TB, dir string, fakeGPUs int, extra ...string) string {
	t.Helper()
	lines := []string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.param.coordination.file: " + filepath.Join(dir, "coordination.state"),
		"taskmanager.memory.process.size: 256m",
		"yarn.heartbeat.interval: 1",
		"containerized.taskmanager.env.PATH: " + fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin",
		"containerized.taskmanager.env.XRES_FAKE_GPUS: " + strconv.Itoa(fakeGPUs),
	}
	p := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(append(lines, extra...), "\n")+"\n"), 0o644))
	return p
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// amProc is one run of the am binary.
type amProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{}
	err            error
}

// startAM starts am with args against the cluster (HADOOP_CONF_DIR), bounded by ctx.
func startAM(t testing.TB, ctx context.Context, args ...string) *amProc {
	t.Helper()
	return startAMOn(t, harness.Get(t), ctx, args...)
}

// startAMOn is startAM against cluster c (an extra one).
func startAMOn(t testing.TB, c *harness.Cluster, ctx context.Context, args ...string) *amProc {
	t.Helper()
	amPath, launcher := amBins(t)
	cmd := exec.CommandContext(ctx, amPath, args...)
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "HADOOP_USER_NAME="+c.User,
		"XRES_LAUNCHER="+launcher, "XRES_LOG_LEVEL=info")
	cmd.WaitDelay = 5 * time.Second
	p := &amProc{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, cmd.Start(), "start am %s", strings.Join(args, " "))
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// wait waits for the process and returns its exit code (-1 when it was killed
// by its context or could not run).
func (p *amProc) wait(t testing.TB) int {
	t.Helper()
	<-p.done
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		t.Logf("am %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), p.err, p.stdout, tailString(p.stderr.String(), 40))
		return -1
	}
}

// output is stdout and stderr for failure messages.
func (p *amProc) output() string {
	return fmt.Sprintf("stdout:\n%s\nstderr (tail):\n%s", p.stdout, tailString(p.stderr.String(), 40))
}

// runAM runs am to the end within d and returns its exit code, stdout and stderr.
func runAM(t testing.TB, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p := startAM(t, ctx, args...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

func tailString(s string, n int) string { return tailLines([]byte(s), n) }

var submittedRE = regexp.MustCompile(`(?m)^submitted (application_[0-9]+_[0-9]+)`)

// appIDOf waits until am submit has printed its application id.
func (p *amProc) appID(t testing.TB) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if m := submittedRE.FindStringSubmatch(p.stdout.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			if m := submittedRE.FindStringSubmatch(p.stdout.String()); m != nil {
				return m[1]
			}
			t.Fatalf("am submit ended (%v) without an application id\n%s", p.err, p.output())
		case <-deadline:
			t.Fatalf("am submit printed no application id in 2m\n%s", p.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rmApp is the part of the RM's application report these tests read.
type rmApp struct {
	ID                string `json:"id"`
	State             string `json:"state"`
	FinalStatus       string `json:"finalStatus"`
	Diagnostics       string `json:"diagnostics"`
	RunningContainers int    `json:"runningContainers"`
	StartedTime       int64  `json:"startedTime"`
}

// getRMApp reads the RM's report of app (REST).
func getRMApp(ctx context.Context, c *harness.Cluster, app string) (rmApp, error) {
	var r struct {
		App rmApp `json:"app"`
	}
	err := restGet(ctx, c, "/ws/v1/cluster/apps/"+url.PathEscape(app), &r)
	return r.App, err
}

// restGet GETs an RM web path (REST or proxy) and decodes the JSON answer.
func restGet(ctx context.Context, c *harness.Cluster, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(path), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: http %d: %s", path, resp.StatusCode, tailString(b.String(), 5))
	}
	if err := json.Unmarshal(b.Bytes(), out); err != nil {
		return fmt.Errorf("get %s: decode: %w: %s", path, err, tailString(b.String(), 5))
	}
	return nil
}

// eventually polls cond every 200 ms until it returns true, failing the test
// with what's last message after d.
func eventually(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, d, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitWorkersWithGPUs waits until n workers of app run, each having reported its GPUs to the
// AM, and returns the AM's status then.
func waitWorkersWithGPUs(t *testing.T, ctx context.Context, c *harness.Cluster, app string, n int) amstatus.Status {
	t.Helper()
	var st amstatus.Status
	eventually(t, 2*time.Minute, fmt.Sprintf("%d workers running with their devices reported", n), func() (bool, string) {
		var err error
		if st, err = amStatusOf(ctx, c, app); err != nil {
			return false, err.Error()
		}
		withGPU := 0
		for _, w := range st.Containers {
			if w.State == amstatus.StateRunning && len(w.Devices["gpu"]) > 0 {
				withGPU++
			}
		}
		return st.Running == n && withGPU == n, fmt.Sprintf("%+v", st)
	})
	return st
}

// amStatusOf reads the running AM's /api/status through the RM's web proxy.
func amStatusOf(ctx context.Context, c *harness.Cluster, app string) (amstatus.Status, error) {
	var st amstatus.Status
	err := restGet(ctx, c, "/proxy/"+url.PathEscape(app)+amweb.PathStatus, &st)
	return st, err
}

// rmContainer is one entry of the RM's container list of an attempt.
type rmContainer struct {
	ContainerID        string `json:"containerId"`
	ContainerState     string `json:"containerState"`
	AssignedNodeID     string `json:"assignedNodeId"`
	AllocatedResources struct {
		Entry harness.List[struct {
			Key   string      `json:"key"`
			Value json.Number `json:"value"` // Hadoop 3.4 writes "1", 3.5 writes 1
		}] `json:"entry"`
	} `json:"allocatedResources"`
}

// resource returns the allocated amount of one resource type.
func (r rmContainer) resource(name string) (int64, bool) {
	for _, e := range r.AllocatedResources.Entry {
		if e.Key == name {
			n, err := e.Value.Int64()
			return n, err == nil
		}
	}
	return 0, false
}

// rmContainers lists the live containers of every attempt of app, from the
// RM's own report (GET /ws/v1/cluster/apps/{app}/appattempts/{attempt}/containers;
// the RM lists a running attempt's live containers, with their allocated
// resources).
func rmContainers(ctx context.Context, c *harness.Cluster, app string) ([]rmContainer, error) {
	return rmAttemptContainers[rmContainer](ctx, c, app)
}

// rmAttemptContainers is rmContainers decoding each entry as a T.
func rmAttemptContainers[T any](ctx context.Context, c *harness.Cluster, app string) ([]T, error) {
	var attempts struct {
		AppAttempts struct {
			AppAttempt harness.List[struct {
				AppAttemptID string `json:"appAttemptId"`
			}] `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	base := "/ws/v1/cluster/apps/" + url.PathEscape(app) + "/appattempts"
	if err := restGet(ctx, c, base, &attempts); err != nil {
		return nil, err
	}
	var out []T
	for _, a := range attempts.AppAttempts.AppAttempt {
		var cs struct {
			Container harness.List[T] `json:"container"`
		}
		if err := restGet(ctx, c, base+"/"+url.PathEscape(a.AppAttemptID)+"/containers", &cs); err != nil {
			return nil, err
		}
		out = append(out, cs.Container...)
	}
	return out, nil
}

// amContainerID is the id of the first attempt's AM container (and, with n,
// of the n-th container of that attempt).
func attemptContainerID(app string, n int) string {
	return fmt.Sprintf("container_%s_01_%06d", strings.TrimPrefix(app, "application_"), n)
}

// containerEpoch is the epoch part of a container id (container_e17_…): an
// RM that restarted with recovery numbers its containers with one, so a
// test that runs after an rm-restart sees it.
var containerEpoch = regexp.MustCompile(`^container_e[0-9]+_`)

// isAttemptContainer says whether id is attemptContainerID(app, n), with
// or without an epoch.
func isAttemptContainer(id, app string, n int) bool {
	return containerEpoch.ReplaceAllString(id, "container_") == attemptContainerID(app, n)
}

// attemptContainerPattern is a regular expression for
// attemptContainerID(app, n) with or without an epoch.
func attemptContainerPattern(app string, n int) string {
	return "container_(?:e[0-9]+_)?" + regexp.QuoteMeta(strings.TrimPrefix(attemptContainerID(app, n), "container_"))
}

// requireNoStaging checks that app's HDFS staging folder is gone.
func requireNoStaging(t *testing.T, c *harness.Cluster, app string) {
	t.Helper()
	dir := submit.StagingDir(c.User, app)
	_, err := c.HDFS(t).Stat(dir)
	require.True(t, errors.Is(err, os.ErrNotExist), "staging folder %s after the application ended: stat err %v", dir, err)
}

// killOnCleanup kills app at the end of the test if it still runs, and
// creates the release file so that no worker keeps waiting.
func killOnCleanup(t *testing.T, c *harness.Cluster, app, release string) {
	t.Cleanup(func() {
		if release != "" {
			_ = os.WriteFile(release, nil, 0o644)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if a, err := getRMApp(ctx, c, app); err == nil && !isTerminal(a.State) {
			c.KillApp(t, app)
		}
	})
}

// isTerminal reports whether a YARN application state is a final one.
var isTerminal = yarn.AppStateEnded

// waitWorker is a worker command that prints its GPU binding and waits for
// the release file.
func waitWorker(release string) []string {
	return []string{"sh", "-c", `echo "xres-it worker container=$CONTAINER_ID gpu=$CUDA_VISIBLE_DEVICES"; ` +
		`while [ ! -e ` + release + ` ]; do sleep 0.2; done`}
}

var workerLineRE = regexp.MustCompile(`xres-it worker container=(container_\S+) gpu=(\S*)`)

// The demo scenario: 4 workers with one GPU each over the 2 NodeManagers
// (2 GPUs each) of this host; the app succeeds, the workers get 4 distinct
// GPUs, and the RM reports yarn.io/gpu: 1 for each worker container.
func TestAMSubmitDemo(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	const workers = 4

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	// A -D value travels in a staged file, never on a command line (see below).
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "-D", "s3.secret-key=xres-sentinel-secret", "--workers", strconv.Itoa(workers), "--name", "xres-it-demo", "--"},
		waitWorker(release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	// All workers running, each having reported its devices to the AM.
	st := waitWorkersWithGPUs(t, ctx, c, app, workers)
	require.Zero(t, st.Restarts, "restarts")
	gpuOf := map[string]string{} // container → GPU index the AM was told
	for _, w := range st.Containers {
		require.Len(t, w.Devices["gpu"], 1, "container %s devices", w.Container)
		idx, ok := w.Devices["gpu"][0]["index"]
		require.True(t, ok, "container %s: device without index: %v", w.Container, w.Devices)
		gpuOf[w.Container] = idx
	}
	require.Len(t, gpuOf, workers)
	require.ElementsMatch(t, []string{"0", "1", "2", "3"}, values(gpuOf), "GPU indices of the workers (host coordination)")
	nodes := map[string]bool{}
	for _, w := range st.Containers {
		nodes[w.Node] = true
	}
	require.Len(t, nodes, 2, "workers spread over both NodeManagers (2 GPUs each)")

	// The RM's own report: every worker container holds yarn.io/gpu: 1.
	cs, err := rmContainers(ctx, c, app)
	require.NoError(t, err)
	seen := 0
	for _, rc := range cs {
		if isAttemptContainer(rc.ContainerID, app, 1) {
			continue
		}
		gpu, ok := rc.resource("yarn.io/gpu")
		require.True(t, ok, "container %s: RM lists no yarn.io/gpu: %+v", rc.ContainerID, rc.AllocatedResources)
		require.EqualValues(t, 1, gpu, "container %s yarn.io/gpu", rc.ContainerID)
		require.Contains(t, gpuOf, rc.ContainerID, "RM container %s is not one of the AM's workers", rc.ContainerID)
		seen++
	}
	require.Equal(t, workers, seen, "worker containers in the RM's report: %+v", cs)

	// am submit's progress line reaches 4/4 while the workers wait (it samples the AM, so
	// the test waits for it before releasing them).
	allRunning := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d workers: 4/4 running$`)
	eventually(t, time.Minute, "am submit prints workers: 4/4 running", func() (bool, string) {
		out := p.stdout.String()
		return allRunning.MatchString(out), tailString(out, 5)
	})
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	code := p.wait(t)
	require.Equal(t, 0, code, "am submit exit code\n%s", p.output())
	out := p.stdout.String()
	require.Contains(t, out, app+" finished: FINISHED SUCCEEDED", p.output())
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "SUCCEEDED", a.FinalStatus)

	// What each worker printed (its stdout in the NodeManager's log folder)
	// agrees with what its launcher reported to the AM.
	if c.LocalNodeManagerLogs(t) {
		printed := map[string]string{}
		for _, d := range c.NodeManagerLogDirs() {
			files, _ := filepath.Glob(filepath.Join(d, app, "container_*", "stdout"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				for _, m := range workerLineRE.FindAllStringSubmatch(string(b), -1) {
					printed[m[1]] = m[2]
				}
			}
		}
		require.Equal(t, gpuOf, printed, "CUDA_VISIBLE_DEVICES printed by each worker vs devices reported to the AM")
	}

	// am submit's progress and closing table: each worker, the NodeManager
	// (host:port) that ran it and its GPU.
	require.Regexp(t, `(?m)^\d\d:\d\d:\d\d `+app+` RUNNING tracking URL `, out)
	require.Regexp(t, `(?m)^\d\d:\d\d:\d\d workers: 4/4 running$`, out)
	for container, gpu := range gpuOf {
		require.Regexp(t, `(?m)^  `+container+` +`+regexp.QuoteMeta(nodeOf(st, container))+` +SUCCEEDED +0 +gpu=`+gpu+`$`, out)
	}
	// After the end, am status still lists the workers (from the AM's final
	// diagnostics, kept by the RM) and hides the raw lines.
	code, stdout, stderr := runAM(t, time.Minute, "status", app)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stdout, "xres-worker ")
	for container, gpu := range gpuOf {
		require.Regexp(t, `(?m)^  `+container+` +`+regexp.QuoteMeta(nodeOf(st, container))+` +SUCCEEDED +0 +gpu=`+gpu+`$`, stdout)
	}
	// am logs: the minicluster does not aggregate logs, so am says so and
	// reads each worker's logs from its NodeManager.
	code, stdout, stderr = runAM(t, time.Minute, "logs", app)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "log aggregation is off")
	for container, gpu := range gpuOf {
		require.Contains(t, stdout, "Container: "+container+" on "+nodeOf(st, container)+"\n")
		require.Contains(t, stdout, "xres-it worker container="+container+" gpu="+gpu+"\n")
	}
	// The -D secret is in no file of the containers' log folders, the
	// NodeManager's copies of launch_container.sh among them.
	scripts := 0
	for _, d := range c.NodeManagerLogDirs() {
		files, _ := filepath.Glob(filepath.Join(d, app, "container_*", "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			require.NotContains(t, string(b), "xres-sentinel-secret", "the -D secret is in %s", f)
			if filepath.Base(f) == "launch_container.sh" {
				scripts++
			}
		}
	}
	require.Equal(t, workers+1, scripts, "launch_container.sh copies checked (AM and workers)")
	requireNoStaging(t, c, app)
}

// nodeOf is the NodeManager (host:port) st says ran container.
func nodeOf(st amstatus.Status, container string) string {
	for _, w := range st.Containers {
		if w.Container == container {
			return w.Node
		}
	}
	return ""
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// A worker that exits 1 is replaced, and the application still succeeds.
func TestAMSubmitReplacesFailedWorker(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4, "yarn.maximum-failed-containers: 2")
	release := filepath.Join(dir, "release")
	once := filepath.Join(dir, "failed-once")
	const workers = 2

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	// The first worker to take the marker folder fails; every other one waits.
	worker := `if mkdir ` + once + ` 2>/dev/null; then echo "xres-it: failing once" >&2; exit 1; fi; ` +
		`while [ ! -e ` + release + ` ]; do sleep 0.2; done`
	p := startAM(t, ctx, "submit", "--conf", cfg, "--workers", strconv.Itoa(workers), "--name", "xres-it-replace", "--", "sh", "-c", worker)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	var st amstatus.Status
	eventually(t, 2*time.Minute, "one failure replaced, 2 workers running", func() (bool, string) {
		var err error
		if st, err = amStatusOf(ctx, c, app); err != nil {
			return false, err.Error()
		}
		return st.Failed == 1 && st.Restarts == 1 && st.Running == workers, fmt.Sprintf("%+v", st)
	})
	failed := 0
	for _, w := range st.Containers {
		if w.State == amstatus.StateFailed {
			failed++
			require.NotNil(t, w.ExitStatus)
			require.Equal(t, 1, *w.ExitStatus, "exit status of the failed worker %s", w.Container)
		}
	}
	require.Equal(t, 1, failed, "failed containers in %+v", st.Containers)
	require.Len(t, st.Containers, workers+1, "containers: the 2 workers and the replaced one")

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	code := p.wait(t)
	require.Equal(t, 0, code, "am submit exit code\n%s", p.output())
	require.Contains(t, p.stdout.String(), app+" finished: FINISHED SUCCEEDED", p.output())
	requireNoStaging(t, c, app)
}

// Past yarn.maximum-failed-containers the application FAILS with a
// diagnostic naming the first failing container, its host, its exit code
// and its last stderr lines; am submit exits 1.
func TestAMSubmitFailsPastFailureLimit(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4, "yarn.maximum-failed-containers: 1")

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	worker := `echo "xres-it: first stderr line" >&2; echo "xres-it: worker gives up" >&2; exit 1`
	p := startAM(t, ctx, "submit", "--conf", cfg, "--workers", "1", "--name", "xres-it-fail", "--", "sh", "-c", worker)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, "")

	code := p.wait(t)
	require.Equal(t, 1, code, "am submit exit code for a FAILED application\n%s", p.output())
	out := p.stdout.String()
	require.Contains(t, out, app+" finished: FINISHED FAILED", p.output())

	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "FAILED", a.FinalStatus)
	first := attemptContainerPattern(app, 2) // the first worker container (the AM's is 1)
	// The nodes are distinct hosts (127.0.0.2, ...): the diagnostic names the one it ran on.
	for _, text := range []string{a.Diagnostics, out} {
		onHost := false
		for _, n := range c.Nodes(t) {
			onHost = onHost || regexp.MustCompile("container "+first+" on "+regexp.QuoteMeta(strings.Split(n.ID, ":")[0])+" ").MatchString(text)
		}
		require.True(t, onHost, "no 'container %s on <node host>' in %q", first, text)
	}
	for _, want := range []string{
		"2 worker containers failed, more than yarn.maximum-failed-containers=1",
		"exit code 1",
		"xres-it: first stderr line",
		"xres-it: worker gives up",
	} {
		require.Contains(t, a.Diagnostics, want, "RM diagnostics")
		require.Contains(t, out, want, "am submit output")
	}
	requireNoStaging(t, c, app)
}

// A profile the cluster can never grant fails at once (exit 3) with a message
// naming the resource, its key and what the cluster offers; nothing is
// submitted or staged.
func TestAMSubmitFailsFast(t *testing.T) {
	c := harness.Get(t)
	tests := []struct {
		name string
		set  string
		want []string
	}{
		{"more GPUs than a NodeManager has", "external-resource.gpu.amount=3",
			[]string{"resource gpu", "external-resource.gpu.yarn.config-key=yarn.io/gpu", "asked 3 per worker", "allows has 2"}},
		{"unknown resource type", "external-resource.gpu.yarn.config-key=yarn.io/tpu",
			[]string{"resource gpu", "external-resource.gpu.yarn.config-key=yarn.io/tpu", "yarn.io/tpu is not a resource type", "yarn.io/gpu", "yarn.resource-types"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeAMConf(t, t.TempDir(), 4)
			// Seconds, not a wait for containers: a minute's deadline ends a
			// submission that waited (exit -1, failing below).
			code, stdout, stderr := runAM(t, time.Minute, "submit", "--conf", cfg, "-D", tc.set, "--workers", "1", "--", "true")
			require.Equal(t, 3, code, "exit code\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tc.want {
				require.Contains(t, stderr, w)
			}
			require.NotContains(t, stdout, "submitted ", "nothing may be submitted")
			// The id the RM handed out was never submitted, and nothing staged.
			if m := regexp.MustCompile(`application_[0-9]+_[0-9]+`).FindString(stderr); m != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := getRMApp(ctx, c, m)
				require.Error(t, err, "the RM knows %s", m)
				requireNoStaging(t, c, m)
			}
		})
	}
}

// am cluster --json, am status --json and am kill against the cluster.
func TestAMClusterStatusKill(t *testing.T) {
	c := harness.Get(t)
	wantGPUs := envInt(t, "XRES_MINICLUSTER_GPUS", 2)
	wantNodes := envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)

	t.Run("cluster", func(t *testing.T) {
		code, stdout, stderr := runAM(t, time.Minute, "cluster", "--json")
		require.Equal(t, 0, code, stderr)
		var cl struct {
			ResourceTypes []string `json:"resource-types"`
			Nodes         []struct {
				Node       string           `json:"node"`
				State      string           `json:"state"`
				Capability map[string]int64 `json:"capability"`
			} `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &cl), stdout)
		require.Contains(t, cl.ResourceTypes, "yarn.io/gpu")
		require.Len(t, cl.Nodes, int(wantNodes))
		for _, n := range cl.Nodes {
			require.Equal(t, "RUNNING", n.State, n.Node)
			require.Equal(t, wantGPUs, n.Capability["yarn.io/gpu"], "node %s GPU capacity", n.Node)
		}
	})

	t.Run("status and kill", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeAMConf(t, dir, 4)
		release := filepath.Join(dir, "release") // never created: only the kill ends the worker
		code, stdout, stderr := runAM(t, time.Minute, append([]string{"submit", "--conf", cfg, "--workers", "1",
			"--name", "xres-it-kill", "--detach", "--"}, waitWorker(release)...)...)
		require.Equal(t, 0, code, "am submit --detach\n%s\n%s", stdout, stderr)
		m := submittedRE.FindStringSubmatch(stdout)
		require.NotNil(t, m, stdout)
		app := m[1]
		c.KeepAppLogs(t, app)
		killOnCleanup(t, c, app, release)

		type statusOut struct {
			App         string           `json:"app"`
			Name        string           `json:"name"`
			State       string           `json:"state"`
			FinalStatus string           `json:"final-status"`
			TrackingURL string           `json:"tracking-url"`
			AM          *amstatus.Status `json:"am"`
		}
		var st statusOut
		eventually(t, 2*time.Minute, "am status --json: the worker running with its GPU", func() (bool, string) {
			code, stdout, stderr := runAM(t, time.Minute, "status", app, "--json")
			if code != 0 {
				return false, fmt.Sprintf("exit %d: %s", code, stderr)
			}
			st = statusOut{}
			if err := json.Unmarshal([]byte(stdout), &st); err != nil {
				return false, err.Error()
			}
			return st.AM != nil && st.AM.Running == 1 && len(st.AM.Containers) == 1 &&
				len(st.AM.Containers[0].Devices["gpu"]) == 1, stdout
		})
		require.Equal(t, app, st.App)
		require.Equal(t, "xres-it-kill", st.Name)
		require.Equal(t, "RUNNING", st.State)
		require.Equal(t, "UNDEFINED", st.FinalStatus)
		require.Contains(t, st.TrackingURL, app)
		require.EqualValues(t, 1, st.AM.Profile.Extra["yarn.io/gpu"], "profile %+v", st.AM.Profile)

		// am list shows it among the running xres applications.
		code, stdout, stderr = runAM(t, time.Minute, "list")
		require.Equal(t, 0, code, stderr)
		require.Regexp(t, `(?m)^`+app+` +xres-it-kill +\S+ +\S+ +RUNNING +UNDEFINED `, stdout)
		// The same over the RM's REST API: the same yarn types, whichever client.
		code, stdout, stderr = runAM(t, time.Minute, "list", "--rest")
		require.Equal(t, 0, code, stderr)
		require.Regexp(t, `(?m)^`+app+` +xres-it-kill +\S+ +\S+ +RUNNING +UNDEFINED `, stdout)
		code, stdout, stderr = runAM(t, time.Minute, "status", "--rest", "--json", app)
		require.Equal(t, 0, code, stderr)
		var viaREST statusOut
		require.NoError(t, json.Unmarshal([]byte(stdout), &viaREST), stdout)
		require.Equal(t, "RUNNING", viaREST.State)
		require.Equal(t, st.TrackingURL, viaREST.TrackingURL)
		require.NotNil(t, viaREST.AM, "the AM's report through the REST client's tracking URL")
		code, restNodes, stderr := runAM(t, time.Minute, "cluster", "--rest", "--json")
		require.Equal(t, 0, code, stderr)
		_, rpcNodes, _ := runAM(t, time.Minute, "cluster", "--json")
		var a1, a2 struct {
			Nodes []struct {
				Node       string           `json:"node"`
				Capability map[string]int64 `json:"capability"`
			} `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal([]byte(restNodes), &a1))
		require.NoError(t, json.Unmarshal([]byte(rpcNodes), &a2))
		// Every resource type over both: Hadoop 3.1 and 3.2 send no totalResource, and the REST
		// client adds up usedResource and availableResource instead.
		require.Equal(t, a2, a1, "am cluster over REST and over RPC")

		code, stdout, stderr = runAM(t, time.Minute, "kill", app)
		require.Equal(t, 0, code, "am kill\n%s\n%s", stdout, stderr)
		require.Contains(t, stdout, "killed "+app)
		a := c.WaitForAppState(t, app, "KILLED")
		require.Equal(t, "KILLED", a.FinalStatus)
		requireNoStaging(t, c, app)

		// Killing it again kills nothing, and says so.
		code, stdout, _ = runAM(t, time.Minute, "kill", app)
		require.Equal(t, 1, code, stdout)
		require.Contains(t, stdout, app+" had already ended (KILLED, final status KILLED): nothing killed")
		// am list --all has it, am list (running only) not.
		code, stdout, _ = runAM(t, time.Minute, "list", "--all", "--json")
		require.Equal(t, 0, code)
		require.Contains(t, stdout, `"app": "`+app+`"`)
		code, stdout, _ = runAM(t, time.Minute, "list")
		require.Equal(t, 0, code)
		require.NotContains(t, stdout, app)

		code, stdout, _ = runAM(t, time.Minute, "status", app, "--json")
		require.Equal(t, 0, code)
		st = statusOut{}
		require.NoError(t, json.Unmarshal([]byte(stdout), &st))
		require.Equal(t, "KILLED", st.State)
		require.Nil(t, st.AM, "no AM report once killed")
	})
}
