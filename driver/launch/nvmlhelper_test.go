package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The launcher is shipped built without cgo, and reads NVML through the
// xres-nvml helper found beside it or on PATH.
func TestStaticLauncherReadsNVMLThroughHelper(t *testing.T) {
	bin := launcherBinary(t) // CGO_ENABLED=0, as make build ships it
	h := newFakeGPUHost(t, 2, 2)
	conf, err := os.ReadFile(h.conf)
	if err != nil {
		t.Fatal(err)
	}
	conf = []byte(strings.Replace(string(conf), "discovery.source: nvidia-smi", "discovery.source: nvml", 1))
	if err := os.WriteFile(h.conf, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	helperOnPath := func(dir string) {
		for i, kv := range h.env {
			if strings.HasPrefix(kv, "PATH=") {
				h.env[i] = "PATH=" + dir + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
	}

	// The real helper (cgo, go-nvml) on this host, which has no NVIDIA
	// driver: NVML is unavailable, and the launcher says why and where.
	real := t.TempDir()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goBin, "build", "-o", real, "../../cmd/container-launcher/xres-nvml")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build xres-nvml (it needs cgo: a C compiler): %v\n%s", err, out)
	}
	helperOnPath(real)
	rep := h.probe(t, bin)
	if len(rep.Resources) != 1 || rep.Resources[0].ExitCode == 0 {
		t.Fatalf("probe without libnvidia-ml: %+v", rep)
	}
	for _, want := range []string{"NVML unavailable", filepath.Join(real, "xres-nvml"), "ERROR_LIBRARY_NOT_FOUND"} {
		if !strings.Contains(rep.Resources[0].Error, want) {
			t.Errorf("probe error %q does not say %q", rep.Resources[0].Error, want)
		}
	}

	// A helper that answers (a fake one: there is no GPU here): its GPUs
	// are offered.
	fake := t.TempDir()
	listing := `{"gpus":[{"info":{"index":"0","uuid":"GPU-nvml-0","name":"NVIDIA H200"}},{"info":{"index":"1","uuid":"GPU-nvml-1","name":"NVIDIA H200"}}]}`
	if err := os.WriteFile(filepath.Join(fake, "xres-nvml"), []byte("#!/bin/sh\necho '"+listing+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	helperOnPath(fake)
	rep = h.probe(t, bin)
	if len(rep.Resources) != 1 || rep.Resources[0].Error != "" || len(rep.Resources[0].Devices) != 2 {
		t.Fatalf("probe with a helper: %+v", rep)
	}
	if u := rep.Resources[0].Devices[1]["uuid"]; u != "GPU-nvml-1" {
		t.Errorf("device 1 uuid %q, want the helper's GPU-nvml-1", u)
	}
}
