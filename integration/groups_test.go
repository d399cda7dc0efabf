//go:build integration

package integration

// Worker groups and reactive scaling (issue 14) on the real cluster: two
// groups with their own devices, sizes and commands, read back from the
// RM's REST reports and from what each worker saw; and scheduler-mode:
// reactive on a cluster whose nodes come and go (nm-kill, nm-start).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// groupContainer is one entry of the RM's container list of an attempt,
// with the priority of the ask it was granted for.
type groupContainer struct {
	rmContainer
	Priority json.Number `json:"priority"`
}

// amount is the RM's allocated amount of resource name (0 when it lists
// none: a type the container was not given).
func (r rmContainer) amount(name string) int64 {
	n, _ := r.resource(name)
	return n
}

// fpgaSysfs is the PCI driver's fixture: a host with two Xilinx U250 user
// functions (vendor 0x10ee, device 0x5005), absolute.
func fpgaSysfs(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "driver", "pci", "testdata", "two-fpgas", "sys"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(d, "bus", "pci", "devices", "0000:3b:00.1"))
	require.NoError(t, err, "the PCI fixture")
	return d
}

// groupWorkerScript writes dir/worker.sh: it records, in dir/ran.<container>,
// which command ran it ($1), its group and XRES_WORKERS; copies the
// launcher's device file to dir/devices.<container>.json and the AM's
// answer at XRES_WORKERS_URL to dir/count.<container>.json; then waits for
// dir/release (or for dir to go: a worker a crashed cluster left behind
// ends with the test). ran.* is written last, so once it exists the rest
// does.
func groupWorkerScript(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "worker.sh")
	script := `d=` + dir + `
id=$CONTAINER_ID
cp "$XRES_RESOURCES_FILE" "$d/devices.$id.json"
curl -sf --noproxy '*' "$XRES_WORKERS_URL" > "$d/count.$id.json"
printf 'command=%s\ngroup=%s\nworkers=%s\n' "$1" "$XRES_WORKER_GROUP" "$XRES_WORKERS" > "$d/ran.$id.tmp"
mv "$d/ran.$id.tmp" "$d/ran.$id"
while [ ! -e "$d/release" ] && [ -d "$d" ]; do sleep 0.2; done
`
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// readKV reads a file of key=value lines.
func readKV(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// pageShows waits until the AM's tracking page, opened through the RM's
// web proxy, holds every one of want.
func pageShows(t *testing.T, ctx context.Context, c *harness.Cluster, app string, want ...string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("the tracking page shows %q", want), func() (bool, string) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL("/proxy/"+url.PathEscape(app)+"/"), nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false, fmt.Sprintf("no %q in (HTTP %d)\n%s", w, resp.StatusCode, b)
			}
		}
		return true, ""
	})
}

// requireRunning fails the test at once when am submit has ended (the
// application with it), with its output, instead of waiting on.
func requireRunning(t *testing.T, p *amProc) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("am submit ended (%v) while the application should run\n%s", p.err, p.output())
	default:
	}
}

func fitsGroups(ns []harness.Node) bool {
	k := 0
	for _, n := range ns {
		tot := n.Total()
		gpu, _ := tot.Get("yarn.io/gpu")
		fpga, _ := tot.Get("yarn.io/fpga")
		if gpu >= 2 && fpga >= 1 && tot.Memory >= 2048 {
			k++
		}
	}
	return k >= 2
}

// Groups: trainer (1 worker, 2 yarn.io/gpu, 256 MiB, 1 vcore, the command
// after --) and prep (2 workers, 1 yarn.io/fpga and no GPU, 320 MiB, 2
// vcores, its own command) in one application. The RM's containers carry
// exactly their group's profile and their group's ask priority (1, 2);
// each launcher discovered its group's devices only (the AM's status, and
// the device file the worker read); each worker ran its group's command
// with XRES_WORKER_GROUP set; XRES_WORKERS and XRES_WORKERS_URL tell every
// worker the counts of both groups; the application SUCCEEDS.
func TestGroupsOwnDevicesAndCommands(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "2", "XRES_MINICLUSTER_LABEL_NODES": ""}, fitsGroups)
	dir := t.TempDir()
	script := groupWorkerScript(t, dir)
	coord := filepath.Join(dir, "coordination.state")
	cfg := writeAMConf(t, dir, 4,
		"external-resource.fpga.amount: 1",
		"external-resource.fpga.yarn.config-key: yarn.io/fpga",
		"external-resource.fpga.driver-factory.class: org.apache.flink.externalresource.fpga.FPGADriverFactory",
		"external-resource.fpga.param.vendor: 0x10ee",
		"external-resource.fpga.param.device: 0x5005",
		"external-resource.fpga.param.sysfs-root: "+fpgaSysfs(t),
		"external-resource.fpga.param.coordination.file: "+coord,
		"xres.worker-groups: trainer;prep",
		"xres.worker-group.trainer.workers: 1",
		"xres.worker-group.trainer.external-resource.gpu.amount: 2",
		"xres.worker-group.prep.workers: 2",
		"xres.worker-group.prep.external-resources: fpga",
		"xres.worker-group.prep.taskmanager.memory.process.size: 320m",
		"xres.worker-group.prep.yarn.containers.vcores: 2",
		"xres.worker-group.prep.command: sh "+script+" prep-command",
	)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "--name", "xres-it-groups", "--", "sh", script, "default-command")
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	// Every worker running with the devices its launcher reported.
	var st amstatus.Status
	eventually(t, 3*time.Minute, "3 workers running with their devices reported", func() (bool, string) {
		requireRunning(t, p)
		var err error
		if st, err = amStatusOf(ctx, c, app); err != nil {
			return false, err.Error()
		}
		reported := 0
		for _, w := range runningWorkers(st) {
			if len(w.Devices) > 0 {
				reported++
			}
		}
		return reported == 3, fmt.Sprintf("%+v", st.Containers)
	})
	require.Equal(t, 3, st.Workers, "%+v", st)
	require.Equal(t, 3, st.Minimum, "%+v", st)
	require.Zero(t, st.Failed, "%+v", st.Containers)
	require.Len(t, st.Groups, 2, "%+v", st.Groups)
	byName := map[string]amstatus.GroupStatus{}
	for _, g := range st.Groups {
		byName[g.Name] = g
	}
	require.Equal(t, 1, byName["trainer"].Workers, "%+v", st.Groups)
	require.Equal(t, 1, byName["trainer"].Running, "%+v", st.Groups)
	require.Equal(t, 2, byName["prep"].Workers, "%+v", st.Groups)
	require.Equal(t, 2, byName["prep"].Running, "%+v", st.Groups)
	require.Equal(t, yarn.Resource{MemoryMB: 256, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 2}}, byName["trainer"].Profile)
	require.Equal(t, yarn.Resource{MemoryMB: 320, VCores: 2, Extra: map[string]int64{"yarn.io/fpga": 1}}, byName["prep"].Profile)

	// The tracking page: running of target, and a row per group.
	pageShows(t, ctx, c, app, `<span id="target">running 3 of target 3</span>`,
		"<tr><td>trainer</td><td>1 / 1</td><td>1</td>", "<tr><td>prep</td><td>2 / 2</td><td>2</td>")

	// The devices each launcher reported to the AM: its group's, only.
	groupOf := map[string]string{} // container → group
	fpgas := map[string]string{}   // FPGA address → container
	for _, w := range st.Containers {
		groupOf[w.Container] = w.Group
		switch w.Group {
		case "trainer":
			require.Len(t, w.Devices["gpu"], 2, "trainer %s devices %v", w.Container, w.Devices)
			require.NotContains(t, w.Devices, "fpga", "trainer %s devices %v", w.Container, w.Devices)
		case "prep":
			require.Len(t, w.Devices["fpga"], 1, "prep %s devices %v", w.Container, w.Devices)
			require.NotContains(t, w.Devices, "gpu", "prep %s devices %v", w.Container, w.Devices)
			addr := w.Devices["fpga"][0]["address"]
			require.Contains(t, []string{"0000:3b:00.1", "0000:d8:00.1"}, addr, "prep %s devices %v", w.Container, w.Devices)
			require.Empty(t, fpgas[addr], "FPGA %s given to %s and %s", addr, fpgas[addr], w.Container)
			fpgas[addr] = w.Container
		default:
			t.Fatalf("container %s of group %q: %+v", w.Container, w.Group, st.Containers)
		}
	}

	// The RM's own report: each worker container has exactly its group's
	// profile, granted for its group's ask (priority 1 for the first
	// group, 2 for the second).
	cs, err := rmAttemptContainers[groupContainer](ctx, c, app)
	require.NoError(t, err)
	require.Len(t, cs, 4, "the AM and 3 workers: %+v", cs)
	perGroup := map[string]int{}
	for _, x := range cs {
		if isAttemptContainer(x.ContainerID, app, 1) {
			continue
		}
		g, ok := groupOf[x.ContainerID]
		require.True(t, ok, "RM container %s is not one of the AM's workers %v", x.ContainerID, groupOf)
		perGroup[g]++
		got := map[string]int64{}
		for _, k := range []string{"memory-mb", "vcores", "yarn.io/gpu", "yarn.io/fpga"} {
			got[k] = x.amount(k)
		}
		want := map[string]int64{"memory-mb": 256, "vcores": 1, "yarn.io/gpu": 2, "yarn.io/fpga": 0}
		prio := "1"
		if g == "prep" {
			want = map[string]int64{"memory-mb": 320, "vcores": 2, "yarn.io/gpu": 0, "yarn.io/fpga": 1}
			prio = "2"
		}
		require.Equal(t, want, got, "RM's allocated resources of %s container %s: %+v", g, x.ContainerID, x.AllocatedResources)
		require.Equal(t, prio, x.Priority.String(), "RM's priority of %s container %s", g, x.ContainerID)
	}
	require.Equal(t, map[string]int{"trainer": 1, "prep": 2}, perGroup)

	// What each worker saw: its group's command and group, the total
	// count, the launcher's device file with its group's devices only,
	// and both groups at XRES_WORKERS_URL.
	// (A launcher reports its devices before it starts its worker.)
	var ran []string
	eventually(t, 2*time.Minute, "each of the 3 workers has written what it saw", func() (bool, string) {
		var err error
		ran, err = filepath.Glob(filepath.Join(dir, "ran.*"))
		require.NoError(t, err)
		return len(ran) == 3, fmt.Sprintf("%v", ran)
	})
	for _, f := range ran {
		id := strings.TrimPrefix(filepath.Base(f), "ran.")
		g := groupOf[id]
		kv := readKV(t, f)
		wantCmd := map[string]string{"trainer": "default-command", "prep": "prep-command"}[g]
		require.Equal(t, map[string]string{"command": wantCmd, "group": g, "workers": "3"}, kv, "what %s container %s saw", g, id)

		b, err := os.ReadFile(filepath.Join(dir, "devices."+id+".json"))
		require.NoError(t, err)
		var devs map[string][]map[string]any
		require.NoError(t, json.Unmarshal(b, &devs), "%s", b)
		names := make([]string, 0, len(devs))
		for n := range devs {
			names = append(names, n)
		}
		sort.Strings(names)
		if g == "trainer" {
			require.Equal(t, []string{"gpu"}, names, "trainer's device file: %s", b)
			require.Len(t, devs["gpu"], 2, "trainer's device file: %s", b)
		} else {
			require.Equal(t, []string{"fpga"}, names, "prep's device file: %s", b)
			require.Len(t, devs["fpga"], 1, "prep's device file: %s", b)
			require.Equal(t, id, fpgas[fmt.Sprint(devs["fpga"][0]["address"])], "prep's device file vs the AM's status: %s", b)
		}

		b, err = os.ReadFile(filepath.Join(dir, "count."+id+".json"))
		require.NoError(t, err)
		var count amstatus.WorkerCount
		require.NoError(t, json.Unmarshal(b, &count), "XRES_WORKERS_URL answered %q", b)
		require.Equal(t, 3, count.Target, "%s", b)
		require.Equal(t, 3, count.Minimum, "%s", b)
		require.Len(t, count.Groups, 2, "%s", b)
		require.Equal(t, "trainer", count.Groups[0].Name, "%s", b)
		require.Equal(t, 1, count.Groups[0].Target, "%s", b)
		require.Equal(t, "prep", count.Groups[1].Name, "%s", b)
		require.Equal(t, 2, count.Groups[1].Target, "%s", b)
	}

	releaseAndSucceed(t, p, app, release)
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "SUCCEEDED", a.FinalStatus, "%+v", a)
	requireNoStaging(t, c, app)
}

// reactiveWorkerScript writes dir/worker.sh: it appends a line to
// dir/started.<container> when it starts, writes XRES_WORKERS to
// dir/workers-env.<container>, and copies the launcher's $XRES_WORKERS_FILE
// (the AM's answer at XRES_WORKERS_URL) to dir/count.<container>.json at
// start and on each SIGUSR1 (xres.rescale.signal: USR1, sent by the
// launcher when the counts change), until dir/release exists (or dir is
// gone): the counts the tests wait for reach it only through the
// rescaling file and signal.
func reactiveWorkerScript(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "worker.sh")
	script := `d=` + dir + `
id=$CONTAINER_ID
echo start >> "$d/started.$id"
echo "$XRES_WORKERS" > "$d/workers-env.$id"
copy() { cp "$XRES_WORKERS_FILE" "$d/count.$id.tmp" && mv "$d/count.$id.tmp" "$d/count.$id.json"; }
trap copy USR1
copy
while [ ! -e "$d/release" ] && [ -d "$d" ]; do
  sleep 1
done
`
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// workerCountOf is the last answer of XRES_WORKERS_URL worker container id copied.
func workerCountOf(dir, id string) (amstatus.WorkerCount, error) {
	var wc amstatus.WorkerCount
	b, err := os.ReadFile(filepath.Join(dir, "count."+id+".json"))
	if err != nil {
		return wc, err
	}
	return wc, json.Unmarshal(b, &wc)
}

// Reactive: scheduler-mode: reactive, 4 workers wanted, at least 2
// (xres.reactive.min-workers), slot.request.timeout 10 s; each worker
// takes a whole node (2 GPUs of the node's 2). On 4 NodeManagers of which
// 2 are down at submission, the application runs with 2 and stays running
// well past the timeout; each nm-start grows it (3, then 4 running, every
// worker told so at XRES_WORKERS_URL); a killed node shrinks it to 3
// without a failure and it runs on with one pending; once the workers are
// released it SUCCEEDS.
func TestReactiveScalesWithTheCluster(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "4", "XRES_MINICLUSTER_NM_EXPIRY_MS": "5000",
		"XRES_MINICLUSTER_LABEL_NODES": ""})
	// Nodes 2 and 3 are down when the application starts.
	for _, n := range []int{2, 3} {
		harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMKill(ctx, n) })
	}
	dir := t.TempDir()
	script := reactiveWorkerScript(t, dir)
	cfg := writeAMConf(t, dir, 8, "scheduler-mode: reactive", "xres.reactive.min-workers: 2", "slot.request.timeout: 10 s", "xres.rescale.signal: USR1")
	release := filepath.Join(dir, "release")
	const wanted, minimum = 4, 2

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "-D", "external-resource.gpu.amount=2", "--workers", fmt.Sprint(wanted),
		"--name", "xres-it-reactive", "--", "sh", script)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)

	// runningWith waits until the AM reports n workers running, each of
	// which has reported its devices and been told the count at
	// XRES_WORKERS_URL, and returns the status.
	runningWith := func(n int) amstatus.Status {
		t.Helper()
		var st amstatus.Status
		eventually(t, 3*time.Minute, fmt.Sprintf("%d workers running with their devices, each told so at XRES_WORKERS_URL", n), func() (bool, string) {
			requireRunning(t, p)
			var err error
			if st, err = amStatusOf(ctx, c, app); err != nil {
				return false, err.Error()
			}
			run := runningWorkers(st)
			if len(run) != n {
				return false, fmt.Sprintf("%d running: %+v", len(run), st.Containers)
			}
			for id, w := range run {
				if len(w.Devices) == 0 {
					return false, fmt.Sprintf("%s has not reported its devices yet", id)
				}
				wc, err := workerCountOf(dir, id)
				if err != nil {
					return false, fmt.Sprintf("%s: %v", id, err)
				}
				if wc.Running != n || wc.Target != wanted || wc.Minimum != minimum {
					return false, fmt.Sprintf("%s read %+v", id, wc)
				}
			}
			return true, ""
		})
		require.Equal(t, wanted, st.Workers, "%+v", st)
		require.Equal(t, minimum, st.Minimum, "%+v", st)
		require.Equal(t, wanted-n, st.Pending, "%+v", st)
		return st
	}
	// stays checks, for d (at least the request timeout, so the AM had
	// the chance to give up), that the application runs on with the same
	// workers and no failure.
	stays := func(d time.Duration, workers map[string]amstatus.WorkerStatus) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
			a, err := getRMApp(ctx, c, app)
			require.NoError(t, err)
			require.Equal(t, "RUNNING", a.State, "the application with %d of %d workers: %+v", len(workers), wanted, a)
			st, err := amStatusOf(ctx, c, app)
			require.NoError(t, err)
			require.True(t, sameKeys(runningWorkers(st), workers), "running %v, before %v", keys(runningWorkers(st)), keys(workers))
			require.Zero(t, st.Failed, "%+v", st.Containers)
		}
	}

	// Starts with the 2 that fit, and runs on past slot.request.timeout.
	st := runningWith(2)
	require.NotNil(t, st.MinRunningTime, "the minimum's start time: %+v", st)
	require.Nil(t, st.AllRunningTime, "not every wanted worker has run: %+v", st)
	pageShows(t, ctx, c, app, `<span id="target">running 2 of target 4 (minimum 2, scheduler-mode: reactive)</span>`)
	stays(20*time.Second, runningWorkers(st))
	for id := range runningWorkers(st) {
		b, err := os.ReadFile(filepath.Join(dir, "workers-env."+id))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(wanted), strings.TrimSpace(string(b)), "XRES_WORKERS of %s", id)
	}

	// Grows as nodes come back.
	harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMStart(ctx, 2) })
	runningWith(3)
	harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMStart(ctx, 3) })
	st = runningWith(4)
	require.NotNil(t, st.AllRunningTime, "every wanted worker ran: %+v", st)
	pageShows(t, ctx, c, app, `<span id="target">running 4 of target 4 (minimum 2, scheduler-mode: reactive)</span>`)
	perNode := map[string]int{}
	for _, w := range runningWorkers(st) {
		perNode[w.Node]++
		require.Len(t, w.Devices["gpu"], 2, "%s devices %v", w.Container, w.Devices)
	}
	require.Len(t, perNode, 4, "one worker per node: %v", perNode)
	cs, err := rmContainers(ctx, c, app)
	require.NoError(t, err)
	require.Len(t, cs, wanted+1, "the RM's containers: the AM and %d workers: %+v", wanted, cs)
	for _, x := range cs {
		if !isAttemptContainer(x.ContainerID, app, 1) {
			require.EqualValues(t, 2, x.amount("yarn.io/gpu"), "RM's yarn.io/gpu of %s", x.ContainerID)
		}
	}

	// Shrinks when a node is lost (node 3 never runs the AM: it was down
	// when the AM started), and runs on with one pending.
	var victim amstatus.WorkerStatus
	for _, w := range runningWorkers(st) {
		if w.Node == c.NodeID(3) {
			victim = w
		}
	}
	require.NotEmpty(t, victim.Container, "a worker on node 3 (%s): %+v", c.NodeID(3), st.Containers)
	harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMKill(ctx, 3) })
	st = runningWith(3)
	require.NotContains(t, runningWorkers(st), victim.Container)
	require.Zero(t, st.Failed, "a lost node is no failure of the application's workers: %+v", st)
	for _, w := range st.Containers {
		if w.Container == victim.Container {
			require.Equal(t, amstatus.StateFailed, w.State, "the lost node's worker: %+v", w)
		}
	}
	stays(20*time.Second, runningWorkers(st))

	releaseAndSucceed(t, p, app, release)
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "SUCCEEDED", a.FinalStatus, "%+v", a)
	starts := requireStartedOnce(t, dir, -1)
	require.GreaterOrEqual(t, len(starts), wanted, "workers that ever ran: %v", starts)
}

// Groups count their own failures against their own
// yarn.maximum-failed-containers: prep's worker always exits 3, and
// with prep's limit at 1 (the plain key, 5, stays trainer's) the
// application FAILS after prep's second failure, naming the group and
// the failing container; trainer's worker had none.
func TestGroupsOwnFailureAccounting(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "2", "XRES_MINICLUSTER_LABEL_NODES": ""}, fitsGroups)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	fail := filepath.Join(dir, "prep-fails.sh")
	// It fails once trainer's worker has started, so that one has run.
	require.NoError(t, os.WriteFile(fail, []byte(`while ! ls `+dir+`/started.* >/dev/null 2>&1; do sleep 0.2; done
echo "$CONTAINER_ID" >> `+dir+`/prep-ran
echo "xres-it: prep gives up" >&2
exit 3
`), 0o755))
	cfg := writeAMConf(t, dir, 4,
		"yarn.maximum-failed-containers: 5",
		"xres.worker-groups: trainer;prep",
		"xres.worker-group.trainer.workers: 1",
		"xres.worker-group.prep.workers: 1",
		"xres.worker-group.prep.yarn.maximum-failed-containers: 1",
		"xres.worker-group.prep.command: sh "+fail,
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--name", "xres-it-groups-failures", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	code := p.wait(t)
	require.Equal(t, 1, code, "am submit exit code\n%s", p.output())
	require.Contains(t, p.stdout.String(), app+" finished: FINISHED FAILED", p.output())
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "FAILED", a.FinalStatus, "%+v", a)
	require.Contains(t, a.Diagnostics, "2 worker containers of group prep failed, more than yarn.maximum-failed-containers=1")
	require.Regexp(t, `first failure: container container_\S+ of group prep on \S+ exited with exit code 3`, a.Diagnostics)
	require.Contains(t, a.Diagnostics, "xres-it: prep gives up")
	b, err := os.ReadFile(filepath.Join(dir, "prep-ran"))
	require.NoError(t, err)
	require.Len(t, strings.Fields(string(b)), 2, "prep's worker ran once and was replaced once: %s", b)
	// trainer's worker ran (the command after --) and did not fail.
	requireStartedOnce(t, dir, 1)
	requireNoStaging(t, c, app)
}

// Reactive, growing when another application ends: on the suite's 2
// NodeManagers (4 GPUs), another application holds 2 GPUs; of 4 workers
// of 1 GPU (at least 2) the application runs with the 2 that fit and,
// once the other one has ended, grows to 4, then SUCCEEDS.
func TestReactiveGrowsWhenAnotherAppEnds(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "2", "XRES_MINICLUSTER_LABEL_NODES": ""},
		func(ns []harness.Node) bool {
			gpus := int64(0)
			for _, n := range ns {
				g, _ := n.Total().Get("yarn.io/gpu")
				gpus += g
			}
			return len(ns) == 2 && gpus == 4
		})
	// The other application: one worker holding 2 GPUs until released.
	other := submitPlaced(t, c, "xres-it-reactive-other", 1, "external-resource.gpu.amount: 2")
	waitWorkersRunning(t, other.ctx, c, other.app, 1, 3*time.Minute)

	dir := t.TempDir()
	script := reactiveWorkerScript(t, dir)
	cfg := writeAMConf(t, dir, 4, "scheduler-mode: reactive", "xres.reactive.min-workers: 2", "slot.request.timeout: 10 s", "xres.rescale.signal: USR1")
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "--workers", "4", "--name", "xres-it-reactive-grow", "--", "sh", script)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)

	waitCount := func(n int) amstatus.Status {
		t.Helper()
		var st amstatus.Status
		eventually(t, 3*time.Minute, fmt.Sprintf("%d of 4 workers running, each told so at XRES_WORKERS_URL", n), func() (bool, string) {
			requireRunning(t, p)
			var err error
			if st, err = amStatusOf(ctx, c, app); err != nil {
				return false, err.Error()
			}
			run := runningWorkers(st)
			if len(run) != n {
				return false, fmt.Sprintf("%d running: %+v", len(run), st.Containers)
			}
			for id := range run {
				if wc, err := workerCountOf(dir, id); err != nil || wc.Running != n || wc.Target != 4 || wc.Minimum != 2 {
					return false, fmt.Sprintf("%s read %+v (%v)", id, wc, err)
				}
			}
			return true, ""
		})
		require.Equal(t, 4-n, st.Pending, "%+v", st)
		require.Zero(t, st.Failed, "%+v", st.Containers)
		return st
	}
	waitCount(2)
	// The other application ends; its GPUs go to this one.
	releaseAndSucceed(t, other.p, other.app, other.release)
	waitCount(4)
	releaseAndSucceed(t, p, app, release)
	requireStartedOnce(t, dir, 4)
}

// Groups place their workers apart each by itself: with
// xres.placement.max-workers-per-node: 1 on 2 nodes, trainer's 2 workers
// (1 GPU) and prep's 2 (1 FPGA) all run, each group one worker per node
// (each group's ask carries its own allocation tag, so the constraint
// counts the group's workers only).
func TestGroupsPlacementPerGroup(t *testing.T) {
	c := clusterWith(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "2", "XRES_MINICLUSTER_LABEL_NODES": ""},
		func(ns []harness.Node) bool { return len(ns) == 2 && fitsGroups(ns) && labelled(ns) == 0 })
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	cfg := writeAMConf(t, dir, 4,
		"xres.placement.max-workers-per-node: 1",
		"external-resource.fpga.amount: 1",
		"external-resource.fpga.yarn.config-key: yarn.io/fpga",
		"external-resource.fpga.driver-factory.class: org.apache.flink.externalresource.fpga.FPGADriverFactory",
		"external-resource.fpga.param.vendor: 0x10ee",
		"external-resource.fpga.param.device: 0x5005",
		"external-resource.fpga.param.sysfs-root: "+fpgaSysfs(t),
		"external-resource.fpga.param.coordination.file: "+filepath.Join(dir, "coordination.state"),
		"xres.worker-groups: trainer;prep",
		"xres.worker-group.trainer.workers: 2",
		"xres.worker-group.prep.workers: 2",
		"xres.worker-group.prep.external-resources: fpga",
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--name", "xres-it-groups-placement", "--"}, countingWorker(dir, release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	run := waitWorkersRunning(t, ctx, c, app, 4, 3*time.Minute)
	nodes := map[string]map[string]int{} // group → node → workers
	for _, w := range run {
		if nodes[w.Group] == nil {
			nodes[w.Group] = map[string]int{}
		}
		nodes[w.Group][w.Node]++
	}
	require.Len(t, nodes, 2, "workers by group and node: %v", nodes)
	for g, perNode := range nodes {
		require.Len(t, perNode, 2, "group %s one worker per node: %v", g, nodes)
	}
	releaseAndSucceed(t, p, app, release)
}

// Reactive below its minimum: 3 workers of a whole node each (at least
// 2) on 3 NodeManagers; two nodes without the AM are lost, leaving 1
// running, and once slot.request.timeout (10 s) has passed without a
// node to replace them the application FAILS, saying how many run of
// how many needed.
func TestReactiveFailsBelowMinimum(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_NODEMANAGERS": "3", "XRES_MINICLUSTER_NM_EXPIRY_MS": "5000",
		"XRES_MINICLUSTER_LABEL_NODES": ""})
	dir := t.TempDir()
	script := reactiveWorkerScript(t, dir)
	cfg := writeAMConf(t, dir, 6, "scheduler-mode: reactive", "xres.reactive.min-workers: 2", "slot.request.timeout: 10 s", "xres.rescale.signal: USR1")
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "-D", "external-resource.gpu.amount=2", "--workers", "3",
		"--name", "xres-it-reactive-below-min", "--", "sh", script)
	app := p.appID(t)
	killOnCleanup(t, c, app, release)

	run := waitWorkersRunning(t, ctx, c, app, 3, 3*time.Minute)
	amNode := amNodeOf(t, ctx, c, app)
	var victims []int
	for _, w := range run {
		if w.Node != amNode {
			victims = append(victims, nmIndex(t, c, w.Node))
		}
	}
	require.Len(t, victims, 2, "workers off the AM's node %s: %+v", amNode, run)
	for _, n := range victims {
		requireRunning(t, p)
		harness.MustVerb(t, func(ctx context.Context) (string, error) { return c.NMKill(ctx, n) })
	}
	code := p.wait(t)
	require.Equal(t, 1, code, "am submit exit code\n%s", p.output())
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "FAILED", a.FinalStatus, "%+v", a)
	require.Contains(t, a.Diagnostics, "1 running of the 2 needed (xres.reactive.min-workers)")
	require.Contains(t, a.Diagnostics, "not granted within slot.request.timeout=10s")
}
