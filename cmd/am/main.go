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
	"syscall"

	"github.com/xres/xres/cmd/internal/version"
	"github.com/xres/xres/yarn/amcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := amcli.Main(ctx, os.Args[1:], amcli.Env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr,
		Version: version.String("am")})
	stop()
	os.Exit(code)
}
