// Package devicecheck holds `make device-check`'s script and worker; this
// test runs the script on the fakes, as CI can (no GPU).
package devicecheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The device check passes on the fakes, and fails, naming the check, when
// NVML and nvidia-smi disagree.
func TestDeviceCheckOnFakes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the device check is for Linux")
	}
	bin := t.TempDir()
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "../../cmd/container-launcher")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build container-launcher: %v\n%s", err, out)
	}
	run := func(extra ...string) (string, error) {
		cmd := exec.Command("./device-check.sh")
		cmd.Env = append(os.Environ(), append([]string{"BIN=" + bin, "XRES_DEVICE_CHECK_FAKE=1", "TMPDIR=" + t.TempDir()}, extra...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil || strings.Count(out, "PASS  ") != 4 || !strings.Contains(out, "device-check: all passed") {
		t.Fatalf("device check on the fakes: %v\n%s", err, out)
	}
	for _, want := range []string{"NVML lists the 2 GPUs nvidia-smi lists", "registered Xid and double-bit ECC events on all 2 GPUs",
		"nvidia-smi sees worker pid"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = run("XRES_FAKE_GPU_EXCLUDED_MINORS=1") // nvidia-smi lists one GPU, NVML two
	if err == nil || !strings.Contains(out, "FAIL  NVML and nvidia-smi disagree") || !strings.Contains(out, "device-check: 2 check(s) failed") {
		t.Fatalf("a disagreement must fail the check: %v\n%s", err, out)
	}
}
