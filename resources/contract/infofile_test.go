package contract

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

func TestWriteReadInfoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "external-resources.json")
	in := map[string][]resources.Info{
		"gpu":  {resources.Properties{"index": "0", "uuid": "GPU-a"}, resources.Properties{"index": "1", "uuid": "GPU-b"}},
		"fpga": nil,
	}
	require.NoError(t, WriteInfoFile(path, in))

	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	f, err := ReadInfoFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{"fpga", "gpu"}, f.Names())
	gpus := f.Infos("gpu")
	require.Len(t, gpus, 2)
	uuid, ok := gpus[1].Property("uuid")
	require.True(t, ok)
	require.Equal(t, "GPU-b", uuid)
	require.Equal(t, []string{"index", "uuid"}, gpus[0].Keys())
	require.NotNil(t, f.Infos("fpga"))
	require.Empty(t, f.Infos("fpga"))
	require.NotNil(t, f.Infos("tpu"), "unknown names give an empty set, like Flink's provider")
	require.Empty(t, f.Infos("tpu"))

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"fpga": []`, "an enabled resource with no devices is an empty list, not null")

	// Rewriting replaces the file whole.
	require.NoError(t, WriteInfoFile(path, map[string][]resources.Info{"gpu": {resources.Properties{"index": "3"}}}))
	f, err = ReadInfoFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{"gpu"}, f.Names())
}

func TestWriteInfoFileErrors(t *testing.T) {
	err := WriteInfoFile(filepath.Join(t.TempDir(), "missing", "x.json"), nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "write resource info file ")
	require.Contains(t, err.Error(), filepath.Join("missing", "x.json"))
}

func TestReadInfoFileFixtures(t *testing.T) {
	f, err := ReadInfoFile(filepath.Join("testdata", "infofile", "two-gpus.json"))
	require.NoError(t, err)
	require.Len(t, f.Infos("gpu"), 2)
	bus, _ := f.Infos("gpu")[1].Property("pci.bus-id")
	require.Equal(t, "00000000:0B:00.0", bus)

	for _, tc := range []struct{ file, want string }{
		{"number-value.json", "cannot unmarshal number"},
		{"not-a-list.json", "cannot unmarshal object"},
		{"truncated.json", "unexpected EOF"},
		{"not-an-object.json", "cannot unmarshal array"},
		{"null.json", "got null"},
		{"null-device.json", "gpu[0] is null"},
		{"two-objects.json", "data after the JSON object"},
		{"missing.json", "no such file"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "infofile", tc.file)
			_, err := ReadInfoFile(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), "read resource info file "+path+": ")
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvResourcesFile, "")
	_, err := FromEnv()
	require.True(t, errors.Is(err, ErrNoInfoFile))

	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, WriteInfoFile(path, map[string][]resources.Info{"gpu": {resources.Properties{"index": "0"}}}))
	t.Setenv(EnvResourcesFile, path)
	f, err := FromEnv()
	require.NoError(t, err)
	require.Len(t, f.Infos("gpu"), 1)
}

// ExampleFromEnv shows a worker started by container-launcher reading its
// GPUs, the Go counterpart of getExternalResourceInfos("gpu").
func ExampleFromEnv() {
	// container-launcher writes the file and exports its path; here we do
	// both by hand.
	dir, _ := os.MkdirTemp("", "xres-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "external-resources.json")
	_ = WriteInfoFile(path, map[string][]resources.Info{"gpu": {
		resources.Properties{"index": "0", "uuid": "GPU-5a1c"},
		resources.Properties{"index": "1", "uuid": "GPU-77e0"},
	}})
	os.Setenv(EnvResourcesFile, path)
	defer os.Unsetenv(EnvResourcesFile)

	// In the worker:
	infos, err := FromEnv()
	if err != nil {
		fmt.Println("no devices:", err)
		return
	}
	var indices []string
	for _, gpu := range infos.Infos("gpu") {
		index, _ := gpu.Property("index")
		uuid, _ := gpu.Property("uuid")
		fmt.Printf("GPU %s (%s)\n", index, uuid)
		indices = append(indices, index)
	}
	fmt.Println("CUDA devices:", strings.Join(indices, ","))
	fmt.Println("FPGAs:", len(infos.Infos("fpga")))
	// Output:
	// GPU 0 (GPU-5a1c)
	// GPU 1 (GPU-77e0)
	// CUDA devices: 0,1
	// FPGAs: 0
}

func FuzzParseInfoFile(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "infofile"))
	require.NoError(f, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "infofile", e.Name()))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseInfoFile(data)
		if err != nil {
			return
		}
		// Whatever parses survives a write and a read unchanged.
		in := map[string][]resources.Info{}
		for _, n := range info.Names() {
			in[n] = info.Infos(n)
		}
		path := filepath.Join(t.TempDir(), "r.json")
		require.NoError(t, WriteInfoFile(path, in))
		again, err := ReadInfoFile(path)
		require.NoError(t, err)
		require.Equal(t, info, again)
	})
}

// The info file is written by hand; json.MarshalIndent is the oracle.
func TestMarshalInfoFileAsEncodingJSON(t *testing.T) {
	for _, infos := range []map[string][]resources.Info{
		nil,
		{},
		{"gpu": nil},
		{"gpu": {resources.Properties{}}},
		{"gpu": {resources.Properties{"index": "0", "uuid": "GPU-<0>"}, resources.Properties{"index": "1", "name": "A \"100\"\n"}}, "fpga": {}},
		{"b": {resources.Properties{"x": "\u2028<&>"}}, "a": {resources.Properties{"z": "1", "a": "2"}}},
	} {
		f := make(InfoFile, len(infos))
		for name, list := range infos {
			f[name] = resources.PropertiesOf(list)
		}
		want, err := json.MarshalIndent(f, "", "  ")
		require.NoError(t, err)
		got := MarshalInfoFile(infos)
		require.Equal(t, string(want)+"\n", string(got))
		back, err := ParseInfoFile(got)
		require.NoError(t, err)
		require.Equal(t, f, back)
	}
}

// Issue 41: a launcher killed with SIGKILL cannot remove its temporary
// info file; the next launcher on the host removes it (its pid no longer
// runs: RemoveStaleInfoFiles, once that launcher's worker runs), and the files are created 0600 (the worker runs as the
// launcher's user). The helper is this test binary as a launcher that
// creates its file and waits to be killed.
func TestCreateInfoFileRemovesKilledLaunchersFiles(t *testing.T) {
	if dir := os.Getenv("XRES_INFOFILE_HELPER_DIR"); dir != "" {
		p, err := CreateInfoFile(dir, map[string][]resources.Info{"gpu": {resources.Properties{"index": "0"}}})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(p)
		select {} // until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCreateInfoFileRemovesKilledLaunchersFiles$")
	cmd.Env = append(os.Environ(), "XRES_INFOFILE_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	killed := strings.TrimSpace(line)
	require.True(t, strings.HasPrefix(killed, filepath.Join(dir, "xres-resources-")), killed)
	st, err := os.Stat(killed)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "only the launcher's user reads what it was given")

	// A live launcher's file (this process's) and a file whose name is not
	// CreateInfoFile's stay.
	live, err := CreateInfoFile(dir, nil)
	require.NoError(t, err)
	other := filepath.Join(dir, "xres-resources-12345.json")
	require.NoError(t, os.WriteFile(other, nil, 0o600))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.FileExists(t, killed, "nothing removes it until the next start")

	next, err := CreateInfoFile(dir, nil)
	require.NoError(t, err)
	require.FileExists(t, killed, "creating a file removes nothing")
	RemoveStaleInfoFiles(dir)
	require.NoFileExists(t, killed, "the next launcher removes the killed launcher's file")
	require.FileExists(t, live)
	require.FileExists(t, other)
	require.FileExists(t, next)
}
