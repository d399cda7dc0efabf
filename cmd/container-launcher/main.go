// Command container-launcher runs first in every worker container: it
// discovers and reserves the worker's external resources (GPUs, FPGAs),
// tells the worker what it got, runs it, forwards signals, passes its exit
// code on and frees the devices. See driver/launch for the logic, the exit
// codes and the environment it exports.
//
// It sizes GOMAXPROCS by the host's CPUs, not the container's CPU limit,
// and never re-reads it: a supervisor that mostly waits has no use for
// the runtime's reading of its cgroup at every start, nor for the
// goroutine that watches the limit (containermaxprocs, updatemaxprocs).
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/xres/xres/cmd/container-launcher/internal/earlysig"
	"github.com/xres/xres/cmd/internal/version"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/driver/launch"
	"github.com/xres/xres/driver/launch/launchcmd"
)

func main() {
	// Named xres-<resource>-discovery, it is an engine's discovery script.
	args := launchcmd.Args(os.Args)
	if launchcmd.Of(args) == launchcmd.Launch {
		// In a YARN container, the GPU driver's question to the NodeManager
		// is on its way while the configuration is read.
		gpu.PrefetchNodeManager(os.Getenv)
	}

	// The launcher's drivers are assembled here: driver/launch names none.
	reg, err := builtin.NewRegistry(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "container-launcher: %v\n", err)
		os.Exit(launch.ExitInternal)
	}
	os.Exit(launch.Main(context.Background(), args, launch.Env{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		// Subscribed for a launch as the packages were initialised, before
		// Main reserves devices, so that no signal kills the launcher while
		// it holds them; Main forwards them to the worker.
		Signals:  earlysig.C,
		Notify:   earlysig.Notify,
		Registry: reg,
		Version:  func() string { return version.String("container-launcher") },
	}))
}
