//go:build linux

package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// fakeNVMLHelper writes an executable xres-nvml in a new folder that runs
// body (sh), recording its arguments in args.
func fakeNVMLHelper(t *testing.T, body string) (path, args string) {
	t.Helper()
	dir := t.TempDir()
	path, args = filepath.Join(dir, NVMLHelperName), filepath.Join(dir, "args")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho \"$@\" > '"+args+"'\n"+body+"\n"), 0o755))
	return path, args
}

func TestNVMLHelper(t *testing.T) {
	listing := nvmlListing{gpus: []gpuRecord{
		{info: resources.Properties{"index": "0", "uuid": "GPU-a", "name": "NVIDIA H100 80GB HBM3"}, migMode: true,
			migs: []migRecord{{uuid: "MIG-a0", index: 0, profile: "3g.40gb", info: resources.Properties{"mig.gi": "2"}}}},
		{info: resources.Properties{"index": "1", "uuid": "GPU-b"}, unhealthy: []string{ReasonRowRemapPending}},
		{info: resources.Properties{"index": "3", "uuid": "GPU-d"}},
	}, denied: []string{"2"}}
	b, err := listing.marshal()
	require.NoError(t, err)
	answer := filepath.Join(t.TempDir(), "listing.json")
	require.NoError(t, os.WriteFile(answer, b, 0o644))

	t.Run("listing", func(t *testing.T) {
		path, args := fakeNVMLHelper(t, "cat "+answer)
		h := &nvmlHelper{path: path, nvmlOptions: nvmlOptions{lib: "/opt/nv/libnvidia-ml.so.1", units: unitOptions{mig: MIGMixed, health: true}, timeout: 10 * time.Second}}
		devs, err := h.Enumerate(ctxT(t))
		require.NoError(t, err)
		a, err := os.ReadFile(args)
		require.NoError(t, err)
		require.Equal(t, "--library /opt/nv/libnvidia-ml.so.1 --mig --health\n", string(a))
		require.Equal(t, []string{"MIG-a0", "GPU-b", "GPU-d"}, []string{devs[0].Key, devs[1].Key, devs[2].Key})
		require.Equal(t, "GPU-a", devs[0].Parent)
		require.Equal(t, "3g.40gb", devs[0].Info["mig.profile"])
		require.Equal(t, ReasonRowRemapPending, devs[1].Unhealthy)
		require.Equal(t, "GPU-d", devs[2].Info[driver.InfoVisibleID], "GPU 2 is denied: the others go by uuid")

		h.units = unitOptions{}
		_, err = h.Enumerate(ctxT(t))
		require.NoError(t, err)
		a, _ = os.ReadFile(args)
		require.Equal(t, "--library /opt/nv/libnvidia-ml.so.1\n", string(a))
	})

	for _, tc := range []struct {
		name, body  string
		unavailable bool
		has         string
	}{
		{"NVML unavailable", "echo 'xres-nvml: NVML unavailable: init: ERROR_LIBRARY_NOT_FOUND' >&2; exit 3", true, "exited 3: init: ERROR_LIBRARY_NOT_FOUND"},
		{"NVML refuses", "echo 'xres-nvml: nvml device count: ERROR_UNKNOWN' >&2; exit 1", false, "nvml device count: ERROR_UNKNOWN (NVML helper "},
		{"cannot start (C library too old)", "echo 'xres-nvml: version `GLIBC_2.34'\"'\"' not found' >&2; exit 127", true, "exited 127: version `GLIBC_2.34' not found"},
		{"killed", "kill -9 $$", true, "exited -1"},
		{"unreadable", "echo '{\"gpus\": [{\"info\": {}}]}'", false, "unreadable listing: GPU 1 of 1 has no index or uuid"},
		{"garbage", "echo 'Segmentation fault'", false, "unreadable listing"},
		{"hangs", "sleep 5", false, "did not answer within 200ms (external-resource.gpu.param.nvidia-smi.timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := fakeNVMLHelper(t, tc.body)
			// Only "hangs" waits for the budget to run out (its helper never
			// answers, whether its shell started or not); the others wait for
			// a shell to start and end, which takes seconds on a loaded host.
			timeout := 30 * time.Second
			if tc.name == "hangs" {
				timeout = 200 * time.Millisecond
			}
			h := &nvmlHelper{path: path, nvmlOptions: nvmlOptions{resource: "gpu", timeout: timeout}}
			_, err := h.Enumerate(ctxT(t))
			require.Error(t, err)
			require.Equal(t, tc.unavailable, errorsIsUnavailable(err), "%v", err)
			require.Contains(t, err.Error(), tc.has)
			require.Contains(t, err.Error(), path, "the helper is named")
			require.NotContains(t, err.Error(), "NVML unavailable: NVML unavailable")
		})
	}
}

func errorsIsUnavailable(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrNVMLUnavailable.Error())
}

// Without a helper beside the launcher or on PATH, NVML is unavailable and
// discovery goes on with nvidia-smi; with one on PATH, it is run.
func TestNVMLHelperLookup(t *testing.T) {
	empty := t.TempDir()
	_, err := findNVMLHelper(func(string) string { return empty })
	require.ErrorIs(t, err, ErrNVMLHelperMissing)
	require.ErrorContains(t, err, "xres-nvml is not beside the launcher (")
	require.ErrorContains(t, err, ") nor on PATH")

	path, _ := fakeNVMLHelper(t, "echo '{\"gpus\": []}'")
	got, err := findNVMLHelper(func(string) string { return empty + ":" + filepath.Dir(path) })
	require.NoError(t, err)
	require.Equal(t, path, got)

	t.Setenv("XRES_FAKE_GPUS", "2")
	env := fakeEnv(t, nil)
	auto := &autoSource{source: "auto", smi: "nvidia-smi", getenv: env, timeout: 10 * time.Second, log: driver.LoggerOrDiscard(nil),
		nvml: &nvmlHelper{nvmlOptions: nvmlOptions{getenv: func(string) string { return empty }, timeout: 10 * time.Second}}}
	devs, err := auto.Enumerate(ctxT(t))
	require.NoError(t, err)
	require.Len(t, devs, 2, "nvidia-smi's GPUs")
	auto.source = "nvml"
	_, err = auto.Enumerate(ctxT(t))
	require.ErrorIs(t, err, ErrNVMLUnavailable)
	require.ErrorIs(t, err, ErrNVMLHelperMissing)
	require.ErrorContains(t, err, "xres-nvml is not beside the launcher")
}
