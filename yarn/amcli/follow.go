package amcli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
)

// follower prints what am submit sees while it follows an application:
// each state change with its time, then, while the AM runs, its workers
// running/wanted (and replaced, failed) whenever that changes:
//
//	00:12:41 application_… ACCEPTED
//	00:12:44 application_… RUNNING tracking URL http://…
//	00:12:46 workers: 2/4 running
//	00:12:47 workers: 4/4 running, 1 replaced, 1 failed
type follower struct {
	w      io.Writer
	app    string
	now    func() time.Time
	status func(ctx context.Context, trackingURL string) *am.Status // the AM's report; nil when unreachable

	state   string
	workers string
	last    *am.Status // the AM's last report
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
	line := fmt.Sprintf("workers: %d/%d running", st.Running, st.Workers)
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
