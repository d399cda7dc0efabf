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

// FuzzKFDTopology walks a KFD topology of three nodes whose directory
// names, gpu_id, name and properties files are arbitrary: the walk fails
// with an error that names a file or node, or gives GPUs numbered from 0 in
// node order, each with a well-formed PCI address and a render node.
func FuzzKFDTopology(f *testing.F) {
	gpuProps := "location_id 768\ndomain 0\ndrm_render_minor 128\nunique_id 8425143389541296640\ndevice_id 29711\ngfx_target_version 90010\n"
	f.Add("0", "0", "", "cpu_cores_count 64\n", "1", "24718", "aldebaran", gpuProps, "2", "24719\n", "", "location_id 1024\ndomain 1\ndrm_render_minor 129\n")
	f.Add("10", "7", "x", "a 1\n", "9", "0", "", "", "x", "", "", "")
	f.Add("1", "4294967296", "", gpuProps, "2", "-1", "", gpuProps, "3", "5", "", "drm_render_minor 0\nlocation_id 0\ndomain 0\n")
	f.Fuzz(func(t *testing.T, dir1, gid1, name1, props1, dir2, gid2, name2, props2, dir3, gid3, name3, props3 string) {
		root := t.TempDir()
		nodes := filepath.Join(root, KFDNodesDir)
		require.NoError(t, os.MkdirAll(nodes, 0o755))
		for _, n := range []struct{ dir, gid, name, props string }{{dir1, gid1, name1, props1}, {dir2, gid2, name2, props2}, {dir3, gid3, name3, props3}} {
			if n.dir == "" || n.dir == "." || n.dir == ".." || filepath.Base(n.dir) != n.dir || len(n.dir) > 64 {
				continue
			}
			d := filepath.Join(nodes, n.dir)
			if os.Mkdir(d, 0o755) != nil {
				continue
			}
			for file, body := range map[string]string{"gpu_id": n.gid, "name": n.name, "properties": n.props} {
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
