package launch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// While the worker runs, metrics.job-mapping-dir holds one file per GPU it
// holds, named by the GPU's index and holding the container id (the format
// dcgm-exporter's --hpc-job-mapping-dir reads); the files are gone once the
// worker has ended, whether it succeeded or failed.
func TestJobMappingFilesWhileWorkerRuns(t *testing.T) {
	for _, tc := range []struct{ exit, mode string }{{"0", ""}, {"3", ""}, {"0", "--per-device=gpu"}, {"3", "--per-device=gpu"}} {
		exit := tc.exit
		t.Run("worker exits "+exit+" "+tc.mode, func(t *testing.T) {
			mapDir, out := t.TempDir(), filepath.Join(t.TempDir(), "seen")
			h := newFakeHost()
			h.devices["gpu"] = 2
			spec := gpuSpec(2)
			spec.Params[params.GPUJobMappingDir.Name] = mapDir
			var stderr syncBuffer
			envVars := map[string]string{EnvContainerID: "container_1_0001_01_000002", "TMPDIR": t.TempDir()}
			// The worker copies what the folder holds while it runs; into a
			// file of its own first, then renamed: in --per-device mode two
			// workers write it at once, and two shells truncating and
			// writing one file leave NULs where the other's line was.
			args := []string{"--", "sh", "-c",
				`cd "$0" && for f in *; do printf '%s=%s' "$f" "$(cat "$f")"; echo; done > "$1.$$" && mv "$1.$$" "$1"; exit ` + exit, mapDir, out}
			if tc.mode != "" { // one worker per GPU: each sees both files; the first to end stops the other
				args = append([]string{tc.mode}, args...)
			}
			code := Main(context.Background(), args, Env{
				Getenv:   func(k string) string { return envVars[k] },
				Environ:  []string{"PATH=" + os.Getenv("PATH")},
				Stderr:   &stderr,
				Registry: registryWith(h),
				Load:     fixedSpecs(spec),
			})
			require.Equal(t, exit, map[int]string{0: "0", 3: "3"}[code], stderr.String())
			seen, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, "0=container_1_0001_01_000002\n1=container_1_0001_01_000002\n", string(seen))
			left, err := os.ReadDir(mapDir)
			require.NoError(t, err)
			require.Empty(t, left, "the job-mapping files outlived the worker")
		})
	}
}

// A MIG instance's file is index.MIG; a file another container's launcher
// wrote since is not removed; a folder that is a symlink is refused.
func TestJobMappingFiles(t *testing.T) {
	dir := t.TempDir()
	g := Grant{Spec: resources.Spec{Name: "gpu", Params: map[string]string{params.GPUJobMappingDir.Name: dir}},
		Devices: []resources.Info{resources.Properties{"index": "0:1"}, resources.Properties{"index": "1"}}}
	m := writeJobMapping([]Grant{g}, "container_1_0001_01_000002", logrus.New())
	b, err := os.ReadFile(filepath.Join(dir, "0.1"))
	require.NoError(t, err)
	require.Equal(t, "container_1_0001_01_000002\n", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "1"), []byte("container_1_0001_01_000009\n"), 0o644))
	m.remove()
	_, err = os.Stat(filepath.Join(dir, "0.1"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(dir, "1"))
	require.NoError(t, err, "another container's mapping is left alone")

	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(t.TempDir(), link))
	g.Spec.Params[params.GPUJobMappingDir.Name] = link
	require.Empty(t, writeJobMapping([]Grant{g}, "container_1_0001_01_000002", logrus.New()).files)
}
