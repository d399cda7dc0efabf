package amcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/hdfstoken"
	"github.com/xres/xres/yarn/rest"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// rmAPI is what the client subcommands need from the ResourceManager
// (over RPC or REST, in yarn's types).
type rmAPI = submit.ClusterRM

// login is a client's Kerberos login: the Flink keys in (empty: the
// ticket cache), the logged-in client out (nil on a cluster with simple
// authentication).
type login struct {
	submit.Login
	Kerberos *yarn.Kerberos
}

// rpcRM connects to the ResourceManager named by $HADOOP_CONF_DIR. On a
// Kerberized cluster it logs in as l says (nil: the ticket cache) and
// leaves the login in l.
func rpcRM(ctx context.Context, getenv func(string) string, log logrus.FieldLogger, l *login) (rmAPI, *conf.HadoopConfig, func(), error) {
	hc, err := conf.LoadHadoopOptions(conf.HadoopOptions{Getenv: getenv, Log: log})
	if err != nil {
		return nil, nil, nil, err
	}
	addrs, err := yarn.RMAddresses(hc, yarn.RMClient)
	if err != nil {
		return nil, nil, nil, err
	}
	if l == nil {
		l = &login{}
	}
	if l.Getenv == nil {
		l.Getenv = getenv
	}
	krb, err := submit.KerberosLogin(hc, l.Login)
	if err != nil {
		return nil, nil, nil, err
	}
	l.Kerberos = krb
	c, err := yarn.NewClient(yarn.ClientConfig{Addrs: addrs, User: getenv("HADOOP_USER_NAME"), Kerberos: krb, Log: log})
	if err != nil {
		return nil, nil, nil, err
	}
	return submit.NewRPCRM(c), hc, func() { _ = c.Close() }, nil
}

// restRM talks to the ResourceManager's REST API (yarn.resourcemanager.webapp.address).
func restRM(ctx context.Context, getenv func(string) string, log logrus.FieldLogger, _ *login) (rmAPI, *conf.HadoopConfig, func(), error) {
	hc, err := conf.LoadHadoopOptions(conf.HadoopOptions{Getenv: getenv, Log: log})
	if err != nil {
		return nil, nil, nil, err
	}
	urls, err := yarn.RMWebappURLs(hc)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := rest.New(rest.Config{Endpoints: urls, User: yarn.CurrentUser(getenv), Log: log})
	if err != nil {
		return nil, nil, nil, err
	}
	return rest.NewRM(c), hc, func() {}, nil
}

// rmDial picks the RPC or the REST client.
func (e *env) rmDial(useREST bool) func(context.Context, func(string) string, logrus.FieldLogger, *login) (rmAPI, *conf.HadoopConfig, func(), error) {
	if useREST {
		return e.deps.rmREST
	}
	return e.deps.rm
}

// rpcHDFS connects to HDFS as user, or as krb's principal on a Kerberized
// cluster.
func rpcHDFS(hc *conf.HadoopConfig, user string, krb *yarn.Kerberos) (submit.FS, func(), error) {
	c, err := submit.DialHDFS(hc, user, krb)
	if err != nil {
		return nil, nil, err
	}
	return submit.NewHDFS(c), func() { _ = c.Close() }, nil
}

// cmdSubmit: am submit [--conf FILE] [-D k=v]… [--name] [--queue] [--workers N]
// [--files …] [--detach] -- <worker command…>
func cmdSubmit(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	var files listFlag
	name := fs.String("name", "", "application name (default: yarn.application.name, else xres)")
	queue := fs.String("queue", "", "YARN queue (default: yarn.application.queue, else default)")
	workers := fs.Int("workers", 0, "number of workers, at least 1 (default: from parallelism.default)")
	fs.Var(&files, "files", "files to ship, PATH or PATH#NAME, comma-separated (repeatable)")
	detach := fs.Bool("detach", false, "return after submission instead of following the application")
	launcher := fs.String("launcher", "", "container-launcher binary to ship (default: $XRES_LAUNCHER, else beside am)")
	useREST := fs.Bool("rest", false, "talk to the ResourceManager over its REST API instead of RPC")
	worker, set, err := workerPlan(fs, args, &c, e, workers)
	if err != nil {
		return err
	}
	// The AM binds its tracking server by rest.bind-port: refused here,
	// not by an AM that fails after the submission.
	if _, err := conf.ParsePorts(set.BindPort); err != nil {
		return configError{fmt.Errorf("config key %s: %w", conf.RestBindPort.Key, err)}
	}
	planned := set.Groups
	dial := e.rmDial(*useREST)
	if dial == nil || e.deps.hdfs == nil {
		return fmt.Errorf("%w: the YARN and HDFS clients are not wired to am", errNotWired)
	}
	amPath, launcherPath, err := binaries(e, *launcher)
	if err != nil {
		return configError{err}
	}
	shipped, err := submit.Files(amPath, launcherPath, set.ConfPath, files)
	if err != nil {
		return configError{err}
	}
	if !slices.ContainsFunc(shipped, func(f submit.File) bool { return f.Name == submit.NVMLHelper }) {
		e.log.WithField("launcher", launcherPath).Infof("%s is not beside the container-launcher: workers find their GPUs with nvidia-smi, not NVML", submit.NVMLHelper)
	}
	lg := &login{Login: submit.Login{Keytab: set.App.Keytab, Principal: set.App.Principal, Krb5Conf: set.App.Krb5Conf}}
	rm, hc, closeRM, err := dial(ctx, e.getenv, e.log, lg)
	if isConfigErr(err) {
		return configError{err}
	}
	if err != nil {
		return clusterError{err}
	}
	defer closeRM()
	who := yarn.CurrentUser(e.getenv)
	if u := submit.KerberosUser(lg.Kerberos); u != "" {
		who = u
	}
	hfs, closeFS, err := e.deps.hdfs(hc, who, lg.Kerberos)
	if err != nil {
		return clusterError{err}
	}
	defer closeFS()
	var tokens []byte
	if lg.Kerberos != nil {
		if tokens, err = amTokens(ctx, hc, lg.Kerberos, e.log); err != nil {
			return clusterError{err}
		}
	}
	// The application's report secret, in the AM's credentials: the AM
	// and its workers (their launchers sign their device reports with it).
	if tokens, err = submit.WithReportSecret(tokens); err != nil {
		return err
	}
	defaultFS, _ := hc.Get(conf.HadoopDefaultFS)
	if *name == "" {
		*name = set.App.Name
	}
	if *queue == "" {
		*queue = set.App.Queue
	}
	confName := submit.ConfName(set.ConfPath)
	sched := jobSchedulerAddresses(hc, set.Hadoop) // none: the AM needs its own HADOOP_CONF_DIR
	rmAddrs := jobRMAddresses(hc, set.Hadoop)
	client := submit.Client{RM: rm, Stager: submit.Stager{FS: hfs, DefaultFS: defaultFS, CacheDir: submit.SharedDir(who), Log: e.log}, Log: e.log,
		After: e.deps.after}
	sreq := submit.Request{
		Name: *name, Queue: *queue, User: who, Files: shipped, ConfName: confName, Dynamic: c.overrides,
		Workers: *workers, Worker: worker, MasterEnv: set.App.MasterEnv, Tokens: tokens,
		SchedulerAddresses: sched, DefaultFS: defaultFS, RMAddresses: rmAddrs, HadoopConf: hc,
		AMMemoryMB: set.App.MemoryMB, AMVcores: set.App.VCores, MaxAttempts: set.App.Attempts,
		Groups: profiles(planned), NodeLabel: set.App.NodeLabel, Tags: set.App.Tags, Priority: set.App.Priority,
	}
	if lg.Kerberos != nil && set.App.Keytab != "" && set.App.Principal != "" && set.App.ShipKeytab {
		// The AM logs in with it to obtain new HDFS delegation tokens.
		sreq.Keytab, sreq.Krb5Conf = set.App.Keytab, set.App.Krb5Conf
	}
	sub, err := client.Submit(ctx, sreq)
	if errors.Is(err, amplan.ErrProfileUnsatisfiable) {
		return configError{err}
	}
	if err != nil {
		return clusterError{err}
	}
	fmt.Fprintf(e.stdout, "submitted %s: %s\n", sub.AppID, describeGroups(planned))
	if *detach {
		fmt.Fprintf(e.stdout, "follow it with: am status %s\n", sub.AppID)
		return nil
	}
	f := &follower{w: e.stdout, app: sub.AppID, now: time.Now,
		status: func(ctx context.Context, u string) *amstatus.Status { return amStatus(ctx, e, u) }}
	rep, err := client.Wait(ctx, sub.AppID, func(r yarn.ApplicationReport) { f.report(ctx, r) })
	if err != nil {
		fmt.Fprintf(e.stderr, "am submit: stopped following %s; it keeps running (am kill %s stops it)\n", sub.AppID, sub.AppID)
		return clusterError{err}
	}
	if err := client.Stager.Cleanup(context.WithoutCancel(ctx), sub.StagingDir); err != nil {
		e.log.WithError(err).Warn("staging folder left behind")
	}
	diag := f.summary(rep)
	fmt.Fprintf(e.stdout, "%s finished: %s %s\n", sub.AppID, rep.State, rep.FinalStatus)
	if diag != "" {
		fmt.Fprintf(e.stdout, "diagnostics: %s\n", diag)
	}
	if !rep.Succeeded() {
		return errAppFailed
	}
	return nil
}

// amTokens fetches the HDFS delegation token of a Kerberized submission,
// renewable by the ResourceManager (the short name of
// yarn.resourcemanager.principal), and returns the AM's credentials (token
// storage format) holding it: the NodeManagers localize the staged files
// with it, and the AM passes it on to the workers.
func amTokens(ctx context.Context, hc *conf.HadoopConfig, krb *yarn.Kerberos, log logrus.FieldLogger) ([]byte, error) {
	rmPrincipal, _ := hc.Get(conf.HadoopRMPrincipal)
	if rmPrincipal == "" {
		return nil, errors.New("get HDFS delegation token: yarn.resourcemanager.principal is not set (the token's renewer)")
	}
	tok, err := hdfstoken.Get(ctx, hc, krb, submit.ShortName(rmPrincipal), log)
	if err != nil {
		return nil, err
	}
	var creds security.Credentials
	creds.AddToken(tok.Service, tok)
	b, err := creds.Marshal(security.FormatWritable)
	if err != nil {
		return nil, fmt.Errorf("write the AM's credentials: %w", err)
	}
	return b, nil
}

// binaries finds the am binary (this executable) and the container-launcher.
func binaries(e *env, launcherFlag string) (string, string, error) {
	exe := e.deps.executable
	if exe == nil {
		exe = os.Executable
	}
	amPath, err := exe()
	if err != nil {
		return "", "", fmt.Errorf("locate the am binary: %w", err)
	}
	launcher := launcherFlag
	if launcher == "" {
		launcher = e.getenv("XRES_LAUNCHER")
	}
	if launcher == "" {
		launcher = filepath.Join(filepath.Dir(amPath), submit.LauncherBinary)
	}
	if st, err := os.Stat(launcher); err != nil || st.IsDir() {
		return "", "", fmt.Errorf("container-launcher binary %s not found: build it (make build) or pass --launcher PATH / set XRES_LAUNCHER", launcher)
	}
	return amPath, launcher, nil
}

// rmQuery is how the commands that ask the ResourceManager start: the
// common flags and --rest, then, once the arguments are parsed, the log
// level and the connection.
type rmQuery struct {
	fs      *flag.FlagSet
	c       common
	useREST *bool
}

func newRMQuery(name string) *rmQuery {
	q := &rmQuery{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	q.c.register(q.fs, false)
	q.useREST = q.fs.Bool("rest", false, "talk to the ResourceManager over its REST API instead of RPC")
	return q
}

// connect applies the common flags and opens the RM client (see connect).
func (q *rmQuery) connect(ctx context.Context, e *env, lg *login) (rmAPI, *conf.HadoopConfig, func(), error) {
	if err := q.c.apply(e); err != nil {
		return nil, nil, nil, err
	}
	return connect(ctx, e, *q.useREST, lg)
}

// isConfigErr tells a client-side configuration problem (no or bad Hadoop
// configuration: HADOOP_CONF_DIR unset, missing, not a directory, without
// site files or with a malformed one; no Kerberos credentials) from a
// cluster one.
func isConfigErr(err error) bool {
	var hce *conf.HadoopConfError
	return errors.As(err, &hce) || errors.Is(err, conf.ErrNoHadoopConf) || errors.Is(err, yarn.ErrNoCredentials) || errors.Is(err, submit.ErrLoginConfig)
}

// connect opens the RM client for status, kill and cluster.
// On a Kerberized cluster it logs in from the ticket cache and leaves the
// login in lg (nil: not kept).
func connect(ctx context.Context, e *env, useREST bool, lg *login) (rmAPI, *conf.HadoopConfig, func(), error) {
	dial := e.rmDial(useREST)
	if dial == nil {
		return nil, nil, nil, fmt.Errorf("%w: the YARN client is not wired to am", errNotWired)
	}
	rm, hc, closeRM, err := dial(ctx, e.getenv, e.log, lg)
	if isConfigErr(err) {
		return nil, nil, nil, configError{err}
	}
	if err != nil {
		return nil, nil, nil, clusterError{err}
	}
	return rm, hc, closeRM, nil
}

type statusJSON struct {
	App         string           `json:"app"`
	Name        string           `json:"name"`
	User        string           `json:"user"`
	Queue       string           `json:"queue"`
	State       string           `json:"state"`
	FinalStatus string           `json:"final-status"`
	Progress    float32          `json:"progress"`
	TrackingURL string           `json:"tracking-url,omitempty"`
	Diagnostics string           `json:"diagnostics,omitempty"`
	AM          *amstatus.Status `json:"am,omitempty"` // the AM's own report, while it runs
	// Workers are the AM's workers: while it runs as it reports them, after
	// the end as its final diagnostics left them.
	Workers []amstatus.WorkerStatus `json:"workers,omitempty"`
}

// cmdStatus: am status APP_ID [--json]
func cmdStatus(ctx context.Context, args []string, e *env) error {
	q := newRMQuery("status")
	fs := q.fs
	asJSON := fs.Bool("json", false, "print JSON")
	id, err := appID(fs, args)
	if err != nil {
		return err
	}
	rm, _, closeRM, err := q.connect(ctx, e, nil)
	if err != nil {
		return err
	}
	defer closeRM()
	r, err := rm.ApplicationReport(ctx, id)
	if err != nil {
		return clusterError{fmt.Errorf("get report of %s: %w", id, err)}
	}
	diag, workers := splitWorkers(r.Diagnostics)
	st := statusJSON{App: id, Name: r.Name, User: r.User, Queue: r.Queue, State: r.State, FinalStatus: r.FinalStatus,
		Progress: r.Progress, TrackingURL: r.TrackingURL, Diagnostics: diag}
	if r.State == "RUNNING" && st.TrackingURL != "" {
		st.AM = amStatus(ctx, e, st.TrackingURL)
	}
	if st.AM != nil {
		workers = st.AM.Containers
	}
	st.Workers = workers
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "application\t%s\nname\t%s\nuser\t%s\nqueue\t%s\nstate\t%s\nfinal status\t%s\nprogress\t%.0f%%\n",
		st.App, st.Name, st.User, st.Queue, st.State, st.FinalStatus, 100*st.Progress)
	if st.TrackingURL != "" {
		fmt.Fprintf(tw, "tracking URL\t%s\n", st.TrackingURL)
	}
	if st.Diagnostics != "" {
		fmt.Fprintf(tw, "diagnostics\t%s\n", st.Diagnostics)
	}
	tw.Flush()
	printStatusWorkers(e.stdout, st.AM, workers)
	return nil
}

// amStatus asks a running AM for its status through the tracking URL (the
// RM's web proxy); nil when it cannot be reached.
func amStatus(ctx context.Context, e *env, trackingURL string) *amstatus.Status {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := strings.TrimSuffix(trackingURL, "/") + amweb.PathStatus + "?phases=true"
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil
	}
	client := e.deps.http
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		e.log.WithError(err).Debug("AM status not reachable")
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var st amstatus.Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&st); err != nil {
		return nil
	}
	return &st
}

// cmdKill: am kill APP_ID
func cmdKill(ctx context.Context, args []string, e *env) error {
	q := newRMQuery("kill")
	id, err := appID(q.fs, args)
	if err != nil {
		return err
	}
	lg := &login{}
	rm, hc, closeRM, err := q.connect(ctx, e, lg)
	if err != nil {
		return err
	}
	defer closeRM()
	kctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if r, err := rm.ApplicationReport(kctx, id); err == nil {
		if r.Ended() {
			fmt.Fprintf(e.stdout, "%s had already ended (%s, final status %s): nothing killed\n", id, r.State, r.FinalStatus)
			return errAppFailed
		}
	}
	if err := rm.Kill(kctx, id, "killed by am kill"); err != nil {
		return clusterError{fmt.Errorf("kill %s: %w", id, err)}
	}
	fmt.Fprintf(e.stdout, "killed %s\n", id)
	// A killed AM cannot remove its staging folder: do it here.
	if rep, err := rm.ApplicationReport(kctx, id); err == nil && rep.User != "" && e.deps.hdfs != nil {
		if hfs, closeFS, err := e.deps.hdfs(hc, rep.User, lg.Kerberos); err == nil {
			defer closeFS()
			dir := submit.StagingDir(rep.User, id)
			if err := (submit.Stager{FS: hfs}).Cleanup(kctx, dir); err != nil {
				e.log.WithError(err).WithField("dir", dir).Warn("staging folder left behind")
			}
		}
	}
	return nil
}

type nodeJSON struct {
	Node       string           `json:"node"`
	HTTP       string           `json:"http,omitempty"`
	Rack       string           `json:"rack,omitempty"`
	State      string           `json:"state"`
	Containers int              `json:"containers"`
	Capability map[string]int64 `json:"capability"`
	Used       map[string]int64 `json:"used"`
	Health     string           `json:"health,omitempty"`
}

type clusterJSON struct {
	ResourceTypes []string   `json:"resource-types"`
	Nodes         []nodeJSON `json:"nodes"`
}

func resourceMap(r yarn.Resource) map[string]int64 {
	m := map[string]int64{"memory-mb": r.MemoryMB, "vcores": r.VCores}
	maps.Copy(m, r.Extra)
	return m
}

// cmdCluster: am cluster [--json]
func cmdCluster(ctx context.Context, args []string, e *env) error {
	q := newRMQuery("cluster")
	fs := q.fs
	asJSON := fs.Bool("json", false, "print JSON")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	rm, _, closeRM, err := q.connect(ctx, e, nil)
	if err != nil {
		return err
	}
	defer closeRM()
	types, err := rm.ResourceTypes(ctx)
	if err != nil {
		return clusterError{fmt.Errorf("get resource types: %w", err)}
	}
	nodes, err := rm.Nodes(ctx)
	if err != nil {
		return clusterError{fmt.Errorf("list nodes: %w", err)}
	}
	out := clusterJSON{ResourceTypes: typeNames(types), Nodes: []nodeJSON{}}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, nodeJSON{Node: n.ID, HTTP: n.HTTPAddress, Rack: n.Rack, State: n.State, Containers: n.Containers,
			Capability: resourceMap(n.Capability), Used: resourceMap(n.Used), Health: n.Health})
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Node < out.Nodes[j].Node })
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(e.stdout, "resource types: %s\n", strings.Join(out.ResourceTypes, ", "))
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	header := "NODE\tSTATE\tCONTAINERS"
	for _, t := range out.ResourceTypes {
		header += "\t" + t + " (used/total)"
	}
	fmt.Fprintln(tw, header)
	for _, n := range out.Nodes {
		line := fmt.Sprintf("%s\t%s\t%d", n.Node, n.State, n.Containers)
		for _, t := range out.ResourceTypes {
			line += fmt.Sprintf("\t%d/%d", n.Used[t], n.Capability[t])
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// typeNames lists the names of types: memory-mb, vcores, then the others
// by name.
func typeNames(types []yarn.ResourceType) []string {
	var names []string
	for _, t := range types {
		names = append(names, t.Name)
	}
	sort.Slice(names, func(i, j int) bool { return typeRank(names[i], names[j]) })
	return names
}

// typeRank orders resource types: memory-mb, vcores, then by name.
func typeRank(a, b string) bool {
	rank := func(s string) int {
		switch s {
		case "memory-mb":
			return 0
		case "vcores":
			return 1
		}
		return 2
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	return a < b
}

// appID reads the one application id argument.
func appID(fs *flag.FlagSet, args []string) (string, error) {
	pos, rest, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || len(rest) > 0 {
		return "", fmt.Errorf("%w: want exactly one application id", errUsage)
	}
	if !validAppID(pos[0]) {
		return "", fmt.Errorf("%w: %q is not an application id (application_<cluster timestamp>_<number>)", errUsage, pos[0])
	}
	if _, err := yarn.ParseApplicationID(pos[0]); err != nil {
		return "", fmt.Errorf("%w: %w", errUsage, err)
	}
	return pos[0], nil
}

var appIDPattern = regexp.MustCompile(`^application_[0-9]+_[0-9]+$`)

// validAppID checks the application_<cluster timestamp>_<number> form.
func validAppID(s string) bool { return appIDPattern.MatchString(s) }

// profiles are the planned groups' profiles, for the check before
// submission.
func profiles(planned []amplan.PlannedGroup) []amplan.Group {
	out := make([]amplan.Group, len(planned))
	for i, g := range planned {
		out[i] = amplan.Group{Name: g.Name, Plan: g.Plan, Owners: amplan.Owners(g.Specs)}
	}
	return out
}

// describeGroups says what is asked: "4 workers of <profile>", per group
// when there are several ("trainer: 2 workers of …; prep: …").
func describeGroups(planned []amplan.PlannedGroup) string {
	parts := make([]string, len(planned))
	for i, g := range planned {
		parts[i] = fmt.Sprintf("%d workers of %s", g.Plan.Workers, g.Plan.Profile)
		if g.Plan.Spares > 0 {
			parts[i] += fmt.Sprintf(" + %d standby spares", g.Plan.Spares)
		}
		if g.Plan.Reactive {
			parts[i] += fmt.Sprintf(" (reactive, at least %d)", g.Plan.MinWorkers)
		}
		if g.Name != "" {
			parts[i] = g.Name + ": " + parts[i]
		}
	}
	return strings.Join(parts, "; ")
}
