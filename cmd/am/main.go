// Command am submits xres applications to YARN (am submit, like yarn jar)
// and is their ApplicationMaster inside the cluster (am run). It also
// reports on applications and on the cluster, and shows the container
// profile a configuration asks for (am resources). The logic lives in
// yarn/amcli; this package only builds a context and calls it.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/xres/xres/cmd/internal/version"
	"github.com/xres/xres/yarn/amcli"
)

// amGCPercent is the garbage collector's target for the ApplicationMaster
// (am run) when GOGC is not set: the heap may grow to 1.5× what is live
// instead of Go's default 2×. The AM is long-lived and mostly waits on
// heartbeats (a few allocations a second), while its peak resident memory
// is charged to its YARN container; trading a few more short collections
// for a smaller peak is worth it there (make bench-am-curve: VmHWM at N=64).
// The client commands exit in a moment and keep Go's default.
const amGCPercent = 50

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		_ = pageOutBinary() // best effort: pageout_linux.go
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(amGCPercent)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := amcli.Main(ctx, os.Args[1:], amcli.Env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr,
		Version: version.String("am")})
	stop()
	os.Exit(code)
}
