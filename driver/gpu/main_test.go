package gpu

import (
	"os"
	"testing"
)

// TestMain keeps the tests from depending on the GPUs of the machine they
// run on: scripts' indices are not counted against its NVIDIA driver
// unless a test says so (deps.gpusDir).
func TestMain(m *testing.M) {
	nvidiaGPUsDir = "/nonexistent/xres-test/proc/driver/nvidia/gpus"
	os.Exit(m.Run())
}
