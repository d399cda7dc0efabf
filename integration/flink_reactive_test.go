//go:build integration

package integration

// Flink's reactive mode on YARN under xres (issue 26), with Flink's own code
// unchanged: Flink 1.20.0 from Maven Central (integration/flinkjob builds the
// class path and a small unbounded streaming job). One application, two
// worker groups:
//
//   - jm: 1 worker, no GPU, a port (auto) for the JobManager's RPC. It runs
//     Flink's StandaloneApplicationClusterEntryPoint with the job
//     (--job-classname) and scheduler-mode: reactive.
//   - tm: 6 workers of 1 yarn.io/gpu each, depends-on jm. Each runs Flink's
//     TaskManagerRunner (1 slot) with the JobManager's address from
//     XRES_JM_ADDRESSES and its YARN container id as Flink's resource id.
//
// xres runs it under its own scheduler-mode: reactive on 3 NodeManagers of 2
// GPUs each (6 GPUs: every TaskManager xres can get). What is asserted goes
// through the JobManager's REST API: the job RUNNING with every vertex at the
// parallelism of the TaskManagers xres got, those TaskManagers being exactly
// xres's running tm containers; a NodeManager that hosts neither the AM nor
// the JobManager killed → the job rescales down to the TaskManagers left and
// keeps running (records flowing) while xres asks for the lost ones; the node
// back → xres's asks are granted there, new TaskManagers register and the job
// rescales up. Each TaskManager writes the CUDA_VISIBLE_DEVICES it was started
// with: distinct on each host, and what the AM reports for its container.
//
// The 3 NodeManagers are one machine: the fake nvidia-smi shows 6 GPUs and
// every launcher shares one coordination file, so GPUs are distinct across
// the machine (hence per host), and a killed TaskManager's GPU is free again
// for its replacement.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/amstatus"
)

// flinkJavaOpts are the module flags Flink 1.20 runs with on Java 17 (what
// its default configuration puts in env.java.opts.all).
var flinkJavaOpts = []string{
	"-XX:+IgnoreUnrecognizedVMOptions",
	"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	"--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED",
	"--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

// flinkConfig is Flink's own configuration for the JobManager and the
// TaskManagers (config.yaml in FLINK_CONF_DIR): reactive mode, one slot per
// TaskManager, and TaskManager memory given component by component (a
// TaskManagerRunner started without Flink's scripts needs them all, and
// taskmanager.cpu.cores): 208 MiB of Flink memory, 160 MiB metaspace and
// 64 MiB overhead, 432 MiB in all, in a 512 MiB container. Heartbeats every
// second with a 10 s timeout, so that a TaskManager that vanished without
// closing its connections is noticed in seconds; a rescale waits 2 s for more
// TaskManagers and may follow the last one at once.
const flinkConfig = `scheduler-mode: reactive
taskmanager.numberOfTaskSlots: 1
taskmanager.cpu.cores: 1
taskmanager.memory.framework.heap.size: 64m
taskmanager.memory.task.heap.size: 64m
taskmanager.memory.managed.size: 16m
taskmanager.memory.framework.off-heap.size: 32m
taskmanager.memory.task.off-heap.size: 0m
taskmanager.memory.network.min: 32m
taskmanager.memory.network.max: 32m
taskmanager.memory.jvm-metaspace.size: 160m
taskmanager.memory.jvm-overhead.min: 64m
taskmanager.memory.jvm-overhead.max: 64m
heartbeat.interval: 1000
heartbeat.timeout: 10000
restart-strategy.type: fixed-delay
restart-strategy.fixed-delay.attempts: 2147483647
restart-strategy.fixed-delay.delay: 1 s
jobmanager.adaptive-scheduler.resource-stabilization-timeout: 2 s
jobmanager.adaptive-scheduler.scaling-interval.min: 0 s
metrics.fetcher.update-interval: 2000
web.submit.enable: false
`

// flinkLog4j sends Flink's log to stderr: the container's stderr log.
const flinkLog4j = `rootLogger.level = INFO
rootLogger.appenderRef.console.ref = Console
appender.console.name = Console
appender.console.type = Console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
`

// TaskManager JVM sizes matching flinkConfig (what Flink's scripts derive):
// heap = framework + task heap, direct = framework + task off-heap + network.
var flinkTMJVM = []string{"-Xms128m", "-Xmx128m", "-XX:MaxDirectMemorySize=64m", "-XX:MaxMetaspaceSize=160m"}

// flinkJob is the JobManager's REST answer for one job (the part read here).
type flinkJob struct {
	ID       string `json:"jid"`
	State    string `json:"state"`
	Vertices []struct {
		Name        string `json:"name"`
		Parallelism int    `json:"parallelism"`
		Status      string `json:"status"`
		Metrics     struct {
			WriteRecords int64 `json:"write-records"`
		} `json:"metrics"`
	} `json:"vertices"`
}

// flinkTM is one entry of the JobManager's /taskmanagers.
type flinkTM struct {
	ID    string `json:"id"`
	Path  string `json:"path"` // pekko.tcp://flink@<host>:<port>/user/rpc/taskmanager_0
	Slots int    `json:"slotsNumber"`
}

// flinkREST is the JobManager's REST API at base (http://host:port).
type flinkREST struct{ base string }

func (f flinkREST) get(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("JobManager REST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("JobManager REST %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("JobManager REST %s: HTTP %d: %s", path, resp.StatusCode, tailString(string(b), 5))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("JobManager REST %s: decode: %w: %s", path, err, tailString(string(b), 5))
	}
	return nil
}

// job is the one job of the application cluster.
func (f flinkREST) job(ctx context.Context) (flinkJob, error) {
	var jobs struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if err := f.get(ctx, "/jobs", &jobs); err != nil {
		return flinkJob{}, err
	}
	if len(jobs.Jobs) != 1 {
		return flinkJob{}, fmt.Errorf("JobManager lists %d jobs, want 1: %+v", len(jobs.Jobs), jobs.Jobs)
	}
	var j flinkJob
	err := f.get(ctx, "/jobs/"+jobs.Jobs[0].ID, &j)
	return j, err
}

func (f flinkREST) taskManagers(ctx context.Context) ([]flinkTM, error) {
	var tms struct {
		TaskManagers []flinkTM `json:"taskmanagers"`
	}
	err := f.get(ctx, "/taskmanagers", &tms)
	return tms.TaskManagers, err
}

// runningAt says whether j runs with every vertex RUNNING at parallelism n.
func (j flinkJob) runningAt(n int) bool {
	if j.State != "RUNNING" || len(j.Vertices) == 0 {
		return false
	}
	for _, v := range j.Vertices {
		if v.Status != "RUNNING" || v.Parallelism != n {
			return false
		}
	}
	return true
}

func (j flinkJob) String() string {
	var vs []string
	for _, v := range j.Vertices {
		vs = append(vs, fmt.Sprintf("%q %s p=%d out=%d", v.Name, v.Status, v.Parallelism, v.Metrics.WriteRecords))
	}
	return fmt.Sprintf("job %s %s [%s]", j.ID, j.State, strings.Join(vs, "; "))
}

// sourceRecords is the records the job's source vertex has written.
func (j flinkJob) sourceRecords() int64 {
	for _, v := range j.Vertices {
		if strings.HasPrefix(v.Name, "Source") {
			return v.Metrics.WriteRecords
		}
	}
	return -1
}

// tmHost is the host in a TaskManager's RPC path.
func (tm flinkTM) host() string {
	_, rest, ok := strings.Cut(tm.Path, "@")
	if !ok {
		return ""
	}
	hp, _, _ := strings.Cut(rest, "/")
	h, _, err := net.SplitHostPort(hp)
	if err != nil {
		return ""
	}
	return h
}

// freeLoopbackPort is a port free on every loopback address now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeFlinkScripts writes Flink's configuration folder and the two worker
// scripts into dir and returns the scripts' paths. Each script records what
// its worker was started with in dir/<jm|tm>.<container> (host, GPUs, the
// JobManager's address) before it execs Flink's Java main. The job (20
// records/s per source instance) writes what each of its map tasks sees to
// dir/task.<container>.
func writeFlinkScripts(t *testing.T, dir string, classpath []string, restPort int) (jm, tm string) {
	t.Helper()
	confDir := filepath.Join(dir, "flink-conf")
	require.NoError(t, os.MkdirAll(confDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(confDir, "config.yaml"), []byte(flinkConfig), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(confDir, "log4j2.properties"), []byte(flinkLog4j), 0o644))
	java, err := exec.LookPath(javaBin())
	require.NoError(t, err, "java for Flink")
	java, err = filepath.Abs(java)
	require.NoError(t, err)
	common := append(append([]string{java}, flinkJavaOpts...),
		"-Dlog4j.configurationFile="+filepath.Join(confDir, "log4j2.properties"),
		"-Djava.io.tmpdir=\"$PWD/tmp\"", "-cp", strings.Join(classpath, ":"))
	record := func(kind string) string {
		return `d=` + dir + `
id=$CONTAINER_ID
mkdir -p "$PWD/tmp"
printf 'host=%s\ncuda=%s\njm=%s\nport=%s\n' "$NM_HOST" "$CUDA_VISIBLE_DEVICES" "$XRES_JM_ADDRESSES" "$XRES_PORT" > "$d/` + kind + `.$id.tmp"
mv "$d/` + kind + `.$id.tmp" "$d/` + kind + `.$id"
`
	}
	jm = filepath.Join(dir, "jm.sh")
	require.NoError(t, os.WriteFile(jm, []byte(record("jm")+`exec `+strings.Join(common, " ")+` -Xmx192m \
  org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint \
  --configDir `+confDir+` --job-classname io.xres.flinkjob.CounterJob \
  -Djobmanager.rpc.address="$NM_HOST" -Djobmanager.bind-host="$NM_HOST" -Djobmanager.rpc.port="$XRES_PORT" \
  -Drest.address="$NM_HOST" -Drest.bind-address="$NM_HOST" -Drest.port=`+strconv.Itoa(restPort)+` \
  20 `+dir+`
`), 0o755))
	tm = filepath.Join(dir, "tm.sh")
	require.NoError(t, os.WriteFile(tm, []byte(record("tm")+`jm=${XRES_JM_ADDRESSES%%,*}
[ -n "$jm" ] || { echo "xres-it: no XRES_JM_ADDRESSES" >&2; exit 2; }
exec `+strings.Join(append(common, flinkTMJVM...), " ")+` \
  org.apache.flink.runtime.taskexecutor.TaskManagerRunner --configDir `+confDir+` \
  -Djobmanager.rpc.address="${jm%:*}" -Djobmanager.rpc.port="${jm##*:}" \
  -Dtaskmanager.resource-id="$id" -Dtaskmanager.host="$NM_HOST" -Dtaskmanager.bind-host="$NM_HOST"
`), 0o755))
	return jm, tm
}

// readTMView reads what TaskManager container id was started with.
func readTMView(t *testing.T, dir, kind, id string) map[string]string {
	t.Helper()
	return readKV(t, filepath.Join(dir, kind+"."+id))
}

func TestFlinkReactiveOnXres(t *testing.T) {
	const (
		nodes   = 3
		gpus    = 2 // per NodeManager (run.sh's default)
		wantTMs = nodes * gpus
	)
	jobDir, cp := mavenBuild(t, "flinkjob", "xres-flinkjob-0.1.0.jar")
	cp = append(cp, filepath.Join(jobDir, "target", "xres-flinkjob-0.1.0.jar"))
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": strconv.Itoa(nodes),
		"XRES_MINICLUSTER_NM_EXPIRY_MS": "5000", "XRES_MINICLUSTER_LABEL_NODES": ""})
	dir := t.TempDir()
	restPort := freeLoopbackPort(t)
	jmScript, tmScript := writeFlinkScripts(t, dir, cp, restPort)
	cfg := writeAMConf(t, dir, wantTMs,
		"scheduler-mode: reactive",
		"xres.reactive.min-workers: 1",
		"xres.worker-groups: jm;tm",
		"xres.worker-group.jm.workers: 1",
		"xres.worker-group.jm.port: auto",
		"xres.worker-group.jm.external-resources: none",
		"xres.worker-group.jm.taskmanager.memory.process.size: 512m",
		"xres.worker-group.tm.workers: "+strconv.Itoa(wantTMs),
		"xres.worker-group.tm.depends-on: jm",
		"xres.worker-group.tm.taskmanager.memory.process.size: 512m",
		"xres.worker-group.tm.command: sh "+tmScript,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	t0 := time.Now()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "--name", "xres-it-flink-reactive", "--", "sh", jmScript)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, "")
	// Runs before the cluster stops (cleanups run last first): a stopped
	// minicluster leaves its containers' processes running.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if a, err := getRMApp(ctx, c, app); err == nil && !isTerminal(a.State) {
			c.KillApp(t, app)
		}
		if err := waitAppProcessesGone(app, time.Minute); err != nil {
			t.Error(err)
		}
	})

	// The JobManager's host: from the AM's status (where its container runs).
	var jmWorker amstatus.WorkerStatus
	eventually(t, 3*time.Minute, "the JobManager's worker running", func() (bool, string) {
		requireRunning(t, p)
		st, err := amStatusOf(ctx, c, app)
		if err != nil {
			return false, err.Error()
		}
		for _, w := range runningWorkers(st) {
			if w.Group == "jm" {
				jmWorker = w
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", st.Containers)
	})
	jmHost, _, err := net.SplitHostPort(jmWorker.Node)
	require.NoError(t, err, "JobManager node %q", jmWorker.Node)
	flink := flinkREST{base: "http://" + net.JoinHostPort(jmHost, strconv.Itoa(restPort))}
	t.Logf("JobManager in %s on %s, REST at %s", jmWorker.Container, jmWorker.Node, flink.base)

	// runningTMs is xres's running tm workers.
	runningTMs := func() map[string]amstatus.WorkerStatus {
		st, err := amStatusOf(ctx, c, app)
		require.NoError(t, err)
		out := map[string]amstatus.WorkerStatus{}
		for id, w := range runningWorkers(st) {
			if w.Group == "tm" {
				out[id] = w
			}
		}
		return out
	}
	// rescaledTo waits until the job runs at parallelism n on exactly the
	// n TaskManagers xres runs (Flink's resource ids are the container ids,
	// on the hosts xres placed them), then until records flow; it returns
	// those TaskManagers.
	rescaledTo := func(n int, what string) map[string]amstatus.WorkerStatus {
		t.Helper()
		var tms map[string]amstatus.WorkerStatus
		var job flinkJob
		eventually(t, 4*time.Minute, fmt.Sprintf("%s: the job RUNNING at parallelism %d on xres's %d TaskManagers", what, n, n), func() (bool, string) {
			requireRunning(t, p)
			tms = runningTMs()
			if len(tms) != n {
				return false, fmt.Sprintf("xres runs %d TaskManagers", len(tms))
			}
			var err error
			if job, err = flink.job(ctx); err != nil {
				return false, err.Error()
			}
			if !job.runningAt(n) {
				return false, job.String()
			}
			fl, err := flink.taskManagers(ctx)
			if err != nil {
				return false, err.Error()
			}
			got := map[string]string{}
			for _, tm := range fl {
				got[tm.ID] = tm.host()
			}
			want := map[string]string{}
			for id, w := range tms {
				want[id] = w.Host
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return false, fmt.Sprintf("Flink's TaskManagers (id → host) %v, xres's %v", got, want)
			}
			return true, ""
		})
		before := job.sourceRecords()
		eventually(t, time.Minute, fmt.Sprintf("%s: records flow at parallelism %d", what, n), func() (bool, string) {
			j, err := flink.job(ctx)
			if err != nil {
				return false, err.Error()
			}
			return j.runningAt(n) && j.sourceRecords() > before && before >= 0, fmt.Sprintf("%s (source wrote %d before)", j, before)
		})
		requireDistinctGPUs(t, dir, tms)
		requireTasksSee(t, dir, tms, n)
		return tms
	}

	// 1. The job runs at the parallelism of the TaskManagers xres got: all 6.
	tms := rescaledTo(wantTMs, "after submission")
	tUp := time.Since(t0)
	jmView := readTMView(t, dir, "jm", jmWorker.Container)
	require.Empty(t, jmView["cuda"], "the JobManager's group asks no GPU")
	require.Empty(t, jmWorker.Devices, "the JobManager's devices")
	for id := range tms {
		v := readTMView(t, dir, "tm", id)
		require.Equal(t, net.JoinHostPort(jmHost, jmView["port"]), v["jm"], "XRES_JM_ADDRESSES of TaskManager %s", id)
	}

	// 2. A NodeManager with neither the AM nor the JobManager dies with its
	// TaskManagers: the job rescales down to the TaskManagers left and
	// keeps running (no GPU is left for the lost ones).
	amNode := amNodeOf(t, ctx, c, app)
	victim := -1
	for i := 0; i < nodes; i++ {
		if id := c.NodeID(i); id != amNode && id != jmWorker.Node {
			victim = i
			break
		}
	}
	require.GreaterOrEqual(t, victim, 0, "a node without the AM (%s) and the JobManager (%s)", amNode, jmWorker.Node)
	lost := 0
	for _, w := range tms {
		if w.Node == c.NodeID(victim) {
			lost++
		}
	}
	require.Equal(t, gpus, lost, "TaskManagers on node %d (%s): %+v", victim, c.NodeID(victim), tms)
	t1 := time.Now()
	harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMKill(ctx, victim) })
	left := rescaledTo(wantTMs-lost, fmt.Sprintf("node %d killed", victim))
	tDown := time.Since(t1)
	for id := range left {
		require.Contains(t, tms, id, "no new TaskManager while the node is down")
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		j, err := flink.job(ctx)
		require.NoError(t, err)
		require.True(t, j.runningAt(wantTMs-lost), "the job keeps running at parallelism %d: %s", wantTMs-lost, j)
		a, err := getRMApp(ctx, c, app)
		require.NoError(t, err)
		require.Equal(t, "RUNNING", a.State, "%+v", a)
	}
	st, err := amStatusOf(ctx, c, app)
	require.NoError(t, err)
	for _, g := range st.Groups {
		if g.Name == "tm" {
			require.Equal(t, lost, g.Pending, "xres keeps asking for the lost TaskManagers: %+v", g)
			require.Zero(t, g.Failed, "a lost node is no failure of the application: %+v", g)
		}
	}

	// 3. The node comes back: xres's asks are granted there, new
	// TaskManagers register, and the job rescales up.
	t2 := time.Now()
	harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMStart(ctx, victim) })
	again := rescaledTo(wantTMs, fmt.Sprintf("node %d back", victim))
	tBack := time.Since(t2)
	fresh := 0
	for id, w := range again {
		if _, old := tms[id]; !old {
			fresh++
			require.Equal(t, c.NodeID(victim), w.Node, "new TaskManager %s", id)
		}
	}
	require.Equal(t, lost, fresh, "new TaskManagers on the node that came back: %v", keys(again))

	// The end, as for any streaming job on YARN: the application killed;
	// am submit reports it, and every process of its containers ends.
	c.KillApp(t, app)
	require.Equal(t, 1, p.wait(t), "am submit's exit code for a killed application\n%s", p.output())
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "KILLED", a.State, "%+v", a)
	require.NoError(t, waitAppProcessesGone(app, time.Minute))

	t.Logf("Flink reactive on xres: submit → RUNNING at parallelism %d: %s; NodeManager killed → parallelism %d: %s; back → parallelism %d: %s",
		wantTMs, tUp.Round(100*time.Millisecond), wantTMs-lost, tDown.Round(100*time.Millisecond), wantTMs, tBack.Round(100*time.Millisecond))
}

// waitAppProcessesGone waits up to d until no process of app's containers
// runs on this host (the JobManager's and TaskManagers' JVMs included).
func waitAppProcessesGone(app string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		n := appProcesses(app)
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d processes of its containers still run %s after it ended", app, n, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// requireTasksSee checks what the job's own map tasks wrote when they
// opened: on each of the n TaskManagers one subtask of parallelism n, subtasks
// 0…n-1 over them all, each seeing its TaskManager's GPU in
// CUDA_VISIBLE_DEVICES (the Flink task's environment: what user code that
// picks a GPU reads).
func requireTasksSee(t *testing.T, dir string, tms map[string]amstatus.WorkerStatus, n int) {
	t.Helper()
	subtasks := map[string]string{} // subtask → container
	for id := range tms {
		tv := readKV(t, filepath.Join(dir, "task."+id))
		require.Equal(t, strconv.Itoa(n), tv["parallelism"], "the map task in %s: %v", id, tv)
		require.Equal(t, id, tv["container"], "the map task in %s: %v", id, tv)
		require.Equal(t, readTMView(t, dir, "tm", id)["cuda"], tv["cuda"], "the map task in %s sees its TaskManager's GPU: %v", id, tv)
		other, dup := subtasks[tv["subtask"]]
		require.False(t, dup, "subtask %s in %s and %s", tv["subtask"], other, id)
		subtasks[tv["subtask"]] = id
	}
	for i := range n {
		require.Contains(t, subtasks, strconv.Itoa(i), "subtasks by container: %v", subtasks)
	}
	t.Logf("the map's subtasks of parallelism %d by container: %v", n, subtasks)
}

// requireDistinctGPUs checks the CUDA_VISIBLE_DEVICES each running
// TaskManager was started with (its own record): one GPU, none shared on a
// host, and the one the AM reports for the container.
func requireDistinctGPUs(t *testing.T, dir string, tms map[string]amstatus.WorkerStatus) {
	t.Helper()
	byHost := map[string]map[string]string{} // host → GPU → container
	for id, w := range tms {
		v := readTMView(t, dir, "tm", id)
		cuda := v["cuda"]
		require.NotEmpty(t, cuda, "CUDA_VISIBLE_DEVICES of TaskManager %s", id)
		require.NotContains(t, cuda, ",", "TaskManager %s has one GPU: %q", id, cuda)
		require.Equal(t, w.Host, v["host"], "NM_HOST of TaskManager %s", id)
		require.Len(t, w.Devices["gpu"], 1, "the AM's devices of %s: %v", id, w.Devices)
		require.Equal(t, w.Devices["gpu"][0]["index"], cuda, "TaskManager %s: its CUDA_VISIBLE_DEVICES vs the AM's report", id)
		if byHost[v["host"]] == nil {
			byHost[v["host"]] = map[string]string{}
		}
		other, dup := byHost[v["host"]][cuda]
		require.False(t, dup, "GPU %s of host %s given to TaskManagers %s and %s", cuda, v["host"], other, id)
		byHost[v["host"]][cuda] = id
	}
	hosts := make([]string, 0, len(byHost))
	for h, g := range byHost {
		ids := make([]string, 0, len(g))
		for gpu := range g {
			ids = append(ids, gpu)
		}
		sort.Strings(ids)
		hosts = append(hosts, h+": "+strings.Join(ids, ","))
	}
	sort.Strings(hosts)
	t.Logf("TaskManagers' CUDA_VISIBLE_DEVICES by host: %s", strings.Join(hosts, "; "))
}
