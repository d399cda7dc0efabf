package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

func sparkScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "scripts", "spark-style-discovery.sh"))
	require.NoError(t, err)
	return p
}

// TestSparkScriptCoordinated: a Spark script lists every GPU; xres's
// coordination hands each caller amount of them that nobody holds, and
// frees them on Release.
func TestSparkScriptCoordinated(t *testing.T) {
	for _, protocol := range []string{ProtocolSpark, ProtocolAuto} {
		t.Run(protocol, func(t *testing.T) {
			argsFile := filepath.Join(t.TempDir(), "args")
			t.Setenv("XRES_ARGS_FILE", argsFile)
			t.Setenv("XRES_FAKE_GPUS", "4")
			state := filepath.Join(t.TempDir(), "state")
			d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
				ParamScriptPath: sparkScript(t), ParamScriptProtocol: protocol, ParamCoordFile: state}})
			require.NoError(t, err)
			infos, err := d.Discover(ctxT(t), 2)
			require.NoError(t, err)
			require.Equal(t, []string{"0", "1"}, indices(infos))
			got, err := os.ReadFile(argsFile)
			require.NoError(t, err)
			if protocol == ProtocolSpark {
				require.Equal(t, "0:\n", string(got), "Spark calls its script without arguments")
			} else {
				require.Equal(t, "1:2\n", string(got), "auto calls the script as Flink's")
			}
			infos, err = d.Discover(ctxT(t), 2)
			require.NoError(t, err)
			require.Equal(t, []string{"2", "3"}, indices(infos), "this process still holds 0 and 1")
			_, err = d.Discover(ctxT(t), 1)
			require.ErrorIs(t, err, driver.ErrNotEnoughDevices)

			require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
			infos, err = d.Discover(ctxT(t), 4)
			require.NoError(t, err, "released")
			require.Len(t, infos, 4)
			require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
		})
	}
}

func TestSparkScriptUncoordinated(t *testing.T) {
	t.Setenv("XRES_FAKE_GPUS", "3")
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
		ParamScriptPath: sparkScript(t), ParamScriptProtocol: "SPARK", ParamCoordEnabled: "false"}})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		infos, err := d.Discover(ctxT(t), 2)
		require.NoError(t, err)
		require.Equal(t, []string{"0", "1"}, indices(infos), "without coordination every caller gets the first")
	}
}

func TestSparkScriptErrors(t *testing.T) {
	t.Setenv("XRES_SPARK_NAME", "fpga")
	d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{
		ParamScriptPath: sparkScript(t), ParamScriptProtocol: ProtocolSpark, ParamCoordFile: filepath.Join(t.TempDir(), "s")}})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptOutput)
	require.ErrorContains(t, err, `Spark JSON is for resource "fpga", not gpu`)
	require.ErrorContains(t, err, "spark-style-discovery.sh", "names the script")

	// A Flink line under protocol spark is an error, not indices.
	flink := writeScript(t, t.TempDir(), "flink.sh", "echo 0,1\n")
	d, err = New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: flink, ParamScriptProtocol: ProtocolSpark}})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, ErrScriptOutput)

	_, err = New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: flink, ParamScriptProtocol: "yarn"}})
	require.ErrorIs(t, err, ErrInvalidParam)
	require.ErrorContains(t, err, "external-resource.gpu.param.discovery-script.protocol")
}

func TestParseSparkScriptOutput(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
		errHas    string
	}{
		{name: "spark's example", out: `{"name":"gpu","addresses":["0","1"]}`, want: []string{"0", "1"}},
		{name: "pretty, trailing newline, extra field", out: "{\n  \"name\": \"gpu\",\n  \"addresses\": [\"1\", \"3\"],\n  \"vendor\": \"nvidia.com\"\n}\n", want: []string{"1", "3"}},
		{name: "uuids", out: `{"name":"gpu","addresses":["GPU-8c1d2a3b-0000-1111-2222-33334444aaaa","MIG-77aa0000-1111-2222-3333-444455556666","MIG-GPU-8c1d2a3b-0000-1111-2222-33334444aaaa/1/0"]}`,
			want: []string{"GPU-8c1d2a3b-0000-1111-2222-33334444aaaa", "MIG-77aa0000-1111-2222-3333-444455556666", "MIG-GPU-8c1d2a3b-0000-1111-2222-33334444aaaa/1/0"}},
		// Issue 41: an address taken as a uuid must be one.
		{name: "path in a uuid", out: `{"name":"gpu","addresses":["GPU-../../etc"]}`, errHas: `device "GPU-../../etc" is not an NVIDIA uuid`},
		{name: "short uuid", out: `{"name":"gpu","addresses":["GPU-8c1d"]}`, errHas: `device "GPU-8c1d" is not an NVIDIA uuid`},
		{name: "MIG-GPU- without instances", out: `{"name":"gpu","addresses":["MIG-GPU-8c1d2a3b-0000-1111-2222-33334444aaaa/x"]}`, errHas: "is not an NVIDIA uuid"},
		{name: "no devices", out: `{"name":"gpu","addresses":[]}`, want: []string{}},
		{name: "other resource", out: `{"name":"fpga","addresses":["0"]}`, errHas: `for resource "fpga", not gpu`},
		{name: "no name", out: `{"addresses":["0"]}`, errHas: `no "name"`},
		{name: "numbers, not strings", out: `{"name":"gpu","addresses":[0,1]}`, errHas: "not Spark's ResourceInformation JSON"},
		{name: "two objects", out: `{"name":"gpu","addresses":["0"]} {"name":"gpu"}`, errHas: "more than one JSON value"},
		{name: "message", out: `{"name":"gpu","addresses":["no GPU found"]}`, errHas: `address "no GPU found"`},
		{name: "twice", out: `{"name":"gpu","addresses":["0","0"]}`, errHas: `"0" twice`},
		{name: "truncated", out: `{"name":"gpu","addr`, errHas: "not Spark's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSparkScriptOutput("gpu", []byte(tc.out))
			if tc.errHas != "" {
				require.ErrorIs(t, err, ErrScriptOutput)
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.True(t, IsSparkOutput([]byte(tc.out)))
		})
	}
	require.False(t, IsSparkOutput([]byte("0,1\n")))
	require.False(t, IsSparkOutput(nil))
}

func FuzzParseSparkScriptOutput(f *testing.F) {
	f.Add([]byte(`{"name":"gpu","addresses":["0","1"]}`))
	f.Add([]byte(`{"name":"gpu"`))
	f.Fuzz(func(t *testing.T, out []byte) {
		addrs, err := ParseSparkScriptOutput("gpu", out)
		if err != nil {
			require.ErrorIs(t, err, ErrScriptOutput)
			return
		}
		for _, a := range addrs {
			require.NoError(t, checkIndex(a))
			require.NotEmpty(t, a)
			require.False(t, strings.ContainsAny(a, ", \n"))
		}
	})
}

func TestCoordinationOfSparkScript(t *testing.T) {
	script := sparkScript(t)
	got, err := CoordinationOf("gpu", map[string]string{ParamScriptPath: script, ParamScriptProtocol: ProtocolSpark, ParamCoordFile: "/tmp/s"}, nil)
	require.NoError(t, err)
	require.Equal(t, Coordination{Mode: CoordXres, StateFile: "/tmp/s", Script: script}, got)
	got, err = CoordinationOf("gpu", map[string]string{ParamScriptPath: script, ParamScriptProtocol: ProtocolSpark, ParamCoordEnabled: "false"}, nil)
	require.NoError(t, err)
	require.Equal(t, CoordOff, got.Mode)
}

// TestSparkScriptGenericResource: any resource (here fpga) can be served by
// a Spark script through the GPU driver; its name must match.
func TestSparkScriptGenericResource(t *testing.T) {
	t.Setenv("XRES_SPARK_NAME", "fpga")
	t.Setenv("XRES_FAKE_GPUS", "2")
	d, err := New(driver.Options{Resource: "fpga", Params: map[string]string{
		ParamScriptPath: sparkScript(t), ParamScriptProtocol: ProtocolSpark, ParamCoordFile: filepath.Join(t.TempDir(), "s"),
		driver.ParamVisibleDevicesVendor: "none"}})
	require.NoError(t, err)
	infos, err := d.Discover(ctxT(t), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"0"}, indices(infos))
	require.NoError(t, d.(driver.Releaser).Release(ctxT(t)))
}

// flinkFirstN is a script in Flink's default (non-coordination) mode on a
// 4-GPU host: it prints the first <amount> indices, or fails as Flink's
// does when asked for more than the host has.
const flinkFirstN = `n=$1; [ "$n" -le 4 ] || { echo "Could not get enough GPU resources."; exit 1; }
i=0; out=; while [ $i -lt $n ]; do out="$out${out:+,}$i"; i=$((i+1)); done; echo "$out"
`

// Issue 41: an explicit coordination.enabled: true with a Flink-protocol
// script that does not coordinate itself was ignored: two launchers both
// got GPU 0. xres now reserves among the script's indices, asking it for
// more when those it printed are held, so each worker gets its own GPUs;
// when the script cannot offer enough free ones, discovery fails rather
// than grant one twice. Unset, Flink's behaviour stays (every worker the
// first GPUs).
func TestFlinkScriptWithExplicitCoordination(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "first-n.sh", flinkFirstN)
	state := filepath.Join(dir, "state")
	params := map[string]string{ParamScriptPath: script, ParamCoordEnabled: "true", ParamCoordFile: state}

	co, err := CoordinationOf("gpu", params, nil)
	require.NoError(t, err)
	require.Equal(t, CoordXres, co.Mode)
	require.Equal(t, state, co.StateFile)

	var launchers []driver.Driver
	var got []string
	for i := 0; i < 3; i++ {
		d, err := New(driver.Options{Resource: "gpu", Params: params})
		require.NoError(t, err)
		infos, err := d.Discover(ctxT(t), map[int]int64{0: 1, 1: 2, 2: 1}[i])
		require.NoError(t, err, "launcher %d", i)
		got = append(got, indices(infos)...)
		launchers = append(launchers, d)
	}
	require.Equal(t, []string{"0", "1", "2", "3"}, got, "each launcher its own GPUs")

	d, err := New(driver.Options{Resource: "gpu", Params: params})
	require.NoError(t, err)
	_, err = d.Discover(ctxT(t), 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices, "every GPU is held: none granted twice")
	require.ErrorContains(t, err, script)

	// (One test process holds for all of them: a release frees all.)
	require.NoError(t, launchers[1].(driver.Releaser).Release(ctxT(t)))
	infos, err := d.Discover(ctxT(t), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, indices(infos), "free again once released")
	for _, l := range append(launchers, d) {
		require.NoError(t, l.(driver.Releaser).Release(ctxT(t)))
	}

	// Not set: Flink's behaviour, every worker the first GPUs, no state.
	for i := 0; i < 2; i++ {
		d, err := New(driver.Options{Resource: "gpu", Params: map[string]string{ParamScriptPath: script, ParamCoordFile: filepath.Join(dir, "unused")}})
		require.NoError(t, err)
		infos, err := d.Discover(ctxT(t), 1)
		require.NoError(t, err)
		require.Equal(t, []string{"0"}, indices(infos))
	}
	_, err = os.Stat(filepath.Join(dir, "unused"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
