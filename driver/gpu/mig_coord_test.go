package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// The h100-mig-mixed host as nvidia-smi shows it: GPUs 0 and 1 in MIG mode
// (instances 01…04 and 11, 12), GPU 2 without MIG, GPU 3 unhealthy.
const (
	h100GPU = "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a6"
	h100MIG = "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a"
)

// migHost builds drivers for the h100-mig-mixed host that share one state
// file: resource "gpu" with mig.strategy none, "mig" with mixed.
type migHost struct {
	t     *testing.T
	state string
}

func newMIGHost(t *testing.T) migHost {
	smiDirEnv(t, "h100-mig-mixed")
	return migHost{t: t, state: filepath.Join(t.TempDir(), "coordination.state")}
}

func (h migHost) driver(resource, strategy string) driver.Driver {
	h.t.Helper()
	d, err := newDriver(driver.Options{Resource: resource, Getenv: fakeEnv(h.t, nil),
		Params: map[string]string{ParamCoordFile: h.state, ParamMIGStrategy: strategy}}, deps{nvml: unavailableNVML})
	require.NoError(h.t, err)
	return d
}

func (h migHost) discover(d driver.Driver, amount int64) []string {
	h.t.Helper()
	infos, err := d.Discover(ctxT(h.t), amount)
	require.NoError(h.t, err)
	return keysOf(infos, "uuid")
}

func (h migHost) refused(d driver.Driver, amount int64, has ...string) {
	h.t.Helper()
	_, err := d.Discover(ctxT(h.t), amount)
	require.ErrorIs(h.t, err, driver.ErrNotEnoughDevices)
	for _, s := range has {
		require.Contains(h.t, err.Error(), s)
	}
}

// One resource with whole GPUs (strategy none) and one with MIG instances
// (mixed) on one host never get the same physical GPU, whichever reserves
// first.
func TestMIGStrategiesShareAHost(t *testing.T) {
	self := fmt.Sprintf("pid %d (this process)", os.Getpid())

	t.Run("whole GPU first", func(t *testing.T) {
		h := newMIGHost(t)
		whole := h.driver("gpu", MIGNone)
		require.Equal(t, []string{h100GPU + "0"}, h.discover(whole, 1))

		mig := h.driver("mig", MIGMixed)
		require.Equal(t, []string{h100MIG + "11", h100MIG + "12", h100GPU + "2"}, h.discover(mig, 3),
			"no instance of GPU 0, which is held whole")
		h.refused(h.driver("mig", MIGMixed), 1,
			h100GPU+"0 held whole by "+self+" for gpu since ",
			"so its partitions "+h100MIG+"01, "+h100MIG+"02, "+h100MIG+"03, "+h100MIG+"04 are not free")
		h.refused(h.driver("gpu", MIGNone), 1,
			h100GPU+"1 is in use through its partitions: "+h100MIG+"11 held by "+self+" for mig since ",
			"row remapping pending")

		// Releasing the whole GPU frees its instances.
		require.NoError(t, whole.(driver.Releaser).Release(ctxT(t)))
		require.Equal(t, []string{h100MIG + "01", h100MIG + "02", h100MIG + "03", h100MIG + "04"},
			h.discover(h.driver("mig", MIGMixed), 4))
	})

	t.Run("MIG instance first", func(t *testing.T) {
		h := newMIGHost(t)
		mig := h.driver("mig", MIGMixed)
		require.Equal(t, []string{h100MIG + "01"}, h.discover(mig, 1))

		whole := h.driver("gpu", MIGNone)
		require.Equal(t, []string{h100GPU + "1", h100GPU + "2"}, h.discover(whole, 2),
			"not GPU 0, one of whose instances is held")
		h.refused(h.driver("gpu", MIGNone), 1,
			h100GPU+"0 is in use through its partitions: "+h100MIG+"01 held by "+self+" for mig since ")

		// Another instance of the same GPU is still free.
		require.Equal(t, []string{h100MIG + "02"}, h.discover(h.driver("mig", MIGMixed), 1))
		h.refused(h.driver("mig", MIGMixed), 3, "so its partitions "+h100MIG+"11, "+h100MIG+"12 are not free")

		// Releasing the instances frees the whole GPU.
		require.NoError(t, mig.(driver.Releaser).Release(ctxT(t)))
		require.Equal(t, []string{h100GPU + "0"}, h.discover(h.driver("gpu", MIGNone), 1))
	})
}

// Every MIG instance names as its parent the key under which strategy
// none hands out its GPU (nvidia-smi path; NVML: TestNVMLMIG).
func TestMIGInstancesNameTheirGPU(t *testing.T) {
	smiDirEnv(t, "h100-mig-mixed")
	fake, err := filepath.Abs(filepath.Join("testdata", "fake-nvidia-smi"))
	require.NoError(t, err)
	enumerate := func(strategy string) []driver.Device {
		devs, err := (&smiEnumerator{path: fake, timeout: 10 * time.Second, units: unitOptions{mig: strategy}}).Enumerate(ctxT(t))
		require.NoError(t, err)
		return devs
	}
	wholeKey := map[string]string{} // gpu index → key
	for _, d := range enumerate(MIGNone) {
		require.Empty(t, d.Parent)
		wholeKey[d.Info["index"]] = d.Key
	}
	require.Len(t, wholeKey, 4)
	var parents []string
	for _, d := range enumerate(MIGMixed) {
		if d.Info["mig.index"] == "" {
			require.Empty(t, d.Parent, "a GPU without MIG is whole: %s", d.Key)
			continue
		}
		require.Equal(t, wholeKey[d.Info["gpu.index"]], d.Parent, d.Key)
		parents = append(parents, d.Parent)
	}
	require.Equal(t, []string{h100GPU + "0", h100GPU + "0", h100GPU + "0", h100GPU + "0", h100GPU + "1", h100GPU + "1"}, parents)
}
