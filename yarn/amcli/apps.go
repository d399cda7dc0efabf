package amcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/submit"
)

// activeStates are the states am list shows without --all, as
// `yarn application -list` does.
var activeStates = []string{"SUBMITTED", "ACCEPTED", "RUNNING"}

type listJSON struct {
	App         string  `json:"app"`
	Name        string  `json:"name"`
	User        string  `json:"user"`
	Queue       string  `json:"queue"`
	State       string  `json:"state"`
	FinalStatus string  `json:"final-status"`
	Progress    float32 `json:"progress"`
	TrackingURL string  `json:"tracking-url,omitempty"`
}

// cmdList: am list [--all] [--json] [--rest]
func cmdList(ctx context.Context, args []string, e *env) error {
	q := newRMQuery("list")
	fs := q.fs
	all := fs.Bool("all", false, "every xres application the RM remembers, ended ones too")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	rm, _, closeRM, err := q.connect(ctx, e, nil)
	if err != nil {
		return err
	}
	defer closeRM()
	states := activeStates
	if *all {
		states = nil
	}
	apps, err := rm.Applications(ctx, []string{submit.ApplicationType}, states)
	if err != nil {
		return clusterError{fmt.Errorf("list applications: %w", err)}
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].ID < apps[j].ID })
	out := make([]listJSON, 0, len(apps))
	for _, a := range apps {
		out = append(out, listJSON{App: a.ID, Name: a.Name, User: a.User, Queue: a.Queue, State: a.State,
			FinalStatus: a.FinalStatus, Progress: a.Progress, TrackingURL: a.TrackingURL})
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	which := "running"
	if *all {
		which = "all"
	}
	fmt.Fprintf(e.stdout, "xres applications (%s): %d\n", which, len(out))
	if len(out) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APPLICATION\tNAME\tUSER\tQUEUE\tSTATE\tFINAL-STATUS\tPROGRESS\tTRACKING-URL")
	for _, a := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\t%s\n", a.App, a.Name, a.User, a.Queue, a.State, a.FinalStatus, 100*a.Progress, a.TrackingURL)
	}
	return tw.Flush()
}

// errNoLogs is returned by am logs when no log could be read.
var errNoLogs = errors.New("no logs")

// logLines bounds what is read of one container log (the NodeManager's
// tail, at most 64 KiB).
const logLines = 1 << 20

// cmdLogs: am logs APP_ID [--rest]
func cmdLogs(ctx context.Context, args []string, e *env) error {
	q := newRMQuery("logs")
	fs := q.fs
	id, err := appID(fs, args)
	if err != nil {
		return err
	}
	lg := &login{} // kept for HDFS on a Kerberized cluster
	rm, hc, closeRM, err := q.connect(ctx, e, lg)
	if err != nil {
		return err
	}
	defer closeRM()
	aggregated, _ := hc.Get(conf.HadoopLogAggregationEnable)
	if aggregated == "true" {
		// aggrlogs.go: from HDFS; a running application with nothing there yet falls through.
		if err := aggregatedLogs(ctx, e, rm, hc, lg.Kerberos, id); !errors.Is(err, errNotAggregated) {
			return err
		}
	}
	r, err := rm.ApplicationReport(ctx, id)
	if err != nil {
		return clusterError{fmt.Errorf("get report of %s: %w", id, err)}
	}
	_, workers := splitWorkers(r.Diagnostics)
	if r.State == "RUNNING" && r.TrackingURL != "" {
		if st := amStatus(ctx, e, r.TrackingURL); st != nil {
			workers = st.Containers
		}
	}
	if aggregated != "true" {
		fmt.Fprintf(e.stderr, "am logs: log aggregation is off on this cluster (yarn.log-aggregation-enable is not true): "+
			"each container's logs stay on its NodeManager; reading them there (the last 64 KiB of each)\n")
	}
	if len(workers) == 0 {
		return clusterError{fmt.Errorf("%w: %s (%s) lists no workers: neither its ApplicationMaster nor its final diagnostics name any", errNoLogs, id, r.State)}
	}
	fetch := amnm.NMWebLogs{User: yarn.CurrentUser(e.getenv), Client: e.deps.http}
	read := 0
	for _, w := range workers {
		fmt.Fprintf(e.stdout, "Container: %s on %s\n", w.Container, w.Node)
		for _, file := range []string{"stdout", "stderr"} {
			lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			lines, err := fetch.Tail(lctx, yarn.Container{ID: w.Container, NodeID: w.Node, NodeHTTP: w.NodeHTTP}, file, logLines)
			cancel()
			if err != nil {
				fmt.Fprintf(e.stdout, "LogType: %s\n(not readable: %v)\n\n", file, err)
				continue
			}
			read++
			fmt.Fprintf(e.stdout, "LogType: %s\n", file)
			for _, l := range lines {
				fmt.Fprintln(e.stdout, l)
			}
			fmt.Fprintf(e.stdout, "End of LogType: %s\n\n", file)
		}
	}
	if read == 0 {
		return clusterError{fmt.Errorf("%w: no NodeManager served the logs of %s's workers (a NodeManager without log aggregation serves them only while it knows the application)", errNoLogs, id)}
	}
	return nil
}

// noArgs parses a subcommand that takes flags only.
func noArgs(fs *flag.FlagSet, args []string) error {
	pos, extra, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos)+len(extra) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, append(pos, extra...)[0])
	}
	return nil
}
