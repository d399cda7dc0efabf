package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/xres/xres/driver/gpu"
)

// watchMain is `xres-nvml watch`: GPU health events as JSON lines on
// stdout (gpu.NVMLWatchMain) until SIGTERM/SIGINT, or until stdin ends when
// it is a pipe (the launcher that started it holds the other end: when
// that launcher dies, its watch ends too).
func watchMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	return gpu.NVMLWatchMain(ctx, args, os.Stdout, os.Stderr)
}
