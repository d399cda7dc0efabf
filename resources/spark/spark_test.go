package spark

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

func TestSparkAddresses(t *testing.T) {
	devs := []resources.Info{resources.Properties{"index": "2", "uuid": "GPU-a"}, resources.Properties{"index": "5", "uuid": "GPU-b"}, resources.Properties{"uuid": "MIG-c"}}
	require.Equal(t, []string{"0", "1", "2"}, SparkAddresses(devs, true), "the worker sees only its devices, from 0")
	require.Equal(t, []string{"2", "5", "MIG-c"}, SparkAddresses(devs, false))
}

func TestSparkResourcesFile(t *testing.T) {
	b, err := SparkResourcesFile(SparkExecutor, map[string][]string{"gpu": {"0", "1"}, "fpga": {"0"}})
	require.NoError(t, err)
	// Decoded the way Spark's parseAllocatedFromJsonFile extracts
	// Seq[ResourceAllocation]: every field present, none extra.
	var got []struct {
		ID struct {
			ComponentName string `json:"componentName"`
			ResourceName  string `json:"resourceName"`
		} `json:"id"`
		Addresses []string `json:"addresses"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.Len(t, got, 2)
	require.Equal(t, "fpga", got[0].ID.ResourceName)
	require.Equal(t, SparkExecutor, got[1].ID.ComponentName)
	require.Equal(t, []string{"0", "1"}, got[1].Addresses)
	require.JSONEq(t, `[{"id":{"componentName":"spark.executor","resourceName":"fpga"},"addresses":["0"]},
		{"id":{"componentName":"spark.executor","resourceName":"gpu"},"addresses":["0","1"]}]`, string(b))

	_, err = SparkResourcesFile(SparkExecutor, map[string][]string{"gpu": {""}})
	require.ErrorContains(t, err, "resource gpu has a device without address")

	ri, err := json.Marshal(SparkResourceInformation{Name: "gpu", Addresses: []string{"0"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"gpu","addresses":["0"]}`, string(ri))
}

func TestOriginsOfASparkConfiguration(t *testing.T) {
	spark, err := conf.LoadSpark("", []string{"spark.executor.resource.gpu.amount=2", "spark.executor.resource.gpu.vendor=nvidia.com"})
	require.NoError(t, err)
	cfg, err := conf.FromSpark(spark)
	require.NoError(t, err)
	cfg.Set("external-resource.gpu.param.token.secret", "s3cr3t")
	got := resources.Origins(cfg, "gpu")
	byKey := map[string]resources.ValueOrigin{}
	for _, o := range got {
		byKey[o.Key] = o
	}
	require.Equal(t, resources.KeyList, got[0].Key)
	require.Equal(t, resources.ValueOrigin{Key: "external-resource.gpu.amount", Value: "2", Origin: "--conf (spark.executor.resource.gpu.amount)"}, byKey["external-resource.gpu.amount"])
	require.Equal(t, "--conf (spark.executor.resource.gpu.vendor)", byKey["external-resource.gpu.kubernetes.config-key"].Origin)
	require.Equal(t, "(hidden)", byKey["external-resource.gpu.param.token.secret"].Value)
	require.Len(t, got, 6)
}

func TestWriteSparkResourcesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resources.json")
	require.NoError(t, WriteSparkResourcesFile(path, SparkExecutor, map[string][]string{"gpu": {"0"}}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `[{"id":{"componentName":"spark.executor","resourceName":"gpu"},"addresses":["0"]}]`, string(b))
	err = WriteSparkResourcesFile(filepath.Join(t.TempDir(), "no", "such", "dir", "r.json"), SparkExecutor, nil)
	require.ErrorContains(t, err, "write spark resources file")
}
