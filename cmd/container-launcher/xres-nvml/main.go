// Command xres-nvml asks the NVIDIA management library (NVML) about the
// host's GPUs for container-launcher. The launcher is built without cgo,
// so that it starts fast and runs on any Linux whatever its C library; it
// runs this small cgo program, shipped beside it, when discovery reads
// NVML. See driver/gpu.NVMLHelperMain for its arguments and exit codes;
// `xres-nvml watch` streams GPU health events (driver/gpu.NVMLWatchMain).
package main

import (
	"os"

	"github.com/xres/xres/driver/gpu"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "watch" {
		os.Exit(watchMain(os.Args[2:]))
	}
	os.Exit(gpu.NVMLHelperMain(os.Args[1:], os.Stdout, os.Stderr))
}
