package amcli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/xres/xres/yarn/amstatus"
)

// printIdleGPUs lists the granted GPUs the AM found idle (under
// xres.metrics.idle-threshold for xres.metrics.idle-window):
//
//	idle GPUs (granted, unused):
//	  WORKER                         HOST  GPU  UUID     UTIL  IDLE FOR
//	  container_1_0001_01_000003     nm2   1    GPU-abc  4%    10m1s
func printIdleGPUs(w io.Writer, idle []amstatus.IdleGPU) {
	fmt.Fprintln(w, "idle GPUs (granted, unused):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WORKER\tHOST\tGPU\tUUID\tUTIL\tIDLE FOR")
	for _, g := range idle {
		uuid := g.UUID
		if uuid == "" {
			uuid = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%g%%\t%s\n", g.Container, g.Host, g.GPU, uuid, g.Util, (time.Duration(g.IdleForS) * time.Second).String())
	}
	tw.Flush()
}
