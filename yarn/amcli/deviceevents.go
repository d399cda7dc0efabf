package amcli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/xres/xres/yarn/amstatus"
)

// printDeviceEvents lists the critical device events the workers'
// launchers reported (docs/gpu-health.md) and each one's replacement:
//
//	device events (docs/gpu-health.md):
//	  TIME                      HOST  WORKER                      DEVICE   ACTION   REPLACED BY                 EVENT
//	  2026-12-07T01:02:03.456Z  nm2   container_1_0001_01_000003  GPU-abc  replace  container_1_0001_01_000005  Xid 94 (contained ECC error) on GPU-abc (index 0)
func printDeviceEvents(w io.Writer, events []amstatus.DeviceEvent) {
	fmt.Fprintln(w, "device events (docs/gpu-health.md):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tHOST\tWORKER\tDEVICE\tACTION\tREPLACED BY\tEVENT")
	for _, e := range events {
		dev, by := e.Device, e.ReplacedBy
		if dev == "" {
			dev = "?"
		}
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339Nano), e.Host, e.Container, dev, e.Action, by, e.Reason)
	}
	tw.Flush()
}
