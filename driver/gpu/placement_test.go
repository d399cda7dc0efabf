package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/topo"
	"github.com/xres/xres/resources"
)

// topoHost is a fake 8-GPU host whose `nvidia-smi topo -m` prints
// fixture (driver/topo/testdata), through a wrapper that counts the
// topology reads in the returned file.
func topoHost(t *testing.T, fixture string) (smi, reads string) {
	t.Helper()
	t.Setenv("XRES_FAKE_GPUS", "8")
	if fixture != "" {
		abs, err := filepath.Abs(filepath.Join("..", "topo", "testdata", fixture))
		require.NoError(t, err)
		t.Setenv("XRES_FAKE_GPU_TOPO", abs)
	}
	fake, err := filepath.Abs(filepath.Join("testdata", "fake-nvidia-smi"))
	require.NoError(t, err)
	dir := t.TempDir()
	reads = filepath.Join(dir, "topology-reads")
	smi = filepath.Join(dir, "nvidia-smi")
	require.NoError(t, os.WriteFile(smi, []byte("#!/bin/sh\n[ \"$1\" = topo ] && echo read >> "+reads+"\nexec "+fake+" \"$@\"\n"), 0o755))
	return smi, reads
}

func countReads(t *testing.T, reads string) int {
	b, err := os.ReadFile(reads)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "read")
}

func TestPlacementByTopology(t *testing.T) {
	smi, reads := topoHost(t, "dgx1.txt")
	state := filepath.Join(t.TempDir(), "state")
	build := func(extra map[string]string) driver.Driver {
		p := map[string]string{ParamCoordFile: state, ParamNvidiaSMI: smi}
		for k, v := range extra {
			p[k] = v
		}
		d, err := newDriver(driver.Options{Resource: "gpu", Params: p, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
		require.NoError(t, err)
		return d
	}
	// One GPU with no topology cached yet: no tool is run for it, the
	// first free GPU is granted.
	one, err := build(nil).Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(one))
	require.Zero(t, countReads(t, reads), "an ask for one GPU never reads the topology")
	_, placed := one[0].Property(InfoPlacement)
	require.False(t, placed)

	// Four with GPU 0 held: first-free would give 1,2,3,4 (1-4 crosses
	// the sockets, SYS); topology gives the intact NVLink quad 4-7.
	four, err := build(nil).Discover(ctxT(t), 4)
	require.NoError(t, err)
	require.Equal(t, []string{"4", "5", "6", "7"}, indices(four))
	for _, info := range four {
		require.Equal(t, "topology", infoProp(info, InfoPlacement))
		require.Equal(t, "NV1", infoProp(info, InfoPlacementLink))
		require.Equal(t, "NV1", infoProp(info, InfoPlacementBest))
		require.Equal(t, "nvidia-smi topo -m", infoProp(info, InfoPlacementFrom))
	}
	require.Equal(t, 1, countReads(t, reads))

	// Two of 1,2,3: an NV2 pair; the topology comes from the host's
	// cache (no second read).
	two, err := build(nil).Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, "NV2", infoProp(two[0], InfoPlacementLink))
	require.Equal(t, 1, countReads(t, reads), "the topology is read once per host and TTL")

	// Now one GPU uses the cached topology.
	last, err := build(nil).Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, "topology", infoProp(last[0], InfoPlacement))
}

func TestPlacementAskForEveryGPUReadsNoTopology(t *testing.T) {
	smi, reads := topoHost(t, "dgx1.txt")
	state := filepath.Join(t.TempDir(), "state")
	p := map[string]string{ParamCoordFile: state, ParamNvidiaSMI: smi}
	d, err := newDriver(driver.Options{Resource: "gpu", Params: p, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	// All eight: there is no set to choose, so no topology is read (the
	// cost a whole-host worker would pay at every launch for nothing).
	all, err := d.Discover(ctxT(t), 8)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, indices(all))
	require.Zero(t, countReads(t, reads), "an ask for every GPU never reads the topology")
	_, placed := all[0].Property(InfoPlacement)
	require.False(t, placed)
}

func TestPlacementFirstFreeParam(t *testing.T) {
	smi, reads := topoHost(t, "dgx1.txt")
	state := filepath.Join(t.TempDir(), "state")
	p := map[string]string{ParamCoordFile: state, ParamNvidiaSMI: smi, "placement": "first-free"}
	d, err := newDriver(driver.Options{Resource: "gpu", Params: p, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 4)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2", "3"}, indices(infos))
	_, placed := infos[0].Property(InfoPlacement)
	require.False(t, placed)
	require.Zero(t, countReads(t, reads), "first-free never reads the topology")

	p["placement"] = "pack"
	_, err = newDriver(driver.Options{Resource: "gpu", Params: p, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
	require.ErrorIs(t, err, driver.ErrInvalidParam)
	require.ErrorContains(t, err, "external-resource.gpu.param.placement")
}

// A host that tells no topology: first-free, and the failure is cached
// host-wide like a topology, so the next launcher does not ask again.
func TestPlacementUnknownTopology(t *testing.T) {
	smi, reads := topoHost(t, "")
	state := filepath.Join(t.TempDir(), "state")
	p := map[string]string{ParamCoordFile: state, ParamNvidiaSMI: smi}
	for i := range 2 {
		d, err := newDriver(driver.Options{Resource: "gpu", Params: p, Getenv: fakeEnv(t, nil)}, deps{nvml: unavailableNVML})
		require.NoError(t, err)
		infos, err := d.Discover(ctxT(t), 2)
		require.NoError(t, err)
		require.Equal(t, []string{strconvI(2 * i), strconvI(2*i + 1)}, indices(infos))
	}
	require.Equal(t, 1, countReads(t, reads))
}

func strconvI(i int) string { return string(rune('0' + i)) }

func TestPlacerLeavesMIGAlone(t *testing.T) {
	p := &topoPlacer{policy: topo.PolicyTopology}
	pl, err := p.Placement(ctxT(t), []driver.Device{{Key: "MIG-a", Parent: "GPU-a", Info: map[string]string{"index": "0"}}}, 2)
	require.NoError(t, err)
	require.Nil(t, pl, "MIG instances: no choice of links, first free")
}

func TestTopologyEncodingRoundTrip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "topo", "testdata", "pcie-2socket.txt"))
	require.NoError(t, err)
	tp, err := topo.ParseSMI(b)
	require.NoError(t, err)
	got := decodeTopology(encodeTopology(tp))
	require.Equal(t, tp, got)
	require.Nil(t, decodeTopology([]driver.Device{{Key: "none"}}))
	require.Nil(t, decodeTopology([]driver.Device{{Key: "gpu0", Info: map[string]string{"links": "X,NV1"}}}))
}

func infoProp(info resources.Info, key string) string {
	v, _ := info.Property(key)
	return v
}
