package launch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

// EnvYarnRandomLaunches sets the launches per mode of
// TestYarnAssignmentRandomized (the long form: make yarn-random).
const EnvYarnRandomLaunches = "XRES_YARN_RANDOM_LAUNCHES"

// fakeUUIDOf is the fake nvidia-smi's uuid of GPU index i.
func fakeUUIDOf(i int) string { return fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i) }

// yarnMode is one way a NodeManager hands GPUs to containers.
type yarnMode struct {
	name     string
	resource string
	shape    drivertest.NMShape
	restDown bool // the REST answers 503: NVIDIA_VISIBLE_DEVICES is the only word
	docker   bool // NVIDIA_VISIBLE_DEVICES set as YARN's Docker runtime sets it
	isolated bool // the container's nvidia-smi lists only its GPUs (a devices cgroup)
}

var yarnModes = []yarnMode{
	{name: "plugin-rest", resource: "yarn.io/gpu", shape: drivertest.ShapeNatural},
	{name: "isolated", resource: "yarn.io/gpu", shape: drivertest.ShapeJettison, isolated: true},
	{name: "docker-indices", resource: "yarn.io/gpu", restDown: true, docker: true},
	{name: "pluggable-docker", resource: "nvidia.com/gpu", shape: drivertest.ShapeDevice, restDown: true, docker: true},
	{name: "pluggable-rest", resource: "nvidia.com/gpu", shape: drivertest.ShapeDevice, docker: true},
}

// A randomized check at the launcher level (issue 40): on an 8-GPU host
// whose index and minor numbers differ, a stub NodeManager assigns like
// GpuResourceAllocator; workers of amount 1-3 start and end in random
// order, some killed -9 (their launcher never releases); every launch
// must get exactly the GPUs YARN assigned to its container.
func TestYarnAssignmentRandomized(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	n := 40
	if v := os.Getenv(EnvYarnRandomLaunches); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, EnvYarnRandomLaunches)
	}
	for _, m := range yarnModes {
		t.Run(m.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			launches, wrong, killed := runYarnRandom(t, m, n, seed)
			t.Logf("mode %s: %d launches, %d killed -9, %d on a GPU YARN did not assign (seed %d)", m.name, launches, killed, wrong, seed)
			require.Zero(t, wrong, "seed %d", seed)
			require.GreaterOrEqual(t, launches, n)
		})
	}
}

type yarnWorker struct {
	container string
	gpus      []drivertest.NMGPU
	res       *Reservation
	holder    *exec.Cmd
}

func runYarnRandom(t *testing.T, m yarnMode, n int, seed uint64) (launches, wrong, killed int) {
	rng := rand.New(rand.NewPCG(seed, 40))
	const nGPUs = 8
	// Minor numbers: a shuffle of 0..15, so index and minor differ.
	perm := rng.Perm(16)[:nGPUs]
	var gpus []drivertest.NMGPU
	minorToIndex := map[int]int{}
	var minors []string
	for i, mn := range perm {
		gpus = append(gpus, drivertest.NMGPU{Index: i, Minor: mn})
		minorToIndex[mn] = i
		minors = append(minors, strconv.Itoa(mn))
	}
	t.Setenv("XRES_FAKE_GPUS", strconv.Itoa(nGPUs))
	t.Setenv("XRES_FAKE_GPU_MINORS", strings.Join(minors, ","))
	nm := drivertest.NewNodeManager(m.resource, gpus)
	nm.Shape = m.shape
	t.Cleanup(nm.Close)
	if m.restDown {
		nm.Status.Store(503)
	}
	host, port := nm.HostPort()
	dir := t.TempDir()
	state := filepath.Join(dir, "coord", "state")
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	require.NoError(t, err)
	reg, err := builtin.NewRegistry(func(string) string { return "" })
	require.NoError(t, err)

	var running []*yarnWorker
	seq := 0
	end := func(i int) {
		w := running[i]
		running = append(running[:i], running[i+1:]...)
		if rng.IntN(4) == 0 {
			// Killed -9 with its launcher: nothing released; YARN frees the
			// container, the host state proves the holder dead.
			killed++
			_ = w.holder.Process.Kill()
			_ = w.holder.Wait()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			require.NoError(t, w.res.Release(ctx))
			cancel()
			_ = w.holder.Process.Kill()
			_ = w.holder.Wait()
		}
		nm.Release(w.container)
	}
	t.Cleanup(func() {
		for len(running) > 0 {
			end(0)
		}
	})
	for launches < n {
		amount := 1 + rng.IntN(3)
		if len(running) > 0 && rng.IntN(2) == 0 {
			end(rng.IntN(len(running)))
			continue
		}
		seq++
		container := fmt.Sprintf("container_1700000000000_0001_01_%06d", seq)
		assigned, err := nm.Assign(container, amount)
		if err != nil { // too few free: a worker ends first
			if len(running) > 0 {
				end(rng.IntN(len(running)))
			}
			continue
		}
		env := map[string]string{
			"CONTAINER_ID": container, "NM_HOST": host, "NM_HTTP_PORT": port, "USER": "alice",
			"PATH": fakebin + ":" + os.Getenv("PATH"), "TMPDIR": dir,
		}
		if m.docker {
			ids := make([]string, len(assigned))
			for i, g := range assigned {
				// Both plugins write nvidia-smi indices (the device
				// framework's NVIDIA plugin calls them minor numbers).
				ids[i] = strconv.Itoa(g.Index)
			}
			env["NVIDIA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
		}
		if m.isolated {
			// One nvidia-smi for every container, as on a host: what it
			// lists depends on the container (its devices cgroup), which
			// nothing in the launcher's environment shows.
			env["PATH"] = isolatedBin(t, dir, fakebin) + ":" + os.Getenv("PATH")
			t.Setenv(envTestHide, hiddenFrom(assigned, gpus))
		}
		holder := exec.Command("sleep", "600")
		require.NoError(t, holder.Start())
		l := &Launcher{Registry: reg, Getenv: func(k string) string { return env[k] }, Holder: holder.Process.Pid}
		spec := resources.Spec{Name: "gpu", Amount: int64(amount), Factory: "xres.gpu", YarnKey: m.resource,
			Params: map[string]string{"discovery.source": "nvidia-smi", "coordination.file": state}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		r, err := l.Acquire(ctx, []resources.Spec{spec})
		cancel()
		if err != nil {
			_ = holder.Process.Kill()
			_ = holder.Wait()
			require.NoError(t, err, "launch %d in %s (assigned %v)", launches, container, assigned)
		}
		launches++
		want := map[string]bool{}
		for _, g := range assigned {
			want[fakeUUIDOf(g.Index)] = true
		}
		got := r.Grants[0].Devices
		if len(got) != len(assigned) {
			wrong++
		}
		for _, in := range got {
			u, _ := in.Property(driver.InfoVisibleID)
			if !want[u] {
				wrong++
				t.Errorf("launch %d in %s got %s, YARN assigned %v", launches, container, u, assigned)
			}
		}
		running = append(running, &yarnWorker{container: container, gpus: assigned, res: r, holder: holder})
	}
	return launches, wrong, killed
}

// envTestHide names the GPUs (uuids) the isolated nvidia-smi leaves out.
const envTestHide = "XRES_TEST_HIDE_UUIDS"

// hiddenFrom is every GPU not assigned to the container: what a devices
// cgroup keeps it off.
func hiddenFrom(assigned, all []drivertest.NMGPU) string {
	mine := map[drivertest.NMGPU]bool{}
	for _, g := range assigned {
		mine[g] = true
	}
	var hide []string
	for _, g := range all {
		if !mine[g] {
			hide = append(hide, fakeUUIDOf(g.Index))
		}
	}
	return strings.Join(hide, " ")
}

// isolatedBin is a folder whose nvidia-smi is the fake one, less the GPUs
// named in $XRES_TEST_HIDE_UUIDS: as nvidia-smi inside a container under
// a devices cgroup lists only its own.
func isolatedBin(t *testing.T, dir, fakebin string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin-isolated")
	if _, err := os.Stat(filepath.Join(bin, "nvidia-smi")); err == nil {
		return bin
	}
	require.NoError(t, os.MkdirAll(bin, 0o755))
	script := `#!/bin/sh
"` + fakebin + `/nvidia-smi" "$@" | awk -v hide="$` + envTestHide + `" '
BEGIN { n = split(hide, h, " "); for (i = 1; i <= n; i++) H[h[i]] = 1 }
/<gpu id=/ { inblk = 1; blk = $0 "\n"; skip = 0; next }
inblk { blk = blk $0 "\n"; for (u in H) if (index($0, u)) skip = 1; if ($0 ~ /<\/gpu>/) { if (!skip) printf "%s", blk; inblk = 0 }; next }
{ s = 0; for (u in H) if (index($0, u)) s = 1; if (!s) print }'
`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755))
	return bin
}

// check and probe say which mode the host is in under YARN and what the
// launcher does there.
func TestProbeAndCheckSayNodeMode(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "4")
	t.Setenv("XRES_FAKE_GPU_MINORS", "4,0,7,2")
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	require.NoError(t, err)
	reg, err := builtin.NewRegistry(func(string) string { return "" })
	require.NoError(t, err)
	const container = "container_1700000000000_0001_01_000002"
	for _, tc := range []struct {
		name      string
		set       func(nm *drivertest.NodeManager)
		probeCode int
		checkCode int
		has       []string
	}{
		{name: "plugin", set: func(nm *drivertest.NodeManager) {
			_, _ = nm.Assign("other", 1)
			_, _ = nm.Assign(container, 1)
		}, has: []string{"node mode: plugin, yarn.io/gpu via http://", "assigned to " + container + ": minor 0 (index 1) (of 4)",
			"the launcher: the GPUs YARN assigned to " + container}},
		{name: "counted", set: func(nm *drivertest.NodeManager) { nm.Counted.Store(true) },
			has: []string{"node mode: counted, yarn.io/gpu", "the launcher: the NodeManager has no yarn.io/gpu plugin (it only counts GPUs): host coordination picks the GPUs"}},
		{name: "unknown", set: func(nm *drivertest.NodeManager) { nm.Status.Store(503) }, probeCode: ExitAssignment, checkCode: ExitDiscovery,
			has: []string{"node mode: unknown", "the launcher: none: the launcher fails (exit 215) rather than guess", "HTTP 503"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nm := drivertest.NewNodeManager("yarn.io/gpu", []drivertest.NMGPU{{Index: 0, Minor: 4}, {Index: 1, Minor: 0}, {Index: 2, Minor: 7}, {Index: 3, Minor: 2}})
			t.Cleanup(nm.Close)
			tc.set(nm)
			host, port := nm.HostPort()
			dir := t.TempDir()
			conf := filepath.Join(dir, "flink-conf.yaml")
			require.NoError(t, os.WriteFile(conf, []byte(`external-resources: gpu
external-resource.gpu.amount: 1
external-resource.gpu.yarn.config-key: yarn.io/gpu
external-resource.gpu.driver-factory.class: xres.gpu
external-resource.gpu.param.discovery.source: nvidia-smi
external-resource.gpu.param.coordination.file: `+filepath.Join(dir, "state")+"\n"), 0o644))
			env := map[string]string{"CONTAINER_ID": container, "NM_HOST": host, "NM_HTTP_PORT": port, "PATH": fakebin + ":" + os.Getenv("PATH"), "TMPDIR": dir}
			for _, sub := range []string{"probe", "check"} {
				var out, errb syncBuffer
				code := Main(t.Context(), []string{sub, "--conf", conf}, Env{Getenv: func(k string) string { return env[k] },
					Environ: []string{"PATH=" + env["PATH"]}, Stdout: &out, Stderr: &errb, Registry: reg})
				want := tc.probeCode
				if sub == "check" {
					want = tc.checkCode
				}
				require.Equal(t, want, code, "%s: %s\n%s", sub, out.String(), errb.String())
				for _, s := range tc.has {
					require.Contains(t, out.String(), s, sub)
				}
			}
		})
	}
}

// The discovery bridge takes YARN's assignment for the calling engine's
// container too (Spark's executor here), and records it for the caller.
func TestBridgeTakesYarnAssignment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 4, 1)
	_, wrapper := bridgeOn(t, h)
	nm := drivertest.NewNodeManager("yarn.io/gpu", []drivertest.NMGPU{{Index: 0, Minor: 4}, {Index: 1, Minor: 0}, {Index: 2, Minor: 7}, {Index: 3, Minor: 2}})
	t.Cleanup(nm.Close)
	host, port := nm.HostPort()
	_, err := nm.Assign("container_1700000000000_0001_01_000001", 2) // another application's
	require.NoError(t, err)
	base := append(h.env, "NM_HOST="+host, "NM_HTTP_PORT="+port, "XRES_FAKE_GPU_MINORS=4,0,7,2")
	var got []string
	var callers []*bridgeCaller
	for i, c := range []string{"container_1700000000000_0002_01_000002", "container_1700000000000_0002_01_000003"} {
		assigned, err := nm.Assign(c, 1)
		require.NoError(t, err)
		require.Equal(t, 2+i, assigned[0].Index)
		h.env = append(append([]string(nil), base...), "CONTAINER_ID="+c)
		caller := startCaller(t, h, "spark", wrapper)
		addrs := sparkAddresses(t, caller.result(t))
		require.Equal(t, []string{strconv.Itoa(2 + i)}, addrs, "the GPU YARN assigned to %s", c)
		got = append(got, addrs...)
		callers = append(callers, caller)
	}
	h.env = base
	require.Equal(t, map[string]int{"2": callers[0].cmd.Process.Pid, "3": callers[1].cmd.Process.Pid}, stateHolders(t, h, bin),
		"each assigned GPU is recorded for the JVM that called")
}
