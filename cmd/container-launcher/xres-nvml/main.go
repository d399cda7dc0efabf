// Command xres-nvml asks the NVIDIA management library (NVML) about the
// host's GPUs for container-launcher. The launcher is built without cgo,
// so that it starts fast and runs on any Linux whatever its C library; it
// runs this small cgo program, shipped beside it, when discovery reads
// NVML. See driver/gpu.NVMLHelperMain for its arguments and exit codes.
// Its modes: "xres-nvml sample" samples GPUs while a worker runs
// (sample.go), "xres-nvml topology" prints the GPUs' links (topology.go),
// "xres-nvml watch" streams GPU health events (driver/gpu.NVMLWatchMain).
package main

import (
	"os"
	"time"

	"github.com/xres/xres/driver/gpu"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "topology":
			os.Exit(topologyMain(os.Args[2:], os.Stdout, os.Stderr))
		case sampleMode:
			os.Exit(sampleMain(os.Args[2:], os.Stdout, os.Stderr, time.After))
		case "watch":
			os.Exit(watchMain(os.Args[2:]))
		}
	}
	os.Exit(gpu.NVMLHelperMain(os.Args[1:], os.Stdout, os.Stderr))
}
