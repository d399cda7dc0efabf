package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

func TestAMLaunchContext(t *testing.T) {
	staged := Staged{Dir: "/user/alice/.xres/app", Resources: map[string]yarn.LocalResource{
		"am": {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/alice/.xres/app/am"}, Size: 10, Timestamp: 5, Type: yarn.File, Visibility: yarn.Application},
	}}
	lc, err := AMLaunchContext(AMSpec{
		Staged: staged, ConfName: "flink-conf.yaml", DynamicFile: DynamicFileName, Workers: 3,
		Worker: []string{"python", "train.py", "--lr", "0.1"}, Env: map[string]string{"JAVA_HOME": "/jdk"},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"./am run --conf flink-conf.yaml --dynamic-file xres-dynamic.json --workers 3 -- python train.py --lr 0.1 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"}, lc.Commands)
	require.Equal(t, "/jdk", lc.Env["JAVA_HOME"])
	require.Equal(t, "/user/alice/.xres/app", lc.Env[EnvStagingDir])
	back, err := DecodeResources(lc.Env[EnvLocalResources])
	require.NoError(t, err)
	require.Equal(t, staged.Resources, back)
	require.Equal(t, staged.Resources, lc.LocalResources)
	require.Nil(t, lc.Tokens)

	require.NotContains(t, lc.Env, "GOMAXPROCS", "no vcores given, none set")

	_, err = AMLaunchContext(AMSpec{Staged: staged})
	require.ErrorContains(t, err, "no worker command")

	// The AM runs with one P per vcore of its container, unless the user
	// set GOMAXPROCS (containerized.master.env.GOMAXPROCS).
	lc, err = AMLaunchContext(AMSpec{Staged: staged, Worker: []string{"true"}, Vcores: 2})
	require.NoError(t, err)
	require.Equal(t, "2", lc.Env["GOMAXPROCS"])
	lc, err = AMLaunchContext(AMSpec{Staged: staged, Worker: []string{"true"}, Vcores: 2, Env: map[string]string{"GOMAXPROCS": "8"}})
	require.NoError(t, err)
	require.Equal(t, "8", lc.Env["GOMAXPROCS"])
}

func TestReadAMEnvReadsWhatAMLaunchContextWrote(t *testing.T) {
	staged := Staged{Dir: "/user/alice/.xres/app", Resources: map[string]yarn.LocalResource{
		"am": {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/alice/.xres/app/am"}, Size: 10, Type: yarn.File},
	}}
	lc, err := AMLaunchContext(AMSpec{Staged: staged, Worker: []string{"true"},
		SchedulerAddresses: []string{"rm1:8030", "rm2:8030"}, RMAddresses: []string{"rm1:8032", "rm2:8032"}, DefaultFS: "hdfs://nn:8020"})
	require.NoError(t, err)
	back, err := ReadAMEnv(func(k string) string { return lc.Env[k] })
	require.NoError(t, err)
	require.Equal(t, AMEnv{Resources: staged.Resources, StagingDir: staged.Dir,
		SchedulerAddresses: []string{"rm1:8030", "rm2:8030"}, RMAddresses: []string{"rm1:8032", "rm2:8032"}, DefaultFS: "hdfs://nn:8020"}, back)

	none, err := ReadAMEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, AMEnv{}, none)
	_, err = ReadAMEnv(func(k string) string { return map[string]string{EnvLocalResources: "!!!"}[k] })
	require.ErrorContains(t, err, EnvLocalResources)
}

func TestDecodeResourcesErrors(t *testing.T) {
	_, err := DecodeResources("!!!")
	require.ErrorContains(t, err, "decode XRES_LOCAL_RESOURCES")
	_, err = DecodeResources("bm90IGpzb24=") // "not json"
	require.ErrorContains(t, err, "decode XRES_LOCAL_RESOURCES")
}

func FuzzDecodeResources(f *testing.F) {
	good, err := EncodeResources(map[string]yarn.LocalResource{"x": {Size: 1, Type: yarn.File}})
	require.NoError(f, err)
	for _, s := range []string{good, "", "!!!", "bnVsbA==", "e30="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		res, err := DecodeResources(s)
		if err != nil {
			return
		}
		again, err := EncodeResources(res)
		require.NoError(t, err)
		back, err := DecodeResources(again)
		require.NoError(t, err)
		require.Equal(t, res, back)
	})
}
