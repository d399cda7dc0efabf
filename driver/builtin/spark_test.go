package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources"
)

// TestSparkKeysReachTheDrivers: a Spark configuration mapped by
// conf.FromSpark sets only params the drivers declare, and the GPU driver
// built from it runs a Spark discovery script and hands out amount of its
// addresses.
func TestSparkKeysReachTheDrivers(t *testing.T) {
	declared := map[string]bool{}
	for _, ps := range builtin.Params() {
		for _, p := range ps {
			declared[p.Name] = true
		}
	}
	for _, p := range builtin.LauncherParams() {
		declared[p.Name] = true
	}
	for _, name := range conf.SparkFlinkParams() {
		require.True(t, declared[name], "conf.FromSpark sets param %s, which no driver declares", name)
	}

	script, err := filepath.Abs(filepath.Join("..", "gpu", "testdata", "scripts", "spark-style-discovery.sh"))
	require.NoError(t, err)
	spark, err := conf.LoadSpark("", []string{
		"spark.executor.resource.gpu.amount=2",
		"spark.executor.resource.gpu.discoveryScript=" + script,
	})
	require.NoError(t, err)
	cfg, err := conf.FromSpark(spark)
	require.NoError(t, err)
	cfg.Set("external-resource.gpu.param.coordination.file", filepath.Join(t.TempDir(), "state"))
	specs, err := resources.Parse(cfg, resources.ParseOptions{Side: resources.SideWorker, Strict: true})
	require.NoError(t, err)
	require.Len(t, specs, 1)
	require.Equal(t, "yarn.io/gpu", specs[0].YarnKey)
	for k := range specs[0].Params {
		require.True(t, declared[k], "param %s is declared", k)
	}

	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	f, err := r.Lookup(specs[0].Factory)
	require.NoError(t, err)
	// A 4-GPU host, as tests fake one (the fake nvidia-smi first on PATH):
	// the script's addresses are checked against the host's GPUs.
	fakebin, err := filepath.Abs(filepath.Join("..", "gpu", "testdata", "fakebin"))
	require.NoError(t, err)
	t.Setenv("PATH", fakebin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv("XRES_FAKE_GPUS", "4")
	d, err := f.NewDriver(driver.Options{Resource: "gpu", Params: specs[0].Params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	infos, err := d.Discover(ctx, specs[0].Amount)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	again, err := d.Discover(ctx, specs[0].Amount)
	require.NoError(t, err)
	first, _ := infos[0].Property("index")
	next, _ := again[0].Property("index")
	require.NotEqual(t, first, next, "coordinated: the second worker gets other GPUs")
	require.NoError(t, d.(driver.Releaser).Release(ctx))
}
