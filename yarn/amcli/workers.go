package amcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
	"github.com/xres/xres/yarn/amstatus"
)

// The AM's final diagnostics carry one line per worker, so that am status,
// am logs and am submit can still list the workers (host, exit code,
// devices) once the AM is gone and only the ResourceManager remembers the
// application:
//
//	<the AM's diagnostics>
//	xres-worker {"container":"container_…","node":"host:port","state":"FAILED","exit-status":212,…}
//	xres-worker …
//
// At most maxWorkerLines lines, each diagnostic cut to maxWorkerDiag bytes,
// so that the whole stays far below the RM's diagnostics limit (64 KiB).
const (
	workerLinePrefix = "xres-worker "
	maxWorkerLines   = 128
	maxWorkerDiag    = 160
)

// finishWithWorkers is the AM's RM client with the worker lines added to
// the diagnostics it unregisters with.
type finishWithWorkers struct {
	am.RMClient
	status func() amstatus.Status // nil until the AM exists
}

func (f *finishWithWorkers) Finish(ctx context.Context, req yarn.FinishRequest) error {
	if f.status != nil {
		req.Diagnostics = withWorkers(req.Diagnostics, f.status().Containers)
	}
	return f.RMClient.Finish(ctx, req)
}

// withWorkers appends the worker lines to diag.
func withWorkers(diag string, workers []amstatus.WorkerStatus) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(diag, "\n"))
	for i, w := range workers {
		if i == maxWorkerLines {
			fmt.Fprintf(&b, "\n(%d more workers not listed)", len(workers)-i)
			break
		}
		w.Diagnostics = firstLine(w.Diagnostics, maxWorkerDiag)
		line, err := json.Marshal(w)
		if err != nil {
			continue
		}
		b.WriteString("\n" + workerLinePrefix)
		b.Write(line)
	}
	return b.String()
}

// splitWorkers separates the worker lines from the rest of diag.
func splitWorkers(diag string) (string, []amstatus.WorkerStatus) {
	var rest []string
	var workers []amstatus.WorkerStatus
	for _, line := range strings.Split(diag, "\n") {
		if j, ok := strings.CutPrefix(line, workerLinePrefix); ok {
			var w amstatus.WorkerStatus
			if json.Unmarshal([]byte(j), &w) == nil && w.Container != "" {
				workers = append(workers, w)
				continue
			}
		}
		rest = append(rest, line)
	}
	return strings.TrimSpace(strings.Join(rest, "\n")), workers
}

// firstLine is s's first line, cut to n bytes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// exitReason explains a worker's exit: the launcher's own code by name,
// else the AM's diagnostic (YARN's status name, the worker's stderr).
func exitReason(w amstatus.WorkerStatus) string {
	if w.ExitStatus == nil {
		return ""
	}
	if d := resources.DescribeLauncherExit(*w.ExitStatus); d.Name != "worker" && d.Code != 0 {
		return fmt.Sprintf("container-launcher: %s (%s)", d.Name, d.Meaning)
	}
	return firstLine(w.Diagnostics, maxWorkerDiag)
}

// devicesText renders a worker's devices: gpu=0,1 fpga=2.
func devicesText(devs map[string][]resources.Properties) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(devs)) {
		var idx []string
		for _, d := range devs[name] {
			idx = append(idx, d["index"])
		}
		out = append(out, name+"="+strings.Join(idx, ","))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " ")
}

// printWorkers writes the worker table (container, its group when groups
// are named, NodeManager, state, exit code, devices), then each failed
// worker's exit code and reason.
func printWorkers(w io.Writer, workers []amstatus.WorkerStatus) {
	grouped := slices.ContainsFunc(workers, func(ws amstatus.WorkerStatus) bool { return ws.Group != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if grouped {
		fmt.Fprintln(tw, "  WORKER\tGROUP\tNODEMANAGER\tSTATE\tEXIT\tDEVICES")
	} else {
		fmt.Fprintln(tw, "  WORKER\tNODEMANAGER\tSTATE\tEXIT\tDEVICES")
	}
	var failed []string
	for _, ws := range workers {
		exit := "-"
		if ws.ExitStatus != nil {
			exit = fmt.Sprint(*ws.ExitStatus)
		}
		node := ws.Node
		if node == "" {
			node = ws.Host
		}
		if grouped {
			group := ws.Group
			if group == "" {
				group = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", ws.Container, group, node, ws.State, exit, devicesText(ws.Devices))
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", ws.Container, node, ws.State, exit, devicesText(ws.Devices))
		}
		if ws.State == amstatus.StateFailed {
			failed = append(failed, fmt.Sprintf("  %s failed with exit %s: %s\n", ws.Container, exit, exitReason(ws)))
		}
	}
	tw.Flush()
	for _, f := range failed {
		fmt.Fprint(w, f)
	}
}

// printStatusWorkers writes am status's part on the workers: while the AM
// runs (a not nil), its counts, with the minimum under scheduler-mode:
// reactive, and a line per named worker group; then the worker table
// (after the end, as the AM's final diagnostics left it).
//
//	workers: 5 wanted, 4 running, 0 succeeded, 1 failed, 1 replaced
//	groups:
//	  GROUP    RUNNING/TARGET  MINIMUM       FAILED/LIMIT  RESTARTS  PROFILE
//	  trainer  1/2             1 (reactive)  1/2           1         <memory:8192, vCores:1, yarn.io/gpu: 4>
func printStatusWorkers(w io.Writer, a *amstatus.Status, workers []amstatus.WorkerStatus) {
	switch {
	case a != nil:
		wanted := fmt.Sprintf("%d wanted", a.Workers)
		if len(a.Groups) == 1 && a.Groups[0].Reactive {
			wanted += fmt.Sprintf(" (minimum %d, reactive)", a.Minimum)
		}
		fmt.Fprintf(w, "workers: %s, %d running, %d succeeded, %d failed, %d replaced\n",
			wanted, a.Running, a.Succeeded, a.Failed, a.Restarts)
		if namedGroups(a.Groups) {
			fmt.Fprintln(w, "groups:")
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  GROUP\tRUNNING/TARGET\tMINIMUM\tFAILED/LIMIT\tRESTARTS\tPROFILE")
			for _, g := range a.Groups {
				minimum := fmt.Sprint(g.Minimum)
				if g.Reactive {
					minimum += " (reactive)"
				}
				fmt.Fprintf(tw, "  %s\t%d/%d\t%s\t%d/%d\t%d\t%s\n", g.Name, g.Running, g.Workers, minimum, g.Failed, g.MaxFailed, g.Restarts, g.Profile)
			}
			tw.Flush()
		}
	case len(workers) > 0:
		fmt.Fprintf(w, "workers (as the ApplicationMaster left them):\n")
	}
	if len(workers) > 0 {
		printWorkers(w, workers)
	}
	if a != nil && len(a.Phases) > 0 {
		printPhases(w, a.Phases)
	}
	if a != nil && len(a.IdleGPUs) > 0 {
		printIdleGPUs(w, a.IdleGPUs)
	}
	if a != nil && len(a.DeviceEvents) > 0 {
		printDeviceEvents(w, a.DeviceEvents)
	}
}

// printPhases prints the distribution of each step of the workers' starts.
func printPhases(w io.Writer, phases []amstatus.Phase) {
	fmt.Fprintln(w, "start phases:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PHASE	WORKERS	P50	P90	MAX")
	for _, p := range phases {
		unit := " ms"
		if p.Unit != "ms" {
			unit = ""
		}
		fmt.Fprintf(tw, "  %s	%d	%.1f%s	%.1f%s	%.1f%s\n", p.Name, p.Count, p.P50, unit, p.P90, unit, p.Max, unit)
	}
	tw.Flush()
}
