// Command am submits xres applications to YARN (am submit, like yarn jar)
// and is their ApplicationMaster inside the cluster (am run). It also
// reports on applications and on the cluster, and shows the container
// profile a configuration asks for (am resources). The logic lives in
// yarn/am and yarn/submit; this package parses flags and wires them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
