package amd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzRoot is a folder for a fuzz target's files, on tmpfs where there is one (each
// execution writes a small tree: on a disk that is most of its time).
func fuzzRoot(f *testing.F) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "xres-fuzz-kfd-"); err == nil {
			f.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return f.TempDir()
}

// FuzzKFDTopology walks a KFD topology of two nodes whose directory names, gpu_id and
// properties files (and the first one's name) are arbitrary: the walk fails with an error that
// names a file or node, or gives GPUs numbered from 0 in node order, each with a well-formed
// PCI address and a render node.
func FuzzKFDTopology(f *testing.F) {
	gpuProps := "location_id 768\ndomain 0\ndrm_render_minor 128\nunique_id 8425143389541296640\ndevice_id 29711\ngfx_target_version 90010\n"
	f.Add("0", "0", "cpu_cores_count 64\n", "1", "24718\n", gpuProps, "aldebaran")
	f.Add("10", "7", "a 1\n", "9", "0", "", "")
	f.Add("1", "4294967296", gpuProps, "2", "5", "drm_render_minor 0\nlocation_id 0\ndomain 0\n", "x")
	f.Add("1", "5", gpuProps, "01", "6", gpuProps, "")
	base := fuzzRoot(f)
	f.Fuzz(func(t *testing.T, dir1, gid1, props1, dir2, gid2, props2, name string) {
		root := filepath.Join(base, "sys")
		require.NoError(t, os.RemoveAll(root))
		nodes := filepath.Join(root, KFDNodesDir)
		require.NoError(t, os.MkdirAll(nodes, 0o755))
		for i, n := range []struct{ dir, gid, props string }{{dir1, gid1, props1}, {dir2, gid2, props2}} {
			if n.dir == "" || n.dir == "." || n.dir == ".." || filepath.Base(n.dir) != n.dir || len(n.dir) > 64 {
				continue
			}
			d := filepath.Join(nodes, n.dir)
			if os.Mkdir(d, 0o755) != nil {
				continue
			}
			files := map[string]string{"gpu_id": n.gid, "properties": n.props}
			if i == 0 {
				files["name"] = name
			}
			for file, body := range files {
				if body != "" {
					require.NoError(t, os.WriteFile(filepath.Join(d, file), []byte(body), 0o644))
				}
			}
		}
		e := &Enumerator{Source: SourceKFD, SysfsRoot: root}
		devs, err := e.Enumerate(context.Background())
		if err != nil {
			require.Regexp(t, `amd gpu: (read |list |kfd node |.*lists no usable GPU)`, err.Error())
			return
		}
		bus := regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
		for i, d := range devs {
			require.Equal(t, strconv.Itoa(i), d.Info["index"])
			require.Regexp(t, bus, d.Info["pci.bus-id"])
			require.Regexp(t, `^/dev/dri/renderD[1-9][0-9]*$`, d.Info["render-node"])
			require.NotEmpty(t, d.Key)
		}
	})
}
