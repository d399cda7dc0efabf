//go:build integration

package integration

// YARN's own GPU assignment (issue 40): the minicluster in a GPU plugin mode
// (XRES_MINICLUSTER_GPU_MODE, docker/hadoop-minicluster/README.md) runs YARN's
// GPU resource plugin, whose GpuResourceAllocator gives each container its GPUs
// and reports them on the NodeManager's REST API. Hadoop's own DistributedShell
// and an xres application run at once on one NodeManager with 4 GPUs whose
// index and minor number differ; every GPU an xres worker is told to use
// (CUDA_VISIBLE_DEVICES) must be one YARN assigned to that worker's container.

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// gpuPluginModes are the modes TestYARNAssignedGPUs runs (XRES_GPUPLUGIN_MODES
// picks some, e.g. "isolated").
var gpuPluginModes = []string{"plugin", "isolated", "docker"}

// nmGPU is one entry of the NodeManager's assignedGpuDevices / totalGpuDevices.
type nmGPU struct {
	Index       int    `json:"index"`
	MinorNumber int    `json:"minorNumber"`
	ContainerID string `json:"containerId"`
}

// nmGPUs reads GET /ws/v1/node/resources/yarn.io%2Fgpu of NodeManager n.
func nmGPUs(ctx context.Context, c *harness.Cluster, n int) (total, assigned []nmGPU, err error) {
	addr := c.Env[fmt.Sprintf("XRES_NM%d_HTTP", n)]
	if addr == "" {
		return nil, nil, fmt.Errorf("no XRES_NM%d_HTTP in cluster.env", n)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ws/v1/node/resources/yarn.io%2Fgpu", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Total    []nmGPU `json:"totalGpuDevices"`
		Assigned []nmGPU `json:"assignedGpuDevices"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("NodeManager %s: GPU resource: http %d", addr, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("NodeManager %s: GPU resource: %w", addr, err)
	}
	return r.Total, r.Assigned, nil
}

// gpuClusterFor is a one-NodeManager cluster with 4 GPUs in mode: the suite's
// when it runs in that mode, else an extra one.
func gpuClusterFor(t *testing.T, mode string) *harness.Cluster {
	if c := harness.Get(t); c.Env["XRES_GPU_MODE"] == mode && c.Env["XRES_NODEMANAGERS"] == "1" {
		return c
	}
	return harness.StartExtra(t, map[string]string{
		"XRES_MINICLUSTER_GPU_MODE":     mode,
		"XRES_MINICLUSTER_NODEMANAGERS": "1",
		"XRES_MINICLUSTER_GPUS":         "4",
	})
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

// hostIndexOfUUID is the host index in a fake GPU's UUID
// (GPU-00000000-0000-4000-8000-<host:4><index:8>, driver/gpu/testdata/fake-nvidia-smi).
func hostIndexOfUUID(uuid string) (int, error) {
	if len(uuid) < 8 || !strings.HasPrefix(uuid, "GPU-00000000-0000-4000-8000-") {
		return 0, fmt.Errorf("not a fake GPU's UUID: %q", uuid)
	}
	return strconv.Atoi(uuid[len(uuid)-8:])
}

// startDShell runs Hadoop's DistributedShell with n containers of one GPU each,
// each running script, and returns its application id.
func startDShell(t *testing.T, ctx context.Context, c *harness.Cluster, n int, script, path string) string {
	java, _ := dsbenchCmd(t)
	args := append([]string{}, java[1:]...)
	args = append(args, c.ConfDir, "-appname", "xres-it-gpu-dshell", "-num_containers", strconv.Itoa(n),
		"-container_resources", "memory-mb=128,vcores=1,yarn.io/gpu=1",
		"-master_memory", "256", "-master_vcores", "1", "-shell_script", script,
		"-shell_env", "PATH="+path, "-timeout", "600000")
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
// take 2 of the NodeManager's 4 GPUs (YARN assigns the first free ones), then
// an xres application's 2 workers start on the same NodeManager. Each xres
// worker's CUDA_VISIBLE_DEVICES must name exactly the GPU YARN assigned its
// container (NodeManager REST, matched by minor number through the UUID), and
// no GPU may be used by two containers.
func TestYARNAssignedGPUs(t *testing.T) {
	modes := gpuPluginModes
	if v := os.Getenv("XRES_GPUPLUGIN_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { testYARNAssignedGPUs(t, mode) })
	}
}

func testYARNAssignedGPUs(t *testing.T, mode string) {
	c := gpuClusterFor(t, mode)
	require.Equal(t, mode, c.Env["XRES_GPU_MODE"], "cluster's GPU mode")
	minors := strings.Split(c.Env["XRES_GPU_MINORS"], ",")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	path := fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin"

	total, assigned, err := nmGPUs(ctx, c, 0)
	require.NoError(t, err)
	require.Len(t, total, len(minors), "NodeManager's GPUs (totalGpuDevices)")
	for _, g := range total {
		require.Equal(t, minors[g.Index], strconv.Itoa(g.MinorNumber), "minor number of GPU index %d", g.Index)
	}
	require.Empty(t, assigned, "GPUs assigned before the test")

	// DistributedShell first: YARN gives its containers the first free GPUs.
	ds := startDShell(t, ctx, c, 2, gpuViewScript(t, dir, "ds"), path)
	c.KeepAppLogs(t, ds)
	killOnCleanup(t, c, ds, release)
	eventually(t, 3*time.Minute, "DistributedShell's 2 containers hold a GPU each and ran", func() (bool, string) {
		_, a, err := nmGPUs(ctx, c, 0)
		if err != nil {
			return false, err.Error()
		}
		views, err := readViews(dir, "ds")
		if err != nil {
			return false, err.Error()
		}
		return len(a) == 2 && len(views) == 2, fmt.Sprintf("assigned %+v, views %d", a, len(views))
	})

	// Then xres: 2 workers of one GPU each.
	cfg := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Join([]string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.param.coordination.file: " + filepath.Join(dir, "coordination.state"),
		"taskmanager.memory.process.size: 256m",
		"yarn.heartbeat.interval: 1",
		"containerized.taskmanager.env.PATH: " + path,
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

	_, assigned, err = nmGPUs(ctx, c, 0)
	require.NoError(t, err)
	byMinor := map[int]string{} // minor number → container YARN assigned it to
	byContainer := map[string][]int{}
	for _, g := range assigned {
		byMinor[g.MinorNumber] = g.ContainerID
		byContainer[g.ContainerID] = append(byContainer[g.ContainerID], g.MinorNumber)
	}
	t.Logf("mode %s: YARN's assignment (minor → container): %v", mode, byMinor)
	used := map[int]string{} // minor → container using it
	for container, v := range views {
		require.NotEmpty(t, v.cuda, "xres worker %s: no CUDA_VISIBLE_DEVICES (it sees %v)", container, v.view)
		require.Len(t, byContainer[container], 1, "YARN's GPUs for xres worker %s (assigned: %+v)", container, assigned)
		var got []int
		for _, dev := range strings.Split(v.cuda, ",") {
			uuid := dev
			if !strings.HasPrefix(dev, "GPU-") {
				// An index, in the container's own numbering.
				var ok bool
				uuid, ok = v.view[dev]
				require.True(t, ok, "xres worker %s: CUDA_VISIBLE_DEVICES=%s names index %s, which its nvidia-smi does not list (%v)", container, v.cuda, dev, v.view)
			}
			hi, err := hostIndexOfUUID(uuid)
			require.NoError(t, err, "xres worker %s", container)
			require.Less(t, hi, len(minors), "xres worker %s: GPU %s", container, uuid)
			minor, _ := strconv.Atoi(minors[hi])
			got = append(got, minor)
			require.Equal(t, container, byMinor[minor],
				"mode %s: xres worker %s uses the GPU of host index %d (minor %d, %s), which YARN assigned to %q",
				mode, container, hi, minor, uuid, byMinor[minor])
			require.Empty(t, used[minor], "GPU minor %d used by both %s and %s", minor, used[minor], container)
			used[minor] = container
		}
		sort.Ints(got)
		require.Equal(t, byContainer[container], got, "xres worker %s: its GPUs vs YARN's assignment", container)
	}
	// DistributedShell's containers see (isolated, docker) exactly their own GPU.
	dsViews, err := readViews(dir, "ds")
	require.NoError(t, err)
	for container, v := range dsViews {
		require.Len(t, byContainer[container], 1, "YARN's GPUs for DistributedShell container %s", container)
		if mode == "plugin" {
			require.Len(t, v.view, len(minors), "DistributedShell container %s sees every GPU without isolation", container)
			continue
		}
		require.Len(t, v.view, 1, "DistributedShell container %s sees only its GPU", container)
		for _, uuid := range v.view {
			hi, err := hostIndexOfUUID(uuid)
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(byContainer[container][0]), minors[hi], "DistributedShell container %s sees %s", container, uuid)
		}
	}

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	code := p.wait(t)
	require.Equal(t, 0, code, "am submit exit code\n%s", p.output())
	// YARN frees the GPUs when the containers end.
	eventually(t, 2*time.Minute, "YARN frees every GPU once both applications ended", func() (bool, string) {
		_, a, err := nmGPUs(ctx, c, 0)
		if err != nil {
			return false, err.Error()
		}
		return len(a) == 0, fmt.Sprintf("%+v", a)
	})
}
