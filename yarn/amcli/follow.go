package amcli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// follower prints what am submit sees while it follows an application:
// each state change with its time, then, while the AM runs, its workers
// running/wanted (and replaced, failed) whenever that changes, per group
// when the application has named worker groups, with the minimum under
// scheduler-mode: reactive:
//
//	00:12:41 application_… ACCEPTED
//	00:12:44 application_… RUNNING tracking URL http://…
//	00:12:46 workers: 2/4 running
//	00:12:47 workers: 4/4 running, 1 replaced, 1 failed
//	00:12:48 workers: trainer 1/2, prep 3/3 running
//	00:12:49 workers: 2/4 running (minimum 2, reactive)
type follower struct {
	w      io.Writer
	app    string
	now    func() time.Time
	status func(ctx context.Context, trackingURL string) *amstatus.Status // the AM's report; nil when unreachable

	state   string
	workers string
	last    *amstatus.Status // the AM's last report
}

func (f *follower) report(ctx context.Context, r yarn.ApplicationReport) {
	if r.State != f.state {
		f.state = r.State
		fmt.Fprintf(f.w, "%s %s %s", f.stamp(), f.app, r.State)
		if r.State == "RUNNING" && r.TrackingURL != "" {
			fmt.Fprintf(f.w, " tracking URL %s", r.TrackingURL)
		}
		fmt.Fprintln(f.w)
	}
	if r.State != "RUNNING" || r.TrackingURL == "" {
		return
	}
	st := f.status(ctx, r.TrackingURL)
	if st == nil {
		return
	}
	f.last = st
	line := "workers: " + runningText(st)
	if st.Restarts > 0 {
		line += fmt.Sprintf(", %d replaced", st.Restarts)
	}
	if st.Failed > 0 {
		line += fmt.Sprintf(", %d failed", st.Failed)
	}
	if st.Succeeded > 0 {
		line += fmt.Sprintf(", %d succeeded", st.Succeeded)
	}
	if st.Unplaceable != "" {
		line += " (" + st.Unplaceable + ")"
	}
	if line != f.workers {
		f.workers = line
		fmt.Fprintf(f.w, "%s %s\n", f.stamp(), line)
	}
}

// runningText is how many workers run of how many wanted: "2/4 running",
// per named group "trainer 1/2, prep 3/3 running", each with its minimum
// under scheduler-mode: reactive ("2/4 running (minimum 2, reactive)").
func runningText(st *amstatus.Status) string {
	if !namedGroups(st.Groups) {
		text := fmt.Sprintf("%d/%d running", st.Running, st.Workers)
		if len(st.Groups) == 1 && st.Groups[0].Reactive {
			text += fmt.Sprintf(" (minimum %d, reactive)", st.Minimum)
		}
		return text
	}
	parts := make([]string, len(st.Groups))
	for i, g := range st.Groups {
		parts[i] = fmt.Sprintf("%s %d/%d", g.Name, g.Running, g.Workers)
		if g.Reactive {
			parts[i] += fmt.Sprintf(" (minimum %d, reactive)", g.Minimum)
		}
	}
	return strings.Join(parts, ", ") + " running"
}

// namedGroups reports whether the application has named worker groups
// (xres.worker-groups), as opposed to its one unnamed group.
func namedGroups(gs []amstatus.GroupStatus) bool { return len(gs) > 0 && gs[0].Name != "" }

func (f *follower) stamp() string { return f.now().Format("15:04:05") }

// summary prints the final table of workers, NodeManagers and devices:
// from the AM's final diagnostics, else from its last report.
func (f *follower) summary(r yarn.ApplicationReport) string {
	diag, workers := splitWorkers(r.Diagnostics)
	if len(workers) == 0 && f.last != nil {
		workers = f.last.Containers
	}
	if len(workers) > 0 {
		fmt.Fprintln(f.w, "workers:")
		printWorkers(f.w, workers)
	}
	return diag
}
