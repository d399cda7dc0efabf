//go:build integration

package integration

// YARN's own GPU assignment (issue 40): the minicluster in a GPU plugin mode
// (XRES_MINICLUSTER_GPU_MODE, docker/hadoop-minicluster/README.md) runs YARN's
// GPU resource plugin, whose GpuResourceAllocator gives each container its GPUs
// and reports them on the NodeManager's REST API. Hadoop's own DistributedShell
// an xres application and Spark on YARN with the xres discovery bridge run at
// once on one NodeManager with 6 GPUs whose index and minor number differ (or
// on 2 NodeManagers, fake hosts, of 3); every GPU an xres worker is told to
// use (CUDA_VISIBLE_DEVICES) and every GPU address the bridge gives a Spark
// executor must be one YARN assigned to that worker's or executor's container.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// gpuPluginModes are the modes TestYARNAssignedGPUs runs (XRES_GPUPLUGIN_MODES
// picks some, e.g. "isolated"); "-2nm": on 2 NodeManagers (fake hosts) of 2 GPUs.
var gpuPluginModes = []string{"plugin", "isolated", "docker", "pluggable", "plugin-2nm", "plugin-off"}

// nmGPU is one GPU as the NodeManager's REST API reports it.
type nmGPU struct {
	Host        int    // the NodeManager (fake host)
	HostIndex   int    // the fake host's index of the GPU
	MinorNumber int    // the minor number YARN reports
	ContainerID string // for an assigned one
}

// gpuResource is the resource name a mode's GPUs have.
func gpuResource(mode string) string {
	if mode == "pluggable" {
		return "nvidia.com/gpu"
	}
	return "yarn.io/gpu"
}

// busHostIndex is the host index of a fake GPU's PCI bus id (bus 0x10 + index,
// driver/gpu/testdata/fake-nvidia-smi).
func busHostIndex(bus string) (int, error) {
	var dom, b, dev, fn int
	if _, err := fmt.Sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn); err != nil || b < 16 {
		return 0, fmt.Errorf("not a fake GPU's PCI bus id: %q", bus)
	}
	return b - 16, nil
}

// nmGPUs reads GET /ws/v1/node/resources/<resource> of NodeManager n: YARN's
// GPU plugin (yarn.io/gpu: NMGpuResourceInfo, totalGpuDevices and
// assignedGpuDevices with index, minorNumber, containerId) or the pluggable
// device framework (nvidia.com/gpu: NMDeviceResourceInfo, totalDevices and
// assignedDevices with the device's busID and minorNumber).
func nmGPUs(ctx context.Context, c *harness.Cluster, n int, resource string) (total, assigned []nmGPU, err error) {
	addr := c.Env[fmt.Sprintf("XRES_NM%d_HTTP", n)]
	if addr == "" {
		return nil, nil, fmt.Errorf("no XRES_NM%d_HTTP in cluster.env", n)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	u := "http://" + addr + "/ws/v1/node/resources/" + strings.ReplaceAll(resource, "/", "%2F")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: http %d", u, resp.StatusCode)
	}
	total, assigned, err = decodeNMGPUs(resp.Body, resource)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return total, assigned, nil
}

// decodeNMGPUs reads the NodeManager's answer to GET
// /ws/v1/node/resources/<resource> (nmGPUs).
func decodeNMGPUs(body io.Reader, resource string) (total, assigned []nmGPU, err error) {
	type device struct {
		Index       int    `json:"index"`
		MinorNumber int    `json:"minorNumber"`
		BusID       string `json:"busID"`
		ContainerID string `json:"containerId"`
	}
	var r struct {
		TotalGPU    []device `json:"totalGpuDevices"`
		AssignedGPU []device `json:"assignedGpuDevices"`
		Total       []device `json:"totalDevices"`
		Assigned    []struct {
			ContainerID string `json:"containerId"`
			Device      device `json:"device"`
		} `json:"assignedDevices"`
	}
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		return nil, nil, err
	}
	if resource == "yarn.io/gpu" {
		for _, d := range r.TotalGPU {
			total = append(total, nmGPU{HostIndex: d.Index, MinorNumber: d.MinorNumber})
		}
		for _, d := range r.AssignedGPU {
			assigned = append(assigned, nmGPU{HostIndex: d.Index, MinorNumber: d.MinorNumber, ContainerID: d.ContainerID})
		}
		return total, assigned, nil
	}
	for _, d := range r.Total {
		hi, err := busHostIndex(d.BusID)
		if err != nil {
			return nil, nil, err
		}
		total = append(total, nmGPU{HostIndex: hi, MinorNumber: d.MinorNumber})
	}
	for _, a := range r.Assigned {
		hi, err := busHostIndex(a.Device.BusID)
		if err != nil {
			return nil, nil, err
		}
		assigned = append(assigned, nmGPU{HostIndex: hi, MinorNumber: a.Device.MinorNumber, ContainerID: a.ContainerID})
	}
	return total, assigned, nil
}

// gpuTotal is how many GPUs the NodeManagers of TestYARNAssignedGPUs's
// cluster have in all: DistributedShell's 2, xres's 2 and Spark's
// sparkExecutors.
const gpuTotal = 4 + sparkExecutors

// gpuClusterFor is a cluster in mode with nms NodeManagers of gpuTotal/nms GPUs
// each (and 8 GB of memory and 16 vcores in all: the 3 applications' 9
// containers): the suite's when
// it is one, else an extra one.
func gpuClusterFor(t *testing.T, mode string, nms int) *harness.Cluster {
	if c := harness.Get(t); c.Env["XRES_GPU_MODE"] == mode && c.Env["XRES_NODEMANAGERS"] == strconv.Itoa(nms) &&
		len(strings.Split(c.Env["XRES_GPU_MINORS"], ",")) == gpuTotal/nms && nmCapacityAtLeast(t, c, 8192/nms, 16/nms) {
		return c
	}
	settings := map[string]string{
		"XRES_MINICLUSTER_GPU_MODE":     mode,
		"XRES_MINICLUSTER_NODEMANAGERS": strconv.Itoa(nms),
		"XRES_MINICLUSTER_GPUS":         strconv.Itoa(gpuTotal / nms),
		"XRES_MINICLUSTER_NM_MEMORY_MB": strconv.Itoa(8192 / nms),
		"XRES_MINICLUSTER_NM_VCORES":    strconv.Itoa(16 / nms),
	}
	if mode == "pluggable" {
		// NvidiaGPUPluginForRuntimeV2 takes nvidia-smi's index for the minor number and
		// keeps only devices whose /dev/nvidia<index> exists: with minor numbers that
		// are the indices permuted, every GPU registers (under a wrong minor number).
		settings["XRES_MINICLUSTER_GPU_MINORS"] = "1,0,3,2,5,4"
	}
	return harness.StartExtra(t, settings)
}

// gpuViewScript writes what a container sees to dir/<kind>.<CONTAINER_ID>: its
// CUDA_VISIBLE_DEVICES and the GPUs nvidia-smi lists in it (index, UUID), then
// waits for dir/release.
func gpuViewScript(t *testing.T, dir, kind string) string {
	p := filepath.Join(dir, kind+".sh")
	script := `#!/bin/sh
d='` + dir + `'
f="$d/` + kind + `.$CONTAINER_ID"
{
	echo "cuda=$CUDA_VISIBLE_DEVICES"
	nvidia-smi --query-gpu=index,uuid --format=csv,noheader | sed 's/^/view=/'
} > "$f.tmp"
mv "$f.tmp" "$f"
while [ ! -e "$d/release" ]; do sleep 0.2; done
`
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// containerView is what one container wrote.
type containerView struct {
	cuda string
	view map[string]string // index in the container's view → UUID
}

func readViews(dir, kind string) (map[string]containerView, error) {
	files, err := filepath.Glob(filepath.Join(dir, kind+".container_*"))
	if err != nil {
		return nil, err
	}
	out := map[string]containerView{}
	for _, f := range files {
		if strings.HasSuffix(f, ".tmp") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		v := containerView{view: map[string]string{}}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			switch {
			case strings.HasPrefix(line, "cuda="):
				v.cuda = strings.TrimPrefix(line, "cuda=")
			case strings.HasPrefix(line, "view="):
				idx, uuid, ok := strings.Cut(strings.TrimPrefix(line, "view="), ", ")
				if !ok {
					return nil, fmt.Errorf("%s: bad line %q", f, line)
				}
				v.view[idx] = uuid
			}
		}
		out[strings.TrimPrefix(filepath.Base(f), kind+".")] = v
	}
	return out, nil
}

// gpuOfUUID is the fake host (NodeManager) and host index in a fake GPU's UUID
// (GPU-00000000-0000-4000-8000-<host:4><index:8>, driver/gpu/testdata/fake-nvidia-smi),
// as "host/index".
func gpuOfUUID(uuid string) (string, int, error) {
	const prefix = "GPU-00000000-0000-4000-8000-"
	if len(uuid) != len(prefix)+12 || !strings.HasPrefix(uuid, prefix) {
		return "", 0, fmt.Errorf("not a fake GPU's UUID: %q", uuid)
	}
	host, err := strconv.Atoi(uuid[len(prefix) : len(prefix)+4])
	if err != nil {
		return "", 0, fmt.Errorf("fake GPU's UUID %q: %w", uuid, err)
	}
	ix, err := strconv.Atoi(uuid[len(prefix)+4:])
	if err != nil {
		return "", 0, fmt.Errorf("fake GPU's UUID %q: %w", uuid, err)
	}
	return fmt.Sprintf("%d/%d", host, ix), ix, nil
}

// startDShell runs Hadoop's DistributedShell with n containers of one GPU each,
// each running script, and returns its application id.
func startDShell(t *testing.T, ctx context.Context, c *harness.Cluster, n int, resource, script, path string) string {
	return startDShellN(t, ctx, c, n, resource, 1, script, path)
}

// startDShellN is startDShell with amount GPUs per container.
func startDShellN(t *testing.T, ctx context.Context, c *harness.Cluster, n int, resource string, amount int, script, path string) string {
	java, _ := dsbenchCmd(t)
	args := append([]string{}, java[1:]...)
	args = append(args, c.ConfDir, "-appname", "xres-it-gpu-dshell", "-num_containers", strconv.Itoa(n),
		"-container_resources", fmt.Sprintf("memory-mb=128,vcores=1,%s=%d", resource, amount),
		"-master_memory", "256", "-master_vcores", "1", "-shell_script", script,
		"-shell_env", "PATH="+path, "-timeout", "2700000")
	cmd := exec.CommandContext(ctx, java[0], args...)
	cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+c.User)
	cmd.WaitDelay = 5 * time.Second
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var app string
	eventually(t, 2*time.Minute, "DistributedShell prints its application id", func() (bool, string) {
		if m := dshellSubmittedRE.FindStringSubmatch(out.String()); m != nil {
			app = m[1]
			return true, ""
		}
		select {
		case <-done:
			t.Fatalf("DistributedShell ended without an application id:\n%s", tailString(out.String(), 30))
		default:
		}
		return false, tailString(out.String(), 3)
	})
	return app
}

// TestYARNAssignedGPUs: per GPU plugin mode, DistributedShell's 2 containers
// take 2 of the NodeManager's 6 GPUs (YARN assigns the first free ones), then
// an xres application's 2 workers and a Spark application's 2 executors (the
// bridge as their discovery script) start at once on the same NodeManager
// ("-2nm": the same over 2 NodeManagers of 3 GPUs). Each Spark executor's
// GPU addresses (what the bridge printed, what Spark gave its task) must name,
// in the container's own nvidia-smi numbering, exactly the GPU YARN assigned
// the executor's container. Each xres worker's CUDA_VISIBLE_DEVICES
// must name exactly the GPU YARN assigned its container (NodeManager REST; the
// GPU identified through its UUID, which names the fake host and index), no
// GPU may be used by two containers, am resources must report the
// NodeManagers' assignment, and YARN must free every GPU at the end.
func TestYARNAssignedGPUs(t *testing.T) {
	modes := gpuPluginModes
	if v := os.Getenv("XRES_GPUPLUGIN_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	for _, m := range modes {
		// "<mode>-2nm": 2 NodeManagers of 3 GPUs (2 fake hosts) instead of 1 of 6.
		// "<mode>-off": the launcher and the bridge told not to ask YARN
		// (param.yarn.assignment: off, host coordination as before issue 40; the
		// Spark executors' bridge with a coordination file of its own, as a Spark
		// deployment beside xres would): the checks must then see an xres worker
		// and a Spark executor on a GPU YARN gave another container (they are not
		// vacuous).
		mode, nms, off := m, 1, false
		if before, ok := strings.CutSuffix(mode, "-off"); ok {
			mode, off = before, true
		}
		if before, ok := strings.CutSuffix(mode, "-2nm"); ok {
			mode, nms = before, 2
		}
		t.Run(m, func(t *testing.T) { testYARNAssignedGPUs(t, mode, nms, off) })
	}
}

// allGPUs is every NodeManager's GPUs and assigned GPUs, keyed "host/index".
func allGPUs(ctx context.Context, c *harness.Cluster, nms int, resource string) (total map[string]nmGPU, assigned []nmGPU, byNode map[int][2]int, err error) {
	total, byNode = map[string]nmGPU{}, map[int][2]int{}
	for n := 0; n < nms; n++ {
		tot, as, err := nmGPUs(ctx, c, n, resource)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, g := range tot {
			total[fmt.Sprintf("%d/%d", n, g.HostIndex)] = g
		}
		for _, g := range as {
			g.Host = n
			assigned = append(assigned, g)
		}
		byNode[n] = [2]int{len(as), len(tot)}
	}
	return total, assigned, byNode, nil
}

func testYARNAssignedGPUs(t *testing.T, mode string, nms int, off bool) {
	c := gpuClusterFor(t, mode, nms)
	require.Equal(t, mode, c.Env["XRES_GPU_MODE"], "cluster's GPU mode")
	resource := gpuResource(mode)
	minors := strings.Split(c.Env["XRES_GPU_MINORS"], ",") // by host index
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	path := fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin"

	total, assigned, _, err := allGPUs(ctx, c, nms, resource)
	require.NoError(t, err)
	require.Len(t, total, nms*len(minors), "NodeManagers' %s devices", resource)
	for _, g := range total {
		if resource == "yarn.io/gpu" {
			require.Equal(t, minors[g.HostIndex], strconv.Itoa(g.MinorNumber), "minor number of GPU index %d", g.HostIndex)
		} else if minors[g.HostIndex] != strconv.Itoa(g.MinorNumber) {
			t.Logf("YARN's NvidiaGPUPluginForRuntimeV2 reports minor number %d for the GPU of index %d, whose minor number is %s", g.MinorNumber, g.HostIndex, minors[g.HostIndex])
		}
	}
	require.Empty(t, assigned, "GPUs assigned before the test")

	// DistributedShell first: YARN gives its containers the first free GPUs.
	ds := startDShell(t, ctx, c, 2, resource, gpuViewScript(t, dir, "ds"), path)
	c.KeepAppLogs(t, ds)
	killOnCleanup(t, c, ds, release)
	eventually(t, 3*time.Minute, "DistributedShell's 2 containers hold a GPU each and ran", func() (bool, string) {
		_, a, _, err := allGPUs(ctx, c, nms, resource)
		if err != nil {
			return false, err.Error()
		}
		views, err := readViews(dir, "ds")
		if err != nil {
			return false, err.Error()
		}
		return len(a) == 2 && len(views) == 2, fmt.Sprintf("assigned %+v, views %d", a, len(views))
	})

	// Then Spark and xres at once: 2 executors and 2 workers of one GPU each.
	sparkCoord := filepath.Join(dir, "coordination.state")
	if off {
		sparkCoord = filepath.Join(dir, "spark-coordination.state")
	}
	spark := startSparkHold(t, ctx, c, dir, resource, sparkCoord, off)
	cfg := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Join([]string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: " + resource,
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.param.coordination.file: " + filepath.Join(dir, "coordination.state"),
		"taskmanager.memory.process.size: 256m",
		"yarn.heartbeat.interval: 1",
		"containerized.taskmanager.env.PATH: " + path,
		"external-resource.gpu.param.yarn.assignment: " + map[bool]string{false: "auto", true: "off"}[off],
	}, "\n")+"\n"), 0o644))
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "--workers", "2", "--name", "xres-it-gpu-"+mode, "--",
		"sh", gpuViewScript(t, dir, "xres"))
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)
	var views map[string]containerView
	eventually(t, 3*time.Minute, "xres's 2 workers started and wrote what they see", func() (bool, string) {
		select {
		case <-p.done:
			t.Fatalf("am submit ended before its 2 workers ran:\n%s", p.output())
		default:
		}
		views, err = readViews(dir, "xres")
		if err != nil {
			return false, err.Error()
		}
		return len(views) == 2, fmt.Sprintf("%d workers wrote", len(views))
	})
	var sparkViews map[string]sparkExecutorView
	eventually(t, 5*time.Minute, "Spark's executors discovered their GPUs through the bridge and run a task each", func() (bool, string) {
		select {
		case <-spark.done:
			t.Fatalf("SparkSubmit ended before its tasks held their executors (%v):\n%s", spark.err, tailString(spark.log.String(), 40))
		default:
		}
		sparkViews, err = readSparkViews(dir)
		if err != nil {
			return false, err.Error()
		}
		return len(sparkViews) == sparkExecutors, fmt.Sprintf("%d executors ran a task; SparkSubmit: %s", len(sparkViews), tailString(spark.log.String(), 2))
	})

	_, assigned, byNode, err := allGPUs(ctx, c, nms, resource)
	require.NoError(t, err)
	owner := map[string]string{} // host/index → container YARN assigned the GPU to
	held := map[string][]string{}
	for _, g := range assigned {
		k := fmt.Sprintf("%d/%d", g.Host, g.HostIndex)
		owner[k] = g.ContainerID
		held[g.ContainerID] = append(held[g.ContainerID], k)
	}
	t.Logf("mode %s: YARN's assignment (NodeManager/index → container): %v; minor numbers by index: %v", mode, owner, minors)
	used := map[string]string{} // host/index → xres worker using it
	var foreign []string        // xres workers on a GPU YARN gave another container
	for container, v := range views {
		require.NotEmpty(t, v.cuda, "xres worker %s: no CUDA_VISIBLE_DEVICES (it sees %v)", container, v.view)
		require.Len(t, held[container], 1, "YARN's GPUs for xres worker %s (assigned: %+v)", container, assigned)
		var got []string
		for _, dev := range strings.Split(v.cuda, ",") {
			uuid := dev
			if !strings.HasPrefix(dev, "GPU-") {
				// An index, in the container's own numbering.
				var ok bool
				uuid, ok = v.view[dev]
				require.True(t, ok, "xres worker %s: CUDA_VISIBLE_DEVICES=%s names index %s, which its nvidia-smi does not list (%v)", container, v.cuda, dev, v.view)
			}
			k, hi, err := gpuOfUUID(uuid)
			require.NoError(t, err, "xres worker %s", container)
			require.Less(t, hi, len(minors), "xres worker %s: GPU %s", container, uuid)
			got = append(got, k)
			if owner[k] != container {
				foreign = append(foreign, fmt.Sprintf("mode %s: xres worker %s uses the GPU %s (NodeManager/index; minor %s, %s), which YARN assigned to %q",
					mode, container, k, minors[hi], uuid, owner[k]))
			}
			require.Empty(t, used[k], "GPU %s used by both %s and %s", k, used[k], container)
			used[k] = container
		}
		sort.Strings(got)
		sort.Strings(held[container])
		if !off {
			require.Equal(t, held[container], got, "xres worker %s: its GPUs (NodeManager/index) vs YARN's assignment", container)
		}
	}
	// Spark's executors: the bridge's addresses are the task's, and name (in
	// the container's nvidia-smi numbering) the GPU YARN assigned the executor.
	var sparkForeign []string
	for container, v := range sparkViews {
		require.NotEmpty(t, v.bridge, "Spark executor %s (%s): the bridge printed no address", v.executor, container)
		require.Equal(t, v.bridge, v.task, "Spark executor %s (%s): the addresses Spark gave its task vs the bridge's", v.executor, container)
		require.Len(t, held[container], 1, "YARN's GPUs for Spark executor %s's container %s (assigned: %+v)", v.executor, container, assigned)
		var got []string
		for _, addr := range v.bridge {
			uuid, ok := v.container.view[addr]
			require.True(t, ok, "Spark executor %s (%s): address %s, which its nvidia-smi does not list (%v)", v.executor, container, addr, v.container.view)
			k, hi, err := gpuOfUUID(uuid)
			require.NoError(t, err, "Spark executor %s", v.executor)
			got = append(got, k)
			if owner[k] != container {
				sparkForeign = append(sparkForeign, fmt.Sprintf("mode %s: Spark executor %s (%s) uses the GPU %s (NodeManager/index; minor %s, %s), which YARN assigned to %q",
					mode, v.executor, container, k, minors[hi], uuid, owner[k]))
			}
			if !off {
				require.Empty(t, used[k], "GPU %s used by both %s and Spark executor %s (%s)", k, used[k], v.executor, container)
			}
			used[k] = container
		}
		sort.Strings(got)
		sort.Strings(held[container])
		if !off {
			require.Equal(t, held[container], got, "Spark executor %s (%s): its GPUs (NodeManager/index) vs YARN's assignment", v.executor, container)
		}
	}
	t.Logf("mode %s: Spark executors' GPUs: %+v", mode, sparkViews)
	if off {
		require.NotEmpty(t, foreign, "with param.yarn.assignment: off the xres workers took GPUs by host coordination, yet each is on its own GPU (YARN's: %v)", owner)
		require.NotEmpty(t, sparkForeign, "with param.yarn.assignment: off the bridge took GPUs by host coordination, yet each Spark executor is on its own GPU (YARN's: %v)", owner)
		t.Logf("as expected with the assignment off: %s; %s", strings.Join(foreign, "; "), strings.Join(sparkForeign, "; "))
	} else {
		require.Empty(t, foreign, "xres workers on GPUs YARN gave other containers")
		require.Empty(t, sparkForeign, "Spark executors on GPUs YARN gave other containers")
	}
	// DistributedShell's containers see exactly their own GPU where something
	// isolates them (isolated, docker, pluggable), every GPU otherwise.
	dsViews, err := readViews(dir, "ds")
	require.NoError(t, err)
	for container, v := range dsViews {
		require.Len(t, held[container], 1, "YARN's GPUs for DistributedShell container %s", container)
		if mode == "plugin" {
			require.Len(t, v.view, len(minors), "DistributedShell container %s sees every GPU without isolation", container)
			continue
		}
		require.Len(t, v.view, 1, "DistributedShell container %s sees only its GPU", container)
		for _, uuid := range v.view {
			k, _, err := gpuOfUUID(uuid)
			require.NoError(t, err)
			require.Equal(t, held[container][0], k, "DistributedShell container %s sees %s", container, uuid)
		}
	}

	// am resources reads the same REST: this NodeManager assigns, all 6 GPUs held now.
	amPath, _ := amBins(t)
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	rc := exec.CommandContext(rctx, amPath, "resources", "--conf", cfg)
	rc.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "HADOOP_USER_NAME="+c.User)
	rout, _ := rc.CombinedOutput()
	for n := 0; n < nms; n++ {
		require.Regexp(t, fmt.Sprintf(`(?m)^  %s +%s +plugin +%d of %d `, regexp.QuoteMeta(c.Env[fmt.Sprintf("XRES_NM%d_ID", n)]),
			regexp.QuoteMeta(resource), byNode[n][0], byNode[n][1]), string(rout), "am resources: NodeManager %d's mode", n)
	}

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	code := p.wait(t)
	require.Equal(t, 0, code, "am submit exit code\n%s", p.output())
	<-spark.done
	require.NoError(t, spark.err, "SparkSubmit:\n%s", tailString(spark.log.String(), 40))
	// YARN frees the GPUs when the containers end.
	eventually(t, 2*time.Minute, "YARN frees every GPU once both applications ended", func() (bool, string) {
		_, a, _, err := allGPUs(ctx, c, nms, resource)
		if err != nil {
			return false, err.Error()
		}
		return len(a) == 0, fmt.Sprintf("%+v", a)
	})

	// The randomized check's short form (make yarn-random-cluster is the long
	// one), on this cluster.
	if mode == "plugin" && nms == 1 && !off {
		t.Run("random", func(t *testing.T) { runRandomLaunches(t, c, mode, 30, time.Now().UnixNano()%1000003, false) })
	}
}
